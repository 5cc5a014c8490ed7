/* codemode doctor's kernel checks (runtime/doctor.h): kernel version, user namespaces and
 * AppArmor's restriction, cgroup mode and delegation, Landlock, seccomp, idmapped mounts,
 * overlay in a user namespace. Each reads files under e->proc / e->sys / e->etc only. */
#include "runtime/doctor.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "linux/userns.h"
#include "runtime/doctor_internal.h"

const char *doctor_status_name(enum doctor_status s) {
  return s == DOCTOR_OK ? "ok" : s == DOCTOR_WARN ? "warn" : "fail";
}

void doctor_set(struct doctor_check *c, const char *check, enum doctor_status s, const char *fix,
                const char *fmt, ...) {
  c->check = check;
  c->status = s;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->detail, sizeof(c->detail), fmt, ap);
  va_end(ap);
  snprintf(c->fix, sizeof(c->fix), "%s", fix ? fix : "");
}

bool doctor_read(const char *root, const char *rel, char *buf, size_t size) {
  char path[PATH_MAX];
  snprintf(path, sizeof(path), "%s/%s", root, rel);
  FILE *f = fopen(path, "re");
  if (f == NULL)
    return false;
  size_t n = fread(buf, 1, size - 1, f);
  fclose(f);
  buf[n] = '\0';
  return true;
}

static long read_long(const char *root, const char *rel, long missing) {
  char buf[64];
  if (!doctor_read(root, rel, buf, sizeof(buf)))
    return missing;
  char *end;
  long v = strtol(buf, &end, 10);
  return end == buf ? missing : v;
}

bool doctor_kernel_version(const char *release, int *major, int *minor) {
  return sscanf(release, "%d.%d", major, minor) == 2;
}

static bool kernel_at_least(const struct doctor_env *e, int major, int minor) {
  char rel[128];
  int ma, mi;
  if (!doctor_read(e->proc, "sys/kernel/osrelease", rel, sizeof(rel)) ||
      !doctor_kernel_version(rel, &ma, &mi))
    return true; /* unknown: the other checks say what is missing */
  return ma > major || (ma == major && mi >= minor);
}

void doctor_kernel(const struct doctor_env *e, struct doctor_check *c) {
  char rel[128];
  int ma, mi;
  if (!doctor_read(e->proc, "sys/kernel/osrelease", rel, sizeof(rel)) ||
      !doctor_kernel_version(rel, &ma, &mi)) {
    doctor_set(c, "kernel", DOCTOR_WARN, "mount procfs at /proc", "cannot read %s/sys/kernel/osrelease",
               e->proc);
    return;
  }
  rel[strcspn(rel, "\n")] = '\0';
  /* openat2(RESOLVE_IN_ROOT) resolves every path in a rootfs (5.6); idmapped mounts 5.12. */
  if (ma < 5 || (ma == 5 && mi < 6))
    doctor_set(c, "kernel", DOCTOR_FAIL, "a kernel of 5.12 or later", "%s: older than 5.6 (no openat2)", rel);
  else if (ma == 5 && mi < 12)
    doctor_set(c, "kernel", DOCTOR_WARN, "a kernel of 5.12 or later", "%s: no idmapped mounts before 5.12",
               rel);
  else
    doctor_set(c, "kernel", DOCTOR_OK, "", "%s", rel);
}

void doctor_userns(const struct doctor_env *e, struct doctor_check *c) {
  long max = read_long(e->proc, "sys/user/max_user_namespaces", -1);
  long clone = read_long(e->proc, "sys/kernel/unprivileged_userns_clone", -1);
  if (max == 0)
    doctor_set(c, "user namespaces", DOCTOR_FAIL,
               "sysctl -w user.max_user_namespaces=15000 (and in /etc/sysctl.d)",
               "user.max_user_namespaces is 0: no user namespace can be made");
  /* Debian's knob: off, only root may make one; the mcp profile makes its namespace as an
   * unprivileged uid even when root runs it (DESIGN.md §7), so it needs this either way. */
  else if (clone == 0)
    doctor_set(c, "user namespaces", DOCTOR_FAIL, "sysctl -w kernel.unprivileged_userns_clone=1",
               "kernel.unprivileged_userns_clone is 0: unprivileged user namespaces are off");
  else if (max < 0)
    doctor_set(c, "user namespaces", DOCTOR_FAIL, "a kernel built with CONFIG_USER_NS",
               "no %s/sys/user/max_user_namespaces: the kernel has no user namespaces", e->proc);
  else
    doctor_set(c, "user namespaces", DOCTOR_OK, "", "unprivileged user namespaces on (max %ld)", max);
}

