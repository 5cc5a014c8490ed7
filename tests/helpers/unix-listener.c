/* unix-listener PATH SECONDS — a host service for tests: listen on the unix socket PATH, print
 * "CONNECTED" (flushed) for every connection, exit after SECONDS. The test then knows whether
 * anything inside a container reached it. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: unix-listener PATH SECONDS\n");
    return 2;
  }
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", argv[1]);
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 8) < 0) {
    perror(argv[1]);
    return 1;
  }
  printf("LISTENING\n");
  fflush(stdout);
  time_t end = time(NULL) + atoi(argv[2]);
  while (time(NULL) < end) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 200) == 1) {
      int c = accept(fd, NULL, NULL);
      if (c >= 0) {
        printf("CONNECTED\n");
        fflush(stdout);
        close(c);
      }
    }
  }
  unlink(argv[1]);
  return 0;
}
