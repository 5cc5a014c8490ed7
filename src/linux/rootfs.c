/* The container's root filesystem: prepare (mounts, /dev), pivot_root, finalize. */
#include "linux/rootfs.h"

#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "linux/mount_source.h"
#include "linux/rootfs_internal.h"
#include "util/cleanup.h"
#include "util/log.h"
#include "util/safepath.h"

/* mountinfo escapes blanks and backslashes as \ooo. */
static void unescape_octal(char *s) {
  char *out = s;
  for (char *in = s; *in;) {
    if (in[0] == '\\' && in[1] >= '0' && in[1] <= '7' && in[2] >= '0' && in[2] <= '7' && in[3] >= '0' &&
        in[3] <= '7') {
      *out++ = (char)(((in[1] - '0') << 6) | ((in[2] - '0') << 3) | (in[3] - '0'));
      in += 4;
    } else {
      *out++ = *in++;
    }
  }
  *out = '\0';
}

/* pivot_root refuses a new root whose parent mount is shared; the mount holding the rootfs
 * directory becomes private in our namespace (this never propagates back to the host). */
static int make_parent_mount_private(const char *rootfs, struct cm_error **err) {
  char real[PATH_MAX];
  if (!realpath(rootfs, real))
    return cm_error_set(err, errno, "resolve rootfs \"%s\"", rootfs);
  cleanup_fclose FILE *f = fopen("/proc/self/mountinfo", "re");
  if (!f)
    return cm_error_set(err, errno, "open /proc/self/mountinfo");
  cleanup_free char *line = NULL;
  size_t cap = 0, best_len = 0;
  char best[PATH_MAX] = "";
  bool best_shared = false;
  while (getline(&line, &cap, f) > 0) {
    char mountpoint[PATH_MAX];
    if (sscanf(line, "%*s %*s %*s %*s %4095s", mountpoint) != 1)
      continue;
    unescape_octal(mountpoint);
    size_t len = strlen(mountpoint);
    bool covers = strcmp(mountpoint, "/") == 0 ||
                  (strncmp(real, mountpoint, len) == 0 && (real[len] == '/' || real[len] == '\0'));
    if (!covers || len < best_len)
      continue;
    /* Optional fields sit between the mount options and " - ". */
    const char *sep = strstr(line, " - ");
    const char *shared = strstr(line, " shared:");
    best_len = len;
    snprintf(best, sizeof(best), "%s", mountpoint);
    best_shared = shared && sep && shared < sep;
  }
  if (best_shared && mount(NULL, best, NULL, MS_PRIVATE, NULL) < 0)
    return cm_error_set(err, errno, "make \"%s\" private", best);
  return 0;
}

static void rules_freep(struct mount_source_rules **r) {
  mount_source_rules_free(*r);
}

/* Hardened: the root is judged on its fd like a bind source, and that fd is what gets bound onto
 * itself, without the host mounts below it (one of them could be a procfs or a disk). Returns
 * the new mount's fd. */
