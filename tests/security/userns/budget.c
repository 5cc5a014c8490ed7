/* Per-uid kernel budgets, for tests/security/userns.bats.
 *
 *   budget MARKER inotify|mqueue|ptys   inside a container: take instances until the kernel says
 *                                       no, print "exhausted KIND after N: REASON", then hold them
 *                                       until stdin closes (refuses to run without /MARKER: only
 *                                       its test bundle has it)
 *   budget host inotify|mqueue|ptys     on the host, as root: take one, print "host KIND: ok" or
 *                                       "host KIND: REASON" (harmless, so no marker)
 *   budget MARKER creat-setuid PATH     inside a container: open(PATH, O_CREAT, 04755), print
 *                                       "creat-setuid: ok" or the reason
 * Bounded: at most 10000 of anything. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

static int take(const char *kind, int i) {
  if (strcmp(kind, "inotify") == 0)
    return inotify_init1(IN_CLOEXEC);
  if (strcmp(kind, "mqueue") == 0) {
    char name[64];
    snprintf(name, sizeof(name), "/cm-budget-%d-%d", (int)getpid(), i);
    mqd_t q = mq_open(name, O_CREAT | O_EXCL | O_RDWR, 0600, NULL);
    if (q != (mqd_t)-1)
      mq_unlink(name); /* the queue lives while it is open */
    return (int)q;
  }
  if (strcmp(kind, "ptys") == 0) {
    int fd = posix_openpt(O_RDWR | O_NOCTTY);
    if (fd >= 0 && unlockpt(fd) < 0) {
      close(fd);
      return -1;
    }
    return fd;
  }
  errno = EINVAL;
  return -1;
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[2], "creat-setuid") == 0) {
    char marker[256];
    snprintf(marker, sizeof(marker), "/%s", argv[1]);
    if (strchr(argv[1], '/') || access(marker, F_OK) != 0)
      return 2;
    int fd = open(argv[3], O_CREAT | O_WRONLY | O_CLOEXEC, 04755);
    printf("creat-setuid: %s\n", fd < 0 ? strerror(errno) : "ok");
    return 0;
  }
  if (argc != 3) {
    fprintf(stderr, "usage: budget MARKER|host inotify|mqueue|ptys\n");
    return 2;
  }
  const char *kind = argv[2];
  if (strcmp(argv[1], "host") == 0) {
    int fd = take(kind, 0);
    if (fd < 0)
      printf("host %s: %s\n", kind, strerror(errno));
    else
      printf("host %s: ok\n", kind);
    return fd < 0;
  }
  char marker[256];
  snprintf(marker, sizeof(marker), "/%s", argv[1]);
  if (strchr(argv[1], '/') || access(marker, F_OK) != 0) {
    fprintf(stderr, "budget: refusing: %s is not here (not the test bundle)\n", marker);
    return 2;
  }
  int n = 0;
  for (; n < 10000; n++)
    if (take(kind, n) < 0)
      break;
  printf("exhausted %s after %d: %s\n", kind, n, n < 10000 ? strerror(errno) : "limit of the test");
  fflush(stdout);
  char c;
  while (read(STDIN_FILENO, &c, 1) > 0)
    ;
  return 0;
}
