/* seccomp-listener SOCKET — a minimal seccomp agent for tests/security/seccomp.bats.
 *
 * Listens on the unix socket SOCKET; for each connection from the runtime (the container's init,
 * then every exec'd process with a NOTIFY filter) reads the container process state (JSON) with
 * the notify fd (SCM_RIGHTS) and prints "state <json>". Answers every notification with errno 77
 * (EBADFD) and prints "notif <syscall nr> pid <pid>", until 30 seconds pass without anything. */
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

/* One connection: the container process state (printed as "state <json>") and its notify fd. */
static int receive_state(int ls) {
  int conn = accept(ls, NULL, NULL);
  char state[65536];
  union {
    char buf[CMSG_SPACE(sizeof(int) * 4)];
    struct cmsghdr align;
  } control;
  struct iovec iov = {.iov_base = state, .iov_len = sizeof(state) - 1};
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                       .msg_controllen = sizeof(control.buf)};
  ssize_t n = conn < 0 ? -1 : recvmsg(conn, &msg, 0);
  if (n < 0) {
    perror("recvmsg");
    return -1;
  }
  close(conn);
  state[n] = '\0';
  printf("state %s\n", state);
  int fd = -1;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
      memcpy(&fd, CMSG_DATA(c), sizeof(int));
  }
  if (fd < 0)
    fprintf(stderr, "seccomp-listener: no fd received\n");
  return fd;
}

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
  if (ls < 0 || bind(ls, (struct sockaddr *)&addr, sizeof(addr)) < 0 || listen(ls, 8) < 0) {
    perror("listen");
    return 1;
  }
  /* The listening socket, then one notify fd per connection (init's, then each exec'd
   * process's). */
  struct pollfd p[17] = {{.fd = ls, .events = POLLIN}};
  int n_fds = 1;
  for (;;) {
    int r = poll(p, (nfds_t)n_fds, 30000);
    if (r <= 0) {
      if (n_fds == 1)
        fprintf(stderr, "seccomp-listener: nobody connected\n");
      return n_fds == 1;
    }
    if ((p[0].revents & POLLIN) && n_fds < 17) {
      int fd = receive_state(ls);
      if (fd < 0)
        return 1;
      p[n_fds++] = (struct pollfd){.fd = fd, .events = POLLIN};
    }
    for (int i = 1; i < n_fds; i++) {
      if (p[i].revents & (POLLHUP | POLLERR)) {
        close(p[i].fd);
        p[i] = p[--n_fds];
        i--;
        continue;
      }
      if (!(p[i].revents & POLLIN))
        continue;
      struct seccomp_notif req;
      memset(&req, 0, sizeof(req));
      if (ioctl(p[i].fd, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
        continue; /* ENOENT: the process went away meanwhile */
      printf("notif %d pid %u\n", req.data.nr, req.pid);
      struct seccomp_notif_resp resp = {.id = req.id, .error = -77};
      ioctl(p[i].fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
    }
  }
}
