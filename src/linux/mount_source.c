/* Judging mount sources and overlay layers on their fds, for hardened containers (see
 * mount_source.h). Runs in the container's child before pivot_root, as root, in a copy of the
 * host's mount namespace: "/" and every host path are the host's. */
#include "linux/mount_source.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/safepath.h"

#ifndef CONFIGFS_MAGIC
#define CONFIGFS_MAGIC 0x62656570
#endif
#ifndef FUSECTL_SUPER_MAGIC
#define FUSECTL_SUPER_MAGIC 0x65735543
#endif
#ifndef BINFMTFS_MAGIC
#define BINFMTFS_MAGIC 0x42494e4d
#endif
#ifndef EFIVARFS_MAGIC
#define EFIVARFS_MAGIC 0xde5e81e4
#endif
#ifndef PSTOREFS_MAGIC
#define PSTOREFS_MAGIC 0x6165676C
#endif
#ifndef TRACEFS_MAGIC
#define TRACEFS_MAGIC 0x74726163
#endif

/* Kernel interfaces, not data: each hands the container a piece of the host's kernel (core_pattern
 * in a procfs, device and cgroup knobs in sysfs, tracing, BPF objects, namespaces…). */
static const struct {
  long magic;
  const char *name;
} pseudo_filesystems[] = {
    {PROC_SUPER_MAGIC, "proc"},       {SYSFS_MAGIC, "sysfs"},
    {CGROUP_SUPER_MAGIC, "cgroup"},   {CGROUP2_SUPER_MAGIC, "cgroup2"},
    {DEBUGFS_MAGIC, "debugfs"},       {TRACEFS_MAGIC, "tracefs"},
    {SECURITYFS_MAGIC, "securityfs"}, {BPF_FS_MAGIC, "bpf"},
    {DEVPTS_SUPER_MAGIC, "devpts"},   {NSFS_MAGIC, "nsfs"},
    {PSTOREFS_MAGIC, "pstore"},       {CONFIGFS_MAGIC, "configfs"},
    {EFIVARFS_MAGIC, "efivarfs"},     {BINFMTFS_MAGIC, "binfmt_misc"},
    {SELINUX_MAGIC, "selinuxfs"},     {SMACK_MAGIC, "smackfs"},
    {FUSECTL_SUPER_MAGIC, "fusectl"},
};

/* Names that are credentials wherever they live: a tree holding one hands its keys over. */
static const char *const credential_names[] = {
    ".ssh",   ".gnupg",           ".aws",   ".kube",   ".docker",         ".config", ".azure",
    ".netrc", ".git-credentials", ".npmrc", ".pypirc", ".password-store",
};

/* Device nodes a bind may bring in (Docker's and runc's default set). */
static const unsigned allowed_devices[][2] = {{1, 3}, {1, 5}, {1, 7}, {1, 8}, {1, 9}, {5, 0}};

/* A tree refused as itself and everything inside it, or only as a whole: its subdirectories are
 * how Docker, containerd, Kubernetes and test suites hand out per-container files and scratch
 * space, so a source below one is not "inside" the sensitive tree that holds it (/dev/shm/x is not
 * /dev). Any ancestor of either kind is refused too: it contains the tree. */
enum tree_kind { TREE_INSIDE, TREE_EXACT };

struct ident {
  dev_t dev;
  ino_t ino;
};

struct tree {
  char *path;
  enum tree_kind kind;
  struct ident id;
  struct ident *ancestors;
  size_t n_ancestors;
};

struct mount_source_rules {
  struct tree *trees;
  size_t n;
};

static const struct {
  const char *path;
  enum tree_kind kind;
} host_trees[] = {
    {"/", TREE_EXACT},
    {"/etc", TREE_INSIDE},
    {"/proc", TREE_INSIDE},
    {"/sys", TREE_INSIDE},
    {"/dev", TREE_INSIDE},
    {"/boot", TREE_INSIDE},
    {"/root", TREE_INSIDE},
    {"/run", TREE_INSIDE},
    {"/var/run", TREE_INSIDE},
    {"/lib/modules", TREE_INSIDE},
    {"/usr/lib/modules", TREE_INSIDE},
    {"/tmp", TREE_EXACT},
    {"/var/tmp", TREE_EXACT},
    {"/dev/shm", TREE_EXACT},
    {"/run/containerd", TREE_EXACT},
    {"/var/lib/docker", TREE_EXACT},
    {"/var/lib/containerd", TREE_EXACT},
    {"/var/lib/kubelet", TREE_EXACT},
    {"/var/lib/containers", TREE_EXACT},
};

