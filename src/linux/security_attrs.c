/* no_new_privs, LSM exec labels, the session keyring, and the one safe way into procfs that
 * the other linux/ files use for their writes (sysctl, attr). */
#include "linux/security_attrs.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/keyctl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/log.h"

#ifndef SELINUX_MAGIC
#define SELINUX_MAGIC 0xf97cff8c
#endif
#ifndef PROC_ROOT_INO
#define PROC_ROOT_INO 1
#endif
#if !defined(SYS_lsm_list_modules) && (defined(__x86_64__) || defined(__aarch64__))
#define SYS_lsm_list_modules 461
#endif
#define CM_LSM_ID_SELINUX 101
#define CM_LSM_ID_APPARMOR 104

/* ---- procfs ---------------------------------------------------------------------------- */

static bool fd_is_procfs(int fd) {
  struct statfs sfs;
  return fstatfs(fd, &sfs) == 0 && sfs.f_type == PROC_SUPER_MAGIC;
}

/* A private procfs instance: nothing in the (possibly hostile) container mount table can sit on
 * top of it. Fails in user namespaces whose /proc has masked paths (mount_too_revealing). */
static int procfs_open_private(void) {
  int fsfd = fsopen("proc", FSOPEN_CLOEXEC);
  if (fsfd < 0)
    return -1;
  int mntfd = -1;
  if (fsconfig(fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0)
    mntfd = fsmount(fsfd, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
  int saved = errno;
  close(fsfd);
  errno = saved;
  return mntfd;
}

static int procfs_open_root(struct cm_error **err) {
  int fd = procfs_open_private();
  if (fd >= 0) {
    if (fd_is_procfs(fd))
      return fd;
    close(fd);
  }
  /* O_NOFOLLOW: a /proc that is a symlink into the rootfs is refused (CVE-2019-16884 class). */
  cleanup_close int procfd = open("/proc", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (procfd < 0)
    return cm_error_set(err, errno, "open /proc");
  /* A tmpfs or FUSE dressed up as /proc would take our writes (CVE-2019-19921 class). */
  struct stat st;
  if (!fd_is_procfs(procfd))
    return cm_error_set(err, 0, "/proc is not a procfs mount; refusing to use it");
  if (fstat(procfd, &st) < 0)
    return cm_error_set(err, errno, "stat /proc");
  /* A procfs subdirectory bind-mounted on /proc would shift every path we open. */
  if (st.st_ino != PROC_ROOT_INO)
    return cm_error_set(err, 0, "/proc is not the root of a procfs mount; refusing to use it");
  return cm_steal_fd(&procfd);
}

static int openat_beneath(int dirfd, const char *path, int flags) {
  struct open_how how = {
      .flags = (uint64_t)(flags | O_CLOEXEC | O_NOCTTY),
      .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
  };
  int fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
  if (fd < 0 && errno == ENOSYS) {
    /* Kernels < 5.6: the last component at least must not be a symlink; the fstatfs check of the
     * result then makes sure we ended up in procfs. */
    fd = openat(dirfd, path, flags | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
  }
  return fd;
}

int procfs_open(const char *relpath, int flags, struct cm_error **err) {
  cleanup_close int root = procfs_open_root(err);
  if (root < 0)
    return -1;
  cleanup_close int self_dir = -1;
  int base = root;
  const char *rest = relpath;
  static const char *const self_links[] = {"thread-self/", "self/"};
  for (size_t i = 0; i < sizeof(self_links) / sizeof(self_links[0]); i++) {
    size_t n = strlen(self_links[i]);
    if (strncmp(relpath, self_links[i], n) != 0)
      continue;
    /* The one symlink we follow is procfs's own; then we must still be in that procfs. */
    char link[32];
    snprintf(link, sizeof(link), "%.*s", (int)(n - 1), self_links[i]);
    self_dir = openat(root, link, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (self_dir < 0)
      return cm_error_set(err, errno, "open /proc/%s", link);
    struct stat root_st, self_st;
    if (fstat(root, &root_st) < 0 || fstat(self_dir, &self_st) < 0)
      return cm_error_set(err, errno, "stat /proc/%s", link);
    if (!fd_is_procfs(self_dir) || root_st.st_dev != self_st.st_dev)
      return cm_error_set(err, 0, "/proc/%s leads out of procfs; refusing to use it", link);
    base = self_dir;
    rest = relpath + n;
    break;
  }
  cleanup_close int fd = openat_beneath(base, rest, flags);
  if (fd < 0) {
    if (errno == EXDEV)
      return cm_error_set(err, errno, "/proc/%s: something is mounted over it; refusing to use it", relpath);
    return cm_error_set(err, errno, "open /proc/%s", relpath);
  }
  /* A file bind-mounted from elsewhere is caught by NO_XDEV; this catches the rest. */
  if (!fd_is_procfs(fd))
    return cm_error_set(err, 0, "/proc/%s is not on procfs; refusing to use it", relpath);
  return cm_steal_fd(&fd);
}

static int write_all(int fd, const char *buf, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, buf, len);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    buf += n;
    len -= (size_t)n;
  }
  return 0;
}

/* ---- no_new_privs ---------------------------------------------------------------------- */

int no_new_privs_apply(struct cm_error **err) {
  /* setuid binaries and file caps in the rootfs can no longer raise privileges after execve. */
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
    return cm_error_set(err, errno, "prctl(PR_SET_NO_NEW_PRIVS)");
  return 0;
}

/* ---- LSM labels ------------------------------------------------------------------------ */

/* lsm_list_modules(2) (Linux 6.8+) works in any mount namespace; -1 when unavailable. */
static int lsm_listed(uint64_t lsm_id) {
#ifdef SYS_lsm_list_modules
  uint64_t ids[32];
  uint32_t size = sizeof(ids);
  long n = syscall(SYS_lsm_list_modules, ids, &size, 0);
  if (n < 0)
    return -1;
  for (long i = 0; i < n && i < 32; i++)
    if (ids[i] == lsm_id)
      return 1;
  return 0;
#else
  (void)lsm_id;
  return -1;
#endif
}

static bool apparmor_enabled(void) {
  char buf[4] = {0};
  cleanup_close int fd = open("/sys/module/apparmor/parameters/enabled", O_RDONLY | O_CLOEXEC);
  if (fd >= 0 && read(fd, buf, sizeof(buf) - 1) > 0)
    return buf[0] == 'Y';
  return lsm_listed(CM_LSM_ID_APPARMOR) == 1;
}

/* The kernel registers selinuxfs only when SELinux is the active LSM. Unlike /sys/fs/selinux this
 * also answers inside the container's mount namespace (after pivot_root, where the exec label is
 * written and selinuxfs is not mounted), and on kernels without lsm_list_modules(2). */
static bool selinuxfs_registered(void) {
  cleanup_error struct cm_error *ignored = NULL;
  cleanup_close int fd = procfs_open("filesystems", O_RDONLY, &ignored);
  if (fd < 0)
    return false;
  char buf[8192];
  size_t len = 0;
  ssize_t n;
  while (len < sizeof(buf) - 1 && (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
    len += (size_t)n;
  buf[len] = '\0';
  return strstr(buf, "\tselinuxfs\n") != NULL;
}

bool lsm_selinux_enabled(void) {
  struct statfs sfs;
  if (statfs("/sys/fs/selinux", &sfs) == 0 && (uint32_t)sfs.f_type == (uint32_t)SELINUX_MAGIC)
    return true;
  int listed = lsm_listed(CM_LSM_ID_SELINUX);
  if (listed >= 0)
    return listed == 1;
  return selinuxfs_registered();
}

static int write_proc_attr(const char *relpath, const char *value, struct cm_error **err) {
  cleanup_close int fd = procfs_open(relpath, O_WRONLY, err);
  if (fd < 0)
    return -1;
  if (write_all(fd, value, strlen(value)) < 0)
    return cm_error_set(err, errno, "write %s to /proc/%s", value, relpath);
  return 0;
}

/* AppArmor's own attr/apparmor/exec (5.8+), else the shared attr/exec of older kernels. Only a
 * missing file falls back: an ENOENT from the write itself means the profile is not loaded. */
static int apparmor_exec_attr_open(struct cm_error **err) {
  cleanup_error struct cm_error *first = NULL;
  int fd = procfs_open("thread-self/attr/apparmor/exec", O_WRONLY, &first);
  if (fd >= 0)
    return fd;
  if (first->errnum != ENOENT) {
    *err = cm_steal_ptr(&first);
    return -1;
  }
  return procfs_open("thread-self/attr/exec", O_WRONLY, err);
}

static int apparmor_apply_exec_profile(const char *profile, struct cm_error **err) {
  /* Silently running unconfined when a profile was asked for would be a downgrade. */
  if (!apparmor_enabled())
    return cm_error_set(err, 0, "apparmor profile %s requested but AppArmor is not enabled on this host",
                        profile);
  cleanup_free char *cmd = NULL;
  if (asprintf(&cmd, "exec %s", profile) < 0)
    return cm_error_set(err, ENOMEM, "apparmor");
  cleanup_close int fd = apparmor_exec_attr_open(err);
  if (fd < 0)
    return cm_error_prefix(err, "apparmor profile %s", profile);
  if (write_all(fd, cmd, strlen(cmd)) < 0) {
    if (errno == ENOENT)
      return cm_error_set(err, errno,
                          "apparmor profile %s is not loaded in the kernel (load it with apparmor_parser)",
                          profile);
    return cm_error_set(err, errno, "apparmor profile %s: write \"%s\"", profile, cmd);
  }
  return 0;
}

int lsm_apply_exec_label(const struct spec_process *p, struct cm_error **err) {
  if (p->apparmor_profile && *p->apparmor_profile &&
      apparmor_apply_exec_profile(p->apparmor_profile, err) < 0)
    return -1;
  if (p->selinux_label && *p->selinux_label) {
    if (!lsm_selinux_enabled())
      return cm_error_set(err, 0, "process.selinuxLabel %s requested but SELinux is not enabled on this host",
                          p->selinux_label);
    if (write_proc_attr("thread-self/attr/exec", p->selinux_label, err) < 0) {
      /* SELinux answers EINVAL for a context its loaded policy does not define. */
      if ((*err)->errnum == EINVAL) {
        cm_error_free(*err);
        *err = NULL;
        return cm_error_set(err, EINVAL,
                            "process.selinuxLabel %s is not a valid context in the loaded SELinux policy",
                            p->selinux_label);
      }
      return cm_error_prefix(err, "process.selinuxLabel %s", p->selinux_label);
    }
  }
  return 0;
}

/* ---- session keyring ------------------------------------------------------------------- */

#define KEY_USR_SEARCH_BIT 0x00080000u

int keyring_join_new(const char *container_id, struct cm_error **err) {
  cleanup_free char *name = NULL;
  if (asprintf(&name, "_ses.%s", container_id) < 0)
    return cm_error_set(err, ENOMEM, "keyring");
  /* A fresh session keyring keeps the container from reading the host session's keys. */
  long serial = syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, name, 0, 0, 0);
  if (serial < 0) {
    /* No keyctl (gVisor) or a seccomp/LSM policy that forbids it: nothing to isolate. */
    if (errno == ENOSYS || errno == EACCES) {
      cm_warn("cannot join a new session keyring (%s); keeping the current one", strerror(errno));
      return 0;
    }
    return cm_error_set(err, errno, "join session keyring %s", name);
  }
  /* The container's user (maybe not root) must be able to search its own session keyring. */
  char desc[512];
  long n = syscall(SYS_keyctl, KEYCTL_DESCRIBE, serial, desc, sizeof(desc) - 1, 0);
  if (n < 0)
    return cm_error_set(err, errno, "describe session keyring %s", name);
  desc[(size_t)n < sizeof(desc) ? (size_t)n : sizeof(desc) - 1] = '\0';
  /* "type;uid;gid;perm;description", perm in hex */
  char *field = desc;
  for (int i = 0; i < 3 && field; i++) {
    field = strchr(field, ';');
    if (field)
      field++;
  }
  if (field == NULL)
    return cm_error_set(err, 0, "session keyring %s: unexpected description", name);
  uint32_t perm = (uint32_t)strtoul(field, NULL, 16);
  if (syscall(SYS_keyctl, KEYCTL_SETPERM, serial, perm | KEY_USR_SEARCH_BIT, 0, 0) < 0)
    return cm_error_set(err, errno, "set permissions of session keyring %s", name);
  return 0;
}
