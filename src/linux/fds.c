/* What the container process inherits from us: no fds beyond those asked for, and a cwd that
 * really lies inside the container root (CVE-2024-21626 class). */
#include "linux/fds.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
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
  /* ENOSYS/EINVAL: kernel < 5.11; EPERM/EACCES: a seccomp profile (loaded earlier, without
   * no_new_privs) that predates close_range. */
  if (errno != ENOSYS && errno != EINVAL && errno != EPERM && errno != EACCES)
    return cm_error_set(err, errno, "close_range(%d, ~0, CLOSE_RANGE_CLOEXEC)", first_fd);
  return cloexec_by_listing(first_fd, err);
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
