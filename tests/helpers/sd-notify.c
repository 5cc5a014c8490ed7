/* sd-notify MESSAGE… — send each MESSAGE as one datagram to $NOTIFY_SOCKET (a path, or
 * "@name" for the abstract namespace), as sd_notify(3) does; prints "sent <message>" or the
 * error. Static, so tests can put it in a busybox rootfs. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv) {
  const char *path = getenv("NOTIFY_SOCKET");
  if (path == NULL || *path == '\0') {
    fprintf(stderr, "sd-notify: NOTIFY_SOCKET is not set\n");
    return 2;
  }
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  size_t len = strlen(path);
  if (len >= sizeof(addr.sun_path)) {
    fprintf(stderr, "sd-notify: NOTIFY_SOCKET too long\n");
    return 2;
  }
  memcpy(addr.sun_path, path, len);
  if (path[0] == '@')
    addr.sun_path[0] = '\0';
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  for (int i = 1; i < argc; i++) {
    if (sendto(fd, argv[i], strlen(argv[i]), 0, (struct sockaddr *)&addr,
               (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) < 0) {
      printf("sd-notify: %s: %s\n", argv[i], strerror(errno));
      return 1;
    }
    printf("sent %s\n", argv[i]);
  }
  return 0;
}
