/* The "cgroup" mount: what the container sees at /sys/fs/cgroup.
 *
 * Without a cgroup namespace the container gets a bind of its own cgroup directory, never the
 * whole hierarchy: it cannot see or touch its siblings, and /proc/self/mountinfo's root for the
 * mount matches /proc/self/cgroup, so cgroup-aware runtimes (the JVM, Go's automaxprocs) find
 * their limits. On a cgroup2 host (or for type "cgroup2") that is one bind; on a v1 or hybrid
 * host, a tmpfs holding one bind per hierarchy mounted on the host under /sys/fs/cgroup, plus the
 * usual "cpu" → "cpu,cpuacct" symlinks. With a cgroup namespace, each hierarchy is mounted fresh
 * instead: the kernel then roots it at the namespace's cgroup.
 *
 * runc mounts cgroup2 fresh even without a cgroup namespace. We do not: such a mount, made from
 * the host's cgroup namespace, re-applies its options to the host's whole hierarchy (it clears
 * nsdelegate and memory_recursiveprot that systemd set), and since Linux 6.x it waits out an RCU
 * grace period on the global threadgroup lock (5-15 ms measured, most of a `run`). */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "linux/rootfs_internal.h"
#include "util/cleanup.h"
#include "util/log.h"

#define HOST_CGROUP_ROOT "/sys/fs/cgroup"

struct hierarchy {
  char *mountpoint; /* /sys/fs/cgroup/cpu,cpuacct */
  char *mount_root; /* the mount's root inside the hierarchy (mountinfo field 4) */
  char *super_opts; /* rw,cpu,cpuacct */
  bool v2;
};

static void hierarchies_free_fields(struct hierarchy *h) {
  free(h->mountpoint);
  free(h->mount_root);
  free(h->super_opts);
}

static void hierarchies_free(struct hierarchy *h, size_t n) {
  for (size_t i = 0; i < n; i++)
    hierarchies_free_fields(&h[i]);
  free(h);
}

/* The host's cgroup hierarchies mounted directly below /sys/fs/cgroup, from our mountinfo (we
 * are in a copy of the host's mount namespace, before pivot_root). */
static int read_hierarchies(struct hierarchy **out, size_t *n_out, struct cm_error **err) {
  cleanup_fclose FILE *f = fopen("/proc/self/mountinfo", "re");
  if (!f)
    return cm_error_set(err, errno, "open /proc/self/mountinfo");
  struct hierarchy *list = NULL;
  size_t n = 0;
  cleanup_free char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, f) > 0) {
    char root[4096], mountpoint[4096], fstype[64], source[4096], super_opts[4096];
    const char *sep = strstr(line, " - ");
    /* Only cgroup and cgroup2 lines are parsed (under --host most of the ~60 lines are binds). */
    if (!sep || strncmp(sep + 3, "cgroup", 6) != 0 ||
        sscanf(line, "%*s %*s %*s %4095s %4095s", root, mountpoint) != 2 ||
        sscanf(sep + 3, "%63s %4095s %4095s", fstype, source, super_opts) != 3)
      continue;
    bool v2 = strcmp(fstype, "cgroup2") == 0;
    if (!v2 && strcmp(fstype, "cgroup") != 0)
      continue;
    /* /sys/fs/cgroup itself (a v2 host) or one level below it (v1 and hybrid hierarchies). */
    bool at_root = strcmp(mountpoint, HOST_CGROUP_ROOT) == 0;
    if (!at_root && (strncmp(mountpoint, HOST_CGROUP_ROOT "/", sizeof(HOST_CGROUP_ROOT)) != 0 ||
                     strchr(mountpoint + sizeof(HOST_CGROUP_ROOT), '/')))
      continue;
    struct hierarchy *grown = realloc(list, (n + 1) * sizeof(*list));
    if (!grown) {
      hierarchies_free(list, n);
      return cm_error_set(err, ENOMEM, "read mountinfo");
    }
    list = grown;
    list[n] = (struct hierarchy){strdup(mountpoint), strdup(root), strdup(super_opts), v2};
    n++;
  }
  *out = list;
  *n_out = n;
  return 0;
}

static bool opts_contain(const char *opts, const char *word) {
  size_t len = strlen(word);
  for (const char *p = opts; p && *p;) {
    const char *comma = strchr(p, ',');
    size_t n = comma ? (size_t)(comma - p) : strlen(p);
    if (n == len && strncmp(p, word, n) == 0)
      return true;
    p = comma ? comma + 1 : NULL;
  }
  return false;
}