static bool same(struct ident a, const struct stat *st) {
  return a.dev == st->st_dev && a.ino == st->st_ino;
}

static bool same_ident(struct ident a, struct ident b) {
  return a.dev == b.dev && a.ino == b.ino;
}

/* The directories above `path` up to "/", by identity (path itself excluded): one stat of
 * "path/..", "path/../.." … each (the kernel resolves ".." as a walk up would). */
static void collect_ancestors(const char *path, const struct stat *self, struct ident **out, size_t *n) {
  *out = NULL;
  *n = 0;
  char buf[PATH_MAX];
  size_t len = (size_t)snprintf(buf, sizeof(buf), "%s", path);
  struct stat below = *self;
  for (int depth = 0; depth < 64 && len + 4 < sizeof(buf); depth++) {
    memcpy(buf + len, "/..", 4);
    len += 3;
    struct stat st;
    if (stat(buf, &st) < 0 || (st.st_dev == below.st_dev && st.st_ino == below.st_ino))
      break; /* "/" is its own parent */
    struct ident *grown = realloc(*out, (*n + 1) * sizeof(**out));
    if (grown == NULL)
      abort();
    *out = grown;
    (*out)[(*n)++] = (struct ident){st.st_dev, st.st_ino};
    below = st;
  }
}

static void add_tree(struct mount_source_rules *r, const char *path, enum tree_kind kind) {
  struct stat st;
  if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
    return;
  for (size_t i = 0; i < r->n; i++)
    if (same(r->trees[i].id, &st) && r->trees[i].kind == kind)
      return; /* /var/run is /run */
  struct tree *grown = realloc(r->trees, (r->n + 1) * sizeof(*grown));
  if (grown == NULL)
    abort();
  r->trees = grown;
  struct tree *t = &r->trees[r->n++];
  *t = (struct tree){.path = strdup(path), .kind = kind, .id = {st.st_dev, st.st_ino}};
  if (t->path == NULL)
    abort();
  collect_ancestors(path, &st, &t->ancestors, &t->n_ancestors);
}

/* Home directories of the invoking user: the runtime's uid, the uid sudo was run by, and $HOME.
 * Refused as a whole (with its keys, tokens and history), not what is inside: a project directory
 * in a home is what an MCP server is usually given, and is judged like any other directory (its
 * tree must hold no credentials or sockets, and ~/.ssh/x is inside a credentials directory). Read
 * from the host's /etc/passwd (no NSS in this static binary's child). A home that is "/" is no
 * tree of its own. */
static void add_invoking_homes(struct mount_source_rules *r) {
  const char *env_home = getenv("HOME");
  if (env_home && env_home[0] == '/' && env_home[1] != '\0')
    add_tree(r, env_home, TREE_EXACT);
  const char *sudo_uid = getenv("SUDO_UID");
  long uids[2] = {(long)getuid(), sudo_uid && *sudo_uid ? strtol(sudo_uid, NULL, 10) : -1};
  cleanup_fclose FILE *f = fopen("/etc/passwd", "re");
  char line[1024];
  while (f && fgets(line, sizeof(line), f)) {
    char *fields[7] = {0};
    int n = 0;
    line[strcspn(line, "\n")] = '\0';
    for (char *p = line, *tok; n < 7 && (tok = strsep(&p, ":")) != NULL;)
      fields[n++] = tok;
    if (n < 6 || !fields[2][0] || fields[5][0] != '/' || fields[5][1] == '\0')
      continue;
    long uid = strtol(fields[2], NULL, 10);
    if (uid == uids[0] || uid == uids[1])
      add_tree(r, fields[5], TREE_EXACT);
  }
}

struct mount_source_rules *mount_source_rules_load(void) {
  struct mount_source_rules *r = calloc(1, sizeof(*r));
  if (r == NULL)
    abort();
  for (size_t i = 0; i < sizeof(host_trees) / sizeof(host_trees[0]); i++)
    add_tree(r, host_trees[i].path, host_trees[i].kind);
  add_invoking_homes(r);
  return r;
}