static int bind_root_checked(const struct mount_source_rules *rules, const char *rootfs, bool tree_trusted,
                             struct cm_error **err) {
  cleanup_close int fd = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return cm_error_set(err, errno, "open rootfs \"%s\"", rootfs);
  struct mount_source_kind kind;
  if (mount_source_check(rules, fd, "root.path", true, &kind, err) < 0)
    return cm_error_prefix(err, "rootfs \"%s\"", rootfs);
  /* Not the mounts below it (a procfs or a disk the profile would refuse as a bind), unless each
   * is one codemode-run made (spec.h's root_tree_trusted). */
  int tree = open_tree(fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | (tree_trusted ? AT_RECURSIVE : 0));
  if (tree < 0)
    return cm_error_set(err, errno, "clone rootfs \"%s\"", rootfs);
  if (move_mount(tree, "", fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0) {
    int saved = errno;
    close(tree);
    return cm_error_set(err, saved, "bind rootfs \"%s\" onto itself", rootfs);
  }
  return tree;
}


bool rootfs_mounts_inherited(const struct spec *s) {
  return s->n_mounts || s->linux_.n_devices || s->root_readonly;
}

bool rootfs_has_bind_mounts(const struct spec *s) {
  for (size_t i = 0; i < s->n_mounts; i++)
    if (rootfs_mount_is_bind(&s->mounts[i]) && s->mounts[i].source)
      return true;
  return false;
}

bool rootfs_has_bind_mounts_besides(const struct spec *s, const struct rootfs_premounts *pre) {
  for (size_t i = 0; i < s->n_mounts; i++)
    if (rootfs_mount_is_bind(&s->mounts[i]) && s->mounts[i].source &&
        (pre == NULL || i >= pre->n || pre->mount_fds[i] < 0))
      return true;
  return false;
}

int rootfs_open_bind_sources_in(pid_t pid, const struct spec *s, const char *bundle, int *fds, struct cm_error **err) {
  for (size_t i = 0; i < s->n_mounts; i++)
    fds[i] = -1;
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
  cleanup_close int theirs = open(path, O_RDONLY | O_CLOEXEC);
  cleanup_close int ours = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
  /* setns resets our root and cwd to the namespace's: both are put back after. */
  cleanup_close int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  cleanup_close int cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (theirs < 0 || ours < 0 || root < 0 || cwd < 0)
    return cm_error_set(err, errno, "bind sources: open mount namespaces");
  if (setns(theirs, CLONE_NEWNS) < 0)
    return cm_error_set(err, errno, "bind sources: join the container's mount namespace");
  for (size_t i = 0; i < s->n_mounts; i++) {
    const struct spec_mount *m = &s->mounts[i];
    if (!rootfs_mount_is_bind(m) || !m->source)
      continue;
    /* A host path, the host admin's choice: symlinks in it are followed on the host, as the
     * mount itself would. */
    cleanup_free char *joined = NULL;
    const char *src = m->source;
    if (src[0] != '/') {
      if (asprintf(&joined, "%s/%s", bundle, src) < 0)
        abort();
      src = joined;
    }
    fds[i] = open(src, O_PATH | O_CLOEXEC);
  }
  int rc = 0;
  struct stat before, after;
  bool moved = fstat(root, &before) < 0;
  if (setns(ours, CLONE_NEWNS) < 0)
    moved = true, rc = -1;
  /* Our root is the namespace's again, unless we ran chrooted: then put that back too. */
  if (rc == 0 && !moved && stat("/", &after) == 0 && (after.st_dev != before.st_dev || after.st_ino != before.st_ino))
    rc = fchdir(root) < 0 || chroot(".") < 0 ? -1 : 0;
  if (rc == 0 && fchdir(cwd) < 0)
    rc = -1;
  if (rc < 0) {
    /* Stuck in the container's namespace: this process must not go on. */
    cm_error_set(err, errno, "bind sources: return to our mount namespace");
  }
  return rc;
}

void rootfs_close_bind_sources(int *fds, size_t n) {
  for (size_t i = 0; fds && i < n; i++)
    if (fds[i] >= 0)
      close(fds[i]);
  free(fds);
}

int rootfs_prepare(const struct spec *s, const char *rootfs, const int *bind_fds, struct cm_error **err) {
  return rootfs_prepare_premounted(s, rootfs, NULL, bind_fds, err);
}

int rootfs_prepare_premounted(const struct spec *s, const char *rootfs, const struct rootfs_premounts *pre,
                              const int *bind_fds, struct cm_error **err) {
  /* Nothing we mount may propagate back to the host: rslave unless the config says otherwise. */
  unsigned long propagation = MS_SLAVE | MS_REC;
  if (s->has_linux && s->linux_.rootfs_propagation_flags)
    propagation = s->linux_.rootfs_propagation_flags;
  /* (r)unbindable is set on the new root at the end (rootfs_finalize): now it would make the
   * rootfs unbindable before we bind it onto itself (EINVAL). Until then it is what it implies
   * for propagation: rprivate, nothing in or out. */
  if (propagation & MS_UNBINDABLE)
    propagation = MS_PRIVATE | MS_REC;
  if (mount(NULL, "/", NULL, propagation, NULL) < 0)
    return cm_error_set(err, errno, "set propagation of /");
  /* After a recursive slave/private/unbindable change no mount is shared any more: the
   * mountinfo scan (~0.2 ms, the costliest step here) is only needed otherwise. */
  bool none_shared = (propagation & MS_REC) && !(propagation & MS_SHARED);
  __attribute__((cleanup(rules_freep))) struct mount_source_rules *rules = NULL;
  if (s->hardening.check_mount_sources)
    rules = mount_source_rules_load();
  cleanup_close int root_fd = -1;
  if (pre && pre->root_fd >= 0) {
    /* The runtime's (idmapped) tree, attached over our "/", already judged by the runtime when
     * hardened (runtime/userns_setup.c): no host path to walk (we may be an unprivileged uid
     * that cannot), and path lookups from "/" still see the host's tree below it (a mount on the
     * root's own dentry is never crossed by a walk starting there) until pivot_root makes it the
     * root. */
    if (move_mount(pre->root_fd, "", AT_FDCWD, "/", MOVE_MOUNT_F_EMPTY_PATH) < 0)
      return cm_error_set(err, errno, "attach the rootfs \"%s\" prepared by the runtime", rootfs);
    root_fd = fcntl(pre->root_fd, F_DUPFD_CLOEXEC, 3);
    if (root_fd < 0)
      return cm_error_set(err, errno, "dup rootfs fd");
  } else if (rules) {
    if (!none_shared && make_parent_mount_private(rootfs, err) < 0)
      return -1;
    root_fd = bind_root_checked(rules, rootfs, s->root_tree_trusted, err);
    if (root_fd < 0)
      return -1;
  } else {
    if (!none_shared && make_parent_mount_private(rootfs, err) < 0)
      return -1;
    if (mount(rootfs, rootfs, NULL, MS_BIND | MS_REC, NULL) < 0)
      return cm_error_set(err, errno, "bind rootfs \"%s\" onto itself", rootfs);
    root_fd = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root_fd < 0)
      return cm_error_set(err, errno, "open rootfs \"%s\"", rootfs);
  }

  /* A read-only /dev tmpfs is made read-only only after we created the devices in it. */
  const struct spec_mount *dev_mount = rootfs_dev_mount(s);
  struct spec tmp_spec;
  const struct spec *effective = s;
  cleanup_free struct spec_mount *mounts_copy = NULL;
  if (dev_mount && !rootfs_mount_is_bind(dev_mount) && (dev_mount->flags & MS_RDONLY)) {
    mounts_copy = malloc(s->n_mounts * sizeof(*mounts_copy));
    if (!mounts_copy)
      return cm_error_set(err, ENOMEM, "mounts");
    memcpy(mounts_copy, s->mounts, s->n_mounts * sizeof(*mounts_copy));
    mounts_copy[dev_mount - s->mounts].flags &= ~MS_RDONLY;
    tmp_spec = *s;
    tmp_spec.mounts = mounts_copy;
    effective = &tmp_spec;
  }
  if (mounts_apply(effective, root_fd, rules, pre, bind_fds, err) < 0)
    return -1;
  if (devices_setup(s, root_fd, err) < 0)
    return -1;
  return 0;
}

