/* ptyrun CMD ARGS… — run CMD with a new pty as its controlling terminal and stdio (what an
 * interactive shell gives `codemode run` with terminal: true), copy every byte that comes out of
 * the pty, unchanged, to our stdout, and exit with CMD's status (128 + N when killed by N).
 * Used by tests/integration/console.bats to compare a runtime's bytes with runc's. Input: none
 * (the pty's input side stays open and empty). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: ptyrun CMD ARGS...\n");
    return 2;
  }
  int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0) {
    perror("ptyrun: posix_openpt");
    return 2;
  }
  const char *slave_name = ptsname(master);
  struct winsize ws = {.ws_row = 24, .ws_col = 80};
  ioctl(master, TIOCSWINSZ, &ws);
  pid_t pid = fork();
  if (pid < 0) {
    perror("ptyrun: fork");
    return 2;
  }
  if (pid == 0) {
    setsid();
    int slave = open(slave_name, O_RDWR);
    if (slave < 0 || ioctl(slave, TIOCSCTTY, 0) < 0) {
      perror("ptyrun: slave");
      _exit(2);
    }
    dup2(slave, 0);
    dup2(slave, 1);
    dup2(slave, 2);
    if (slave > 2)
      close(slave);
    execvp(argv[1], argv + 1);
    perror("ptyrun: exec");
    _exit(127);
  }
  /* Until the child is gone and the pty has nothing more (EIO once no slave is open). */
  char buf[4096];
  for (;;) {
    struct pollfd p = {.fd = master, .events = POLLIN};
    int r = poll(&p, 1, 30000);
    if (r <= 0)
      break;
    ssize_t n = read(master, buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    if (write(1, buf, (size_t)n) != n)
      break;
  }
  int status;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
