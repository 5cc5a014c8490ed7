/* Layer unpacking: a security boundary. A layer is an attacker's tar stream; nothing it holds
 * may land outside the rootfs or reach through it:
 *   - every entry's parent directory is resolved inside the rootfs, as if it were "/"
 *     (openat2 RESOLVE_IN_ROOT through util/safepath): a symlink made by an earlier entry or
 *     layer ("etc -> /host/etc", "x -> ../../..") leads back into the rootfs, never out of it;
 *   - a name with a ".." component is refused (Docker calls it a breakout), a leading "/" is
 *     taken as relative to the rootfs (as Docker and umoci do);
 *   - the entry itself is created with O_EXCL / O_NOFOLLOW after removing what was there, so a
 *     final symlink is replaced, never written through;
 *   - a hard link's target is resolved inside the rootfs too, and linked without following it;
 *   - whiteouts (".wh.NAME") and opaque directories (".wh..wh..opq") remove only what lower
 *     layers put there (OCI image-spec, layer.md), removed without following symlinks;
 *   - owners, device nodes and setuid bits only where the caller may have them: rootless, no
 *     devices, every file ours, no setuid/setgid (a setuid file of ours in a store other users
 *     can reach would run with our uid); xattrs limited to user.* and security.capability
 *     (trusted.overlay.* would steer an overlay mount built on the rootfs). */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "image/image.h"
#include "image/unpack_internal.h"
#include "util/cleanup.h"
#include "util/safepath.h"

#define WH_PREFIX ".wh."
#define WH_OPAQUE ".wh..wh..opq"

/* --- the names this layer created (opaque whiteouts keep them) -------------------------------- */

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ULL;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h;
}

static void nameset_grow(struct unpack_nameset *ns) {
  size_t cap = ns->cap ? ns->cap * 2 : 1024;
  char **slots = calloc(cap, sizeof(char *));
  if (slots == NULL)
    abort();
  for (size_t i = 0; i < ns->cap; i++) {
    if (ns->slots[i] == NULL)
      continue;
    size_t j = hash_str(ns->slots[i]) & (cap - 1);
    while (slots[j])
      j = (j + 1) & (cap - 1);
    slots[j] = ns->slots[i];
  }
  free(ns->slots);
  ns->slots = slots;
  ns->cap = cap;
}

static bool nameset_has(const struct unpack_nameset *ns, const char *name) {
  if (ns->cap == 0)
    return false;
  for (size_t j = hash_str(name) & (ns->cap - 1); ns->slots[j]; j = (j + 1) & (ns->cap - 1))
    if (strcmp(ns->slots[j], name) == 0)
      return true;
  return false;
}

static void nameset_add_one(struct unpack_nameset *ns, const char *name) {
  if (nameset_has(ns, name))
    return;
  if ((ns->count + 1) * 2 > ns->cap)
    nameset_grow(ns);
  size_t j = hash_str(name) & (ns->cap - 1);
  while (ns->slots[j])
    j = (j + 1) & (ns->cap - 1);
  ns->slots[j] = strdup(name);
  if (ns->slots[j] == NULL)
    abort();
  ns->count++;
}

/* The name and each of its parents ("a/b/c", "a/b", "a"): a parent made implicitly by this layer
 * is this layer's too. */
static void nameset_add(struct unpack_nameset *ns, const char *name) {
  char buf[PATH_MAX];
  snprintf(buf, sizeof(buf), "%s", name);
  for (;;) {
    nameset_add_one(ns, buf);
    char *slash = strrchr(buf, '/');
    if (slash == NULL)
      break;
    *slash = '\0';
  }
}

static void nameset_clear(struct unpack_nameset *ns) {
  for (size_t i = 0; i < ns->cap; i++)
    free(ns->slots[i]);
  free(ns->slots);
  memset(ns, 0, sizeof(*ns));
}

/* --- paths ------------------------------------------------------------------------------------ */

