/* tests/security/landlock.bats: one file-system, signal, socket or TCP operation per argument
 * list, run inside a container under Landlock. Prints "<op>: ok" or "<op>: <ERRNO NAME>" per
 * operation and always exits 0 (the test reads the words). Static, so it runs in any rootfs.
 * It only touches paths and processes it is given, and refuses to run without the marker file
 * only its test bundle has (the -DPROBE_HOST copy, which the test runs on the host to listen on
 * an abstract socket, has no such check).
 *
 *   read PATH | write PATH | create PATH | truncate PATH | mkdir PATH | unlink PATH
 *   rename FROM TO | link FROM TO | ioctl PATH (TCGETS on an open device)
 *   kill PID (signal 0) | abstract-listen NAME SECONDS | abstract-connect NAME
 *   abstract-serve NAME SECONDS (listen in the foreground: the host side)
 *   tcp-listen PORT SECONDS | tcp-connect PORT (127.0.0.1)
 *   exec PATH ARGS… (the rest of the line: execve, to check that rules survive it)
 * Operations follow each other on one command line: `probe read /a write /b`. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

static void report(const char *op, int rc) {
  if (rc == 0)
    printf("%s: ok\n", op);
  else
    printf("%s: %s\n", op, strerrorname_np(errno) ? strerrorname_np(errno) : "E?");
  fflush(stdout);
}

static int do_read(const char *p) {
  int fd = open(p, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  char buf[64];
  ssize_t n = read(fd, buf, sizeof(buf));
  int e = errno;
  close(fd);
  errno = e;
  return n < 0 ? -1 : 0;
}

static int do_write(const char *p, int flags) {
  int fd = open(p, O_WRONLY | O_CLOEXEC | flags, 0644);
  if (fd < 0)
    return -1;
  ssize_t n = write(fd, "landlock\n", 9);
  int e = errno;
  close(fd);
  errno = e;
  return n < 0 ? -1 : 0;
}

static int do_ioctl(const char *p) {
  int fd = open(p, O_RDWR | O_CLOEXEC);
  if (fd < 0)
    return -1;
  struct termios t;
  int r = ioctl(fd, TCGETS, &t);
  int e = errno;
  close(fd);
  errno = e;
  return r;
}

static socklen_t abstract_addr(struct sockaddr_un *a, const char *name) {
  memset(a, 0, sizeof(*a));
  a->sun_family = AF_UNIX;
  size_t n = strlen(name);
  if (n > sizeof(a->sun_path) - 2)
    n = sizeof(a->sun_path) - 2;
  memcpy(a->sun_path + 1, name, n); /* sun_path[0] == '\0': the abstract namespace */
  return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

/* Listen in a child that stays SECONDS (the caller goes on with its next operations), or, with
 * `foreground`, in this process until then. */
static int do_listen(int domain, const struct sockaddr *a, socklen_t len, int seconds, int foreground) {
  int s = socket(domain, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0)
    return -1;
  int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(s, a, len) < 0 || listen(s, 8) < 0) {
    int e = errno;
    close(s);
    errno = e;
    return -1;
  }
  pid_t pid = foreground ? 0 : fork();
  if (pid == 0) {
    alarm((unsigned)seconds);
    for (;;) {
      int c = accept(s, NULL, NULL);
      if (c >= 0)
        close(c);
    }
  }
  close(s);
  return pid < 0 ? -1 : 0;
}

static int do_connect(int domain, const struct sockaddr *a, socklen_t len) {
  int s = socket(domain, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0)
    return -1;
  int r = connect(s, a, len);
  int e = errno;
  close(s);
  errno = e;
  return r;
}

static struct sockaddr_in loopback(const char *port) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(port))};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

int main(int argc, char **argv) {
#ifndef PROBE_HOST /* the host-side copy only listens and sleeps for the container to reach */
  if (access("/.codemode-landlock-marker", F_OK) != 0) {
    fprintf(stderr, "probe: refusing to run outside the landlock test bundle\n");
    return 2;
  }
#endif
  for (int i = 1; i < argc;) {
    const char *op = argv[i];
    const char *a = i + 1 < argc ? argv[i + 1] : "";
    const char *b = i + 2 < argc ? argv[i + 2] : "";
    char label[512];
    snprintf(label, sizeof(label), "%s %s", op, a);
    int rc, used = 2;
    struct sockaddr_un un;
    struct sockaddr_in in;
    if (strcmp(op, "read") == 0) {
      rc = do_read(a);
    } else if (strcmp(op, "write") == 0) {
      rc = do_write(a, 0);
    } else if (strcmp(op, "create") == 0) {
      rc = do_write(a, O_CREAT | O_EXCL);
    } else if (strcmp(op, "truncate") == 0) {
      rc = truncate(a, 0);
    } else if (strcmp(op, "mkdir") == 0) {
      rc = mkdir(a, 0755);
    } else if (strcmp(op, "unlink") == 0) {
      rc = unlink(a);
    } else if (strcmp(op, "rename") == 0 || strcmp(op, "link") == 0) {
      snprintf(label, sizeof(label), "%s %s %s", op, a, b);
      rc = op[0] == 'r' ? rename(a, b) : link(a, b);
      used = 3;
    } else if (strcmp(op, "ioctl") == 0) {
      rc = do_ioctl(a);
    } else if (strcmp(op, "kill") == 0) {
      rc = kill(atoi(a), 0);
    } else if (strcmp(op, "abstract-listen") == 0 || strcmp(op, "abstract-serve") == 0) {
      socklen_t len = abstract_addr(&un, a);
      rc = do_listen(AF_UNIX, (struct sockaddr *)&un, len, atoi(b), op[9] == 's');
      used = 3;
    } else if (strcmp(op, "abstract-connect") == 0) {
      socklen_t len = abstract_addr(&un, a);
      rc = do_connect(AF_UNIX, (struct sockaddr *)&un, len);
    } else if (strcmp(op, "tcp-listen") == 0) {
      in = loopback(a);
      rc = do_listen(AF_INET, (struct sockaddr *)&in, sizeof(in), atoi(b), 0);
      used = 3;
    } else if (strcmp(op, "tcp-connect") == 0) {
      in = loopback(a);
      rc = do_connect(AF_INET, (struct sockaddr *)&in, sizeof(in));
    } else if (strcmp(op, "exec") == 0) {
      fflush(stdout);
      execv(a, &argv[i + 1]);
      report(label, -1);
      return 0;
    } else {
      fprintf(stderr, "probe: unknown operation %s\n", op);
      return 2;
    }
    report(label, rc);
    i += used;
  }
  return 0;
}
