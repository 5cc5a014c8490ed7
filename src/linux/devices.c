/* /dev inside the rootfs: default devices, linux.devices, symlinks, ptmx, console placeholder.
 * Everything goes through fds resolved inside the rootfs, and an existing entry that is not what
 * we want (a symlink pointing out, say) is replaced inside, never followed
 * (CVE-2025-31133 / CVE-2025-52565 classes). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "linux/rootfs_internal.h"
#include "util/cleanup.h"
#include "util/log.h"
#include "util/safepath.h"

struct device_node {
  const char *path;
  char type; /* 'c', 'b', 'u', 'p' */
  unsigned major, minor;
  mode_t mode;
  uid_t uid;
  gid_t gid;
};

static const struct device_node default_devices[] = {
    {"/dev/null", 'c', 1, 3, 0666, 0, 0},    {"/dev/zero", 'c', 1, 5, 0666, 0, 0},
    {"/dev/full", 'c', 1, 7, 0666, 0, 0},    {"/dev/random", 'c', 1, 8, 0666, 0, 0},
    {"/dev/urandom", 'c', 1, 9, 0666, 0, 0}, {"/dev/tty", 'c', 5, 0, 0666, 0, 0},
};

static mode_t type_bits(char type) {
  switch (type) {
  case 'b': return S_IFBLK;
  case 'p': return S_IFIFO;
  default: /* 'c', 'u' */ return S_IFCHR;
  }
}

static bool is_expected_node(const struct stat *st, const struct device_node *d) {
  if ((st->st_mode & S_IFMT) != type_bits(d->type))
    return false;
  return d->type == 'p' || st->st_rdev == makedev(d->major, d->minor);
}

/* Remove whatever non-directory sits at parent/name: a planted symlink or file must be replaced,
 * not written through. */
