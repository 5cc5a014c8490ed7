/* Landlock: the three syscalls, the rule paths opened in the container's root, and the deny
 * list carved out of the allowed trees (see landlock.h). */
#include "linux/landlock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/cleanup.h"

/* The UAPI, ours (Debian 12's headers stop at ABI 2): syscall numbers are the same on every
 * architecture since 5.13. */
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif
#define LL_CREATE_RULESET_VERSION (1U << 0)
#define LL_RULE_PATH_BENEATH 1
#define LL_RULE_NET_PORT 2 /* ABI 4 */

/* ABI 1 had only handled_access_fs, ABI 4 added handled_access_net, ABI 6 scoped: the kernel
 * takes the larger struct as long as the fields it does not know are zero. */
struct ll_ruleset_attr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};
struct ll_path_beneath_attr {
  uint64_t allowed_access;
  int32_t parent_fd;
} __attribute__((packed));
struct ll_net_port_attr {
  uint64_t allowed_access;
  uint64_t port;
};

int landlock_abi(void) {
  long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
  return v > 0 ? (int)v : 0;
}

/* --- the rules of a layer -------------------------------------------------------------------- */

struct rule_list {
  struct landlock_rule *v;
  size_t n;
};

void landlock_rules_free(struct landlock_rule *r, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (r[i].fd >= 0)
      close(r[i].fd);
    free(r[i].path);
  }
  free(r);
}

/* Take fd as a rule on `path`: rights a non-directory cannot hold are dropped (the kernel refuses
 * them), and a rule left with none is not kept. Without `typed` the fd is not looked at now (no
 * deny list needs its inode): prepare_layer drops those rights if the kernel refuses them. That
 * saves an fstat per rule on every start. Consumes fd. */
static int rules_add_untyped(struct rule_list *r, const char *path, int fd, uint64_t access) {
  struct landlock_rule *grown = realloc(r->v, (r->n + 1) * sizeof(*grown));
  if (grown == NULL)
    abort();
  r->v = grown;
  r->v[r->n++] = (struct landlock_rule){.path = strdup(path), .fd = fd, .access = access};
  return 0;
}

static int rules_add(struct rule_list *r, const char *path, int fd, uint64_t access, struct cm_error **err) {
  struct stat st;
  if (fstat(fd, &st) < 0) {
    int e = errno;
    close(fd);
    return cm_error_set(err, e, "landlock: stat %s", path);
  }
  if (!S_ISDIR(st.st_mode))
    access &= LL_FS_FILE_RIGHTS;
  if (access == 0) {
    close(fd);
    return 0;
  }
  struct landlock_rule *grown = realloc(r->v, (r->n + 1) * sizeof(*grown));
  if (grown == NULL)
    abort();
  r->v = grown;
  r->v[r->n++] = (struct landlock_rule){strdup(path), fd, access, st.st_dev, st.st_ino, true};
  return 0;
}

static char *path_join(const char *dir, const char *name) {
  char *p = NULL;
  if (asprintf(&p, "%s%s%s", dir, strcmp(dir, "/") == 0 ? "" : "/", name) < 0)
    abort();
  return p;
}

/* The rule's path as written, made absolute against cwd. */
static char *rule_path(const char *path, const char *cwd) {
  if (path[0] == '/' || cwd == NULL)
    return strdup(path);
  return path_join(cwd, path);
}

/* Open a rule's path (symlinks followed, inside our root). 0 opened, 1 nothing there, -1 error. */
static int open_rule_path(const char *path, int extra_flags, int *fd, struct cm_error **err) {
  *fd = open(path, O_PATH | O_CLOEXEC | extra_flags);
  if (*fd >= 0)
    return 0;
  if (errno == ENOENT || errno == ENOTDIR)
    return 1;
  return cm_error_set(err, errno, "landlock: open rule path %s", path);
}