/* "./a//b/" → "a/b"; "/a" → "a"; "" or "." → "" (the root itself). -1 for a ".." component. */
static int clean_name(const char *in, char *out, size_t size) {
  size_t n = 0;
  const char *p = in;
  while (*p) {
    while (*p == '/')
      p++;
    const char *e = p;
    while (*e && *e != '/')
      e++;
    size_t len = (size_t)(e - p);
    if (len == 0)
      break;
    if (len == 2 && p[0] == '.' && p[1] == '.')
      return -1;
    if (!(len == 1 && p[0] == '.')) {
      if (n + len + 2 > size)
        return -1;
      if (n)
        out[n++] = '/';
      memcpy(out + n, p, len);
      n += len;
    }
    p = e;
  }
  out[n] = '\0';
  return 0;
}

/* Remove name in dirfd and everything below it, never following a symlink. */
int unpack_remove_tree_at(int parent, const char *name) {
  struct stat st;
  if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
    return errno == ENOENT ? 0 : -1;
  if (!S_ISDIR(st.st_mode))
    return unlinkat(parent, name, 0);
  int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == EACCES) {
    /* Rootless: a 0500 directory of ours; we may open it once we may read it. */
    fchmodat(parent, name, 0700, 0);
    fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  }
  if (fd < 0)
    return -1;
  fchmod(fd, (st.st_mode & 07777) | 0700);
  DIR *d = fdopendir(fd);
  if (d == NULL) {
    close(fd);
    return -1;
  }
  int rc = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    if (unpack_remove_tree_at(dirfd(d), de->d_name) < 0)
      rc = -1;
  }
  closedir(d);
  if (rc == 0)
    rc = unlinkat(parent, name, AT_REMOVEDIR);
  return rc;
}

/* Opaque directory: remove what lower layers put in dir (named `dirname` in the layer), keeping
 * what this layer already made there. */
static int opaque_clear(int dir, const char *dirname, const struct unpack_nameset *ns) {
  int fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  DIR *d = fdopendir(fd);
  if (d == NULL) {
    close(fd);
    return -1;
  }
  int rc = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    char child[PATH_MAX];
    snprintf(child, sizeof(child), "%s%s%s", dirname, *dirname ? "/" : "", de->d_name);
    if (!nameset_has(ns, child)) {
      if (unpack_remove_tree_at(dirfd(d), de->d_name) < 0)
        rc = -1;
      continue;
    }
    /* Made by this layer: keep it, but a directory of ours may still hold lower entries. */
    struct stat st;
    if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
      int sub = openat(dirfd(d), de->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub >= 0) {
        int subfd = openat(sub, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        close(sub);
        if (subfd >= 0) {
          if (opaque_clear(subfd, child, ns) < 0)
            rc = -1;
          close(subfd);
        }
      }
    }
  }
  closedir(d);
  return rc;
}

/* --- one entry ---------------------------------------------------------------------------------- */

/* The entry's data, never past its declared size: the size was counted against the limits
 * before the first byte, so what is written is what was counted. */
static int copy_data(struct archive *a, int fd, const char *name, la_int64_t declared, struct cm_error **err) {
  const void *buf;
  size_t len;
  la_int64_t off;
  int r;
  la_int64_t end = 0;
  while ((r = archive_read_data_block(a, &buf, &len, &off)) == ARCHIVE_OK) {
    const char *p = buf;
    /* A block past the declared size (a sparse map pointing beyond it): not counted, not written. */
    if (off < 0 || (la_int64_t)len > declared || off > declared - (la_int64_t)len)
      return cm_error_set(err, EFBIG, "%s: data past its declared size of %lld bytes: refused", name,
                          (long long)declared);
    size_t done = 0;
    while (done < len) {
      ssize_t w = pwrite(fd, p + done, len - done, (off_t)(off + (la_int64_t)done));
      if (w < 0) {
        if (errno == EINTR)
          continue;
        return cm_error_set(err, errno, "write %s", name);
      }
      done += (size_t)w;
    }
    end = off + (la_int64_t)len;
  }
  if (r != ARCHIVE_EOF)
    return cm_error_set(err, archive_errno(a) > 0 ? archive_errno(a) : EIO, "read %s: %s", name,
                        archive_error_string(a) ? archive_error_string(a) : "truncated layer");
  (void)end;
  return 0;
}