static int clear_entry(int parent_fd, const char *name, const char *path, struct cm_error **err) {
  struct stat st;
  if (fstatat(parent_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
    return errno == ENOENT ? 0 : cm_error_set(err, errno, "stat %s", path);
  if (S_ISDIR(st.st_mode))
    return cm_error_set(err, EISDIR, "%s is a directory", path);
  if (unlinkat(parent_fd, name, 0) < 0)
    return cm_error_set(err, errno, "remove %s", path);
  return 0;
}

/* chmod/chown the node we just made, through an O_PATH|O_NOFOLLOW fd that we check first. */
static int fix_owner_and_mode(int parent_fd, const char *name, const struct device_node *d,
                              struct cm_error **err) {
  cleanup_close int fd = openat(parent_fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0)
    return cm_error_set(err, errno, "open %s", d->path);
  if (!is_expected_node(&st, d))
    return cm_error_set(err, EINVAL, "%s changed under us", d->path);
  char proc_path[32];
  safepath_fd_path(fd, proc_path);
  if (chmod(proc_path, d->mode & 07777) < 0)
    return cm_error_set(err, errno, "chmod %s", d->path);
  if ((d->uid || d->gid) && fchownat(fd, "", d->uid, d->gid, AT_EMPTY_PATH) < 0)
    return cm_error_set(err, errno, "chown %s", d->path);
  return 0;
}

/* In a user namespace mknod is refused: bind the host's node instead, after checking it really
 * is the device asked for (never bind an arbitrary host file in). */
static int bind_host_device(int parent_fd, const char *name, const struct device_node *d,
                            struct cm_error **err) {
  if (d->type == 'p')
    return cm_error_set(err, EPERM, "cannot create fifo %s", d->path);
  cleanup_close int host_fd = open(d->path, O_PATH | O_CLOEXEC);
  if (host_fd < 0)
    return cm_error_set(err, errno, "open host %s", d->path);
  struct stat st;
  if (fstat(host_fd, &st) < 0)
    return cm_error_set(err, errno, "stat host %s", d->path);
  if (!is_expected_node(&st, d))
    return cm_error_set(err, EINVAL, "host %s is not device %c %u:%u", d->path, d->type, d->major, d->minor);
  int fd = openat(parent_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0)
    return cm_error_set(err, errno, "create %s", d->path);
  close(fd);
  cleanup_close int target_fd = openat(parent_fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (target_fd < 0)
    return cm_error_set(err, errno, "open %s", d->path);
  /* Read-only: the device still reads and writes, but its owner, mode and times (the host's
   * node's) cannot be changed through the container's path. */
  cleanup_close int mnt_fd = mount_clone_tree(host_fd, false, MS_RDONLY | MS_NOSUID | MS_NOEXEC, 0, err);
  if (mnt_fd < 0 || mount_attach(mnt_fd, target_fd, err) < 0)
    return cm_error_prefix(err, "bind %s", d->path);
  return 0;
}

/* The directory that holds d->path: dev_fd for a direct child of /dev (every default device),
 * else the parent created inside the root. */
static int open_device_parent(int root_fd, int dev_fd, const char *parent, struct cm_error **err) {
  if (strcmp(parent, "/dev") == 0) {
    int fd = fcntl(dev_fd, F_DUPFD_CLOEXEC, 3);
    return fd >= 0 ? fd : cm_error_set(err, errno, "dup /dev fd");
  }
  return safepath_mkdir_p(root_fd, parent, 0755, err);
}

/* `fresh_dev`: /dev is the new tmpfs we just mounted (no default ACL, reachable by nobody else),
 * so a node made with umask 0 already has its exact mode: the chmod pass (an open, a check and a
 * chmod through /proc) would change nothing. */
static int create_device(int root_fd, int dev_fd, const struct device_node *d, bool fresh_dev,
                         struct cm_error **err) {
  const char *name = NULL;
  cleanup_free char *parent = safepath_split(d->path, &name);
  if (!parent)
    return cm_error_set(err, EINVAL, "bad device path \"%s\"", d->path);
  cleanup_close int parent_fd = open_device_parent(root_fd, dev_fd, parent, err);
  if (parent_fd < 0)
    return -1;
  if (clear_entry(parent_fd, name, d->path, err) < 0)
    return -1;
  mode_t old_umask = umask(0);
  int rc = mknodat(parent_fd, name, type_bits(d->type) | (d->mode & 0777), makedev(d->major, d->minor));
  int saved = errno;
  umask(old_umask);
  if (rc == 0) {
    bool exact = fresh_dev && (d->mode & 07000) == 0 && d->uid == 0 && d->gid == 0;
    return exact ? 0 : fix_owner_and_mode(parent_fd, name, d, err);
  }
  /* In a user namespace mknod of a device always fails with EPERM (CAP_MKNOD is checked in the
   * initial namespace): trying it costs less than reading uid_map to know beforehand. */
  if (saved != EPERM)
    return cm_error_set(err, saved, "mknod %s", d->path);
  return bind_host_device(parent_fd, name, d, err);
}

static int make_symlink(int dev_fd, const char *target, const char *name, bool replace,
                        struct cm_error **err) {
  if (replace && clear_entry(dev_fd, name, name, err) < 0)
    return -1;
  if (symlinkat(target, dev_fd, name) < 0 && errno != EEXIST)
    return cm_error_set(err, errno, "symlink /dev/%s -> %s", name, target);
  return 0;
}

/* An empty file the console code later bind-mounts the pty slave onto. */
static int make_console_placeholder(int dev_fd, struct cm_error **err) {
  struct stat st;
  if (fstatat(dev_fd, "console", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
      (S_ISREG(st.st_mode) || S_ISCHR(st.st_mode)))
    return 0;
  if (clear_entry(dev_fd, "console", "/dev/console", err) < 0)
    return -1;
  cleanup_close int fd =
      openat(dev_fd, "console", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd < 0)
    return cm_error_set(err, errno, "create /dev/console");
  if (fchmod(fd, 0666) < 0)
    return cm_error_set(err, errno, "chmod /dev/console");
  return 0;
}

/* rc < 0 with *local set: an error in strict mode (handed to `err`), a warning otherwise. */
static int soft_failure(int rc, bool strict, struct cm_error **local, struct cm_error **err) {
  if (rc >= 0)
    return 0;
  if (strict) {
    if (err && !*err)
      *err = *local;
    else
      cm_error_free(*local);
    *local = NULL;
    return -1;
  }
  if (*local) {
    cleanup_free char *text = cm_error_format(*local);
    cm_warn("/dev setup: %s", text);
  }
  cm_error_freep(local);
  return 0;
}

/* Does linux.devices list `path` after entry `after` (SIZE_MAX: at all)? */
static bool listed_in_config(const struct spec *s, const char *path, size_t after) {
  for (size_t i = after == SIZE_MAX ? 0 : after + 1; s->has_linux && i < s->linux_.n_devices; i++)
    if (s->linux_.devices[i].path && strcmp(s->linux_.devices[i].path, path) == 0)
      return true;
  return false;
}

int devices_setup(const struct spec *s, int root_fd, struct cm_error **err) {
  const struct spec_mount *dev_mount = rootfs_dev_mount(s);
  bool dev_is_bind = dev_mount && rootfs_mount_is_bind(dev_mount);
  /* A bind-mounted /dev (e.g. the host's, for a privileged container) is used as given. */
  if (dev_is_bind)
    return 0;
  /* Without a mount on /dev we populate the image's own /dev as runc does, but a failure there
   * (a read-only image) is only a warning; on our own tmpfs it is an error. */
  bool strict = dev_mount != NULL;
  bool fresh_dev = strict && dev_mount->type && strcmp(dev_mount->type, "tmpfs") == 0;

  cleanup_close int dev_fd = safepath_mkdir_p(root_fd, "/dev", 0755, err);
  if (dev_fd < 0)
    return cm_error_prefix(err, "/dev");

  for (size_t i = 0; i < sizeof(default_devices) / sizeof(default_devices[0]); i++) {
    /* linux.devices may list a default device itself (Docker does, for /dev/null and others):
     * that entry is the one made, as runc merges them. Made twice, a node bound from the host
     * in a user namespace could not be replaced (EBUSY). */
    if (listed_in_config(s, default_devices[i].path, SIZE_MAX))
      continue;
    struct cm_error *dev_err = NULL;
    int rc = create_device(root_fd, dev_fd, &default_devices[i], fresh_dev, &dev_err);
    if (soft_failure(rc, strict, &dev_err, err) < 0)
      return cm_error_prefix(err, "default device %s", default_devices[i].path);
  }

  for (size_t i = 0; s->has_linux && i < s->linux_.n_devices; i++) {
    const struct spec_device *sd = &s->linux_.devices[i];
    struct device_node d = {
        .path = sd->path,
        .type = sd->type,
        .major = (unsigned)sd->major,
        .minor = (unsigned)sd->minor,
        .mode = sd->has_file_mode ? sd->file_mode : 0666,
        .uid = sd->has_uid ? sd->uid : 0,
        .gid = sd->has_gid ? sd->gid : 0,
    };
    /* Anywhere in the container (the spec), resolved inside the root like every path here. */
    if (!sd->path || sd->path[0] != '/')
      return cm_error_set(err, EINVAL, "linux.devices[%zu]: path \"%s\" is not absolute", i, sd->path ? sd->path : "");
    if (listed_in_config(s, sd->path, i))
      continue; /* a later entry for the same path wins */
    if (create_device(root_fd, dev_fd, &d, fresh_dev, err) < 0)
      return cm_error_prefix(err, "linux.devices[%zu] \"%s\"", i, sd->path);
  }

  static const struct {
    const char *target, *name;
  } links[] = {{"/proc/self/fd", "fd"},
               {"/proc/self/fd/0", "stdin"},
               {"/proc/self/fd/1", "stdout"},
               {"/proc/self/fd/2", "stderr"}};
  for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
    struct cm_error *link_err = NULL;
    int rc = make_symlink(dev_fd, links[i].target, links[i].name, false, &link_err);
    if (soft_failure(rc, strict, &link_err, err) < 0)
      return -1;
  }
  if (access("/proc/kcore", F_OK) == 0)
    make_symlink(dev_fd, "/proc/kcore", "core", false, NULL);
  static const struct {
    const char *name;
    mode_t mode;
  } dirs[] = {{"pts", 0755}, {"shm", 01777}};
  for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
    struct cm_error *dir_err = NULL;
    int rc = 0;
    if (mkdirat(dev_fd, dirs[i].name, dirs[i].mode) < 0 && errno != EEXIST)
      rc = cm_error_set(&dir_err, errno, "mkdir /dev/%s", dirs[i].name);
    if (soft_failure(rc, strict, &dir_err, err) < 0)
      return -1;
  }
  /* ptmx must be the one of the container's devpts instance, never the host's. */
  struct cm_error *ptmx_err = NULL;
  int rc = make_symlink(dev_fd, "pts/ptmx", "ptmx", true, &ptmx_err);
  if (soft_failure(rc, strict, &ptmx_err, err) < 0)
    return -1;

  if (s->process && s->process->terminal && make_console_placeholder(dev_fd, err) < 0)
    return -1;
  return 0;
}
