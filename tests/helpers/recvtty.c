/* recvtty: the test suite's --console-socket receiver.
 *
 *   recvtty [-i INPUT] SOCKET
 *
 * Listens on the unix socket SOCKET, accepts one connection, takes the pty master the runtime
 * sends with SCM_RIGHTS, optionally writes INPUT to it, then copies everything the container
 * prints to stdout until the terminal closes. Exits 0 on a clean end, 1 on any error, and gives
 * up after 60 seconds so a broken runtime can never hang the suite. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int fail(const char *what) {
  fprintf(stderr, "recvtty: %s: %s\n", what, strerror(errno));
  return 1;
}

static int receive_fd(int conn) {
  char byte;
  struct iovec iov = {.iov_base = &byte, .iov_len = 1};
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } control;
  struct msghdr msg = {.msg_iov = &iov,
                       .msg_iovlen = 1,
                       .msg_control = control.buf,
                       .msg_controllen = sizeof(control.buf)};
  if (recvmsg(conn, &msg, MSG_CMSG_CLOEXEC) < 0)
    return -1;
  struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
  if (c == NULL || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
    errno = EBADMSG;
    return -1;
  }
  int fd;
  memcpy(&fd, CMSG_DATA(c), sizeof(fd));
  return fd;
}

int main(int argc, char **argv) {
  const char *input = NULL;
  int opt;
  while ((opt = getopt(argc, argv, "i:")) != -1) {
    if (opt == 'i')
      input = optarg;
    else
      return 2;
  }
  if (optind != argc - 1) {
    fprintf(stderr, "usage: recvtty [-i INPUT] SOCKET\n");
    return 2;
  }
  const char *path = argv[optind];
  alarm(60);

  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  char tmp[sizeof(addr.sun_path)];
  if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp)) {
    errno = ENAMETOOLONG;
    return fail(path);
  }
  memcpy(addr.sun_path, tmp, strlen(tmp) + 1);
  int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0)
    return fail("socket");
  unlink(tmp);
  if (bind(listener, (struct sockaddr *)&addr, sizeof(addr)) < 0)
    return fail("bind");
  if (listen(listener, 1) < 0)
    return fail("listen");
  /* Appear under the final name only once listening, so a waiting test never races us. */
  if (rename(tmp, path) < 0)
    return fail("rename");

  int conn = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
  if (conn < 0)
    return fail("accept");
  int master = receive_fd(conn);
  if (master < 0)
    return fail("recvmsg");
  close(conn);
  close(listener);
  unlink(path);
  if (!isatty(master)) {
    fprintf(stderr, "recvtty: received fd is not a terminal\n");
    return 1;
  }
  if (input != NULL && write(master, input, strlen(input)) < 0)
    return fail("write");

  char buf[4096];
  for (;;) {
    ssize_t n = read(master, buf, sizeof(buf));
    if (n == 0 || (n < 0 && errno == EIO)) /* EIO: every slave fd is closed */
      return 0;
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return fail("read");
    }
    if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n)
      return fail("write stdout");
    fflush(stdout);
  }
}