/* p is root or beneath it (both canonical). */
static bool beneath_or_at(const char *p, const char *root) {
  if (strcmp(root, "/") == 0)
    return true;
  size_t n = strlen(root);
  return strncmp(p, root, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

struct node {
  char *path; /* canonical */
  uint64_t access;
  dev_t dev;
  ino_t ino;
};
struct node_list {
  struct node *v;
  size_t n;
};

static void nodes_free(struct node_list *l) {
  for (size_t i = 0; i < l->n; i++)
    free(l->v[i].path);
  free(l->v);
  *l = (struct node_list){0};
}

static struct node *nodes_find(const struct node_list *l, const char *path) {
  for (size_t i = 0; i < l->n; i++)
    if (strcmp(l->v[i].path, path) == 0)
      return &l->v[i];
  return NULL;
}

static bool nodes_have_inode(const struct node_list *l, dev_t dev, ino_t ino) {
  for (size_t i = 0; i < l->n; i++)
    if (l->v[i].dev == dev && l->v[i].ino == ino)
      return true;
  return false;
}

/* Add (or merge the access of) a canonical path; its inode is read when it is added. */
static int nodes_add(struct node_list *l, const char *path, uint64_t access, struct cm_error **err) {
  struct node *found = nodes_find(l, path);
  if (found) {
    found->access |= access;
    return 0;
  }
  struct stat st;
  if (stat(path, &st) < 0)
    return cm_error_set(err, errno, "landlock: stat %s", path);
  struct node *grown = realloc(l->v, (l->n + 1) * sizeof(*grown));
  if (grown == NULL)
    abort();
  l->v = grown;
  l->v[l->n++] = (struct node){strdup(path), access, st.st_dev, st.st_ino};
  return 0;
}

/* The directories from `top` (included) down to the parent of `denied` (both canonical, denied
 * strictly beneath top), with the rights of the tree: they keep only read_dir themselves, their
 * other entries get those rights. */
static int way_add(struct node_list *way, const char *top, const char *denied, uint64_t access,
                   struct cm_error **err) {
  if (nodes_add(way, top, access, err) < 0)
    return -1;
  size_t start = strcmp(top, "/") == 0 ? 0 : strlen(top);
  cleanup_free char *p = strdup(denied);
  for (char *slash = strchr(p + start + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
    *slash = '\0';
    int r = nodes_add(way, p, access, err);
    *slash = '/';
    if (r < 0)
      return -1;
  }
  return 0;
}

/* Every entry of a directory on the way that is neither on the way nor denied keeps the rights of
 * the tree the directory is in. Symlinks get no rule: what they point to has its own. */
static int way_entries(struct rule_list *r, const struct node *w, const struct node_list *way,
                       const struct node_list *denied, struct cm_error **err) {
  int dfd = open(w->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return cm_error_set(err, errno, "landlock: open %s to carve out a denied path", w->path);
  DIR *d = fdopendir(dfd);
  if (d == NULL) {
    close(dfd);
    return cm_error_set(err, errno, "landlock: list %s", w->path);
  }
  int rc = 0;
  struct dirent *e;
  while (rc == 0 && (e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    cleanup_free char *full = path_join(w->path, e->d_name);
    if (nodes_find(way, full) || nodes_find(denied, full))
      continue;
    int fd = openat(dirfd(d), e->d_name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT)
        continue; /* gone meanwhile */
      rc = cm_error_set(err, errno, "landlock: open %s", full);
      break;
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISLNK(st.st_mode)) {
      close(fd);
      continue;
    }
    rc = rules_add(r, full, fd, w->access, err);
  }
  closedir(d);
  return rc;
}

int landlock_rules_resolve(const struct spec_landlock *l, const char *cwd, struct landlock_rule **out,
                           size_t *n, struct cm_error **err) {
  struct rule_list r = {0};
  struct node_list denied = {0}, way = {0};
  int rc = -1;
  *out = NULL;
  *n = 0;

  /* The denied paths, canonical (a symlink on the way would otherwise name a different tree than
   * the one the kernel walks), with their inodes. A path that does not exist denies nothing yet. */
  for (size_t i = 0; i < l->deny.count; i++) {
    char canon[PATH_MAX];
    if (realpath(l->deny.items[i], canon) == NULL) {
      if (errno == ENOENT || errno == ENOTDIR)
        continue;
      cm_error_set(err, errno, "landlock: deny %s", l->deny.items[i]);
      goto out;
    }
    if (nodes_add(&denied, canon, 0, err) < 0)
      goto out;
  }

  for (size_t i = 0; i < l->n_paths; i++) {
    cleanup_free char *path = rule_path(l->paths[i].path, cwd);
    uint64_t access = l->paths[i].access;
    if (denied.n == 0) {
      int fd, o = open_rule_path(path, 0, &fd, err);
      if (o < 0)
        goto out;
      if (o == 0)
        rules_add_untyped(&r, path, fd, access);
      continue;
    }
    char canon[PATH_MAX];
    if (realpath(path, canon) == NULL) {
      if (errno == ENOENT || errno == ENOTDIR)
        continue;
      cm_error_set(err, errno, "landlock: rule path %s", path);
      goto out;
    }
    bool inside_denied = false, carved = false;
    for (size_t k = 0; k < denied.n; k++) {
      const char *d = denied.v[k].path;
      if (beneath_or_at(canon, d)) {
        inside_denied = true; /* a rule at or beneath a denied path: the deny wins */
      } else if (beneath_or_at(d, canon)) {
        carved = true;
        if (way_add(&way, canon, d, access, err) < 0)
          goto out;
      }
    }
    if (inside_denied || carved)
      continue;
    int fd, o = open_rule_path(canon, 0, &fd, err);
    if (o < 0 || (o == 0 && rules_add(&r, canon, fd, access, err) < 0))
      goto out;
  }
  /* The carving: each directory on the way may be listed; its other entries keep the rights of
   * the tree(s) it is in. */
  for (size_t i = 0; i < way.n; i++) {
    int fd, o = open_rule_path(way.v[i].path, O_DIRECTORY, &fd, err);
    if (o < 0 || (o == 0 && rules_add(&r, way.v[i].path, fd, way.v[i].access & LL_FS_READ_DIR, err) < 0))
      goto out;
    if (o == 0 && way_entries(&r, &way.v[i], &way, &denied, err) < 0)
      goto out;
  }
  /* By inode, the way the kernel matches rules: another path to a denied file (a hard link in a
   * listed directory) gets no rule, and another mount of a directory on the way no more than
   * read_dir, or it would hand back what the carving took away. */
  if (denied.n) {
    size_t kept = 0;
    for (size_t i = 0; i < r.n; i++) {
      struct landlock_rule *x = &r.v[i];
      if (nodes_have_inode(&way, x->dev, x->ino))
        x->access &= LL_FS_READ_DIR;
      if (nodes_have_inode(&denied, x->dev, x->ino))
        x->access = 0;
      if (x->access) {
        r.v[kept++] = *x;
      } else {
        close(x->fd);
        free(x->path);
      }
    }
    r.n = kept;
  }
  rc = 0;
out:
  if (rc == 0) {
    *out = r.v;
    *n = r.n;
  } else {
    landlock_rules_free(r.v, r.n);
  }
  nodes_free(&denied);
  nodes_free(&way);
  return rc;
}

/* --- enforcing ------------------------------------------------------------------------------- */

void landlock_prepared_close(struct landlock_prepared *p) {
  for (size_t i = 0; i < p->n; i++)
    close(p->fds[i]);
  p->n = 0;
}

static int prepare_layer(const struct spec_landlock *l, const char *cwd, int *out_fd, struct cm_error **err) {
  const char *src = l->source ? l->source : "ruleset";
  struct ll_ruleset_attr attr = {
      .handled_access_fs = l->handled[SPEC_LANDLOCK_FS],
      .handled_access_net = l->handled[SPEC_LANDLOCK_NET],
      .scoped = l->handled[SPEC_LANDLOCK_SCOPE],
  };
  *out_fd = -1;
  if (!attr.handled_access_fs && !attr.handled_access_net && !attr.scoped)
    return 0; /* nothing handled: the layer restricts nothing */
  cleanup_close int rfd = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0);
  if (rfd < 0)
    return cm_error_set(err, errno,
                        "landlock (%s): create the ruleset (handled fs 0x%" PRIx64 ", net 0x%" PRIx64
                        ", scoped 0x%" PRIx64 ")",
                        src, attr.handled_access_fs, attr.handled_access_net, attr.scoped);
  struct landlock_rule *rules;
  size_t nr;
  if (landlock_rules_resolve(l, cwd, &rules, &nr, err) < 0)
    return cm_error_prefix(err, "%s", src);
  int rc = 0;
  for (size_t k = 0; k < nr && rc == 0; k++) {
    struct ll_path_beneath_attr pb = {.allowed_access = rules[k].access, .parent_fd = rules[k].fd};
    long added = syscall(SYS_landlock_add_rule, rfd, LL_RULE_PATH_BENEATH, &pb, 0);
    struct stat st;
    /* A file (a bind-mounted /etc/hosts, /dev/tty) cannot hold directory rights: drop them. */
    if (added < 0 && errno == EINVAL && !rules[k].typed && fstat(rules[k].fd, &st) == 0 &&
        !S_ISDIR(st.st_mode)) {
      pb.allowed_access &= LL_FS_FILE_RIGHTS;
      added = pb.allowed_access ? syscall(SYS_landlock_add_rule, rfd, LL_RULE_PATH_BENEATH, &pb, 0) : 0;
    }
    if (added < 0)
      rc = cm_error_set(err, errno, "landlock (%s): rule on %s (access 0x%" PRIx64 ")", src, rules[k].path,
                        rules[k].access);
  }
  landlock_rules_free(rules, nr);
  if (rc < 0)
    return -1;
  for (size_t k = 0; k < l->n_ports && attr.handled_access_net; k++) {
    struct ll_net_port_attr np = {.allowed_access = l->ports[k].access, .port = l->ports[k].port};
    if (syscall(SYS_landlock_add_rule, rfd, LL_RULE_NET_PORT, &np, 0) < 0)
      return cm_error_set(err, errno, "landlock (%s): rule on TCP port %" PRIu64, src, l->ports[k].port);
  }
  *out_fd = cm_steal_fd(&rfd);
  return 0;
}

int landlock_prepare(const struct spec_landlock *layers, size_t n, const char *cwd,
                     struct landlock_prepared *out, struct cm_error **err) {
  out->n = 0;
  if (n > LANDLOCK_MAX_LAYERS)
    return cm_error_set(err, E2BIG, "landlock: %zu layers (at most %d)", n, LANDLOCK_MAX_LAYERS);
  for (size_t i = 0; i < n; i++) {
    int fd;
    if (prepare_layer(&layers[i], cwd, &fd, err) < 0) {
      landlock_prepared_close(out);
      return -1;
    }
    if (fd >= 0)
      out->fds[out->n++] = fd;
  }
  return 0;
}

int landlock_enforce(struct landlock_prepared *p, struct cm_error **err) {
  int rc = 0;
  for (size_t i = 0; i < p->n && rc == 0; i++) {
    if (syscall(SYS_landlock_restrict_self, p->fds[i], 0) < 0)
      rc = cm_error_set(err, errno,
                        errno == EPERM ? "landlock: restrict self (needs no_new_privs or CAP_SYS_ADMIN)"
                                       : "landlock: restrict self");
  }
  landlock_prepared_close(p);
  return rc;
}
