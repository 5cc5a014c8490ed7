/* process.terminal, runtime side: hand the pty master to --console-socket, and the terminal
 * plumbing a foreground `run` needs (raw mode, window size). */
#include "linux/console.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/sync.h"

/* sun_path holds 108 bytes; a longer socket path is reached through an O_PATH fd on its
 * directory (/proc/self/fd/N/name), so deep state directories still work. */
static int connect_unix(int sock, const char *path, struct cm_error **err) {
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  cleanup_close int dirfd = -1;
  if (strlen(path) < sizeof(addr.sun_path)) {
    strcpy(addr.sun_path, path);
  } else {
    cleanup_free char *dir_copy = strdup(path);
    cleanup_free char *base_copy = strdup(path);
    if (!dir_copy || !base_copy)
      return cm_error_set(err, ENOMEM, "console socket %s", path);
    dirfd = open(dirname(dir_copy), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0)
      return cm_error_set(err, errno, "console socket %s: open its directory", path);
    int n = snprintf(addr.sun_path, sizeof(addr.sun_path), "/proc/self/fd/%d/%s", dirfd, basename(base_copy));
    if (n < 0 || (size_t)n >= sizeof(addr.sun_path))
      return cm_error_set(err, ENAMETOOLONG, "console socket %s", path);
  }
  int r;
  do
    r = connect(sock, (struct sockaddr *)&addr, sizeof(addr));
  while (r < 0 && errno == EINTR);
  if (r < 0)
    return cm_error_set(err, errno, "connect to console socket %s", path);
  return 0;
}

int console_socket_send(const char *socket_path, int master_fd, struct cm_error **err) {
  cleanup_close int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (sock < 0)
    return cm_error_set(err, errno, "console socket: socket");
  if (connect_unix(sock, socket_path, err) < 0)
    return -1;
  /* The shim reads only the SCM_RIGHTS fd; the payload is the name runc sends, for parity. */
  if (fd_send(sock, master_fd, "/dev/ptmx", err) < 0)
    return cm_error_prefix(err, "console socket %s", socket_path);
  return 0;
}

int console_set_raw(int fd, struct termios *saved, struct cm_error **err) {
  if (tcgetattr(fd, saved) < 0)
    return cm_error_set(err, errno, "terminal: get attributes of fd %d", fd);
  struct termios raw = *saved;
  cfmakeraw(&raw);
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