/* /proc/self/cgroup, read once for all hierarchies (each read costs ~40 us: the kernel walks
 * every hierarchy under the cgroup lock). NULL when unreadable. */
static char *read_own_cgroups(void) {
  cleanup_close int fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return NULL;
  size_t cap = 4096, len = 0;
  char *text = malloc(cap);
  for (;;) {
    if (!text)
      return NULL;
    ssize_t n = read(fd, text + len, cap - len - 1);
    if (n < 0) {
      free(text);
      return NULL;
    }
    if (n == 0)
      break;
    len += (size_t)n;
    if (cap - len - 1 == 0) {
      char *grown = realloc(text, cap * 2);
      if (!grown)
        free(text);
      text = grown;
      cap *= 2;
    }
  }
  text[len] = '\0';
  return text;
}

/* Our path in the hierarchy `h`, from the text of /proc/self/cgroup ("4:cpu,cpuacct:/x",
 * "0::/x"). */
static char *own_cgroup_path(const struct hierarchy *h, const char *own_cgroups) {
  if (!own_cgroups)
    return NULL;
  cleanup_free char *copy_all = strdup(own_cgroups);
  if (!copy_all)
    return NULL;
  char *save_line = NULL;
  for (char *line = strtok_r(copy_all, "\n", &save_line); line; line = strtok_r(NULL, "\n", &save_line)) {
    char *c1 = strchr(line, ':');
    char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2)
      continue;
    *c2 = '\0';
    const char *controllers = c1 + 1, *path = c2 + 1;
    bool match;
    if (h->v2) {
      match = *controllers == '\0';
    } else {
      match = *controllers != '\0';
      cleanup_free char *copy = strdup(controllers);
      char *save = NULL;
      for (char *w = strtok_r(copy, ",", &save); match && w; w = strtok_r(NULL, ",", &save))
        match = opts_contain(h->super_opts, w);
    }
    if (match)
      return strdup(path);
  }
  return NULL;
}

/* The host directory to bind for hierarchy h: mountpoint + our path below the mount's root. */
static char *host_dir_for(const struct hierarchy *h, const char *own_cgroups) {
  cleanup_free char *own = own_cgroup_path(h, own_cgroups);
  if (!own)
    return strdup(h->mountpoint);
  const char *rel = own;
  size_t root_len = strlen(h->mount_root);
  if (strcmp(h->mount_root, "/") != 0) {
    if (strncmp(own, h->mount_root, root_len) != 0 || (own[root_len] && own[root_len] != '/'))
      return strdup(h->mountpoint); /* not below this mount's root: show the mount as is */
    rel = own + root_len;
  }
  char *dir = NULL;
  if (asprintf(&dir, "%s%s", h->mountpoint, strcmp(rel, "/") == 0 ? "" : rel) < 0)
    return NULL;
  return dir;
}

/* A fresh mount of the hierarchy (in a cgroup namespace it is rooted at our cgroup). */
static int fresh_hierarchy_mount(const struct hierarchy *h, unsigned long flags, struct cm_error **err) {
  if (h->v2)
    return mount_new_fs("cgroup2", "cgroup2", flags, NULL, err);
  /* Keep the controller and name= options; drop rw/ro and the like, which are flags. */
  cleanup_free char *data = calloc(1, strlen(h->super_opts) + 1);
  cleanup_free char *copy = strdup(h->super_opts);
  if (!data || !copy)
    return cm_error_set(err, ENOMEM, "cgroup options");
  char *save = NULL;
  for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
    if (strcmp(w, "rw") == 0 || strcmp(w, "ro") == 0 || strncmp(w, "release_agent=", 14) == 0)
      continue;
    if (*data)
      strcat(data, ",");
    strcat(data, w);
  }
  return mount_new_fs("cgroup", "cgroup", flags, data, err);
}