void doctor_apparmor(const struct doctor_env *e, struct doctor_check *c) {
  char knob[PATH_MAX], label[PATH_MAX], old[PATH_MAX], prof[PATH_MAX];
  snprintf(knob, sizeof(knob), "%s/sys/kernel/apparmor_restrict_unprivileged_userns", e->proc);
  snprintf(label, sizeof(label), "%s/self/attr/apparmor/current", e->proc);
  snprintf(old, sizeof(old), "%s/self/attr/current", e->proc);
  snprintf(prof, sizeof(prof), "%s/apparmor.d/codemode", e->etc);
  long on = read_long(e->proc, "sys/kernel/apparmor_restrict_unprivileged_userns", -1);
  bool installed = access(prof, F_OK) == 0;
  struct cm_error *err = NULL;
  if (on != 1) {
    doctor_set(c, "apparmor", DOCTOR_OK, "", "no restriction of unprivileged user namespaces%s",
               on < 0 ? " (no such sysctl)" : " (kernel.apparmor_restrict_unprivileged_userns=0)");
  } else if (userns_apparmor_check_at(knob, label, old, &err) < 0) {
    doctor_set(c, "apparmor", DOCTOR_FAIL,
               "make install-apparmor (contrib/apparmor), or sysctl -w "
               "kernel.apparmor_restrict_unprivileged_userns=0",
               "unprivileged user namespaces restricted and this codemode runs unconfined (profile %s)",
               installed ? "installed, not attached to this binary's path" : "not installed");
    cm_error_free(err);
  } else {
    doctor_set(c, "apparmor", DOCTOR_OK, "", "restricted, and codemode runs under its own profile");
  }
}

/* mountinfo fields: ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL…] - FSTYPE SOURCE SUPER */
static bool mount_type_at(const struct doctor_env *e, const char *point, char *type, size_t size) {
  char path[PATH_MAX];
  snprintf(path, sizeof(path), "%s/self/mountinfo", e->proc);
  FILE *f = fopen(path, "re");
  if (f == NULL)
    return false;
  char line[4096];
  bool found = false;
  while (fgets(line, sizeof(line), f)) {
    char mp[PATH_MAX];
    if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) != 1 || strcmp(mp, point) != 0)
      continue;
    const char *dash = strstr(line, " - ");
    if (dash && sscanf(dash + 3, "%63s", type) == 1 && size > 0) {
      found = true; /* the last one wins: mounted over the earlier ones */
    }
  }
  fclose(f);
  return found;
}

enum doctor_cgroup_mode doctor_cgroup_mode_of(const struct doctor_env *e) {
  char type[64], unified[64];
  if (!mount_type_at(e, "/sys/fs/cgroup", type, sizeof(type)))
    return DOCTOR_CGROUP_NONE;
  if (strcmp(type, "cgroup2") == 0)
    return DOCTOR_CGROUP_V2;
  if (mount_type_at(e, "/sys/fs/cgroup/unified", unified, sizeof(unified)) && strcmp(unified, "cgroup2") == 0)
    return DOCTOR_CGROUP_HYBRID;
  return DOCTOR_CGROUP_V1;
}

