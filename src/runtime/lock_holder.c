#include "runtime/lock_holder.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

pid_t flock_holder_pid(int fd) {
  struct stat st;
  if (fstat(fd, &st) < 0)
    return -1;
  FILE *f = fopen("/proc/locks", "re");
  if (f == NULL)
    return -1;
  /* "1: FLOCK  ADVISORY  WRITE 4242 08:01:1234 0 EOF"; waiters' lines have "->" after the
   * number and are skipped. */
  char line[256];
  pid_t holder = -1;
  while (holder < 0 && fgets(line, sizeof(line), f)) {
    char kind[16], mode[16], rw[16];
    int pid;
    unsigned int maj, min;
    unsigned long ino;
    if (sscanf(line, "%*d: %15s %15s %15s %d %x:%x:%lu", kind, mode, rw, &pid, &maj, &min, &ino) != 7)
      continue;
    if (strcmp(kind, "FLOCK") == 0 && strcmp(rw, "WRITE") == 0 && ino == (unsigned long)st.st_ino &&
        makedev(maj, min) == st.st_dev)
      holder = pid;
  }
  fclose(f);
  return holder;
}

bool pid_is_our_ancestor(pid_t pid) {
  pid_t p = getppid();
  for (int depth = 0; depth < 4096 && p > 0; depth++) {
    if (p == pid)
      return true;
    char path[32], buf[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)p);
    FILE *f = fopen(path, "re");
    if (f == NULL)
      return true;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* The command name may hold spaces and ')': the fields follow the last ')'. */
    char *close = strrchr(buf, ')');
    int ppid;
    if (close == NULL || sscanf(close + 1, " %*c %d", &ppid) != 1)
      return true;
    p = ppid;
  }
  return false;
}
