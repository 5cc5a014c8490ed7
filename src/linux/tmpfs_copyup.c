/* A tmpfs over a directory the rootfs already has: it takes that directory's mode (setuid,
 * setgid and sticky bits included) and, with the "tmpcopyup" option (runc's and crun's
 * extension, which podman uses), a copy of its content. As runc 1.1.5 does, the mode wins over a
 * mode= option, and the copy keeps each entry's mode and owner.
 *
 * The directory belongs to the image, so to the container: it is walked only through fds, never
 * following a symlink (each is copied as a symlink), and nothing that is not a file, directory,
 * symlink or special node is opened (a fifo would block us). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "linux/rootfs_internal.h"
#include "util/cleanup.h"
#include "util/file_copy.h"

#define MAX_DEPTH 128

static int copy_file(int src_dir, int dst_dir, const char *name, const struct stat *st, const char *path,
                     struct cm_error **err) {
  cleanup_close int in = openat(src_dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (in < 0)
    return cm_error_set(err, errno, "tmpcopyup: open %s", path);
  cleanup_close int out = openat(dst_dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (out < 0)
    return cm_error_set(err, errno, "tmpcopyup: create %s", path);
  if (file_copy_bytes(out, in, st->st_size) < 0)
    return cm_error_set(err, errno, "tmpcopyup: copy %s", path);
  if (fchown(out, st->st_uid, st->st_gid) < 0 || fchmod(out, st->st_mode & 07777) < 0)
    return cm_error_set(err, errno, "tmpcopyup: owner and mode of %s", path);
  return 0;
}

static int copy_dir(int src_dir, int dst_dir, const char *path, int depth, struct cm_error **err);

static int copy_entry(int src_dir, int dst_dir, const char *name, const char *parent, int depth,
                      struct cm_error **err) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/%s", parent, name);
  struct stat st;
  if (fstatat(src_dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
    return errno == ENOENT ? 0 : cm_error_set(err, errno, "tmpcopyup: stat %s", path);
  switch (st.st_mode & S_IFMT) {
  case S_IFREG: return copy_file(src_dir, dst_dir, name, &st, path, err);
  case S_IFDIR: {
    if (mkdirat(dst_dir, name, 0700) < 0)
      return cm_error_set(err, errno, "tmpcopyup: mkdir %s", path);
    cleanup_close int sub_src = openat(src_dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    cleanup_close int sub_dst = openat(dst_dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub_src < 0 || sub_dst < 0)
      return cm_error_set(err, errno, "tmpcopyup: open %s", path);
    if (copy_dir(sub_src, sub_dst, path, depth + 1, err) < 0)
      return -1;
    if (fchown(sub_dst, st.st_uid, st.st_gid) < 0 || fchmod(sub_dst, st.st_mode & 07777) < 0)
      return cm_error_set(err, errno, "tmpcopyup: owner and mode of %s", path);
    return 0;
  }
  case S_IFLNK: {
    char target[4096];
    ssize_t n = readlinkat(src_dir, name, target, sizeof(target) - 1);
    if (n < 0)
      return cm_error_set(err, errno, "tmpcopyup: readlink %s", path);
    target[n] = '\0';
    if (symlinkat(target, dst_dir, name) < 0 ||
        fchownat(dst_dir, name, st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW) < 0)
      return cm_error_set(err, errno, "tmpcopyup: symlink %s", path);
    return 0;
  }
  default: /* device nodes, fifos, sockets: made anew, never opened */
    if (mknodat(dst_dir, name, st.st_mode, st.st_rdev) < 0 ||
        fchownat(dst_dir, name, st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW) < 0)
      return cm_error_set(err, errno, "tmpcopyup: mknod %s", path);
    return 0;
  }
}

static int copy_dir(int src_dir, int dst_dir, const char *path, int depth, struct cm_error **err) {
  if (depth > MAX_DEPTH)
    return cm_error_set(err, ELOOP, "tmpcopyup: %s is nested more than %d levels deep", path, MAX_DEPTH);
  int list_fd = openat(src_dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *dir = list_fd < 0 ? NULL : fdopendir(list_fd);
  if (dir == NULL) {
    int e = errno;
    if (list_fd >= 0)
      close(list_fd);
    return cm_error_set(err, e, "tmpcopyup: list %s", path);
  }
  int rc = 0;
  struct dirent *de;
  while (rc == 0 && (de = readdir(dir)) != NULL) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    rc = copy_entry(src_dir, dst_dir, de->d_name, path, depth, err);
  }
  closedir(dir);
  return rc;
}

int tmpfs_take_over_dir(int old_dir_fd, int mnt_fd, bool copy_up, const char *dest, struct cm_error **err) {
  struct stat st;
  if (fstat(old_dir_fd, &st) < 0)
    return cm_error_set(err, errno, "stat %s", dest);
  if (!S_ISDIR(st.st_mode))
    return copy_up ? cm_error_set(err, ENOTDIR, "tmpcopyup: %s is not a directory", dest) : 0;
  cleanup_close int root = openat(mnt_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root < 0)
    return cm_error_set(err, errno, "open the new tmpfs");
  if (copy_up && copy_dir(old_dir_fd, root, dest, 0, err) < 0)
    return -1;
  if (fchmod(root, st.st_mode & 07777) < 0)
    return cm_error_set(err, errno, "keep the mode of %s", dest);
  return 0;
}