static int mount_v1_view(const struct spec *s, const struct spec_mount *m, int target_fd,
                         struct cm_error **err) {
  bool use_cgroupns = s->has_linux && s->linux_.namespaces[SPEC_NS_CGROUP].present;
  unsigned long flags = m->flags & ~(MS_BIND | MS_REC | MS_REMOUNT);
  /* The tmpfs is writable while we fill it; read-only afterwards if asked. */
  cleanup_close int tmpfs_fd = mount_new_fs("tmpfs", "tmpfs", flags & ~MS_RDONLY, "mode=755", err);
  if (tmpfs_fd < 0 || mount_attach(tmpfs_fd, target_fd, err) < 0)
    return -1;

  struct hierarchy *list = NULL;
  size_t n = 0;
  if (read_hierarchies(&list, &n, err) < 0)
    return -1;
  cleanup_free char *own_cgroups = use_cgroupns ? NULL : read_own_cgroups();
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    const struct hierarchy *h = &list[i];
    if (strcmp(h->mountpoint, HOST_CGROUP_ROOT) == 0)
      continue; /* the v1 view is a tmpfs here: no hierarchy sits at the root */
    const char *name = h->mountpoint + sizeof(HOST_CGROUP_ROOT);
    cleanup_close int sub_fd = -1;
    cleanup_close int mnt_fd = -1;
    if (mkdirat(tmpfs_fd, name, 0755) < 0 && errno != EEXIST) {
      rc = cm_error_set(err, errno, "mkdir %s", name);
      break;
    }
    sub_fd = openat(tmpfs_fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub_fd < 0) {
      rc = cm_error_set(err, errno, "open %s", name);
      break;
    }
    if (use_cgroupns) {
      mnt_fd = fresh_hierarchy_mount(h, flags, err);
    } else {
      cleanup_free char *host_dir = host_dir_for(h, own_cgroups);
      cleanup_close int src_fd = host_dir ? open(host_dir, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
      if (src_fd < 0) {
        rc = cm_error_set(err, errno, "open %s", host_dir ? host_dir : h->mountpoint);
        break;
      }
      mnt_fd = mount_clone_tree(src_fd, false, flags, m->clear_flags, err);
    }
    if (mnt_fd < 0 || mount_attach(mnt_fd, sub_fd, err) < 0) {
      rc = cm_error_prefix(err, "cgroup hierarchy %s", name);
      break;
    }
    /* "cpu" and "cpuacct" → "cpu,cpuacct", as on the host. */
    if (strchr(name, ',') && !strchr(name, '=')) {
      cleanup_free char *copy = strdup(name);
      char *save = NULL;
      for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save))
        if (symlinkat(name, tmpfs_fd, w) < 0 && errno != EEXIST)
          cm_warn("cgroup symlink %s -> %s: %s", w, name, strerror(errno));
    }
  }
  hierarchies_free(list, n);
  if (rc < 0)
    return -1;
  if ((m->flags & MS_RDONLY) && mount_set_readonly(tmpfs_fd, false, err) < 0)
    return -1;
  if (m->propagation && mount_set_propagation(tmpfs_fd, m->propagation, err) < 0)
    return -1;
  return 0;
}

/* statmount(2) (Linux 6.8); the libc headers here predate it, so the parts we use are spelled
 * out, as in the kernel's uapi <linux/mount.h>. */
#ifndef SYS_statmount
#define SYS_statmount 457
#endif
#define CM_STATX_MNT_ID_UNIQUE 0x4000U
#define CM_STATMOUNT_SB_BASIC 0x1U
#define CM_STATMOUNT_MNT_ROOT 0x8U
struct cm_mnt_id_req {
  __u32 size, spare;
  __u64 mnt_id, param;
};
struct cm_statmount {
  __u32 size, mnt_opts;
  __u64 mask;
  __u32 sb_dev_major, sb_dev_minor;
  __u64 sb_magic;
  __u32 sb_flags, fs_type;
  __u64 mnt_id, mnt_parent_id;
  __u32 mnt_id_old, mnt_parent_id_old;
  __u64 mnt_attr, mnt_propagation, mnt_peer_group, mnt_master, propagate_from;
  __u32 mnt_root, mnt_point;
  __u64 spare2[50];
  char str[];
};

/* The cgroup2 mount at /sys/fs/cgroup as a hierarchy, asked of the kernel for that one mount
 * instead of reading all of /proc/self/mountinfo (~0.1 ms). 0 with *h set; -1 when the kernel
 * cannot tell (older than 6.8) or the mount is not cgroup2: the caller then reads mountinfo. */
