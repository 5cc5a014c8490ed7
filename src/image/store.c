/* The content-addressed image store:
 *
 *   <root>/blobs/sha256/<hex>        every blob, written to tmp/ while hashed, renamed in only
 *                                    when its digest and size match (a reader never sees a
 *                                    partial or wrong blob; an interrupted pull leaves only tmp/)
 *   <root>/images/<escaped name>     {"name":…,"manifest":"sha256:…"}: what a name points at
 *   <root>/rootfs/<hex>/rootfs       the unpacked rootfs of manifest <hex>, made once in tmp/ and
 *   <root>/rootfs/<hex>/config.json  renamed into place (a rootfs dir that exists is complete),
 *                                    with the image config beside it; shared read-only by runs
 *   <root>/resolved/<escaped REF>    what a REF resolved to last and its source's stamp, so that
 *                                    codemode-run can skip codemode-image (util/image_resolved.h)
 *   <root>/tmp/                      work in progress, removed by `images --prune`
 *   <root>/lock                      flock: shared while adding, exclusive while removing
 *
 * A run holds a shared flock on rootfs/<hex> while its container lives; prune skips what is
 * locked. /var/lib/codemode for root, $XDG_DATA_HOME/codemode (~/.local/share/codemode) else. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <yajl/yajl_gen.h>

#include "image/image.h"
#include "image/unpack_internal.h"
#include "spec/json_util.h"
#include "util/cleanup.h"
#include "util/host_root.h"
#include "util/image_resolved.h"

static int mkdir_p(const char *path, mode_t mode) {
  char buf[PATH_MAX];
  snprintf(buf, sizeof(buf), "%s", path);
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    if (mkdir(buf, mode) < 0 && errno != EEXIST)
      return -1;
    *p = '/';
  }
  return mkdir(buf, mode) < 0 && errno != EEXIST ? -1 : 0;
}

int store_open(struct image_store *st, const char *dir, struct cm_error **err) {
  memset(st, 0, sizeof(*st));
  st->root_fd = -1;
  st->rootless = !cm_host_root();
  char *d = dir ? strdup(dir) : image_store_default_dir();
  if (d == NULL)
    return cm_error_set(err, 0, "image store: no directory (set --store DIR, or HOME / XDG_DATA_HOME)");
  st->root = d;
  /* 0700: the store holds other people's images' content; nobody else needs to read it, and a
   * user's store must never be writable by others. */
  if (mkdir_p(d, 0700) < 0)
    return cm_error_set(err, errno, "image store %s", d);
  st->root_fd = open(d, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (st->root_fd < 0)
    return cm_error_set(err, errno, "image store %s", d);
  static const char *const subdirs[] = {"blobs", "blobs/sha256", "images", "resolved", "rootfs", "tmp"};
  for (size_t i = 0; i < sizeof(subdirs) / sizeof(subdirs[0]); i++)
    if (mkdirat(st->root_fd, subdirs[i], 0700) < 0 && errno != EEXIST)
      return cm_error_set(err, errno, "image store %s/%s", d, subdirs[i]);
  return 0;
}

void store_close(struct image_store *st) {
  if (st->root_fd >= 0)
    close(st->root_fd);
  free(st->root);
  memset(st, 0, sizeof(*st));
  st->root_fd = -1;
}