void doctor_cgroup_mode(const struct doctor_env *e, struct doctor_check *c) {
  static const char *const fix =
      "boot with systemd.unified_cgroup_hierarchy=1 for cgroup v2 (limits as a user)";
  switch (doctor_cgroup_mode_of(e)) {
  case DOCTOR_CGROUP_V2: doctor_set(c, "cgroups", DOCTOR_OK, "", "cgroup v2 (unified)"); break;
  case DOCTOR_CGROUP_HYBRID:
    doctor_set(c, "cgroups", e->uid == 0 ? DOCTOR_OK : DOCTOR_WARN, e->uid == 0 ? "" : fix,
               "hybrid: v1 controllers, cgroup2 at /sys/fs/cgroup/unified%s",
               e->uid == 0 ? " (root: the v1 controllers are used)" : " (no delegation to a user)");
    break;
  case DOCTOR_CGROUP_V1:
    doctor_set(c, "cgroups", e->uid == 0 ? DOCTOR_OK : DOCTOR_WARN, e->uid == 0 ? "" : fix, "cgroup v1%s",
               e->uid == 0 ? "" : " (no delegation to a user)");
    break;
  case DOCTOR_CGROUP_NONE:
    doctor_set(c, "cgroups", DOCTOR_WARN, "mount cgroup2 at /sys/fs/cgroup",
               "no cgroup filesystem at /sys/fs/cgroup");
    break;
  }
}

void doctor_cgroup_delegation(const struct doctor_env *e, struct doctor_check *c) {
  if (e->uid == 0) {
    doctor_set(c, "cgroup delegation", DOCTOR_OK, "", "root: codemode makes the containers' cgroups itself");
    return;
  }
  static const char *const fix =
      "log in through systemd (a user@UID.service session), or have the parent of your cgroup chowned to you";
  if (doctor_cgroup_mode_of(e) != DOCTOR_CGROUP_V2) {
    doctor_set(c, "cgroup delegation", DOCTOR_WARN, fix,
               "not cgroup v2: no subtree for this user; memory, pids and CPU limits become rlimits");
    return;
  }
  char sock[PATH_MAX];
  struct stat st;
  if (e->xdg_runtime_dir && snprintf(sock, sizeof(sock), "%s/systemd/private", e->xdg_runtime_dir) > 0 &&
      stat(sock, &st) == 0 && S_ISSOCK(st.st_mode)) {
    doctor_set(c, "cgroup delegation", DOCTOR_OK, "",
               "a systemd user session (%s): transient scopes with Delegate=yes", sock);
    return;
  }
  char self[PATH_MAX];
  if (!doctor_read(e->proc, "self/cgroup", self, sizeof(self)) || strncmp(self, "0::", 3) != 0) {
    doctor_set(c, "cgroup delegation", DOCTOR_WARN, fix, "cannot read this process's cgroup");
    return;
  }
  char *path = self + 3;
  path[strcspn(path, "\n")] = '\0';
  char *slash = strrchr(path, '/');
  if (slash)
    *slash = '\0';
  char procs[PATH_MAX * 2], ctl[PATH_MAX * 2];
  snprintf(procs, sizeof(procs), "%s/fs/cgroup%s/cgroup.procs", e->sys, path);
  snprintf(ctl, sizeof(ctl), "%s/fs/cgroup%s/cgroup.subtree_control", e->sys, path);
  if (access(procs, W_OK) == 0 && access(ctl, W_OK) == 0)
    doctor_set(c, "cgroup delegation", DOCTOR_OK, "", "%s is delegated to this user", *path ? path : "/");
  else
    doctor_set(c, "cgroup delegation", DOCTOR_WARN, fix,
               "%s is not this user's (no delegated subtree): limits become rlimits", *path ? path : "/");
}

void doctor_landlock(const struct doctor_env *e, struct doctor_check *c) {
  if (e->landlock_abi <= 0)
    doctor_set(c, "landlock", DOCTOR_WARN, "boot with lsm=…,landlock (CONFIG_SECURITY_LANDLOCK)",
               "not available: --deny and learned file rules cannot be enforced");
  else
    doctor_set(c, "landlock", DOCTOR_OK, "", "ABI %d%s", e->landlock_abi,
               e->landlock_abi < 4 ? " (no TCP port rules before ABI 4)" : "");
}

void doctor_seccomp(const struct doctor_env *e, struct doctor_check *c) {
  char status[8192], actions[512];
  if (!doctor_read(e->proc, "self/status", status, sizeof(status)) || strstr(status, "\nSeccomp:") == NULL) {
    doctor_set(c, "seccomp", DOCTOR_FAIL, "a kernel with CONFIG_SECCOMP_FILTER", "the kernel has no seccomp");
    return;
  }
  bool notify = doctor_read(e->proc, "sys/kernel/seccomp/actions_avail", actions, sizeof(actions)) &&
                strstr(actions, "user_notif") != NULL;
  if (notify)
    doctor_set(c, "seccomp", DOCTOR_OK, "", "filters and user notification (learn mode, audit)");
  else
    doctor_set(c, "seccomp", DOCTOR_WARN, "a kernel of 5.0 or later",
               "filters, no user notification: no learn mode");
}