void mount_source_rules_free(struct mount_source_rules *r) {
  if (r == NULL)
    return;
  for (size_t i = 0; i < r->n; i++) {
    free(r->trees[i].path);
    free(r->trees[i].ancestors);
  }
  free(r->trees);
  free(r);
}

static const char *pseudo_fs_name(long magic) {
  for (size_t i = 0; i < sizeof(pseudo_filesystems) / sizeof(pseudo_filesystems[0]); i++)
    if (pseudo_filesystems[i].magic == magic)
      return pseudo_filesystems[i].name;
  return NULL;
}

/* The mountinfo line of mount `mnt_id`: its root inside the filesystem and its source. */
static bool mountinfo_lookup(unsigned long long mnt_id, char *root, size_t root_size, char *source,
                             size_t source_size) {
  cleanup_fclose FILE *f = fopen("/proc/self/mountinfo", "re");
  cleanup_free char *line = NULL;
  size_t cap = 0;
  while (f && getline(&line, &cap, f) > 0) {
    unsigned long long id;
    char r[4096];
    if (sscanf(line, "%llu %*u %*s %4095s", &id, r) != 2 || id != mnt_id)
      continue;
    const char *sep = strstr(line, " - ");
    char src[4096] = "";
    if (sep)
      sscanf(sep + 3, "%*s %4095s", src);
    snprintf(root, root_size, "%s", r);
    snprintf(source, source_size, "%s", src);
    return true;
  }
  return false;
}

/* Refuse the whole filesystem of a block device: the root of a mount that shows its filesystem
 * from the top (a disk mounted again, a Docker local volume of type ext4 on /dev/vda…). A
 * directory inside it is judged like any other host directory. */
static int check_whole_block_fs(int fd, const struct stat *st, const char *what, struct cm_error **err) {
  struct statx stx;
  if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &stx) < 0)
    return 0;
  if (!(stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) || !(stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) ||
      !(stx.stx_mask & STATX_MNT_ID))
    return 0;
  char root[4096], source[4096];
  if (!mountinfo_lookup(stx.stx_mnt_id, root, sizeof(root), source, sizeof(source)) || strcmp(root, "/") != 0)
    return 0;
  if (major(st->st_dev) == 0 && strncmp(source, "/dev/", 5) != 0)
    return 0; /* tmpfs, overlay, nfs…: not a disk of this host */
  return cm_error_set(
      err, 0,
      "%s is the whole filesystem of block device %s: a hardened container gets no disk's entire "
      "contents (fix: bind a directory inside it)",
      what, source);
}

/* The parent directory of a non-directory fd, found by its current name and checked to still hold
 * this very inode there. */