int store_lock(struct image_store *st, bool exclusive, struct cm_error **err) {
  int fd = openat(st->root_fd, "lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0)
    return cm_error_set(err, errno, "image store lock");
  while (flock(fd, exclusive ? LOCK_EX : LOCK_SH) < 0) {
    if (errno != EINTR) {
      close(fd);
      return cm_error_set(err, errno, "image store lock");
    }
  }
  return fd;
}

static void blob_name(const char *digest, char *buf, size_t size) {
  snprintf(buf, size, "blobs/sha256/%s", digest + 7);
}

int store_has_blob(struct image_store *st, const char *digest) {
  if (!digest_valid(digest))
    return 0;
  char name[128];
  blob_name(digest, name, sizeof(name));
  return faccessat(st->root_fd, name, F_OK, 0) == 0;
}

int store_open_blob(struct image_store *st, const char *digest, struct cm_error **err) {
  if (!digest_valid(digest))
    return cm_error_set(err, EINVAL, "\"%s\" is not a sha256 digest", digest);
  char name[128];
  blob_name(digest, name, sizeof(name));
  int fd = openat(st->root_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return cm_error_set(err, errno, "blob %s", digest);
  return fd;
}

char *store_read_blob(struct image_store *st, const char *digest, size_t *len, struct cm_error **err) {
  cleanup_close int fd = store_open_blob(st, digest, err);
  if (fd < 0)
    return NULL;
  struct stat sb;
  if (fstat(fd, &sb) < 0) {
    cm_error_set(err, errno, "blob %s", digest);
    return NULL;
  }
  if (sb.st_size > 64 << 20) {
    cm_error_set(err, EFBIG, "blob %s: %lld bytes is too big for a manifest or config", digest,
                 (long long)sb.st_size);
    return NULL;
  }
  char *buf = malloc((size_t)sb.st_size + 1);
  if (buf == NULL)
    abort();
  size_t done = 0;
  while (done < (size_t)sb.st_size) {
    ssize_t r = read(fd, buf + done, (size_t)sb.st_size - done);
    if (r <= 0) {
      if (r < 0 && errno == EINTR)
        continue;
      free(buf);
      cm_error_set(err, r < 0 ? errno : EIO, "read blob %s", digest);
      return NULL;
    }
    done += (size_t)r;
  }
  buf[done] = '\0';
  *len = done;
  return buf;
}

int store_blob_begin(struct image_store *st, struct blob_writer *w, struct cm_error **err) {
  memset(w, 0, sizeof(*w));
  snprintf(w->tmp_name, sizeof(w->tmp_name), "tmp/blob-%d-%ld-%d", (int)getpid(), (long)time(NULL), rand());
  w->fd = openat(st->root_fd, w->tmp_name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (w->fd < 0)
    return cm_error_set(err, errno, "image store: create %s", w->tmp_name);
  w->dg = digest_new();
  return 0;
}

int store_blob_write(struct blob_writer *w, const void *buf, size_t len, struct cm_error **err) {
  const char *p = buf;
  size_t done = 0;
  while (done < len) {
    ssize_t n = write(w->fd, p + done, len - done);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return cm_error_set(err, errno, "image store: write %s", w->tmp_name);
    }
    done += (size_t)n;
  }
  digest_update(w->dg, buf, len);
  w->written += (int64_t)len;
  return 0;
}

void store_blob_abort(struct image_store *st, struct blob_writer *w) {
  if (w->fd >= 0)
    close(w->fd);
  w->fd = -1;
  if (w->tmp_name[0])
    unlinkat(st->root_fd, w->tmp_name, 0);
  w->tmp_name[0] = '\0';
  if (w->dg)
    free(digest_finish(w->dg));
  w->dg = NULL;
}

int store_blob_commit_any(struct image_store *st, struct blob_writer *w, char **digest_out, struct cm_error **err) {
  /* The digest of what was written is the name: nothing to compare with. */
  if (store_blob_commit(st, w, NULL, -1, err) < 0)
    return -1;
  *digest_out = strdup(w->committed);
  return 0;
}

int store_blob_commit(struct image_store *st, struct blob_writer *w, const char *expected_digest,
                      int64_t expected_size, struct cm_error **err) {
  char *got = digest_finish(w->dg);
  w->dg = NULL;
  snprintf(w->committed, sizeof(w->committed), "%s", got);
  if (expected_digest == NULL)
    expected_digest = w->committed;
  int rc = -1;
  if (expected_size >= 0 && w->written != expected_size) {
    cm_error_set(err, EIO, "blob %s: %lld bytes received, the manifest says %lld", expected_digest,
                 (long long)w->written, (long long)expected_size);
  } else if (strcmp(got, expected_digest) != 0) {
    /* A corrupted or substituted blob never enters the store. */
    cm_error_set(err, EIO, "blob %s: the content's digest is %s: refused (corrupted or tampered)", expected_digest,
                 got);
  } else if (fsync(w->fd) < 0) {
    cm_error_set(err, errno, "image store: fsync %s", w->tmp_name);
  } else {
    char name[128];
    blob_name(expected_digest, name, sizeof(name));
    /* Another pull of the same blob may have won the race: same bytes, same name. */
    if (renameat(st->root_fd, w->tmp_name, st->root_fd, name) < 0)
      cm_error_set(err, errno, "image store: rename into %s", name);
    else {
      w->tmp_name[0] = '\0';
      rc = 0;
    }
  }
  free(got);
  store_blob_abort(st, w);
  return rc;
}

int store_put_blob(struct image_store *st, const void *buf, size_t len, const char *expected_digest,
                   struct cm_error **err) {
  if (store_has_blob(st, expected_digest))
    return 0;
  struct blob_writer w;
  if (store_blob_begin(st, &w, err) < 0)
    return -1;
  if (store_blob_write(&w, buf, len, err) < 0) {
    store_blob_abort(st, &w);
    return -1;
  }
  return store_blob_commit(st, &w, expected_digest, (int64_t)len, err);
}

/* --- names ------------------------------------------------------------------------------------ */

static int write_atomic_at(int dirfd, const char *name, const char *data, size_t len, struct cm_error **err) {
  char tmp[PATH_MAX];
  snprintf(tmp, sizeof(tmp), "%s.tmp-%d", name, (int)getpid());
  cleanup_close int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return cm_error_set(err, errno, "image store: write %s", name);
  if (write(fd, data, len) != (ssize_t)len || fsync(fd) < 0) {
    unlinkat(dirfd, tmp, 0);
    return cm_error_set(err, errno, "image store: write %s", name);
  }
  if (renameat(dirfd, tmp, dirfd, name) < 0) {
    unlinkat(dirfd, tmp, 0);
    return cm_error_set(err, errno, "image store: rename %s", name);
  }
  return 0;
}

int store_set_ref(struct image_store *st, const char *canonical, const char *manifest_digest, struct cm_error **err) {
  char esc[PATH_MAX / 2], path[PATH_MAX];
  image_store_escape_name(canonical, esc, sizeof(esc));
  snprintf(path, sizeof(path), "images/%s", esc);
  yajl_gen g = yajl_gen_alloc(NULL);
  yajl_gen_map_open(g);
  yajl_gen_string(g, (const unsigned char *)"name", 4);
  yajl_gen_string(g, (const unsigned char *)canonical, strlen(canonical));
  yajl_gen_string(g, (const unsigned char *)"manifest", 8);
  yajl_gen_string(g, (const unsigned char *)manifest_digest, strlen(manifest_digest));
  yajl_gen_map_close(g);
  const unsigned char *buf;
  size_t len;
  yajl_gen_get_buf(g, &buf, &len);
  int rc = write_atomic_at(st->root_fd, path, (const char *)buf, len, err);
  yajl_gen_free(g);
  return rc;
}

/* A name record, its manifest a digest (util/image_resolved.h reads the record). */
static int read_ref_file(int dirfd, const char *file, char **name, char **manifest) {
  if (image_store_read_ref(dirfd, file, name, manifest) < 0)
    return -1;
  if (digest_valid(*manifest))
    return 0;
  free(*name);
  free(*manifest);
  *name = *manifest = NULL;
  return -1;
}

char *store_get_ref(struct image_store *st, const char *canonical) {
  char esc[PATH_MAX / 2], path[PATH_MAX];
  image_store_escape_name(canonical, esc, sizeof(esc));
  snprintf(path, sizeof(path), "images/%s", esc);
  char *name = NULL, *manifest = NULL;
  if (read_ref_file(st->root_fd, path, &name, &manifest) < 0)
    return NULL;
  free(name);
  return manifest;
}

int store_remove_ref(struct image_store *st, const char *canonical, struct cm_error **err) {
  char esc[PATH_MAX / 2], path[PATH_MAX];
  image_store_escape_name(canonical, esc, sizeof(esc));
  snprintf(path, sizeof(path), "images/%s", esc);
  if (unlinkat(st->root_fd, path, 0) < 0)
    return cm_error_set(err, errno == ENOENT ? 0 : errno, "image %s: not in the store%s", canonical,
                        errno == ENOENT ? " (codemode images lists what is)" : "");
  return 0;
}

static int64_t manifest_total_size(struct image_store *st, const char *manifest_digest, char **created) {
  size_t len;
  cleanup_error struct cm_error *ignored = NULL;
  cleanup_free char *json = store_read_blob(st, manifest_digest, &len, &ignored);
  struct image_manifest m;
  if (json == NULL || manifest_parse(json, len, &m, &ignored) < 0)
    return -1;
  int64_t total = m.config.size > 0 ? m.config.size : 0;
  for (size_t i = 0; i < m.n_layers; i++)
    total += m.layers[i].size > 0 ? m.layers[i].size : 0;
  size_t clen;
  cleanup_free char *cfg = store_read_blob(st, m.config.digest, &clen, &ignored);
  if (cfg && created) {
    yajl_val t = yajl_tree_parse(cfg, NULL, 0);
    const char *c = t ? YAJL_GET_STRING(jfind(t, "created")) : NULL;
    *created = strdup(c ? c : "");
    if (t)
      yajl_tree_free(t);
  }
  image_manifest_clear(&m);
  return total;
}

static int entry_cmp(const void *a, const void *b) {
  return strcmp(((const struct store_image_entry *)a)->name, ((const struct store_image_entry *)b)->name);
}

int store_list(struct image_store *st, struct store_image_entry **out, size_t *n, struct cm_error **err) {
  *out = NULL;
  *n = 0;
  int fd = openat(st->root_fd, "images", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return cm_error_set(err, errno, "image store: images");
  DIR *d = fdopendir(fd);
  if (d == NULL) {
    close(fd);
    return cm_error_set(err, errno, "image store: images");
  }
  size_t cap = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.' || strstr(de->d_name, ".tmp-"))
      continue;
    char *name = NULL, *manifest = NULL;
    if (read_ref_file(dirfd(d), de->d_name, &name, &manifest) < 0)
      continue;
    if (*n == cap) {
      cap = cap ? cap * 2 : 16;
      *out = realloc(*out, cap * sizeof(**out));
      if (*out == NULL)
        abort();
    }
    struct store_image_entry *e = &(*out)[(*n)++];
    e->name = name;
    e->manifest_digest = manifest;
    e->created = NULL;
    e->size = manifest_total_size(st, manifest, &e->created);
    if (e->created == NULL)
      e->created = strdup("");
  }
  closedir(d);
  if (*n)
    qsort(*out, *n, sizeof(**out), entry_cmp);
  return 0;
}

void store_image_entries_free(struct store_image_entry *e, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(e[i].name);
    free(e[i].manifest_digest);
    free(e[i].created);
  }
  free(e);
}

/* --- unpacked rootfs ---------------------------------------------------------------------------- */

/* Unpack manifest_digest's layers into tmp/, then rename the result to final. */
static int unpack_image(struct image_store *st, const char *manifest_digest, const struct unpack_limits *lim,
                        const char *final, struct cm_error **err) {
  const char *hex = manifest_digest + 7;
  size_t len;
  cleanup_free char *json = store_read_blob(st, manifest_digest, &len, err);
  if (json == NULL)
    return -1;
  struct image_manifest m;
  if (manifest_parse(json, len, &m, err) < 0)
    return -1;
  char work[128];
  snprintf(work, sizeof(work), "tmp/unpack-%s-%d", hex, (int)getpid());
  unpack_remove_tree_at(st->root_fd, work);
  int rc = -1;
  int work_fd = -1, root_fd = -1;
  struct unpack_session s;
  struct unpack_options uo = {.rootless = st->rootless};
  if (lim)
    uo.limits = *lim;
  else
    unpack_limits_default(&uo.limits);
  bool session = false;
  char *cfg = NULL;
  if (mkdirat(st->root_fd, work, 0700) < 0 ||
      (work_fd = openat(st->root_fd, work, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0 ||
      mkdirat(work_fd, "rootfs", 0755) < 0 ||
      (root_fd = openat(work_fd, "rootfs", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
    cm_error_set(err, errno, "image store: %s", work);
    goto out;
  }
  unpack_session_init(&s, root_fd, &uo);
  session = true;
  for (size_t i = 0; i < m.n_layers; i++) {
    int lfd = store_open_blob(st, m.layers[i].digest, err);
    char label[160];
    snprintf(label, sizeof(label), "layer %zu (%s)", i + 1, m.layers[i].digest);
    int r = lfd < 0 ? -1 : unpack_session_layer_fd(&s, lfd, label, err);
    if (lfd >= 0)
      close(lfd);
    if (r < 0)
      goto out;
  }
  if (unpack_session_finish(&s, err) < 0)
    goto out;
  size_t clen;
  cfg = store_read_blob(st, m.config.digest, &clen, err);
  if (cfg == NULL || write_atomic_at(work_fd, "config.json", cfg, clen, err) < 0 ||
      write_atomic_at(work_fd, "manifest", manifest_digest, strlen(manifest_digest), err) < 0)
    goto out;
  /* Another run unpacked the same image first: theirs is as good as ours. */
  if (renameat(st->root_fd, work, st->root_fd, final) < 0 && errno != EEXIST && errno != ENOTEMPTY) {
    cm_error_set(err, errno, "image store: rename into %s", final);
    goto out;
  }
  rc = 0;
out:
  free(cfg);
  if (session)
    unpack_session_clear(&s);
  image_manifest_clear(&m);
  if (root_fd >= 0)
    close(root_fd);
  if (work_fd >= 0)
    close(work_fd);
  if (faccessat(st->root_fd, work, F_OK, 0) == 0)
    unpack_remove_tree_at(st->root_fd, work);
  return rc;
}

int store_rootfs(struct image_store *st, const char *manifest_digest, const struct unpack_limits *lim, char **dir,
                 struct cm_error **err) {
  if (!digest_valid(manifest_digest))
    return cm_error_set(err, EINVAL, "\"%s\" is not a sha256 digest", manifest_digest);
  char final[128];
  snprintf(final, sizeof(final), "rootfs/%s", manifest_digest + 7);
  if (faccessat(st->root_fd, final, F_OK, 0) < 0 && unpack_image(st, manifest_digest, lim, final, err) < 0)
    return -1;
  if (asprintf(dir, "%s/%s", st->root, final) < 0)
    abort();
  return 0;
}

/* --- prune ------------------------------------------------------------------------------------------ */

struct digest_set {
  char **items;
  size_t n, cap;
};
static void dset_add(struct digest_set *s, const char *d) {
  if (s->n == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 64;
    s->items = realloc(s->items, s->cap * sizeof(char *));
    if (s->items == NULL)
      abort();
  }
  s->items[s->n++] = strdup(d);
}
static bool dset_has(const struct digest_set *s, const char *d) {
  for (size_t i = 0; i < s->n; i++)
    if (strcmp(s->items[i], d) == 0)
      return true;
  return false;
}
static void dset_free(struct digest_set *s) {
  for (size_t i = 0; i < s->n; i++)
    free(s->items[i]);
  free(s->items);
}

/* Every blob a manifest (or an index, recursively) needs. */
static void mark_tree(struct image_store *st, const char *digest, struct digest_set *keep, int depth) {
  if (depth > 4 || dset_has(keep, digest))
    return;
  dset_add(keep, digest);
  size_t len;
  cleanup_error struct cm_error *ignored = NULL;
  cleanup_free char *json = store_read_blob(st, digest, &len, &ignored);
  if (json == NULL)
    return;
  yajl_val t = yajl_tree_parse(json, NULL, 0);
  if (t == NULL)
    return;
  yajl_val cfg = jfind(t, "config"), layers = jfind(t, "layers"), manifests = jfind(t, "manifests");
  const char *cd = cfg ? YAJL_GET_STRING(jfind(cfg, "digest")) : NULL;
  if (cd && digest_valid(cd))
    dset_add(keep, cd);
  if (YAJL_IS_ARRAY(layers))
    for (size_t i = 0; i < YAJL_GET_ARRAY(layers)->len; i++) {
      const char *ld = YAJL_GET_STRING(jfind(YAJL_GET_ARRAY(layers)->values[i], "digest"));
      if (ld && digest_valid(ld))
        dset_add(keep, ld);
    }
  if (YAJL_IS_ARRAY(manifests))
    for (size_t i = 0; i < YAJL_GET_ARRAY(manifests)->len; i++) {
      const char *md = YAJL_GET_STRING(jfind(YAJL_GET_ARRAY(manifests)->values[i], "digest"));
      if (md && digest_valid(md))
        mark_tree(st, md, keep, depth + 1);
    }
  yajl_tree_free(t);
}

static int64_t tree_size_at(int parent, const char *name) {
  struct stat sb;
  if (fstatat(parent, name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
    return 0;
  if (!S_ISDIR(sb.st_mode))
    return S_ISREG(sb.st_mode) ? sb.st_size : 0;
  int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return 0;
  DIR *d = fdopendir(fd);
  if (d == NULL) {
    close(fd);
    return 0;
  }
  int64_t total = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL)
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
      total += tree_size_at(dirfd(d), de->d_name);
  closedir(d);
  return total;
}

int store_prune(struct image_store *st, int64_t *freed, struct cm_error **err) {
  *freed = 0;
  int lock = store_lock(st, true, err);
  if (lock < 0)
    return -1;
  struct digest_set keep = {0};
  struct store_image_entry *ents = NULL;
  size_t n = 0;
  int rc = store_list(st, &ents, &n, err);
  for (size_t i = 0; rc == 0 && i < n; i++)
    mark_tree(st, ents[i].manifest_digest, &keep, 0);
  store_image_entries_free(ents, n);
  /* The top-level digests a name points at can be an index; the rootfs dirs are per manifest,
   * so keep those of every manifest marked. */
  const char *dirs[] = {"rootfs", "blobs/sha256", "tmp", "resolved"};
  for (size_t k = 0; rc == 0 && k < 4; k++) {
    int fd = openat(st->root_fd, dirs[k], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (d == NULL) {
      if (fd >= 0)
        close(fd);
      continue;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
      if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
        continue;
      char dg[80];
      snprintf(dg, sizeof(dg), "sha256:%.64s", de->d_name);
      if (k < 2 && dset_has(&keep, dg))
        continue;
      if (k == 3) {
        /* Memos are a cache: all of them go (one for a name kept is made again at its next run). */
        unlinkat(dirfd(d), de->d_name, 0);
        continue;
      }
      if (k == 0) {
        /* A rootfs a running container holds (a shared flock on <hex>/rootfs, the directory
         * codemode-run --image runs) stays. One we may take is moved out of rootfs/ while we
         * hold it, so that a run that locks it after us finds it gone from its path (and goes
         * the slow way) instead of running on a tree being removed. */
        char inner[PATH_MAX], away[128];
        snprintf(inner, sizeof(inner), "%s/rootfs", de->d_name);
        int rfd = openat(dirfd(d), inner, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (rfd < 0)
          continue;
        bool busy = flock(rfd, LOCK_EX | LOCK_NB) < 0;
        snprintf(away, sizeof(away), "tmp/pruned-%.64s-%d", de->d_name, (int)getpid());
        if (busy || renameat(dirfd(d), de->d_name, st->root_fd, away) < 0) {
          close(rfd);
          continue;
        }
        *freed += tree_size_at(st->root_fd, away);
        unpack_remove_tree_at(st->root_fd, away);
        close(rfd);
        continue;
      }
      if (k == 2) {
        /* Work in progress of a live pull (a blob being written) is younger than a day. */
        struct stat sb;
        if (fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && time(NULL) - sb.st_mtime < 600 &&
            strncmp(de->d_name, "blob-", 5) == 0)
          continue;
      }
      *freed += tree_size_at(dirfd(d), de->d_name);
      unpack_remove_tree_at(dirfd(d), de->d_name);
    }
    closedir(d);
  }
  dset_free(&keep);
  close(lock);
  return rc;
}