static void apply_xattrs(struct unpack_session *s, struct archive_entry *e, int fd, const char *name) {
  const char *key;
  const void *val;
  size_t size;
  archive_entry_xattr_reset(e);
  while (archive_entry_xattr_next(e, &key, &val, &size) == ARCHIVE_OK) {
    bool cap = strcmp(key, "security.capability") == 0;
    /* Only user.* and file capabilities: trusted.overlay.* would steer an overlay built on this
     * rootfs, security.selinux is the host policy's to set. */
    if (strncmp(key, "user.", 5) != 0 && !cap) {
      s->skipped_xattrs++;
      continue;
    }
    if (cap && s->opts.rootless) {
      s->skipped_xattrs++;
      continue;
    }
    if (fsetxattr(fd, key, val, size, 0) < 0)
      s->skipped_xattrs++;
    (void)name;
  }
}

static int set_owner(struct unpack_session *s, int parent, const char *base, struct archive_entry *e,
                     const char *name, struct cm_error **err) {
  if (s->opts.rootless)
    return 0; /* everything is ours; the user namespace's mapping makes it root's in the container */
  if (fchownat(parent, base, (uid_t)archive_entry_uid(e), (gid_t)archive_entry_gid(e), AT_SYMLINK_NOFOLLOW) < 0)
    return cm_error_set(err, errno, "chown %s", name);
  return 0;
}

static mode_t entry_mode(const struct unpack_session *s, struct archive_entry *e) {
  mode_t m = archive_entry_perm(e) & 07777;
  if (s->opts.rootless)
    m &= ~(mode_t)(S_ISUID | S_ISGID);
  return m;
}

static void set_times(int parent, const char *base, struct archive_entry *e) {
  struct timespec ts[2] = {
      {.tv_sec = archive_entry_mtime(e), .tv_nsec = archive_entry_mtime_nsec(e)},
      {.tv_sec = archive_entry_mtime(e), .tv_nsec = archive_entry_mtime_nsec(e)},
  };
  utimensat(parent, base, ts, AT_SYMLINK_NOFOLLOW);
}

static void defer_dir(struct unpack_session *s, const char *name, mode_t mode, struct archive_entry *e) {
  if (s->n_dirs == s->cap_dirs) {
    s->cap_dirs = s->cap_dirs ? s->cap_dirs * 2 : 256;
    s->dirs = realloc(s->dirs, s->cap_dirs * sizeof(*s->dirs));
    if (s->dirs == NULL)
      abort();
  }
  struct unpack_dir *d = &s->dirs[s->n_dirs++];
  d->name = strdup(name);
  if (d->name == NULL)
    abort();
  d->mode = mode;
  d->mtime.tv_sec = archive_entry_mtime(e);
  d->mtime.tv_nsec = archive_entry_mtime_nsec(e);
}

/* --- limits ------------------------------------------------------------------------------------ */

void unpack_limits_default(struct unpack_limits *l) {
  l->layer_bytes = UNPACK_DEFAULT_LAYER_BYTES;
  l->layer_ratio = UNPACK_DEFAULT_LAYER_RATIO;
  l->image_bytes = UNPACK_DEFAULT_IMAGE_BYTES;
  l->inodes = UNPACK_DEFAULT_INODES;
}

/* "512 MiB", "1.4 MiB", "900 bytes": for messages. */
static const char *human(int64_t n, char *buf, size_t size) {
  static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  if (n < 1024) {
    snprintf(buf, size, "%lld bytes", (long long)n);
    return buf;
  }
  double v = (double)n;
  int u = -1;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    u++;
  }
  if (v == (double)(int64_t)v)
    snprintf(buf, size, "%lld %s", (long long)v, units[u]);
  else
    snprintf(buf, size, "%.1f %s", v, units[u]);
  return buf;
}

/* Every entry counts against the image's inode limit, every regular file's declared size (its
 * logical size: a sparse file's holes too) against the layer's and the image's byte limits,
 * before anything of it is written: a decompression bomb is stopped at its first header. */
