/* process.terminal, runtime side: hand the pty master to --console-socket, and the terminal
 * plumbing a foreground `run` needs (raw mode, window size). */
#include "linux/console.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/sync.h"

int console_socket_send(const char *socket_path, int master_fd, struct cm_error **err) {
  /* The shim reads only the SCM_RIGHTS fd; the payload is the name runc sends, for parity. */
  if (unix_path_send_fd(socket_path, master_fd, "/dev/ptmx", err) < 0)
    return cm_error_prefix(err, "console socket %s", socket_path);
  return 0;
}

int console_clear_onlcr(int pty_fd, struct cm_error **err) {
  struct termios t;
  if (tcgetattr(pty_fd, &t) == 0 && (t.c_oflag & ONLCR)) {
    t.c_oflag &= ~(tcflag_t)ONLCR;
    if (tcsetattr(pty_fd, TCSANOW, &t) < 0)
      return cm_error_set(err, errno, "terminal: clear ONLCR on the container's pty");
  }
  return 0;
}

int console_route_master(const char *console_socket, int master_fd, int *keep, struct cm_error **err) {
  if (master_fd < 0)
    return cm_error_set(err, EPROTO, "console: no fd received");
  if (console_socket) {
    int r = console_socket_send(console_socket, master_fd, err);
    close(master_fd);
    return r < 0 ? cm_error_prefix(err, "--console-socket %s", console_socket) : 0;
  }
  /* We proxy the terminal ourselves (foreground run/exec): the container's pty must not turn
   * \n into \r\n, or output redirected to a file or pipe gets CRs the program never wrote
   * (runc clears ONLCR on the master it keeps too; a host terminal adds its own). */
  if (console_clear_onlcr(master_fd, err) < 0) {
    close(master_fd);
    return -1;
  }
  if (*keep >= 0)
    close(*keep);
  *keep = master_fd;
  return 0;
}

int console_host_open(const char *what, struct cm_error **err) {
  static const int std_fds[] = {STDERR_FILENO, STDOUT_FILENO, STDIN_FILENO};
  for (size_t i = 0; i < sizeof(std_fds) / sizeof(std_fds[0]); i++) {
    if (!isatty(std_fds[i]))
      continue;
    int fd = fcntl(std_fds[i], F_DUPFD_CLOEXEC, 3);
    return fd < 0 ? cm_error_set(err, errno, "terminal: dup fd %d", std_fds[i]) : fd;
  }
  int fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    return cm_error_set(err, 0,
                        "%s asks for a terminal, but stdin, stdout and stderr are not terminals and there is no "
                        "controlling terminal (/dev/tty: %s): run it from a terminal, pass --console-socket, "
                        "or do without the terminal",
                        what, strerror(errno));
  return fd;
}

int console_set_raw(int fd, struct termios *saved, struct cm_error **err) {
  if (tcgetattr(fd, saved) < 0)
    return cm_error_set(err, errno, "terminal: get attributes of fd %d", fd);
  struct termios raw = *saved;
  cfmakeraw(&raw);
  /* Raw for input only: the host terminal keeps its output processing (each \n becomes \r\n
   * there, once), since the container's pty no longer adds CRs (console_route_master), as
   * runc leaves it. */
  raw.c_oflag = saved->c_oflag;
  if (tcsetattr(fd, TCSANOW, &raw) < 0)
    return cm_error_set(err, errno, "terminal: set raw mode on fd %d", fd);
  return 0;
}

void console_restore(int fd, const struct termios *saved) {
  int saved_errno = errno;
  tcsetattr(fd, TCSANOW, saved);
  errno = saved_errno;
}

int console_copy_winsize(int from_fd, int to_fd) {
  struct winsize ws;
  if (ioctl(from_fd, TIOCGWINSZ, &ws) < 0)
    return -1;
  return ioctl(to_fd, TIOCSWINSZ, &ws) < 0 ? -1 : 0;
}
