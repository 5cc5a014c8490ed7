/* criu-peer: processes with the kernel state the CRIU cases of guest-criu.sh checkpoint (the
 * busybox rootfs has no flock and no unix sockets). Built static in the guest, bound into the
 * containers.
 *
 *   criu-peer lock FILE OUT    hold flock(LOCK_EX) on FILE, then count like the shell counters
 *   criu-peer dgram SOCK OUT   a SOCK_DGRAM unix socket connected to SOCK (outside the
 *                              container), each count also sent there
 *   criu-peer recv SOCK LOG    (outside) bind SOCK, append every datagram to LOG as a line
 *
 * The counting ones rewrite OUT every 0.2 s with "TOKEN N": TOKEN drawn from /dev/urandom at
 * start and held in memory only, so a restored process shows the checkpointed one's token and a
 * fresh start another. Every call gives up after 10 minutes: a lost process cannot outlive the
 * VM's boot by much. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static int die(const char *what) {
  fprintf(stderr, "criu-peer: %s: %s\n", what, strerror(errno));
  return 1;
}

static int unix_addr(const char *path, struct sockaddr_un *a) {
  memset(a, 0, sizeof(*a));
  a->sun_family = AF_UNIX;
  if (strlen(path) >= sizeof(a->sun_path)) {
    errno = ENAMETOOLONG;
    return -1;
  }
  strcpy(a->sun_path, path);
  return 0;
}

static void write_count(const char *out, unsigned long tok, unsigned long i, char *line, size_t cap) {
  int n = snprintf(line, cap, "%lu %lu\n", tok, i);
  char tmp[4096];
  snprintf(tmp, sizeof(tmp), "%s.tmp", out);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return;
  if (write(fd, line, (size_t)n) == n)
    rename(tmp, out);
  close(fd);
}

static int count(const char *out, int sock) {
  unsigned long tok = 0;
  int r = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (r < 0 || read(r, &tok, sizeof(tok)) != (ssize_t)sizeof(tok))
    return die("/dev/urandom");
  close(r);
  tok %= 1000000000UL;
  char line[64];
  for (unsigned long i = 1; i < 3000; i++) {
    write_count(out, tok, i, line, sizeof(line));
    /* After a restore the socket is CRIU's reconnected one: a failed send is the test's
     * business (the receiver's log stops growing), not a reason to stop counting. */
    if (sock >= 0)
      (void)send(sock, line, strlen(line), MSG_NOSIGNAL | MSG_DONTWAIT);
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return 0;
}

int main(int argc, char **argv) {
  alarm(600);
  if (argc != 4) {
    fprintf(stderr, "usage: criu-peer lock FILE OUT | dgram SOCK OUT | recv SOCK LOG\n");
    return 2;
  }
  struct sockaddr_un a;
  if (strcmp(argv[1], "lock") == 0) {
    int fd = open(argv[2], O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 || flock(fd, LOCK_EX) < 0)
      return die(argv[2]);
    return count(argv[3], -1);
  }
  if (strcmp(argv[1], "dgram") == 0) {
    int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0 || unix_addr(argv[2], &a) < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)) < 0)
      return die(argv[2]);
    return count(argv[3], s);
  }
  if (strcmp(argv[1], "recv") == 0) {
    int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    unlink(argv[2]);
    if (s < 0 || unix_addr(argv[2], &a) < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) < 0)
      return die(argv[2]);
    FILE *log = fopen(argv[3], "a");
    if (log == NULL)
      return die(argv[3]);
    char buf[256];
    for (;;) {
      ssize_t n = recv(s, buf, sizeof(buf) - 1, 0);
      if (n < 0) {
        if (errno == EINTR)
          continue;
        return die("recv");
      }
      buf[n] = '\0';
      fputs(buf, log);
      if (n == 0 || buf[n - 1] != '\n')
        fputc('\n', log);
      fflush(log);
    }
  }
  fprintf(stderr, "criu-peer: unknown mode \"%s\"\n", argv[1]);
  return 2;
}
