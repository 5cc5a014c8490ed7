/* Resolving paths inside a root directory without ever leaving it.
 *
 * Every path here is interpreted as if `root_fd` were "/": absolute symlinks restart at root_fd,
 * ".." never climbs above it, and /proc magic links are refused. This is what keeps a hostile
 * rootfs (symlinked /dev, /proc, mount targets) from redirecting us onto host paths
 * (CVE-2021-30465, CVE-2025-31133/52565 classes). All returned fds are O_CLOEXEC. */
#ifndef CM_UTIL_SAFEPATH_H
#define CM_UTIL_SAFEPATH_H

#include "util/error.h"
#include <stdbool.h>
#include <sys/types.h>

/* Open `path` inside `root_fd` with openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS); falls back
 * to safepath_walk() when openat2 is unavailable. `flags` are open(2) flags (O_PATH, O_DIRECTORY,
 * O_RDONLY, O_NOFOLLOW for "do not follow a final symlink" …); O_CLOEXEC is always added.
 * O_CREAT is not supported. Errors leave errno set (ENOENT for a missing path). */
int safepath_open(int root_fd, const char *path, int flags, struct cm_error **err);

/* What safepath_walk() does with missing components. */
enum safepath_create {
  SAFEPATH_NO_CREATE, /* missing → ENOENT */
  SAFEPATH_MKDIR,     /* create every missing component as a directory */
  SAFEPATH_MKFILE,    /* create missing parents as directories, the last one as an empty file */
};

/* The portable resolver: walks `path` one component at a time with O_PATH|O_NOFOLLOW opens,
 * expanding symlinks itself (inside root, at most 40), creating missing components as asked
 * (`mode` for what it creates). A dangling symlink is followed inside the root and its target
 * created, as runc does. Returns an O_PATH fd of the final object. */
int safepath_walk(int root_fd, const char *path, enum safepath_create create, mode_t mode,
                  struct cm_error **err);

/* mkdir -p inside root; returns an O_PATH|O_DIRECTORY fd of the final directory. */
int safepath_mkdir_p(int root_fd, const char *path, mode_t mode, struct cm_error **err);

/* A mount target inside root: a directory (is_dir) or an empty regular file, created with its
 * parents if missing. An existing target of the other kind is returned as is (mounting onto it
 * then fails with a clear errno). Returns an O_PATH fd. */
int safepath_mount_target(int root_fd, const char *path, bool is_dir, struct cm_error **err);

/* "/proc/self/fd/N" for an fd, in the caller's buffer. */
const char *safepath_fd_path(int fd, char buf[static 32]);

/* Split an absolute-or-relative path into a malloc'd parent ("/" for a top-level entry) and a
 * pointer to the last component inside `path`. Returns NULL (errno EINVAL) for "/", "" or a last
 * component of "." or "..". */
char *safepath_split(const char *path, const char **base);

#endif