static int count_entry(struct unpack_session *s, struct archive_entry *e, const char *raw, const char *parent,
                       const char *label, struct cm_error **err) {
  const struct unpack_limits *l = &s->opts.limits;
  char a[32], b[32], c[32], d[32];
  /* The entry, and the parent directories it may make implicitly ("a/b/c/…/f" without entries
   * for them): those this layer has not named yet are charged as if new, so a layer of deep
   * names cannot make millions of directories on a handful of entries. */
  s->inodes++;
  char buf[PATH_MAX];
  snprintf(buf, sizeof(buf), "%s", parent);
  while (buf[0] && !nameset_has(&s->names, buf)) {
    s->inodes++;
    char *slash = strrchr(buf, '/');
    if (slash == NULL)
      break;
    *slash = '\0';
  }
  if (l->inodes > 0 && s->inodes > l->inodes)
    return cm_error_set(err, 0,
                        "%s: entry \"%s\": the image has more than %lld entries (files, directories, links): refused; "
                        "raise the limit with --max-inodes N",
                        label, raw, (long long)l->inodes);
  if (archive_entry_filetype(e) != AE_IFREG || archive_entry_hardlink(e) != NULL)
    return 0;
  int64_t size = archive_entry_size(e);
  if (size < 0)
    return cm_error_set(err, EINVAL, "%s: entry \"%s\": a negative size", label, raw);
  /* Sums compared by subtraction: a declared size near INT64_MAX must not wrap. */
  if (l->layer_bytes > 0 && size > l->layer_bytes - s->layer_bytes)
    return cm_error_set(err, 0,
                        "%s: entry \"%s\" (%s) takes the layer past %s unpacked: refused; raise the limit with "
                        "--max-layer-size SIZE",
                        label, raw, human(size, a, sizeof(a)), human(l->layer_bytes, b, sizeof(b)));
  if (l->layer_ratio > 0 && s->layer_compressed >= 0) {
    int64_t cap = s->layer_compressed > (INT64_MAX - UNPACK_RATIO_SLACK) / l->layer_ratio
                      ? INT64_MAX
                      : s->layer_compressed * l->layer_ratio + UNPACK_RATIO_SLACK;
    if (size > cap - s->layer_bytes)
      return cm_error_set(err, 0,
                          "%s: entry \"%s\" (%s) takes the layer past %s unpacked, %lld times its %s compressed size "
                          "(+ %s): refused as a decompression bomb; raise the limit with --max-layer-ratio N",
                          label, raw, human(size, a, sizeof(a)), human(cap, b, sizeof(b)), (long long)l->layer_ratio,
                          human(s->layer_compressed, c, sizeof(c)), human(UNPACK_RATIO_SLACK, d, sizeof(d)));
  }
  if (l->image_bytes > 0 && size > l->image_bytes - s->image_bytes)
    return cm_error_set(err, 0,
                        "%s: entry \"%s\" (%s) takes the image past %s unpacked: refused; raise the limit with "
                        "--max-image-size SIZE",
                        label, raw, human(size, a, sizeof(a)), human(l->image_bytes, b, sizeof(b)));
  s->layer_bytes += size;
  s->image_bytes += size;
  return 0;
}

