/* Applying config.json "mounts" inside the rootfs, through fds, with the new mount API. */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "linux/idmap.h"
#include "linux/mount_source.h"
#include "linux/rootfs.h"
#include "linux/rootfs_internal.h"
#include "util/cleanup.h"
#include "util/log.h"
#include "util/safepath.h"

void mount_attr_from_flags(unsigned long flags, unsigned long clear_flags, struct mount_attr *attr) {
  static const struct {
    unsigned long ms;
    __u64 attr;
  } simple[] = {
      {MS_RDONLY, MOUNT_ATTR_RDONLY},         {MS_NOSUID, MOUNT_ATTR_NOSUID},
      {MS_NODEV, MOUNT_ATTR_NODEV},           {MS_NOEXEC, MOUNT_ATTR_NOEXEC},
      {MS_NODIRATIME, MOUNT_ATTR_NODIRATIME}, {MS_NOSYMFOLLOW, MOUNT_ATTR_NOSYMFOLLOW},
  };
  memset(attr, 0, sizeof(*attr));
  for (size_t i = 0; i < sizeof(simple) / sizeof(simple[0]); i++) {
    if (flags & simple[i].ms)
      attr->attr_set |= simple[i].attr;
    else if (clear_flags & simple[i].ms)
      attr->attr_clr |= simple[i].attr;
  }
  /* The atime modes are one field: changing it means clearing the whole field. */
  if (flags & MS_NOATIME) {
    attr->attr_clr |= MOUNT_ATTR__ATIME;
    attr->attr_set |= MOUNT_ATTR_NOATIME;
  } else if (flags & MS_STRICTATIME) {
    attr->attr_clr |= MOUNT_ATTR__ATIME;
    attr->attr_set |= MOUNT_ATTR_STRICTATIME;
  } else if ((flags & MS_RELATIME) || (clear_flags & (MS_NOATIME | MS_STRICTATIME))) {
    attr->attr_clr |= MOUNT_ATTR__ATIME;
    attr->attr_set |= MOUNT_ATTR_RELATIME;
  }
}

/* The kernel leaves a human-readable reason on the fs context fd ("e tmpfs: Bad value …"). */
static void append_kernel_message(int fs_fd, char *buf, size_t size) {
  buf[0] = '\0';
  char msg[256];
  ssize_t n = read(fs_fd, msg, sizeof(msg) - 1);
  if (n <= 2)
    return;
  msg[n] = '\0';
  msg[strcspn(msg, "\n")] = '\0';
  snprintf(buf, size, " (%s)", msg + 2);
}

int mount_fs_config_options(int fs_fd, const char *type, const char *data, struct cm_error **err) {
  if (!data || !*data)
    return 0;
  cleanup_free char *copy = strdup(data);
  if (!copy)
    return cm_error_set(err, ENOMEM, "mount options");
  char *save = NULL;
  for (char *opt = strtok_r(copy, ",", &save); opt; opt = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(opt, '=');
    int r;
    if (eq) {
      *eq = '\0';
      r = fsconfig(fs_fd, FSCONFIG_SET_STRING, opt, eq + 1, 0);
    } else {
      r = fsconfig(fs_fd, FSCONFIG_SET_FLAG, opt, NULL, 0);
    }
    if (r < 0) {
      int saved = errno;
      char why[280];
      append_kernel_message(fs_fd, why, sizeof(why));
      if (eq)
        *eq = '=';
      return cm_error_set(err, saved, "%s option \"%s\"%s", type, opt, why);
    }
  }
  return 0;
}