/* The filesystem of dir, or of its nearest existing parent (the store may not exist yet). */
static const char *fs_of(const char *dir, char *shown, size_t size, long *type) {
  char p[PATH_MAX];
  snprintf(p, sizeof(p), "%s", dir);
  struct statfs sf;
  while (statfs(p, &sf) < 0) {
    char *slash = strrchr(p, '/');
    if (slash == NULL || slash == p) {
      snprintf(p, sizeof(p), "/");
      if (statfs(p, &sf) < 0)
        return NULL;
      break;
    }
    *slash = '\0';
  }
  snprintf(shown, size, "%s", p);
  *type = (long)sf.f_type;
  return shown;
}

/* Filesystems that take idmapped mounts, and since which kernel. */
static const struct {
  long magic;
  const char *name;
  int major, minor;
} idmap_fs[] = {
    {0xEF53, "ext4", 5, 12},     {0x58465342, "xfs", 5, 12},  {0x9123683E, "btrfs", 5, 15},
    {0x01021994, "tmpfs", 6, 3}, {0xF2F52010, "f2fs", 5, 12}, {0x65735546, "fuse", 99, 0},
};

void doctor_idmap(const struct doctor_env *e, struct doctor_check *c) {
  const char *dirs[2] = {e->state_dir, e->store_dir};
  const char *what[2] = {"state", "store"};
  char detail[512] = "";
  enum doctor_status worst = DOCTOR_OK;
  for (int i = 0; i < 2; i++) {
    if (dirs[i] == NULL)
      continue;
    char shown[PATH_MAX];
    long type = 0;
    const char *at = fs_of(dirs[i], shown, sizeof(shown), &type);
    const char *name = "an unknown filesystem";
    bool ok = false;
    for (size_t k = 0; at && k < sizeof(idmap_fs) / sizeof(idmap_fs[0]); k++)
      if (idmap_fs[k].magic == type) {
        name = idmap_fs[k].name;
        ok = kernel_at_least(e, idmap_fs[k].major, idmap_fs[k].minor);
      }
    if (!ok)
      worst = DOCTOR_WARN;
    size_t n = strlen(detail);
    snprintf(detail + n, sizeof(detail) - n, "%s%s %s (%s): %s", n ? "; " : "", what[i], dirs[i], name,
             ok ? "idmapped mounts" : "no idmapped mounts");
  }
  doctor_set(c, "idmapped mounts", worst,
             worst == DOCTOR_OK ? ""
                                : "put --root / --store on ext4, xfs, btrfs or (6.3+) tmpfs: without, files "
                                  "in binds show as nobody",
             "%s", detail);
}

void doctor_overlay_userns(const struct doctor_env *e, struct doctor_check *c) {
  char fs[4096];
  if (!doctor_read(e->proc, "filesystems", fs, sizeof(fs)) || strstr(fs, "\toverlay\n") == NULL) {
    doctor_set(c, "overlay in a user namespace", DOCTOR_WARN, "modprobe overlay",
               "no overlay filesystem: --image, --ephemeral and :cow mounts cannot work");
    return;
  }
  if (e->overlay_userns == 0)
    doctor_set(c, "overlay in a user namespace", DOCTOR_WARN, "a kernel of 5.11 or later",
               "overlay refused in a user namespace (measured): --image, --ephemeral and :cow need root");
  else if (e->overlay_userns == 1)
    doctor_set(c, "overlay in a user namespace", DOCTOR_OK, "", "mounted in a new user namespace (measured)");
  else if (kernel_at_least(e, 5, 11))
    doctor_set(c, "overlay in a user namespace", DOCTOR_OK, "", "overlay present, kernel 5.11 or later");
  else
    doctor_set(c, "overlay in a user namespace", DOCTOR_WARN, "a kernel of 5.11 or later",
               "kernels before 5.11 refuse overlay in a user namespace");
}