static int v2_hierarchy_from_statmount(struct hierarchy *h) {
  struct statx stx;
  if (statx(AT_FDCWD, HOST_CGROUP_ROOT, AT_NO_AUTOMOUNT, CM_STATX_MNT_ID_UNIQUE, &stx) < 0 ||
      !(stx.stx_mask & CM_STATX_MNT_ID_UNIQUE))
    return -1;
  struct cm_mnt_id_req req = {.size = 24, .mnt_id = stx.stx_mnt_id,
                              .param = CM_STATMOUNT_SB_BASIC | CM_STATMOUNT_MNT_ROOT};
  union {
    struct cm_statmount sm;
    char bytes[sizeof(struct cm_statmount) + 4096 + 64];
  } buf;
  if (syscall(SYS_statmount, &req, &buf.sm, sizeof(buf), 0) < 0)
    return -1;
  if ((buf.sm.mask & (CM_STATMOUNT_SB_BASIC | CM_STATMOUNT_MNT_ROOT)) !=
          (CM_STATMOUNT_SB_BASIC | CM_STATMOUNT_MNT_ROOT) ||
      buf.sm.sb_magic != CGROUP2_SUPER_MAGIC)
    return -1;
  *h = (struct hierarchy){strdup(HOST_CGROUP_ROOT), strdup(buf.sm.str + buf.sm.mnt_root), strdup(""), true};
  if (!h->mountpoint || !h->mount_root || !h->super_opts) {
    hierarchies_free_fields(h);
    return -1;
  }
  return 0;
}

/* A detached bind of our own directory in the host's cgroup2 hierarchy; -2 when the host has no
 * cgroup2 mount under /sys/fs/cgroup (the caller then mounts cgroup2 fresh), -1 on error. */
static int bind_own_v2_cgroup(const struct spec_mount *m, bool v2_host, struct cm_error **err) {
  struct hierarchy *list = NULL;
  size_t n = 0;
  struct hierarchy from_statmount;
  if (v2_host && v2_hierarchy_from_statmount(&from_statmount) == 0) {
    list = malloc(sizeof(*list));
    if (!list) {
      hierarchies_free_fields(&from_statmount);
      return cm_error_set(err, ENOMEM, "cgroup hierarchy");
    }
    list[0] = from_statmount;
    n = 1;
  } else if (read_hierarchies(&list, &n, err) < 0) {
    return -1;
  }
  const struct hierarchy *v2 = NULL;
  for (size_t i = 0; i < n; i++)
    if (list[i].v2 && (v2 == NULL || strcmp(list[i].mountpoint, HOST_CGROUP_ROOT) == 0))
      v2 = &list[i];
  int fd = -2;
  if (v2 != NULL) {
    cleanup_free char *own_cgroups = read_own_cgroups();
    cleanup_free char *host_dir = host_dir_for(v2, own_cgroups);
    cleanup_close int src_fd = host_dir ? open(host_dir, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
    if (src_fd < 0)
      fd = cm_error_set(err, errno, "open %s", host_dir ? host_dir : v2->mountpoint);
    else
      fd = mount_clone_tree(src_fd, false, m->flags & ~(MS_BIND | MS_REC | MS_REMOUNT), m->clear_flags, err);
  }
  hierarchies_free(list, n);
  return fd;
}

int mount_cgroup(const struct spec *s, const struct spec_mount *m, int target_fd, struct cm_error **err) {
  struct statfs sfs;
  if (statfs(HOST_CGROUP_ROOT, &sfs) < 0)
    return cm_error_set(err, errno, "statfs " HOST_CGROUP_ROOT);
  unsigned long flags = m->flags & ~(MS_BIND | MS_REC | MS_REMOUNT);
  /* "cgroup2" asks for the unified hierarchy whatever the host layout; "cgroup" means
   * whatever the host has. */
  if (strcmp(m->type, "cgroup2") == 0 || sfs.f_type == CGROUP2_SUPER_MAGIC) {
    bool use_cgroupns = s->has_linux && s->linux_.namespaces[SPEC_NS_CGROUP].present;
    /* Mount options (m->data) can only be honoured by a fresh mount. */
    cleanup_close int mnt_fd = !use_cgroupns && !(m->data && *m->data)
                                ? bind_own_v2_cgroup(m, sfs.f_type == CGROUP2_SUPER_MAGIC, err)
                                : -2;
    if (mnt_fd == -1)
      return -1;
    if (mnt_fd == -2)
      mnt_fd = mount_new_fs("cgroup2", m->source ? m->source : "cgroup2", flags, m->data, err);
    if (mnt_fd < 0 || mount_attach(mnt_fd, target_fd, err) < 0)
      return -1;
    if (m->propagation && mount_set_propagation(mnt_fd, m->propagation, err) < 0)
      return -1;
    return 0;
  }
  return mount_v1_view(s, m, target_fd, err);
}
