/* What the container process inherits from us: no fds beyond those asked for, and a cwd that
 * really lies inside the container root (CVE-2024-21626 class). */
#include "linux/fds.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "linux/security_attrs.h"
#include "util/cleanup.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* Fallback for kernels without close_range(CLOSE_RANGE_CLOEXEC) (< 5.11): walk the fd table
 * through a verified procfs, so a fake /proc cannot hide an fd from us. */
static int cloexec_by_listing(int first_fd, struct cm_error **err) {
  int dirfd = procfs_open("self/fd", O_RDONLY | O_DIRECTORY, err);
  if (dirfd < 0)
    return -1;
  DIR *dir = fdopendir(dirfd);
  if (dir == NULL) {
    close(dirfd);
    return cm_error_set(err, errno, "fdopendir /proc/self/fd");
  }
  int listing_fd = dirfd;
  struct dirent *de;
  int rc = 0;
  while ((de = readdir(dir)) != NULL) {
    if (de->d_name[0] == '.')
      continue;
    char *end;
    long fd = strtol(de->d_name, &end, 10);
    if (*end != '\0' || fd < first_fd || fd > INT_MAX || fd == listing_fd)
      continue;
    int flags = fcntl((int)fd, F_GETFD);
    if (flags < 0) {
      if (errno == EBADF)
        continue; /* closed meanwhile */
      rc = cm_error_set(err, errno, "fcntl(%ld, F_GETFD)", fd);
      break;
    }
    if (fcntl((int)fd, F_SETFD, flags | FD_CLOEXEC) < 0) {
      rc = cm_error_set(err, errno, "fcntl(%ld, F_SETFD)", fd);
      break;
    }
  }
  closedir(dir);
  return rc;
}

int fds_close_on_exec_from(int first_fd, struct cm_error **err) {
  if (first_fd < 0)
    return cm_error_set(err, EINVAL, "close-on-exec from fd %d", first_fd);
  /* Every runtime fd (state dir, host dirs, sockets) left open would be a way out of the
   * container for its process (CVE-2024-21626 class). */
  if (syscall(SYS_close_range, (unsigned)first_fd, ~0U, CLOSE_RANGE_CLOEXEC) == 0)
    return 0;
  /* ENOSYS/EINVAL: kernel < 5.11; anything else: a NOTIFY seccomp profile, loaded before us so
   * its listener could reach the runtime, that denies close_range with its own errno (ENXIO,
   * EPERM…). Either way the listing does the same job. */
  int e = errno;
  if (cloexec_by_listing(first_fd, err) < 0)
    return cm_error_prefix(err, "close_range(%d, ~0, CLOSE_RANGE_CLOEXEC) failed (%s), then", first_fd, strerror(e));
  return 0;
}

int fds_verify_cwd_inside_root(struct cm_error **err) {
  /* A cwd reached through a leaked host fd (/proc/self/fd/N) is outside our root: the kernel
   * then answers getcwd with ENOENT (glibc) or a path starting "(unreachable)". */
  cleanup_free char *cwd = getcwd(NULL, 0);
  if (cwd == NULL)
    return cm_error_set(err, errno, "current working directory is outside the container root");
  if (cwd[0] != '/' || strncmp(cwd, "(unreachable)", strlen("(unreachable)")) == 0)
    return cm_error_set(err, 0, "current working directory %s is outside the container root", cwd);
  return 0;
}

/* A host /dev/null (zero, full, random, urandom) handed to us as stdin, stdout or stderr — a
 * caller's `</dev/null`, a test suite's — is the host's node: a container root owns it (no user
 * namespace) and could chmod it, and with CAP_CHOWN chown it, for the whole machine. Give the
 * process the container's own node of the same device instead, opened the same way: the bytes
 * are the same, the inode is not the host's. */
int fds_localize_stdio_devices(struct cm_error **err) {
  static const char *const names[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"};
  static const unsigned minors[] = {3, 5, 7, 8, 9};
  for (int fd = 0; fd <= 2; fd++) {
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISCHR(st.st_mode) || major(st.st_rdev) != 1)
      continue;
    for (size_t i = 0; i < sizeof(minors) / sizeof(minors[0]); i++) {
      if (minor(st.st_rdev) != minors[i])
        continue;
      int fl = fcntl(fd, F_GETFL);
      /* The container's node, never through a symlink; a container without one keeps the fd. */
      cleanup_close int own =
          open(names[i], (fl & (O_ACCMODE | O_APPEND)) | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
      struct stat ost;
      if (fl < 0 || own < 0 || fstat(own, &ost) < 0 || !S_ISCHR(ost.st_mode) || ost.st_rdev != st.st_rdev)
        break;
      if (ost.st_dev == st.st_dev && ost.st_ino == st.st_ino)
        break; /* already the container's */
      if (dup2(own, fd) < 0)
        return cm_error_set(err, errno, "replace the host's %s on fd %d", names[i], fd);
      break;
    }
  }
  return 0;
}