/* --no-pivot leaves the host's mounts in the namespace, under the chroot. The kernel lets a user
 * namespace's root mount a fresh procfs or sysfs when a full one is already visible in the mount
 * namespace (mount_too_revealing): the host's would be, so a process that makes itself a user
 * and pid namespace inside the container would get an unmasked procfs. Detach every full procfs
 * and sysfs outside the rootfs first (where it is locked and cannot be detached, cover it), as
 * runc does. */
static int detach_host_proc_and_sys(const char *rootfs, struct cm_error **err) {
  char real[PATH_MAX];
  if (!realpath(rootfs, real))
    return cm_error_set(err, errno, "resolve rootfs \"%s\"", rootfs);
  size_t rlen = strlen(real);
  cleanup_fclose FILE *f = fopen("/proc/self/mountinfo", "re");
  if (!f)
    return cm_error_set(err, errno, "open /proc/self/mountinfo");
  /* Collected first: detaching changes the file being read. */
  char **points = NULL;
  size_t n = 0;
  cleanup_free char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, f) > 0) {
    char root[PATH_MAX], point[PATH_MAX], fstype[64];
    const char *sep = strstr(line, " - ");
    if (!sep || sscanf(line, "%*s %*s %*s %4095s %4095s", root, point) != 2 ||
        sscanf(sep + 3, "%63s", fstype) != 1)
      continue;
    if (strcmp(root, "/") != 0 || (strcmp(fstype, "proc") != 0 && strcmp(fstype, "sysfs") != 0))
      continue;
    unescape_octal(point);
    if (strncmp(point, real, rlen) == 0 && (point[rlen] == '/' || point[rlen] == '\0'))
      continue; /* the container's own */
    char **grown = realloc(points, (n + 1) * sizeof(*points));
    if (grown == NULL || (grown[n] = strdup(point)) == NULL)
      abort();
    points = grown;
    n++;
  }
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    const char *p = points[i];
    /* Our detach must not propagate to the host. ENOENT: a parent went already. */
    if (mount(NULL, p, NULL, MS_SLAVE | MS_REC, NULL) < 0) {
      if (errno != ENOENT && errno != EINVAL)
        rc = cm_error_set(err, errno, "--no-pivot: make host mount %s rslave", p);
      continue;
    }
    if (umount2(p, MNT_DETACH) == 0)
      continue;
    if ((errno == EINVAL || errno == EPERM) &&
        mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=0k,mode=0") < 0)
      rc = cm_error_set(err, errno, "--no-pivot: cover host mount %s", p);
  }
  for (size_t i = 0; i < n; i++)
    free(points[i]);
  free(points);
  return rc;
}

