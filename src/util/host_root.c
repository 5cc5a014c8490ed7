/* Root of the host's user namespace, or not (host_root.h). */
#include "util/host_root.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int cached = -1;

static bool initial_userns(void) {
  int fd = open("/proc/self/uid_map", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return true; /* no /proc: nothing says otherwise, and geteuid() decided already */
  char buf[128];
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0)
    return true;
  buf[n] = '\0';
  unsigned long inside, outside, count;
  char tail;
  /* One line mapping every id to itself, and nothing after it. */
  return sscanf(buf, " %lu %lu %lu %c", &inside, &outside, &count, &tail) == 3 && inside == 0 && outside == 0 &&
         count == 4294967295UL;
}

bool cm_host_root(void) {
  if (geteuid() != 0)
    return false;
  if (cached < 0)
    cached = initial_userns();
  return cached == 1;
}

void cm_host_root_forget(void) {
  cached = -1;
}

unsigned cm_host_uid(void) {
  unsigned self = (unsigned)geteuid();
  FILE *f = fopen("/proc/self/uid_map", "re");
  if (f == NULL)
    return self;
  unsigned long inside, outside, count;
  unsigned found = self;
  while (fscanf(f, "%lu %lu %lu", &inside, &outside, &count) == 3)
    if (self >= inside && self - inside < count) {
      found = (unsigned)(outside + (self - inside));
      break;
    }
  fclose(f);
  return found;
}
