/* linux.maskedPaths and linux.readonlyPaths, applied after pivot_root inside the container. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "linux/rootfs_internal.h"
#include "util/cleanup.h"
#include "util/log.h"
#include "util/safepath.h"

/* Open a listed path inside the root; 1 with *fd set, 0 when it does not exist (skipped, as the
 * spec allows), -1 on any other error. */
static int open_listed_path(int root_fd, const char *path, int *fd, struct cm_error **err) {
  struct cm_error *open_err = NULL;
  *fd = safepath_open(root_fd, path, O_PATH, &open_err);
  if (*fd >= 0)
    return 1;
  if (open_err && (open_err->errnum == ENOENT || open_err->errnum == ENOTDIR)) {
    cm_error_free(open_err);
    return 0;
  }
  if (err && !*err)
    *err = open_err;
  else
    cm_error_free(open_err);
  return -1;
}

/* The container's /dev/null, checked to be the real null device: a /dev/null swapped for a
 * symlink or a bind of some other file would turn "masking" into exposing that file
 * (CVE-2025-31133 class). */
static int open_dev_null(int root_fd, struct cm_error **err) {
  cleanup_close int fd = safepath_open(root_fd, "/dev/null", O_PATH | O_NOFOLLOW, err);
  if (fd < 0)
    return cm_error_prefix(err, "masking needs /dev/null");
  struct stat st;
  if (fstat(fd, &st) < 0)
    return cm_error_set(err, errno, "stat /dev/null");
  if (!S_ISCHR(st.st_mode) || st.st_rdev != makedev(1, 3))
    return cm_error_set(err, EINVAL, "/dev/null in the container is not the null device (1:3)");
  return cm_steal_fd(&fd);
}

int paths_mask(const struct spec_strv *paths, int root_fd, struct cm_error **err) {
  cleanup_close int null_fd = -1;
  /* The first directory mask, once attached: every later one is a clone of it (a bind of the
   * same empty read-only tmpfs, same flags) instead of a new tmpfs superblock each (~20 us). */
  cleanup_close int empty_dir_mnt = -1;
  for (size_t i = 0; i < paths->count; i++) {
    const char *path = paths->items[i];
    cleanup_close int target_fd = -1;
    int found = open_listed_path(root_fd, path, &target_fd, err);
    if (found < 0)
      return cm_error_prefix(err, "linux.maskedPaths[%zu]", i);
    if (!found)
      continue;
    struct stat st;
    if (fstat(target_fd, &st) < 0)
      return cm_error_set(err, errno, "linux.maskedPaths[%zu]: stat \"%s\"", i, path);
    cleanup_close int mnt_fd = -1;
    if (S_ISDIR(st.st_mode)) {
      /* An empty read-only tmpfs hides the directory's content. */
      if (empty_dir_mnt >= 0) {
        mnt_fd = mount_clone_tree(empty_dir_mnt, false, 0, 0, err);
      } else {
        mnt_fd = mount_new_fs("tmpfs", "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL, err);
        if (mnt_fd < 0 || mount_attach(mnt_fd, target_fd, err) < 0)
          return cm_error_prefix(err, "linux.maskedPaths[%zu] \"%s\"", i, path);
        empty_dir_mnt = cm_steal_fd(&mnt_fd);
        continue;
      }
    } else {
      if (null_fd < 0 && (null_fd = open_dev_null(root_fd, err)) < 0)
        return cm_error_prefix(err, "linux.maskedPaths[%zu] \"%s\"", i, path);
      mnt_fd = mount_clone_tree(null_fd, false, 0, 0, err);
    }
    if (mnt_fd < 0 || mount_attach(mnt_fd, target_fd, err) < 0)
      return cm_error_prefix(err, "linux.maskedPaths[%zu] \"%s\"", i, path);
  }
  return 0;
}

int paths_readonly(const struct spec_strv *paths, int root_fd, struct cm_error **err) {
  for (size_t i = 0; i < paths->count; i++) {
    const char *path = paths->items[i];
    cleanup_close int target_fd = -1;
    int found = open_listed_path(root_fd, path, &target_fd, err);
    if (found < 0)
      return cm_error_prefix(err, "linux.readonlyPaths[%zu]", i);
    if (!found)
      continue;
    /* A recursive bind of the path onto itself, read-only all the way down, so nothing mounted
     * below it stays writable. */
    cleanup_close int mnt_fd = mount_clone_tree(target_fd, true, 0, 0, err);
    if (mnt_fd < 0 || mount_set_readonly(mnt_fd, true, err) < 0 || mount_attach(mnt_fd, target_fd, err) < 0)
      return cm_error_prefix(err, "linux.readonlyPaths[%zu] \"%s\"", i, path);
  }
  return 0;
}
