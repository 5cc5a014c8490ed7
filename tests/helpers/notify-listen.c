/* notify-listen SOCKET [SECONDS] — what systemd does for Type=notify: bind a unix datagram
 * socket at SOCKET and print every datagram it receives, one "msg <text>" line per line of it
 * (so "READY=1\nMAINPID=42" gives two), until SECONDS (default 20) pass without one. */
#define _GNU_SOURCE
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: notify-listen SOCKET [SECONDS]\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  int timeout = argc > 2 ? atoi(argv[2]) : 20;
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", argv[1]);
  unlink(argv[1]);
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
    perror("notify-listen: bind");
    return 1;
  }
  for (;;) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, timeout * 1000) != 1)
      return 0;
    char buf[4097];
    ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);
    if (n < 0)
      return 1;
    buf[n] = '\0';
    for (char *save = NULL, *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
      printf("msg %s\n", line);
  }
}
