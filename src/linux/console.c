/* process.terminal, container side: allocate a pty in the container's own devpts instance and
 * make it the process's controlling terminal, stdio and /dev/console. */
#include "linux/console.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include "util/cleanup.h"

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

/* The slave must belong to the devpts mounted at the container's /dev/pts: a /dev/ptmx that is a
 * device node (the host's initial devpts instance) would hand out a host pty, invisible in the
 * container and leaking the host's pty namespace. */
static int check_slave_in_container_devpts(int slave, struct cm_error **err) {
  struct statfs sfs;
  if (fstatfs(slave, &sfs) < 0)
    return cm_error_set(err, errno, "console: fstatfs pty slave");
  if (sfs.f_type != DEVPTS_SUPER_MAGIC)
    return cm_error_set(err, 0, "console: pty slave is not on a devpts filesystem");
  struct stat slave_st, pts_st;
  if (fstat(slave, &slave_st) < 0)
    return cm_error_set(err, errno, "console: fstat pty slave");
  if (stat("/dev/pts", &pts_st) < 0)
    return cm_error_set(err, errno, "console: stat /dev/pts");
  if (slave_st.st_dev != pts_st.st_dev)
    return cm_error_set(err, 0,
                        "console: /dev/ptmx does not belong to the devpts mounted at /dev/pts "
                        "(mount devpts with newinstance and make /dev/ptmx a symlink to pts/ptmx)");
  return 0;
}

/* Open /dev/console inside the root without following any symlink, as an O_PATH fd in *fd_out
 * (-1 when the container has none). */
static int open_console_target(int *fd_out, struct cm_error **err) {
  *fd_out = -1;
  cleanup_close int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0)
    return cm_error_set(err, errno, "console: open /");
  /* No symlinks anywhere on the path: a /dev/console (or /dev) that points elsewhere would make us
   * mount the pty over an arbitrary file (CVE-2025-52565 class). */
  struct open_how how = {
      .flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
      .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
  };
  int fd = (int)syscall(SYS_openat2, root, "dev/console", &how, sizeof(how));
  if (fd < 0) {
    if (errno == ENOENT)
      return 0;
    if (errno == ELOOP)
      return cm_error_set(err, ELOOP, "console: /dev (or a parent) is a symlink; refusing to mount over /dev/console");
    return cm_error_set(err, errno, "console: open /dev/console");
  }
  struct stat st;
  if (fstat(fd, &st) < 0) {
    int e = errno;
    close(fd);
    return cm_error_set(err, e, "console: fstat /dev/console");
  }
  if (S_ISLNK(st.st_mode)) { /* O_PATH|O_NOFOLLOW hands back the link itself */
    close(fd);
    return cm_error_set(err, ELOOP, "console: /dev/console is a symlink; refusing to mount over it");
  }
  if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode)) {
    close(fd);
    return cm_error_set(err, 0, "console: /dev/console is neither a regular file nor a character device (mode %o)",
                        st.st_mode & S_IFMT);
  }
  *fd_out = fd;
  return 0;
}

/* Bind the slave (by fd, never by its /dev/pts/N path, which could be swapped for a symlink)
 * over the /dev/console target fd. */
static int bind_slave_over(int slave, int target, struct cm_error **err) {
  cleanup_close int tree = open_tree(slave, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
  if (tree >= 0) {
    if (move_mount(tree, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
      return cm_error_set(err, errno, "console: bind pty over /dev/console (move_mount)");
    return 0;
  }
  if (errno != ENOSYS)
    return cm_error_set(err, errno, "console: bind pty over /dev/console (open_tree)");
  /* Kernels before 5.2: mount(2) through the fds' /proc magic links still avoids path lookups. */
  char src[64], dst[64];
  snprintf(src, sizeof(src), "/proc/self/fd/%d", slave);
  snprintf(dst, sizeof(dst), "/proc/self/fd/%d", target);
  if (mount(src, dst, NULL, MS_BIND, NULL) < 0)
    return cm_error_set(err, errno, "console: bind pty over /dev/console");
  return 0;
}

/* If stdio was closed, a new fd may land on 0..2 and be clobbered by the dup2s below. */
static int move_above_stdio(int *fd) {
  if (*fd > 2)
    return 0;
  int moved = fcntl(*fd, F_DUPFD_CLOEXEC, 3);
  if (moved < 0)
    return -1;
  close(*fd);
  *fd = moved;
  return 0;
}

static int console_setup_common(const struct spec_process *p, bool bind_console, struct cm_error **err) {
  cleanup_close int master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0 || move_above_stdio(&master) < 0)
    return cm_error_set(err, errno, "console: open /dev/ptmx");
  int unlock = 0;
  if (ioctl(master, TIOCSPTLCK, &unlock) < 0)
    return cm_error_set(err, errno, "console: unlock pty (is /dev/ptmx a pty multiplexer?)");
  /* TIOCGPTPEER opens the slave from the master itself: no path lookup that a symlink could
   * redirect (CVE-2025-52565 class). */
  cleanup_close int slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (slave < 0 || move_above_stdio(&slave) < 0)
    return cm_error_set(err, errno, "console: open pty slave (TIOCGPTPEER)");
  if (check_slave_in_container_devpts(slave, err) < 0)
    return -1;

  if (p->has_console_size) {
    struct winsize ws = {.ws_row = (unsigned short)p->console_height, .ws_col = (unsigned short)p->console_width};
    if (ioctl(master, TIOCSWINSZ, &ws) < 0)
      return cm_error_set(err, errno, "console: set window size %ux%u", p->console_width, p->console_height);
  }
  /* /dev/console first: a failure here leaves our stdio and session untouched. */
  cleanup_close int console = -1;
  if (bind_console && open_console_target(&console, err) < 0)
    return -1;
  if (console >= 0 && bind_slave_over(slave, console, err) < 0)
    return -1;
  if (ioctl(slave, TIOCSCTTY, 0) < 0)
    return cm_error_set(err, errno, "console: make the pty the controlling terminal (TIOCSCTTY)");
  /* dup2 clears CLOEXEC on 0..2 (slave > 2, see move_above_stdio), so stdio survives execve. */
  for (int target = 0; target <= 2; target++)
    if (dup2(slave, target) < 0)
      return cm_error_set(err, errno, "console: dup pty slave onto fd %d", target);
  return cm_steal_fd(&master);
}

int console_setup(const struct spec_process *p, struct cm_error **err) {
  return console_setup_common(p, true, err);
}

int console_setup_exec(const struct spec_process *p, struct cm_error **err) {
  return console_setup_common(p, false, err);
}