static int extract_entry(struct unpack_session *s, struct archive *a, struct archive_entry *e, const char *label,
                         struct cm_error **err) {
  const char *raw = archive_entry_pathname(e);
  char name[PATH_MAX];
  if (raw == NULL)
    return cm_error_set(err, EINVAL, "%s: an entry without a name", label);
  if (clean_name(raw, name, sizeof(name)) < 0)
    return cm_error_set(err, EPERM, "%s: entry \"%s\" refused: a \"..\" component would leave the rootfs", label, raw);
  mode_t type = archive_entry_filetype(e);
  if (name[0] == '\0') {
    /* The root directory's own entry: only its mode and owner. */
    if (type == AE_IFDIR) {
      if (!s->opts.rootless)
        fchownat(s->root_fd, "", (uid_t)archive_entry_uid(e), (gid_t)archive_entry_gid(e), AT_EMPTY_PATH);
      defer_dir(s, "", entry_mode(s, e), e);
    }
    return 0;
  }
  const char *base = strrchr(name, '/');
  char parent_name[PATH_MAX];
  if (base) {
    memcpy(parent_name, name, (size_t)(base - name));
    parent_name[base - name] = '\0';
    base++;
  } else {
    strcpy(parent_name, "");
    base = name;
  }
  if (count_entry(s, e, raw, parent_name, label, err) < 0)
    return -1;
  /* The parent, resolved inside the rootfs (symlinks from earlier entries stay inside), made
   * when missing as tar does. */
  cleanup_close int parent = -1;
  if (parent_name[0] == '\0') {
    parent = fcntl(s->root_fd, F_DUPFD_CLOEXEC, 0);
  } else {
    cleanup_error struct cm_error *ignored = NULL;
    parent = safepath_mkdir_p(s->root_fd, parent_name, 0755, &ignored);
    if (parent < 0)
      return cm_error_set(err, ignored ? ignored->errnum : errno, "%s: entry \"%s\": parent directory %s", label,
                          raw, parent_name);
  }
  if (parent < 0)
    return cm_error_set(err, errno, "%s: entry \"%s\"", label, raw);

  /* Whiteouts: remove what lower layers put there; not entries themselves. */
  if (strcmp(base, WH_OPAQUE) == 0) {
    cleanup_close int dir = openat(parent, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0 || opaque_clear(dir, parent_name, &s->names) < 0)
      return cm_error_set(err, errno, "%s: opaque whiteout of %s", label, parent_name[0] ? parent_name : "/");
    s->whiteouts++;
    return 0;
  }
  if (strncmp(base, WH_PREFIX, strlen(WH_PREFIX)) == 0) {
    const char *victim = base + strlen(WH_PREFIX);
    char victim_name[PATH_MAX];
    snprintf(victim_name, sizeof(victim_name), "%s%s%s", parent_name, parent_name[0] ? "/" : "", victim);
    if (*victim == '\0' || strcmp(victim, ".") == 0 || strcmp(victim, "..") == 0 || strchr(victim, '/'))
      return cm_error_set(err, EPERM, "%s: whiteout \"%s\" refused: it names no entry", label, raw);
    /* Only what lower layers made: this layer's own entries stay (layer.md). */
    if (!nameset_has(&s->names, victim_name) && unpack_remove_tree_at(parent, victim) < 0)
      return cm_error_set(err, errno, "%s: whiteout of %s", label, victim_name);
    s->whiteouts++;
    return 0;
  }

  /* What is there now goes, unless both are directories (a directory entry over an existing
   * one keeps its content and takes the new mode and owner). */
  struct stat old;
  bool exists = fstatat(parent, base, &old, AT_SYMLINK_NOFOLLOW) == 0;
  const char *hardlink = archive_entry_hardlink(e);
  if (exists && !(type == AE_IFDIR && S_ISDIR(old.st_mode) && hardlink == NULL)) {
    if (unpack_remove_tree_at(parent, base) < 0)
      return cm_error_set(err, errno, "%s: entry \"%s\": replace what was there", label, raw);
    exists = false;
  }
  nameset_add(&s->names, name);

  if (hardlink) {
    char target[PATH_MAX];
    if (clean_name(hardlink, target, sizeof(target)) < 0 || target[0] == '\0')
      return cm_error_set(err, EPERM, "%s: hard link \"%s\" -> \"%s\" refused: its target leaves the rootfs", label,
                          raw, hardlink);
    /* The target resolved inside the rootfs, its last component not followed: a link to
     * "../../etc/shadow" or through a symlink to outside is impossible. */
    cleanup_close int tfd = safepath_open(s->root_fd, target, O_PATH | O_NOFOLLOW, NULL);
    if (tfd < 0)
      return cm_error_set(err, errno, "%s: hard link \"%s\" -> \"%s\": target", label, raw, hardlink);
    struct stat tst;
    if (fstat(tfd, &tst) < 0 || S_ISDIR(tst.st_mode))
      return cm_error_set(err, EPERM, "%s: hard link \"%s\" -> \"%s\": the target is a directory", label, raw,
                          hardlink);
    char fdpath[32];
    if (linkat(AT_FDCWD, safepath_fd_path(tfd, fdpath), parent, base, AT_SYMLINK_FOLLOW) < 0 &&
        linkat(tfd, "", parent, base, AT_EMPTY_PATH) < 0)
      return cm_error_set(err, errno, "%s: hard link \"%s\" -> \"%s\"", label, raw, hardlink);
    s->entries++;
    return 0;
  }

  switch (type) {
  case AE_IFREG: {
    cleanup_close int fd = openat(parent, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
      return cm_error_set(err, errno, "%s: create %s", label, name);
    if (copy_data(a, fd, name, archive_entry_size(e), err) < 0)
      return cm_error_prefix(err, "%s", label);
    if (ftruncate(fd, (off_t)archive_entry_size(e)) < 0)
      return cm_error_set(err, errno, "%s: size %s", label, name);
    if (set_owner(s, parent, base, e, name, err) < 0)
      return cm_error_prefix(err, "%s", label);
    apply_xattrs(s, e, fd, name);
    /* After chown, which clears setuid bits. */
    if (fchmod(fd, entry_mode(s, e)) < 0)
      return cm_error_set(err, errno, "%s: chmod %s", label, name);
    set_times(parent, base, e);
    break;
  }
  case AE_IFDIR: {
    if (!exists && mkdirat(parent, base, 0700) < 0)
      return cm_error_set(err, errno, "%s: mkdir %s", label, name);
    cleanup_close int fd = openat(parent, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
      return cm_error_set(err, errno, "%s: open directory %s", label, name);
    if (set_owner(s, parent, base, e, name, err) < 0)
      return cm_error_prefix(err, "%s", label);
    apply_xattrs(s, e, fd, name);
    /* The mode last (deferred): a 0555 directory must still take this layer's entries. */
    fchmod(fd, 0700 | entry_mode(s, e));
    defer_dir(s, name, entry_mode(s, e), e);
    break;
  }
  case AE_IFLNK: {
    const char *target = archive_entry_symlink(e);
    /* Stored as written: it is never followed by us (every later lookup resolves inside the
     * rootfs), and inside the container it resolves against the container's root. */
    if (target == NULL || symlinkat(target, parent, base) < 0)
      return cm_error_set(err, target ? errno : EINVAL, "%s: symlink %s", label, name);
    if (set_owner(s, parent, base, e, name, err) < 0)
      return cm_error_prefix(err, "%s", label);
    set_times(parent, base, e);
    break;
  }
  case AE_IFCHR:
  case AE_IFBLK:
  case AE_IFIFO: {
    if (type != AE_IFIFO && s->opts.rootless) {
      /* No device nodes without privilege (umoci --rootless does the same): the runtime gives
       * the container its /dev. */
      s->skipped_devices++;
      return 0;
    }
    dev_t dev = type == AE_IFIFO ? 0 : makedev(archive_entry_rdevmajor(e), archive_entry_rdevminor(e));
    if (mknodat(parent, base, type | 0600, dev) < 0)
      return cm_error_set(err, errno, "%s: mknod %s", label, name);
    if (set_owner(s, parent, base, e, name, err) < 0)
      return cm_error_prefix(err, "%s", label);
    cleanup_close int fd = openat(parent, base, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    char fdpath[32];
    if (fd < 0 || chmod(safepath_fd_path(fd, fdpath), entry_mode(s, e)) < 0)
      return cm_error_set(err, errno, "%s: chmod %s", label, name);
    set_times(parent, base, e);
    break;
  }
  default:
    /* Sockets and anything else a tar can say: nothing an image needs. */
    s->skipped_other++;
    return 0;
  }
  s->entries++;
  return 0;
}

/* --- sessions ----------------------------------------------------------------------------------- */

void unpack_session_init(struct unpack_session *s, int root_fd, const struct unpack_options *o) {
  memset(s, 0, sizeof(*s));
  s->root_fd = root_fd;
  s->opts = *o;
}

static int unpack_archive(struct unpack_session *s, struct archive *a, const char *label, struct cm_error **err) {
  struct archive_entry *e;
  int r;
  while ((r = archive_read_next_header(a, &e)) == ARCHIVE_OK || r == ARCHIVE_WARN) {
    if (extract_entry(s, a, e, label, err) < 0)
      return -1;
  }
  if (r != ARCHIVE_EOF)
    return cm_error_set(err, archive_errno(a) > 0 ? archive_errno(a) : EIO, "%s: %s", label,
                        archive_error_string(a) ? archive_error_string(a) : "not a tar archive");
  return 0;
}

struct archive *unpack_archive_new(void) {
  struct archive *a = archive_read_new();
  if (a == NULL)
    abort();
  archive_read_support_filter_all(a);
  archive_read_support_format_tar(a);
  archive_read_support_format_gnutar(a);
  return a;
}

int unpack_session_layer_fd(struct unpack_session *s, int layer_fd, const char *label, struct cm_error **err) {
  struct stat sb;
  s->layer_bytes = 0;
  s->layer_compressed = fstat(layer_fd, &sb) == 0 && S_ISREG(sb.st_mode) ? sb.st_size : -1;
  struct archive *a = unpack_archive_new();
  int rc = -1;
  if (archive_read_open_fd(a, layer_fd, 1 << 16) != ARCHIVE_OK)
    cm_error_set(err, archive_errno(a) > 0 ? archive_errno(a) : EIO, "%s: %s", label, archive_error_string(a));
  else
    rc = unpack_archive(s, a, label, err);
  archive_read_free(a);
  nameset_clear(&s->names);
  return rc;
}

int unpack_session_layer_buffer(struct unpack_session *s, const void *buf, size_t len, const char *label,
                                struct cm_error **err) {
  s->layer_bytes = 0;
  s->layer_compressed = (int64_t)len;
  struct archive *a = unpack_archive_new();
  int rc = -1;
  if (archive_read_open_memory(a, buf, len) != ARCHIVE_OK)
    cm_error_set(err, archive_errno(a) > 0 ? archive_errno(a) : EIO, "%s: %s", label, archive_error_string(a));
  else
    rc = unpack_archive(s, a, label, err);
  archive_read_free(a);
  nameset_clear(&s->names);
  return rc;
}

/* Directory modes and times last, deepest first (a child's creation changes its parent's mtime;
 * a 0555 directory refuses children). The last layer's word on a directory wins. */
int unpack_session_finish(struct unpack_session *s, struct cm_error **err) {
  int rc = 0;
  for (size_t i = s->n_dirs; i-- > 0;) {
    struct unpack_dir *d = &s->dirs[i];
    bool seen_later = false;
    for (size_t j = i + 1; j < s->n_dirs && !seen_later; j++)
      seen_later = strcmp(s->dirs[j].name, d->name) == 0;
    if (!seen_later) {
      cleanup_close int fd = d->name[0] ? safepath_open(s->root_fd, d->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, NULL)
                                        : fcntl(s->root_fd, F_DUPFD_CLOEXEC, 0);
      if (fd >= 0) {
        char fdpath[32];
        if (chmod(safepath_fd_path(fd, fdpath), d->mode) < 0 && rc == 0)
          rc = cm_error_set(err, errno, "chmod %s", d->name[0] ? d->name : "/");
        struct timespec ts[2] = {d->mtime, d->mtime};
        utimensat(fd, "", ts, AT_EMPTY_PATH);
      }
    }
  }
  return rc;
}

void unpack_session_clear(struct unpack_session *s) {
  for (size_t i = 0; i < s->n_dirs; i++)
    free(s->dirs[i].name);
  free(s->dirs);
  nameset_clear(&s->names);
  s->dirs = NULL;
  s->n_dirs = s->cap_dirs = 0;
}

int unpack_layer_fd(int root_fd, int layer_fd, const struct unpack_options *o, const char *label,
                    struct cm_error **err) {
  struct unpack_session s;
  unpack_session_init(&s, root_fd, o);
  int rc = unpack_session_layer_fd(&s, layer_fd, label, err);
  if (rc == 0)
    rc = unpack_session_finish(&s, err);
  unpack_session_clear(&s);
  return rc;
}

int unpack_layer_buffer(int root_fd, const void *buf, size_t len, const struct unpack_options *o, const char *label,
                        struct cm_error **err) {
  struct unpack_session s;
  unpack_session_init(&s, root_fd, o);
  int rc = unpack_session_layer_buffer(&s, buf, len, label, err);
  if (rc == 0)
    rc = unpack_session_finish(&s, err);
  unpack_session_clear(&s);
  return rc;
}