int mount_new_fs_labeled(const char *type, const char *source, unsigned long flags, const char *data,
                         const char *selinux_context, struct cm_error **err) {
  cleanup_close int fs_fd = fsopen(type, FSOPEN_CLOEXEC);
  if (fs_fd < 0)
    return cm_error_set(err, errno, "fsopen %s", type);
  if (source && *source && fsconfig(fs_fd, FSCONFIG_SET_STRING, "source", source, 0) < 0)
    return cm_error_set(err, errno, "%s source \"%s\"", type, source);
  if (mount_fs_config_options(fs_fd, type, data, err) < 0)
    return -1;
  /* linux.mountLabel: set on its own, since an SELinux context may itself contain commas. */
  if (selinux_context && fsconfig(fs_fd, FSCONFIG_SET_STRING, "context", selinux_context, 0) < 0)
    return cm_error_set(err, errno, "%s option context=\"%s\" (linux.mountLabel)", type, selinux_context);
  /* Superblock flags have no mount attribute; they are fs-context flags. */
  static const struct {
    unsigned long ms;
    const char *name;
  } sb_flags[] = {
      {MS_SYNCHRONOUS, "sync"}, {MS_DIRSYNC, "dirsync"}, {MS_LAZYTIME, "lazytime"}, {MS_MANDLOCK, "mand"}};
  for (size_t i = 0; i < sizeof(sb_flags) / sizeof(sb_flags[0]); i++)
    if ((flags & sb_flags[i].ms) && fsconfig(fs_fd, FSCONFIG_SET_FLAG, sb_flags[i].name, NULL, 0) < 0)
      return cm_error_set(err, errno, "%s option \"%s\"", type, sb_flags[i].name);
  if (fsconfig(fs_fd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
    int saved = errno;
    char why[280];
    append_kernel_message(fs_fd, why, sizeof(why));
    return cm_error_set(err, saved, "create %s%s", type, why);
  }
  struct mount_attr attr;
  mount_attr_from_flags(flags, 0, &attr);
  int mnt_fd = fsmount(fs_fd, FSMOUNT_CLOEXEC, (unsigned int)attr.attr_set);
  if (mnt_fd < 0)
    return cm_error_set(err, errno, "fsmount %s", type);
  return mnt_fd;
}

int mount_clone_tree(int src_fd, bool recursive, unsigned long flags, unsigned long clear_flags,
                     struct cm_error **err) {
  unsigned int tree_flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH;
  if (recursive)
    tree_flags |= AT_RECURSIVE;
  cleanup_close int mnt_fd = open_tree(src_fd, "", tree_flags);
  if (mnt_fd < 0)
    return cm_error_set(err, errno, "clone mount tree");
  struct mount_attr attr;
  mount_attr_from_flags(flags, clear_flags, &attr);
  /* Attributes go on the top mount only, as a bind remount would; "rro" is the recursive one. */
  if ((attr.attr_set || attr.attr_clr) && mount_setattr(mnt_fd, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0)
    return cm_error_set(err, errno, "set mount flags");
  return cm_steal_fd(&mnt_fd);
}

int mount_attach(int mnt_fd, int target_fd, struct cm_error **err) {
  if (move_mount(mnt_fd, "", target_fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
    return cm_error_set(err, errno, "attach mount");
  return 0;
}

int mount_set_propagation(int mnt_fd, unsigned long propagation, struct cm_error **err) {
  struct mount_attr attr = {.propagation = propagation & ~MS_REC};
  unsigned int at = AT_EMPTY_PATH | ((propagation & MS_REC) ? AT_RECURSIVE : 0);
  if (mount_setattr(mnt_fd, "", at, &attr, sizeof(attr)) < 0)
    return cm_error_set(err, errno, "set mount propagation");
  return 0;
}

int mount_set_readonly(int mnt_fd, bool recursive, struct cm_error **err) {
  struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY};
  unsigned int at = AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0);
  if (mount_setattr(mnt_fd, "", at, &attr, sizeof(attr)) < 0)
    return cm_error_set(err, errno, "make mount read-only");
  return 0;
}

bool rootfs_mount_is_bind(const struct spec_mount *m) {
  return (m->flags & MS_BIND) || (m->type && strcmp(m->type, "bind") == 0);
}

const struct spec_mount *rootfs_dev_mount(const struct spec *s) {
  const struct spec_mount *found = NULL;
  for (size_t i = 0; i < s->n_mounts; i++)
    if (s->mounts[i].destination && strcmp(s->mounts[i].destination, "/dev") == 0)
      found = &s->mounts[i];
  return found;
}

static bool path_is_under(const char *path, const char *dir) {
  size_t n = strlen(dir);
  return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/* Mounting over /proc entries can hide the masks or redirect writes to kernel knobs
 * (CVE-2019-19921 / CVE-2025-52881 classes): only /proc itself (as procfs) and a few files
 * that lxcfs-style tools replace are allowed. */
static int check_proc_destination(const struct spec_mount *m, bool is_bind, int src_fd,
                                  struct cm_error **err) {
  static const char *const allowed[] = {
      "/proc/cpuinfo", "/proc/diskstats", "/proc/meminfo",  "/proc/stat",    "/proc/swaps",
      "/proc/uptime",  "/proc/loadavg",   "/proc/slabinfo", "/proc/net/dev", "/proc/sys/kernel/ns_last_pid",
  };
  if (!path_is_under(m->destination, "/proc"))
    return 0;
  if (strcmp(m->destination, "/proc") == 0) {
    struct statfs sfs;
    if (!is_bind && m->type && strcmp(m->type, "proc") == 0)
      return 0;
    if (is_bind && fstatfs(src_fd, &sfs) == 0 && sfs.f_type == PROC_SUPER_MAGIC)
      return 0;
    return cm_error_set(err, EPERM, "only a procfs may be mounted on /proc");
  }
  for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
    if (strcmp(m->destination, allowed[i]) == 0)
      return 0;
  return cm_error_set(err, EPERM, "mounting over %s is not allowed", m->destination);
}

/* After attaching, look again at what the container will see there: procfs and sysfs must be
 * the real thing, not a look-alike the rootfs put in the way (CVE-2019-16884 class). */
static int verify_fs_type(int root_fd, const char *dest, const char *type, struct cm_error **err) {
  long want;
  if (strcmp(type, "proc") == 0)
    want = PROC_SUPER_MAGIC;
  else if (strcmp(type, "sysfs") == 0)
    want = SYSFS_MAGIC;
  else
    return 0;
  cleanup_close int fd = safepath_open(root_fd, dest, O_PATH | O_DIRECTORY, err);
  if (fd < 0)
    return -1;
  struct statfs sfs;
  if (fstatfs(fd, &sfs) < 0)
    return cm_error_set(err, errno, "statfs");
  if (sfs.f_type != want)
    return cm_error_set(err, EINVAL, "%s is not %s after mounting it (0x%lx)", dest, type,
                        (unsigned long)sfs.f_type);
  return 0;
}

static int openat2_retry(int dir_fd, const char *path, const struct open_how *how) {
  for (int attempt = 0;; attempt++) {
    int fd = (int)syscall(SYS_openat2, dir_fd, path, how, sizeof(*how));
    /* EAGAIN: a concurrent rename made the kernel unsure about "..": ask again. */
    if (fd >= 0 || errno != EAGAIN || attempt >= 16)
      return fd;
  }
}

/* The mount target, resolved inside the root as safepath_mount_target does, in fewer syscalls:
 * an existing target is one openat2 (symlinks expanded inside the root, ".." stopped at it,
 * magic links refused — CVE-2021-30465 class); a missing last component is created in its
 * parent, resolved the same way. Anything else (a missing parent, a symlink planted where we
 * created, no openat2) takes the component-by-component walk, which handles every case. */
static int open_mount_target(int root_fd, const char *dest, bool is_dir, bool *existed, struct cm_error **err) {
  struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
  int fd = openat2_retry(root_fd, dest, &how);
  *existed = fd >= 0;
  if (fd >= 0)
    return fd;
  if (errno != ENOENT)
    return safepath_mount_target(root_fd, dest, is_dir, err);
  const char *name = NULL;
  cleanup_free char *parent = safepath_split(dest, &name);
  cleanup_close int parent_fd = -1;
  if (parent) {
    how.flags |= O_DIRECTORY;
    parent_fd = openat2_retry(root_fd, parent, &how);
  }
  if (parent_fd < 0)
    return safepath_mount_target(root_fd, dest, is_dir, err);
  if (is_dir) {
    if (mkdirat(parent_fd, name, 0755) < 0 && errno != EEXIST)
      return cm_error_set(err, errno, "create directory \"%s\" inside the container root", dest);
  } else {
    /* O_EXCL|O_NOFOLLOW: never open what a symlink points at. */
    int file_fd = openat(parent_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (file_fd < 0 && errno != EEXIST)
      return cm_error_set(err, errno, "create file \"%s\" inside the container root", dest);
    if (file_fd >= 0)
      close(file_fd);
  }
  cleanup_close int target_fd = openat(parent_fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  if (target_fd < 0 || fstat(target_fd, &st) < 0 || S_ISLNK(st.st_mode))
    return safepath_mount_target(root_fd, dest, is_dir, err);
  return cm_steal_fd(&target_fd);
}

int mount_new_fs(const char *type, const char *source, unsigned long flags, const char *data,
                 struct cm_error **err) {
  return mount_new_fs_labeled(type, source, flags, data, NULL, err);
}

/* The filesystems runc labels with linux.mountLabel: the ones the container writes to; procfs,
 * sysfs and cgroup keep the kernel's own labels. Not mqueue: the kernel creates a new IPC
 * namespace's mqueue superblock itself, unlabelled, and mounting that same superblock again with
 * a different context= fails with EINVAL (runc mounts mqueue without the label too). */
static const char *label_for(const struct spec *s, const char *type) {
  const char *label = s->linux_.mount_label;
  if (!label || !*label)
    return NULL;
  static const char *const labeled[] = {"tmpfs", "devpts", "shm"};
  for (size_t i = 0; i < sizeof(labeled) / sizeof(labeled[0]); i++)
    if (strcmp(type, labeled[i]) == 0)
      return label;
  return NULL;
}

/* One overlay layer path out of a lowerdir list or an upperdir/workdir value: backslash escapes
 * (\: \, \\) undone, the rest up to `stop` (':' in a lowerdir list, '\0' otherwise). Returns the
 * position after it. */
static const char *next_layer(const char *p, char stop, char *out, size_t size) {
  size_t n = 0;
  for (; *p && *p != stop; p++) {
    if (*p == '\\' && p[1])
      p++;
    if (n + 1 < size)
      out[n++] = *p;
  }
  out[n] = '\0';
  return p;
}

/* Where an overlay's layers come from. The child opens and judges them itself; under a host range
 * of its own (runtime/userns_setup.h) the runtime does, idmaps them (collect) and hands them over,
 * and the child takes them in the same order (given). */
struct overlay_ctx {
  const struct mount_source_rules *rules; /* judge the layers (NULL: no rules, or judged already) */
  int userns_fd;                          /* collect: idmap each layer through it */
  bool collect;
  int *fds;      /* the layers in order (collect: made here; given: the runtime's) */
  size_t n, cap; /* given: n of them */
  size_t next;   /* given: the next one to take */
  /* collect: the detached mounts the child attaches first (the lowers, and one mount holding
   * both upperdir and workdir, which overlay wants on one mount); upper_root is its path. */
  int *attach;
  size_t n_attach, cap_attach;
  int upper_mnt;
  char upper_root[4096];
};

static void push_fd(int **v, size_t *n, size_t *cap, int fd) {
  if (*n == *cap) {
    *cap = *cap ? *cap * 2 : 4;
    *v = realloc(*v, *cap * sizeof(int));
    if (*v == NULL)
      abort();
  }
  (*v)[(*n)++] = fd;
}

/* The deepest directory holding both a and b ("/x/up" and "/x/work" -> "/x"). */
static void common_dir(const char *a, const char *b, char *out, size_t size) {
  size_t i = 0, last = 0;
  while (a[i] && a[i] == b[i]) {
    if (a[i] == '/')
      last = i;
    i++;
  }
  if ((a[i] == '\0' && (b[i] == '/' || b[i] == '\0')) || (b[i] == '\0' && a[i] == '/'))
    last = i;
  snprintf(out, size, "%.*s", (int)(last ? last : 1), a);
}

/* Open one layer, judge it (its fd, then a non-recursive clone of it: overlay does not cross
 * mounts inside a layer either), and hand that same fd to the overlay. */
static int overlay_layer(struct overlay_ctx *ctx, int fs_fd, const char *key, const char *path, struct cm_error **err) {
  char what[4200];
  snprintf(what, sizeof(what), "overlay %s \"%s\"", key, path);
  cleanup_close int fd = -1;
  if (!ctx->collect && ctx->fds) {
    if (ctx->next >= ctx->n)
      return cm_error_set(err, EPROTO, "%s: no layer from the runtime", what);
    fd = fcntl(ctx->fds[ctx->next++], F_DUPFD_CLOEXEC, 3);
    if (fd < 0)
      return cm_error_set(err, errno, "dup %s", what);
  } else {
    fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
      return cm_error_set(err, errno, "open %s", what);
    if (ctx->rules) {
      struct mount_source_kind kind;
      if (mount_source_check(ctx->rules, fd, what, false, &kind, err) < 0)
        return -1;
      cleanup_close int clone = open_tree(fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
      if (clone < 0)
        return cm_error_set(err, errno, "clone %s", what);
      if (mount_source_check_tree(ctx->rules, clone, what, err) < 0)
        return -1;
    }
  }
  if (ctx->collect && (strcmp(key, "upperdir") == 0 || strcmp(key, "workdir") == 0)) {
    /* One idmapped mount of the directory holding both, and the two directories in it. */
    if (ctx->upper_mnt < 0) {
      cleanup_close int parent = open(ctx->upper_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
      if (parent < 0)
        return cm_error_set(err, errno, "open %s", ctx->upper_root);
      ctx->upper_mnt = idmap_clone(parent, ctx->userns_fd, 0, 0, 0, false, NULL, err);
      if (ctx->upper_mnt < 0)
        return cm_error_prefix(err, "%s", what);
      push_fd(&ctx->attach, &ctx->n_attach, &ctx->cap_attach, ctx->upper_mnt);
    }
    size_t root_len = strlen(ctx->upper_root);
    const char *rel = path + (strcmp(ctx->upper_root, "/") == 0 ? 1 : root_len + 1);
    int in = openat(ctx->upper_mnt, rel, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (in < 0)
      return cm_error_set(err, errno, "open %s in its idmapped mount", what);
    push_fd(&ctx->fds, &ctx->n, &ctx->cap, in);
    return 0;
  }
  if (ctx->collect) {
    int mnt = idmap_clone(fd, ctx->userns_fd, 0, 0, 0, false, NULL, err);
    if (mnt < 0)
      return cm_error_prefix(err, "%s", what);
    push_fd(&ctx->attach, &ctx->n_attach, &ctx->cap_attach, mnt);
    int dup = fcntl(mnt, F_DUPFD_CLOEXEC, 3);
    if (dup < 0)
      return cm_error_set(err, errno, "dup %s", what);
    push_fd(&ctx->fds, &ctx->n, &ctx->cap, dup);
    return 0;
  }
  /* By fd: the overlay gets the directory judged above, not a path looked up again (Linux 6.13). */
  if (fsconfig(fs_fd, FSCONFIG_SET_FD, key, NULL, fd) < 0) {
    int saved = errno;
    char why[280];
    append_kernel_message(fs_fd, why, sizeof(why));
    return cm_error_set(err, saved, "%s: pass the layer by fd%s (needs Linux 6.13 or later)", what, why);
  }
  return 0;
}

/* A hardened overlay: every lowerdir, upperdir and workdir is a host tree the container gets, so
 * each is judged like a bind source and given to the kernel as the fd that was judged. Collecting
 * (ctx->collect), only the layers are opened and kept: no overlay is made. */
static int mount_overlay_checked(struct overlay_ctx *ctx, const struct spec_mount *m, unsigned long flags,
                                 struct cm_error **err) {
  cleanup_close int fs_fd = ctx->collect ? -1 : fsopen("overlay", FSOPEN_CLOEXEC);
  if (fs_fd < 0 && !ctx->collect)
    return cm_error_set(err, errno, "fsopen overlay");
  if (fs_fd >= 0 && m->source && *m->source && fsconfig(fs_fd, FSCONFIG_SET_STRING, "source", m->source, 0) < 0)
    return cm_error_set(err, errno, "overlay source \"%s\"", m->source);
  /* Mounted in the container's own user namespace (given layers): overlay keeps its markers in
   * user.overlay.* xattrs, the trusted.* ones being host root's. */
  if (fs_fd >= 0 && ctx->fds && fsconfig(fs_fd, FSCONFIG_SET_FLAG, "userxattr", NULL, 0) < 0)
    return cm_error_set(err, errno, "overlay option userxattr");
  cleanup_free char *copy = strdup(m->data ? m->data : "");
  if (copy == NULL)
    return cm_error_set(err, ENOMEM, "overlay options");
  bool has_lower = false;
  char layer[4096];
  /* Options are split at commas not escaped by a backslash. */
  for (char *opt = copy; opt && *opt;) {
    char *end = opt;
    while (*end && *end != ',') {
      if (*end == '\\' && end[1])
        end++;
      end++;
    }
    char *next = *end ? end + 1 : NULL;
    *end = '\0';
    char *eq = strchr(opt, '=');
    if (eq)
      *eq = '\0';
    const char *value = eq ? eq + 1 : NULL;
    if (value && strcmp(opt, "lowerdir") == 0) {
      /* "a:b::c": after "::" come data-only layers. */
      const char *key = "lowerdir+";
      for (const char *p = value; *p;) {
        p = next_layer(p, ':', layer, sizeof(layer));
        if (layer[0] && overlay_layer(ctx, fs_fd, key, layer, err) < 0)
          return -1;
        has_lower |= layer[0] != '\0';
        if (*p == ':' && p[1] == ':') {
          key = "datadir+";
          p++;
        }
        if (*p == ':')
          p++;
      }
    } else if (value && (strcmp(opt, "lowerdir+") == 0 || strcmp(opt, "datadir+") == 0 ||
                         strcmp(opt, "upperdir") == 0 || strcmp(opt, "workdir") == 0)) {
      next_layer(value, '\0', layer, sizeof(layer));
      if (overlay_layer(ctx, fs_fd, opt, layer, err) < 0)
        return -1;
      has_lower |= strcmp(opt, "lowerdir+") == 0;
    } else if (fs_fd >= 0) {
      int r = value ? fsconfig(fs_fd, FSCONFIG_SET_STRING, opt, value, 0)
                    : fsconfig(fs_fd, FSCONFIG_SET_FLAG, opt, NULL, 0);
      if (r < 0) {
        int saved = errno;
        char why[280];
        append_kernel_message(fs_fd, why, sizeof(why));
        return cm_error_set(err, saved, "overlay option \"%s\"%s", opt, why);
      }
    }
    opt = next;
  }
  if (!has_lower)
    return cm_error_set(err, EINVAL, "overlay without lowerdir");
  if (ctx->collect)
    return 0;
  if (fsconfig(fs_fd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
    int saved = errno;
    char why[280];
    append_kernel_message(fs_fd, why, sizeof(why));
    return cm_error_set(err, saved, "create overlay%s", why);
  }
  struct mount_attr attr;
  mount_attr_from_flags(flags, 0, &attr);
  int mnt_fd = fsmount(fs_fd, FSMOUNT_CLOEXEC, (unsigned int)attr.attr_set);
  if (mnt_fd < 0)
    return cm_error_set(err, errno, "fsmount overlay");
  return mnt_fd;
}

/* The value of option `key` in an overlay's data (backslash escapes undone), or "". */
static void overlay_option(const char *data, const char *key, char *out, size_t size) {
  out[0] = '\0';
  size_t klen = strlen(key);
  for (const char *p = data; p && *p;) {
    if (strncmp(p, key, klen) == 0 && p[klen] == '=') {
      next_layer(p + klen + 1, ',', out, size);
      return;
    }
    while (*p && *p != ',') {
      if (*p == '\\' && p[1])
        p++;
      p++;
    }
    if (*p == ',')
      p++;
  }
}

int rootfs_overlay_layer_fds(const struct spec_mount *m, const struct mount_source_rules *rules, int userns_fd,
                             struct rootfs_premount_layers *out, struct cm_error **err) {
  struct overlay_ctx ctx = {.rules = rules, .userns_fd = userns_fd, .collect = true, .upper_mnt = -1};
  char upper[4096], work[4096];
  overlay_option(m->data, "upperdir", upper, sizeof(upper));
  overlay_option(m->data, "workdir", work, sizeof(work));
  if (upper[0] && work[0])
    common_dir(upper, work, ctx.upper_root, sizeof(ctx.upper_root));
  if (mount_overlay_checked(&ctx, m, 0, err) < 0) {
    for (size_t i = 0; i < ctx.n; i++)
      close(ctx.fds[i]);
    for (size_t i = 0; i < ctx.n_attach; i++)
      close(ctx.attach[i]);
    free(ctx.fds);
    free(ctx.attach);
    return -1;
  }
  *out = (struct rootfs_premount_layers){.fds = ctx.fds, .n = ctx.n, .attach = ctx.attach, .n_attach = ctx.n_attach};
  return 0;
}

/* A user namespace whose network namespace is not its own may not mount sysfs (the kernel ties
 * sysfs to the network namespace's owner): the host's /sys, recursively read-only, as runc's
 * rootless configs bind it. */
static int sysfs_bind_fallback(unsigned long flags, unsigned long clear, struct cm_error **err) {
  cleanup_close int sys = open("/sys", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (sys < 0)
    return -1; /* keep the mount's own error */
  struct cm_error *why = *err;
  *err = NULL;
  int fd = mount_clone_tree(sys, true, flags | MS_RDONLY, clear & ~MS_RDONLY, err);
  if (fd >= 0 && mount_set_readonly(fd, true, err) < 0) {
    close(fd);
    fd = -1;
  }
  if (fd < 0) {
    cm_error_free(*err);
    *err = why;
    return -1;
  }
  cm_debug("sysfs: %s: bound the host's /sys read-only instead", why->msg);
  cm_error_free(why);
  return fd;
}

/* premount >= 0: the runtime's detached mount of this bind's source (idmapped), flags set,
 * already judged by the runtime when hardened (runtime/userns_setup.c). */
static int apply_one(const struct spec *s, const struct spec_mount *m, int root_fd,
                     const struct mount_source_rules *rules, int premount, int opened_src,
                     const struct rootfs_premount_layers *layers,
                     struct cm_error **err) {
  bool is_bind = rootfs_mount_is_bind(m);
  if ((m->idmap || m->n_uid_mappings) && premount < 0)
    return cm_error_set(err, EOPNOTSUPP, "idmapped mount: the runtime did not prepare it");
  if (!is_bind && (!m->type || !*m->type))
    return cm_error_set(err, EINVAL, "no type and not a bind mount");
  if (!m->destination || m->destination[0] != '/')
    return cm_error_set(err, EINVAL, "destination must be an absolute path");
  /* MS_REMOUNT of something not yet mounted has no meaning here; binds are never remounts. */
  unsigned long flags = m->flags & ~(MS_REMOUNT | MS_BIND | MS_REC);

  cleanup_close int src_fd = -1;
  bool target_is_dir = true;
  struct mount_source_kind src_kind = {0};
  if (is_bind) {
    if (!m->source)
      return cm_error_set(err, EINVAL, "bind mount without a source");
    /* A host path (relative ones are relative to the bundle, our cwd): the host admin's
     * choice, so symlinks in it are followed on the host. Premounted: made by the runtime; or
     * opened by it (in a user namespace, rootfs.h). */
    src_fd = premount >= 0     ? fcntl(premount, F_DUPFD_CLOEXEC, 3)
             : opened_src >= 0 ? fcntl(opened_src, F_DUPFD_CLOEXEC, 3)
                               : open(m->source, O_PATH | O_CLOEXEC);
    if (src_fd < 0)
      return cm_error_set(err, errno, "open source");
    struct stat st;
    if (fstat(src_fd, &st) < 0)
      return cm_error_set(err, errno, "stat source");
    target_is_dir = S_ISDIR(st.st_mode);
    /* Hardened: judged on this fd, which is the one cloned below (no second lookup). */
    if (rules && premount < 0 && mount_source_check(rules, src_fd, "bind source", false, &src_kind, err) < 0)
      return -1;
  }
  if (check_proc_destination(m, is_bind, src_fd, err) < 0)
    return -1;
  /* procfs and sysfs go on a real directory only: a symlinked /proc or /sys would put them (and
   * the masks applied under them) where the container never looks (CVE-2019-19921 class). */
  cleanup_close int target_fd = -1;
  if (!is_bind && (strcmp(m->type, "proc") == 0 || strcmp(m->type, "sysfs") == 0)) {
    struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS};
    /* Found without any symlink: the very target the resolver below would return. */
    target_fd = openat2_retry(root_fd, m->destination, &how);
    if (target_fd < 0 && errno == ELOOP)
      return cm_error_set(err, 0, "%s is a symlink in the rootfs: refused", m->destination);
  }
  bool existed = false;
  if (target_fd < 0)
    target_fd = open_mount_target(root_fd, m->destination, target_is_dir, &existed, err);
  if (target_fd < 0)
    return -1;
  /* Over a directory the image has, a tmpfs takes its mode (and content, with tmpcopyup):
   * done while it is still detached and writable. */
  bool take_over = !is_bind && strcmp(m->type, "tmpfs") == 0 && existed;

  if (!is_bind && (strcmp(m->type, "cgroup") == 0 || strcmp(m->type, "cgroup2") == 0))
    return mount_cgroup(s, m, target_fd, err);

  cleanup_close int mnt_fd = -1;
  if (!is_bind && layers && layers->n > 0) {
    /* An overlay whose layers the runtime opened, judged and idmapped. overlay clones its layers'
     * mounts, which must then be in our mount namespace: they are attached on the target first,
     * stacked beneath where the overlay goes, out of sight. */
    for (size_t k = 0; k < layers->n_attach; k++)
      if (move_mount(layers->attach[k], "", target_fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
        return cm_error_set(err, errno, "attach overlay layer mount %zu", k);
    struct overlay_ctx ctx = {.fds = layers->fds, .n = layers->n};
    mnt_fd = mount_overlay_checked(&ctx, m, flags, err);
  } else if (is_bind && premount >= 0) {
    mnt_fd = cm_steal_fd(&src_fd); /* flags and rro already set by the runtime */
  } else if (is_bind && rules) {
    /* Hardened: never recursive (a submount could be anything: a procfs, another disk), and a
     * device node read-only, so that its owner, mode and times cannot be changed through it. */
    if (src_kind.is_device)
      flags |= MS_RDONLY | MS_NOSUID | MS_NOEXEC;
    mnt_fd = mount_clone_tree(src_fd, false, flags, m->clear_flags, err);
    /* The clone shows exactly what the container will: also what a mount over part of the
     * source hides on the host. */
    if (mnt_fd >= 0 && src_kind.is_dir && mount_source_check_tree(rules, mnt_fd, "bind source", err) < 0)
      return -1;
  } else if (is_bind) {
    mnt_fd = mount_clone_tree(src_fd, (m->flags & MS_REC) != 0, flags, m->clear_flags, err);
  } else if (rules && strcmp(m->type, "overlay") == 0) {
    struct overlay_ctx ctx = {.rules = rules};
    mnt_fd = mount_overlay_checked(&ctx, m, flags, err);
  } else {
    mnt_fd = mount_new_fs_labeled(m->type, m->source, take_over ? flags & ~MS_RDONLY : flags, m->data,
                                  label_for(s, m->type), err);
  }
  if (mnt_fd < 0 && !is_bind && strcmp(m->type, "sysfs") == 0 && *err && (*err)->errnum == EPERM)
    mnt_fd = sysfs_bind_fallback(flags, m->clear_flags, err);
  if (mnt_fd < 0)
    return -1;
  if (take_over && (tmpfs_take_over_dir(target_fd, mnt_fd, m->tmpcopyup, m->destination, err) < 0 ||
                    ((flags & MS_RDONLY) && mount_set_readonly(mnt_fd, false, err) < 0)))
    return -1;
  if (premount < 0 && m->recursive_readonly && mount_set_readonly(mnt_fd, true, err) < 0)
    return -1;
  if (mount_attach(mnt_fd, target_fd, err) < 0)
    return -1;
  if (m->propagation && mount_set_propagation(mnt_fd, m->propagation, err) < 0)
    return -1;
  if (!is_bind)
    return verify_fs_type(root_fd, m->destination, m->type, err);
  return 0;
}

int mounts_apply(const struct spec *s, int root_fd, const struct mount_source_rules *rules,
                 const struct rootfs_premounts *pre, const int *bind_fds, struct cm_error **err) {
  int rc = 0;
  for (size_t i = 0; i < s->n_mounts && rc == 0; i++) {
    const struct spec_mount *m = &s->mounts[i];
    cm_debug("mount %s on %s (type %s)", m->source ? m->source : "-", m->destination,
             m->type ? m->type : "bind");
    int premount = pre && i < pre->n ? pre->mount_fds[i] : -1;
    const struct rootfs_premount_layers *layers = pre && i < pre->n && pre->layers ? &pre->layers[i] : NULL;
    if (apply_one(s, m, root_fd, m->trusted ? NULL : rules, premount, bind_fds ? bind_fds[i] : -1, layers, err) < 0)
      rc = cm_error_prefix(err, "mount \"%s\" on \"%s\" (mounts[%zu], type %s)",
                           m->source ? m->source : (m->type ? m->type : ""),
                           m->destination ? m->destination : "", i, m->type ? m->type : "bind");
  }
  return rc;
}
