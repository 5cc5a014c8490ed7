/* seccomp-listener SOCKET — a minimal seccomp agent for tests/security/seccomp.bats.
 *
 * Listens on the unix socket SOCKET, accepts one connection from the runtime, reads the
 * container process state (JSON) with the notify fd (SCM_RIGHTS), prints "state <json>", then
 * answers every notification with errno 77 (EBADFD) and prints "notif <syscall nr>", until the
 * fd closes or 30 seconds pass. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: seccomp-listener SOCKET\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  int ls = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", argv[1]);
  unlink(argv[1]);
  if (ls < 0 || bind(ls, (struct sockaddr *)&addr, sizeof(addr)) < 0 || listen(ls, 1) < 0) {
    perror("listen");
    return 1;
  }
  struct pollfd p = {.fd = ls, .events = POLLIN};
  if (poll(&p, 1, 30000) != 1) {
    fprintf(stderr, "seccomp-listener: nobody connected\n");
    return 1;
  }
  int conn = accept(ls, NULL, NULL);
  char state[65536];
  union {
    char buf[CMSG_SPACE(sizeof(int) * 4)];
    struct cmsghdr align;
  } control;
  struct iovec iov = {.iov_base = state, .iov_len = sizeof(state) - 1};
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                       .msg_controllen = sizeof(control.buf)};
  ssize_t n = recvmsg(conn, &msg, 0);
  if (n < 0) {
    perror("recvmsg");
    return 1;
  }
  state[n] = '\0';
  printf("state %s\n", state);
  int fd = -1;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
      memcpy(&fd, CMSG_DATA(c), sizeof(int));
  }
  if (fd < 0) {
    fprintf(stderr, "seccomp-listener: no fd received\n");
    return 1;
  }
  for (;;) {
    struct pollfd q = {.fd = fd, .events = POLLIN};
    if (poll(&q, 1, 30000) != 1 || (q.revents & (POLLHUP | POLLERR)))
      return 0;
    struct seccomp_notif req;
    memset(&req, 0, sizeof(req));
    if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
      return errno == ENOENT ? 0 : 1;
    printf("notif %d\n", req.data.nr);
    struct seccomp_notif_resp resp = {.id = req.id, .error = -77};
    ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
  }
}