int rootfs_pivot(const char *rootfs, bool no_pivot, struct cm_error **err) {
  return rootfs_pivot_premounted(rootfs, NULL, no_pivot, err);
}

int rootfs_pivot_premounted(const char *rootfs, const struct rootfs_premounts *pre, bool no_pivot,
                            struct cm_error **err) {
  if (no_pivot && pre && pre->root_fd >= 0) {
    /* Already over "/": chroot into it. */
    if (fchdir(pre->root_fd) < 0 || chroot(".") < 0 || chdir("/") < 0)
      return cm_error_set(err, errno, "chroot into the rootfs");
    return 0;
  }
  if (no_pivot) {
    if (detach_host_proc_and_sys(rootfs, err) < 0)
      return -1;
    /* --no-pivot (ramdisk roots): move the rootfs over / and chroot into it. */
    if (chdir(rootfs) < 0)
      return cm_error_set(err, errno, "chdir \"%s\"", rootfs);
    if (mount(rootfs, "/", NULL, MS_MOVE, NULL) < 0)
      return cm_error_set(err, errno, "move rootfs onto /");
    if (chroot(".") < 0)
      return cm_error_set(err, errno, "chroot");
    if (chdir("/") < 0)
      return cm_error_set(err, errno, "chdir /");
    return 0;
  }
  cleanup_close int old_root = open("/", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
  if (old_root < 0)
    return cm_error_set(err, errno, "open /");
  cleanup_close int new_root = pre && pre->root_fd >= 0 ? fcntl(pre->root_fd, F_DUPFD_CLOEXEC, 3)
                                                         : open(rootfs, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
  if (new_root < 0)
    return cm_error_set(err, errno, "open rootfs \"%s\"", rootfs);
  if (fchdir(new_root) < 0)
    return cm_error_set(err, errno, "chdir into rootfs");
  /* pivot_root(".", "."): the old root ends up stacked under the new one, so no put_old
   * directory is needed inside the (possibly read-only) rootfs. */
  if (syscall(SYS_pivot_root, ".", ".") < 0)
    return cm_error_set(err, errno, "pivot_root");
  if (fchdir(old_root) < 0)
    return cm_error_set(err, errno, "chdir to the old root");
  /* Detaching must not propagate an unmount to the host's mounts. */
  if (mount(NULL, ".", NULL, MS_SLAVE | MS_REC, NULL) < 0)
    return cm_error_set(err, errno, "make the old root rslave");
  if (umount2(".", MNT_DETACH) < 0)
    return cm_error_set(err, errno, "detach the old root");
  if (chdir("/") < 0)
    return cm_error_set(err, errno, "chdir /");
  return 0;
}

int rootfs_chroot(const char *rootfs, struct cm_error **err) {
  if (chdir(rootfs) < 0)
    return cm_error_set(err, errno, "chdir \"%s\"", rootfs);
  if (chroot(".") < 0)
    return cm_error_set(err, errno, "chroot \"%s\"", rootfs);
  if (chdir("/") < 0)
    return cm_error_set(err, errno, "chdir /");
  return 0;
}

/* MS_BIND|MS_REMOUNT|MS_RDONLY keeping the flags the mount has (needed where they are locked,
 * in a user namespace); only used when mount_setattr is missing. */
static int remount_root_readonly_legacy(struct cm_error **err) {
  struct statvfs sv;
  if (statvfs("/", &sv) < 0)
    return cm_error_set(err, errno, "statvfs /");
  static const struct {
    unsigned long st, ms;
  } map[] = {{ST_NOSUID, MS_NOSUID},           {ST_NODEV, MS_NODEV},           {ST_NOEXEC, MS_NOEXEC},
             {ST_NOATIME, MS_NOATIME},         {ST_NODIRATIME, MS_NODIRATIME}, {ST_RELATIME, MS_RELATIME},
             {ST_SYNCHRONOUS, MS_SYNCHRONOUS}, {ST_MANDLOCK, MS_MANDLOCK}};
  unsigned long flags = MS_BIND | MS_REMOUNT | MS_RDONLY;
  for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
    if (sv.f_flag & map[i].st)
      flags |= map[i].ms;
  if (mount(NULL, "/", NULL, flags, NULL) < 0)
    return cm_error_set(err, errno, "remount / read-only");
  return 0;
}

int rootfs_finalize(const struct spec *s, struct cm_error **err) {
  cleanup_close int root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root_fd < 0)
    return cm_error_set(err, errno, "open /");
  if (s->has_linux) {
    if (paths_mask(&s->linux_.masked_paths, root_fd, err) < 0)
      return -1;
    if (paths_readonly(&s->linux_.readonly_paths, root_fd, err) < 0)
      return -1;
  }
  const struct spec_mount *dev_mount = rootfs_dev_mount(s);
  if (dev_mount && !rootfs_mount_is_bind(dev_mount) && (dev_mount->flags & MS_RDONLY)) {
    cleanup_close int dev_fd = safepath_open(root_fd, "/dev", O_PATH | O_DIRECTORY, err);
    if (dev_fd < 0 || mount_set_readonly(dev_fd, false, err) < 0)
      return cm_error_prefix(err, "make /dev read-only");
  }
  if (s->root_readonly) {
    /* Only the read-only bit changes; nosuid/nodev/… stay as they are. */
    struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY};
    if (mount_setattr(root_fd, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0) {
      if (errno != ENOSYS)
        return cm_error_set(err, errno, "make / read-only");
      if (remount_root_readonly_legacy(err) < 0)
        return -1;
    }
  }
  if (s->has_linux && s->linux_.rootfs_propagation_flags &&
      mount(NULL, "/", NULL, s->linux_.rootfs_propagation_flags, NULL) < 0)
    return cm_error_set(err, errno, "set rootfsPropagation \"%s\" on /",
                        s->linux_.rootfs_propagation ? s->linux_.rootfs_propagation : "");
  return 0;
}