static int open_parent_of_file(int fd, const struct stat *st, const char *what, struct cm_error **err) {
  char proc[32], path[4096];
  ssize_t n = readlink(safepath_fd_path(fd, proc), path, sizeof(path) - 1);
  if (n <= 0 || path[0] != '/')
    return cm_error_set(err, errno, "%s: cannot tell where it is", what);
  path[n] = '\0';
  char *slash = strrchr(path, '/');
  const char *base = slash + 1;
  *slash = '\0';
  int parent = open(path[0] ? path : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  struct stat pst;
  if (parent < 0 || fstatat(parent, base, &pst, AT_SYMLINK_NOFOLLOW) < 0 || pst.st_dev != st->st_dev ||
      pst.st_ino != st->st_ino) {
    if (parent >= 0)
      close(parent);
    return cm_error_set(err, 0, "%s changed while it was being checked", what);
  }
  return parent;
}

static bool is_credential_name(const char *name) {
  for (size_t i = 0; i < sizeof(credential_names) / sizeof(credential_names[0]); i++)
    if (strcmp(name, credential_names[i]) == 0)
      return true;
  return false;
}

/* Is `child` (an entry of dir_fd) one of dir_fd's credential entries? Returns its name or NULL. */
static const char *credential_entry(int dir_fd, struct ident child) {
  for (size_t i = 0; i < sizeof(credential_names) / sizeof(credential_names[0]); i++) {
    struct stat st;
    if (fstatat(dir_fd, credential_names[i], &st, AT_SYMLINK_NOFOLLOW) == 0 && same(child, &st))
      return credential_names[i];
  }
  return NULL;
}

/* One directory above the source: holding the way down under a credential name, or a sensitive
 * tree (unless a per-container area lies between: *below_exact). */
static int check_step(const struct mount_source_rules *r, int dir_fd, const struct stat *dst,
                      struct ident child, bool *below_exact, const char *what, struct cm_error **err) {
  const char *name = credential_entry(dir_fd, child);
  if (name)
    return cm_error_set(
        err, 0, "%s is inside a credentials directory (%s) (fix: bind a directory without keys)", what, name);
  for (size_t i = 0; i < r->n; i++) {
    if (!same(r->trees[i].id, dst))
      continue;
    if (r->trees[i].kind == TREE_EXACT)
      *below_exact = true;
    else if (!*below_exact)
      return cm_error_set(err, 0, "%s is inside the host's %s (fix: bind a directory of your own)", what,
                          r->trees[i].path);
  }
  return 0;
}

/* By identity: is the source a sensitive tree, inside one (or a credentials directory), or does
 * it contain one? dir_fd is the source itself when it is a directory, else its parent. */
static int check_identity(const struct mount_source_rules *r, int dir_fd, const struct stat *self,
                          const char *what, struct cm_error **err) {
  struct ident me = {self->st_dev, self->st_ino};
  for (size_t i = 0; i < r->n; i++) {
    const struct tree *t = &r->trees[i];
    if (same_ident(t->id, me)) {
      if (strcmp(t->path, "/") == 0)
        return cm_error_set(
            err, 0, "%s is the host's whole filesystem (/) (fix: bind a directory of your own)", what);
      if (t->kind == TREE_EXACT)
        return cm_error_set(err, 0,
                            "%s is the host's %s as a whole (fix: bind a directory of your own inside it)",
                            what, t->path);
      return cm_error_set(err, 0, "%s is the host's %s (fix: bind a directory of your own)", what, t->path);
    }
    for (size_t k = 0; k < t->n_ancestors; k++)
      if (same_ident(t->ancestors[k], me))
        return cm_error_set(err, 0, "%s contains the host's %s (fix: bind a directory that does not)", what,
                            t->path);
  }
  /* Up from the source to "/": each directory above it, and the entry each step came through. */
  cleanup_close int cur = fcntl(dir_fd, F_DUPFD_CLOEXEC, 3);
  struct stat cst;
  if (cur < 0 || fstat(cur, &cst) < 0)
    return cm_error_set(err, errno, "%s: walk up", what);
  bool below_exact = false;
  if (!S_ISDIR(self->st_mode) && check_step(r, cur, &cst, me, &below_exact, what, err) < 0)
    return -1; /* dir_fd is the file's parent */
  for (int depth = 0; depth < 256; depth++) {
    int up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
    struct stat ust;
    if (up < 0 || fstat(up, &ust) < 0) {
      if (up >= 0)
        close(up);
      return cm_error_set(err, errno, "%s: walk up", what);
    }
    close(cur);
    cur = up;
    if (ust.st_dev == cst.st_dev && ust.st_ino == cst.st_ino)
      return 0; /* "/" is its own parent */
    struct ident below = {cst.st_dev, cst.st_ino};
    cst = ust;
    if (check_step(r, cur, &cst, below, &below_exact, what, err) < 0)
      return -1;
  }
  return 0;
}

int mount_source_check(const struct mount_source_rules *r, int fd, const char *what, bool is_rootfs,
                       struct mount_source_kind *kind, struct cm_error **err) {
  *kind = (struct mount_source_kind){0};
  struct stat st;
  if (fstat(fd, &st) < 0)
    return cm_error_set(err, errno, "stat %s", what);
  /* read-only does not stop connect(2): a host socket is the host service itself. */
  if (S_ISSOCK(st.st_mode))
    return cm_error_set(
        err, 0, "%s is a socket: a host service a hardened container may not reach (fix: remove it)", what);
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
    for (size_t i = 0; S_ISCHR(st.st_mode) && i < sizeof(allowed_devices) / sizeof(allowed_devices[0]); i++)
      if (major(st.st_rdev) == allowed_devices[i][0] && minor(st.st_rdev) == allowed_devices[i][1]) {
        kind->is_device = true;
        return 0;
      }
    return cm_error_set(
        err, 0,
        "%s is %s device %u:%u, outside the devices a hardened container may have (null, zero, "
        "full, random, urandom, tty) (fix: remove it)",
        what, S_ISBLK(st.st_mode) ? "block" : "character", major(st.st_rdev), minor(st.st_rdev));
  }
  struct statfs sfs;
  if (fstatfs(fd, &sfs) < 0)
    return cm_error_set(err, errno, "statfs %s", what);
  const char *pseudo = pseudo_fs_name((long)sfs.f_type);
  if (pseudo)
    return cm_error_set(err, 0,
                        "%s is on a %s filesystem: a kernel interface of the host, not data (fix: bind a "
                        "directory of files)",
                        what, pseudo);
  kind->is_dir = S_ISDIR(st.st_mode);
  if (kind->is_dir && !is_rootfs && check_whole_block_fs(fd, &st, what, err) < 0)
    return -1;
  cleanup_close int dir_fd =
      kind->is_dir ? fcntl(fd, F_DUPFD_CLOEXEC, 3) : open_parent_of_file(fd, &st, what, err);
  if (dir_fd < 0)
    return -1;
  return check_identity(r, dir_fd, &st, what, err);
}

/* --- the tree walk ------------------------------------------------------------------------- */

#define TREE_MAX_ENTRIES 1000000L
#define TREE_MAX_DEPTH 256

struct walk {
  const struct mount_source_rules *rules;
  const char *what;
  long entries;
  char path[4096];
};

static int walk_dir(struct walk *w, int fd, size_t path_len, int depth, struct cm_error **err) {
  if (depth > TREE_MAX_DEPTH)
    return cm_error_set(
        err, 0, "%s is nested too deep to check (more than %d levels at %s) (fix: bind a smaller tree)",
        w->what, TREE_MAX_DEPTH, w->path[0] ? w->path : "/");
  enum { BUF = 16384 };
  cleanup_free char *buf = malloc(BUF);
  if (buf == NULL)
    abort();
  for (;;) {
    long n = syscall(SYS_getdents64, fd, buf, BUF);
    if (n < 0)
      return cm_error_set(err, errno, "%s: read directory %s", w->what, w->path[0] ? w->path : "/");
    if (n == 0)
      return 0;
    for (long off = 0; off < n;) {
      struct dirent64 *d = (struct dirent64 *)(buf + off);
      off += d->d_reclen;
      const char *name = d->d_name;
      if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0')))
        continue;
      if (++w->entries > TREE_MAX_ENTRIES)
        return cm_error_set(
            err, 0,
            "%s has more than %ld entries, too many to check for sockets and credentials (fix: "
            "bind a smaller tree)",
            w->what, TREE_MAX_ENTRIES);
      int len = snprintf(w->path + path_len, sizeof(w->path) - path_len, "/%s", name);
      if (len < 0 || (size_t)len >= sizeof(w->path) - path_len)
        return cm_error_set(err, ENAMETOOLONG, "%s: path too long to check", w->what);
      if (is_credential_name(name))
        return cm_error_set(err, 0, "%s holds credentials (%s) (fix: bind a directory without keys)", w->what,
                            w->path);
      unsigned char type = d->d_type;
      if (type == DT_UNKNOWN) {
        struct stat st;
        if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
          continue; /* gone meanwhile */
        type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISSOCK(st.st_mode) ? DT_SOCK : DT_REG;
      }
      if (type == DT_SOCK)
        return cm_error_set(err, 0,
                            "%s holds a socket (%s): the container could connect(2) to that host service, "
                            "read-only or not (fix: bind a directory without sockets)",
                            w->what, w->path);
      if (type != DT_DIR)
        continue;
      cleanup_close int sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub < 0) {
        if (errno == ENOENT)
          continue;
        return cm_error_set(err, errno, "%s: open %s", w->what, w->path);
      }
      if (walk_dir(w, sub, path_len + (size_t)len, depth + 1, err) < 0)
        return -1;
    }
    w->path[path_len] = '\0';
  }
}

int mount_source_check_tree(const struct mount_source_rules *r, int dir_fd, const char *what,
                            struct cm_error **err) {
  cleanup_close int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return cm_error_set(err, errno, "%s: open", what);
  struct walk w = {.rules = r, .what = what};
  return walk_dir(&w, fd, 0, 0, err);
}
