/* Two local sources: an OCI image layout directory (oci:DIR[:TAG]: oci-layout, index.json,
 * blobs/sha256/…) and a `docker save` archive (docker-archive:FILE: manifest.json naming the
 * config and the layer tars, or, from Docker 25 on, an OCI layout inside the tar). Every blob is
 * hashed on its way into the store and refused if it does not match its name. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yajl/yajl_gen.h>

#include "image/image.h"
#include "image/unpack_internal.h"
#include "spec/json_util.h"
#include "util/cleanup.h"

#define REF_NAME_ANNOTATION "org.opencontainers.image.ref.name"

static void yajl_freep(yajl_val *v) {
  if (*v)
    yajl_tree_free(*v);
}
#define cleanup_yajl __attribute__((cleanup(yajl_freep)))

/* size < 0 (index.json's entry did not say): the top document, bounded as a manifest. */
static int copy_fd_to_blob(struct image_store *st, int in, const char *digest, int64_t size, struct cm_error **err) {
  int64_t max = size >= 0 ? size : IMAGE_MANIFEST_MAX;
  struct blob_writer w;
  if (store_blob_begin(st, &w, err) < 0)
    return -1;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = read(in, buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      store_blob_abort(st, &w);
      return cm_error_set(err, errno, "read blob %s", digest);
    }
    if (n == 0)
      break;
    /* Never read past what the descriptor declares (a blob file that grew, a FIFO). */
    if ((int64_t)n > max - w.written) {
      store_blob_abort(st, &w);
      return cm_error_set(err, 0, "blob %s: more than the %lld bytes %s: refused", digest, (long long)max,
                          size >= 0 ? "its descriptor declares" : "a manifest may have");
    }
    if (store_blob_write(&w, buf, (size_t)n, err) < 0) {
      store_blob_abort(st, &w);
      return -1;
    }
  }
  return store_blob_commit(st, &w, digest, size, err);
}

/* --- oci: ------------------------------------------------------------------------------------- */

struct layout_ctx {
  int dir_fd;
};

static int layout_fetch(void *ctx, struct image_store *st, const struct image_descriptor *d, struct cm_error **err) {
  struct layout_ctx *l = ctx;
  char name[128];
  snprintf(name, sizeof(name), "blobs/sha256/%s", d->digest + 7);
  cleanup_close int fd = openat(l->dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return cm_error_set(err, errno, "blob %s", name);
  return copy_fd_to_blob(st, fd, d->digest, d->size, err);
}

/* A small file of the layout (oci-layout, index.json). */
static char *read_layout_file(const char *dir, const char *name, size_t *len, struct cm_error **err) {
  cleanup_free char *path = NULL;
  if (asprintf(&path, "%s/%s", dir, name) < 0)
    abort();
  return read_whole_file(path, len, err);
}

/* The index.json entry for tag (or the only one). */
static int layout_pick(const char *path, yajl_val index, const char *tag, struct image_descriptor *out,
                       struct cm_error **err) {
  yajl_val arr = jfind(index, "manifests");
  if (!YAJL_IS_ARRAY(arr) || YAJL_GET_ARRAY(arr)->len == 0)
    return cm_error_set(err, 0, "oci:%s: index.json lists no manifests", path);
  yajl_val chosen = NULL;
  size_t n = YAJL_GET_ARRAY(arr)->len;
  char tags[512] = "";
  for (size_t i = 0; i < n; i++) {
    yajl_val e = YAJL_GET_ARRAY(arr)->values[i];
    yajl_val ann = jfind(e, "annotations");
    const char *name = ann ? YAJL_GET_STRING(jfind(ann, REF_NAME_ANNOTATION)) : NULL;
    if (name && strlen(tags) + strlen(name) + 3 < sizeof(tags))
      snprintf(tags + strlen(tags), sizeof(tags) - strlen(tags), "%s%s", tags[0] ? ", " : "", name);
    if (tag ? (name && strcmp(name, tag) == 0) : n == 1)
      chosen = e;
  }
  if (chosen == NULL) {
    if (tag)
      return cm_error_set(err, 0, "oci:%s: no image tagged \"%s\" in index.json (tags: %s)", path, tag,
                          tags[0] ? tags : "none");
    return cm_error_set(err, 0, "oci:%s: index.json lists %zu images: name one as oci:%s:TAG (tags: %s)", path, n,
                        path, tags[0] ? tags : "none");
  }
  struct jctx c;
  jctx_init(&c, "index.json");
  const char *d = YAJL_GET_STRING(jfind(chosen, "digest"));
  if (d == NULL || !digest_valid(d))
    return cm_error_set(err, 0, "oci:%s: index.json: an entry without a sha256 digest", path);
  out->digest = strdup(d);
  yajl_val sz = jfind(chosen, "size");
  out->size = YAJL_IS_INTEGER(sz) ? YAJL_GET_INTEGER(sz) : -1;
  const char *mt = YAJL_GET_STRING(jfind(chosen, "mediaType"));
  out->media_type = mt ? strdup(mt) : NULL;
  return 0;
}

int oci_layout_pull(struct image_store *st, const struct image_ref *ref, const struct pull_options *o,
                    char **manifest_digest, struct cm_error **err) {
  cleanup_close int dir = open(ref->path, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0)
    return cm_error_set(err, errno, "oci:%s", ref->path);
  size_t len;
  cleanup_free char *layout = read_layout_file(ref->path, "oci-layout", &len, err);
  if (layout == NULL)
    return cm_error_prefix(err, "oci:%s: not an OCI image layout", ref->path);
  cleanup_free char *index = read_layout_file(ref->path, "index.json", &len, err);
  if (index == NULL)
    return cm_error_prefix(err, "oci:%s", ref->path);
  cleanup_yajl yajl_val tree = json_parse(index, len, "index.json", err);
  if (tree == NULL)
    return cm_error_prefix(err, "oci:%s", ref->path);
  struct image_descriptor top = {0};
  if (layout_pick(ref->path, tree, ref->tag, &top, err) < 0)
    return -1;
  struct layout_ctx lc = {.dir_fd = dir};
  char name[PATH_MAX + 8];
  snprintf(name, sizeof(name), "oci:%s", ref->path);
  struct blob_source src = {.ctx = &lc, .fetch = layout_fetch, .name = name, .quiet = o->quiet};
  int rc = store_has_blob(st, top.digest) ? 0 : layout_fetch(&lc, st, &top, err);
  if (rc == 0)
    rc = pull_tree(st, &src, top.digest, manifest_digest, err);
  image_descriptor_clear(&top);
  return rc;
}

/* --- docker-archive: -------------------------------------------------------------------------- */

static struct archive *open_archive(const char *path, struct cm_error **err) {
  struct archive *a = unpack_archive_new();
  if (archive_read_open_filename(a, path, 1 << 16) != ARCHIVE_OK) {
    cm_error_set(err, archive_errno(a) > 0 ? archive_errno(a) : EIO, "docker-archive:%s: %s", path,
                 archive_error_string(a));
    archive_read_free(a);
    return NULL;
  }
  return a;
}

static char *entry_name(struct archive_entry *e) {
  const char *n = archive_entry_pathname(e);
  while (n && n[0] == '.' && n[1] == '/')
    n += 2;
  return strdup(n ? n : "");
}

static char *read_entry_small(struct archive *a, size_t *len) {
  size_t cap = 8192, n = 0;
  char *buf = malloc(cap);
  for (;;) {
    if (n + 1 >= cap) {
      if (cap > (16u << 20)) {
        free(buf);
        return NULL;
      }
      cap *= 2;
      buf = realloc(buf, cap);
    }
    la_ssize_t r = archive_read_data(a, buf + n, cap - n - 1);
    if (r < 0) {
      free(buf);
      return NULL;
    }
    if (r == 0)
      break;
    n += (size_t)r;
  }
  buf[n] = '\0';
  *len = n;
  return buf;
}

struct archive_plan {
  char *config;   /* entry name of the config */
  char **layers;  /* entry names of the layers, in order */
  size_t n_layers;
  char **layer_digests; /* filled by the second pass */
  int64_t *layer_sizes;
  char *config_digest;
  int64_t config_size;
};

static void plan_clear(struct archive_plan *p) {
  free(p->config);
  for (size_t i = 0; i < p->n_layers; i++) {
    free(p->layers[i]);
    free(p->layer_digests ? p->layer_digests[i] : NULL);
  }
  free(p->layers);
  free(p->layer_digests);
  free(p->layer_sizes);
  free(p->config_digest);
}

static int read_manifest_json(const char *path, struct archive_plan *p, struct cm_error **err) {
  struct archive *a = open_archive(path, err);
  if (a == NULL)
    return -1;
  struct archive_entry *e;
  cleanup_free char *json = NULL;
  size_t len = 0;
  while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
    cleanup_free char *n = entry_name(e);
    if (strcmp(n, "manifest.json") == 0) {
      json = read_entry_small(a, &len);
      break;
    }
  }
  archive_read_free(a);
  if (json == NULL)
    return cm_error_set(err, 0, "docker-archive:%s: no manifest.json (not a `docker save` archive)", path);
  cleanup_yajl yajl_val tree = json_parse(json, len, "manifest.json", err);
  if (tree == NULL)
    return cm_error_prefix(err, "docker-archive:%s", path);
  if (!YAJL_IS_ARRAY(tree) || YAJL_GET_ARRAY(tree)->len == 0)
    return cm_error_set(err, 0, "docker-archive:%s: manifest.json lists no image", path);
  /* The first image, as `docker load` of a single-image archive would give. */
  yajl_val img = YAJL_GET_ARRAY(tree)->values[0];
  const char *cfg = YAJL_GET_STRING(jfind(img, "Config"));
  yajl_val layers = jfind(img, "Layers");
  if (cfg == NULL || !YAJL_IS_ARRAY(layers))
    return cm_error_set(err, 0, "docker-archive:%s: manifest.json[0]: Config and Layers are required", path);
  p->config = strdup(cfg);
  p->n_layers = YAJL_GET_ARRAY(layers)->len;
  p->layers = calloc(p->n_layers + 1, sizeof(char *));
  p->layer_digests = calloc(p->n_layers + 1, sizeof(char *));
  p->layer_sizes = calloc(p->n_layers + 1, sizeof(int64_t));
  for (size_t i = 0; i < p->n_layers; i++) {
    const char *l = YAJL_GET_STRING(YAJL_GET_ARRAY(layers)->values[i]);
    if (l == NULL)
      return cm_error_set(err, 0, "docker-archive:%s: manifest.json[0].Layers[%zu]: not a string", path, i);
    p->layers[i] = strdup(l);
  }
  return 0;
}

static int stream_entry_to_blob(struct image_store *st, struct archive *a, char **digest, int64_t *size,
                                struct cm_error **err) {
  struct blob_writer w;
  if (store_blob_begin(st, &w, err) < 0)
    return -1;
  char buf[1 << 16];
  for (;;) {
    la_ssize_t n = archive_read_data(a, buf, sizeof(buf));
    if (n < 0) {
      store_blob_abort(st, &w);
      return cm_error_set(err, EIO, "%s", archive_error_string(a));
    }
    if (n == 0)
      break;
    if (store_blob_write(&w, buf, (size_t)n, err) < 0) {
      store_blob_abort(st, &w);
      return -1;
    }
  }
  *size = w.written;
  return store_blob_commit_any(st, &w, digest, err);
}

/* The config's rootfs.diff_ids must be the uncompressed layers' digests: a layer swapped inside
 * the archive is refused. */
static int check_diff_ids(const char *path, struct image_store *st, struct archive_plan *p, struct cm_error **err) {
  size_t len;
  cleanup_free char *cfg = store_read_blob(st, p->config_digest, &len, err);
  if (cfg == NULL)
    return -1;
  cleanup_yajl yajl_val t = json_parse(cfg, len, "image config", err);
  if (t == NULL)
    return -1;
  yajl_val rootfs = jfind(t, "rootfs");
  yajl_val ids = rootfs ? jfind(rootfs, "diff_ids") : NULL;
  if (!YAJL_IS_ARRAY(ids) || YAJL_GET_ARRAY(ids)->len != p->n_layers)
    return cm_error_set(err, 0, "docker-archive:%s: the image config's rootfs.diff_ids do not match its %zu layers",
                        path, p->n_layers);
  for (size_t i = 0; i < p->n_layers; i++) {
    const char *id = YAJL_GET_STRING(YAJL_GET_ARRAY(ids)->values[i]);
    /* A compressed layer (Docker 25+ OCI archives may hold gzip layers) has another digest than
     * its diff_id; those come with an OCI manifest and were verified by name already. */
    if (id && strcmp(id, p->layer_digests[i]) != 0 && strncmp(p->layers[i], "blobs/", 6) != 0)
      return cm_error_set(err, EIO, "docker-archive:%s: layer %s hashes to %s, the config says %s: refused", path,
                          p->layers[i], p->layer_digests[i], id);
  }
  return 0;
}

static char *synth_manifest(const struct archive_plan *p) {
  yajl_gen g = yajl_gen_alloc(NULL);
#define S(str) yajl_gen_string(g, (const unsigned char *)(str), strlen(str))
  yajl_gen_map_open(g);
  S("schemaVersion");
  yajl_gen_integer(g, 2);
  S("mediaType");
  S(MT_OCI_MANIFEST);
  S("config");
  yajl_gen_map_open(g);
  S("mediaType");
  S(MT_OCI_CONFIG);
  S("digest");
  S(p->config_digest);
  S("size");
  yajl_gen_integer(g, p->config_size);
  yajl_gen_map_close(g);
  S("layers");
  yajl_gen_array_open(g);
  for (size_t i = 0; i < p->n_layers; i++) {
    yajl_gen_map_open(g);
    S("mediaType");
    S("application/vnd.oci.image.layer.v1.tar");
    S("digest");
    S(p->layer_digests[i]);
    S("size");
    yajl_gen_integer(g, p->layer_sizes[i]);
    yajl_gen_map_close(g);
  }
  yajl_gen_array_close(g);
  yajl_gen_map_close(g);
#undef S
  const unsigned char *buf;
  size_t len;
  yajl_gen_get_buf(g, &buf, &len);
  char *out = strndup((const char *)buf, len);
  yajl_gen_free(g);
  return out;
}

int docker_archive_pull(struct image_store *st, const struct image_ref *ref, const struct pull_options *o,
                        char **manifest_digest, struct cm_error **err) {
  struct archive_plan p = {0};
  int rc = -1;
  cleanup_free char *manifest = NULL, *md = NULL;
  if (read_manifest_json(ref->path, &p, err) < 0)
    goto out;
  struct archive *a = open_archive(ref->path, err);
  if (a == NULL)
    goto out;
  struct archive_entry *e;
  size_t found = 0;
  while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
    cleanup_free char *n = entry_name(e);
    if (p.config_digest == NULL && strcmp(n, p.config) == 0) {
      if (stream_entry_to_blob(st, a, &p.config_digest, &p.config_size, err) < 0) {
        archive_read_free(a);
        goto out;
      }
      found++;
      continue;
    }
    for (size_t i = 0; i < p.n_layers; i++) {
      if (p.layer_digests[i] == NULL && strcmp(n, p.layers[i]) == 0) {
        if (!o->quiet)
          fprintf(stderr, "codemode: loading layer %zu/%zu %s\n", i + 1, p.n_layers, p.layers[i]);
        if (stream_entry_to_blob(st, a, &p.layer_digests[i], &p.layer_sizes[i], err) < 0) {
          archive_read_free(a);
          goto out;
        }
        found++;
        /* The same layer file may be listed twice (an empty layer repeated). */
        for (size_t j = i + 1; j < p.n_layers; j++)
          if (strcmp(p.layers[j], p.layers[i]) == 0 && p.layer_digests[j] == NULL) {
            p.layer_digests[j] = strdup(p.layer_digests[i]);
            p.layer_sizes[j] = p.layer_sizes[i];
            found++;
          }
        break;
      }
    }
  }
  archive_read_free(a);
  if (p.config_digest == NULL) {
    cm_error_set(err, 0, "docker-archive:%s: the config %s named by manifest.json is missing", ref->path, p.config);
    goto out;
  }
  for (size_t i = 0; i < p.n_layers; i++)
    if (p.layer_digests[i] == NULL) {
      cm_error_set(err, 0, "docker-archive:%s: the layer %s named by manifest.json is missing", ref->path,
                   p.layers[i]);
      goto out;
    }
  /* Names like blobs/sha256/<hex> (Docker 25+) must hash to their name. */
  const char *names[1] = {p.config};
  const char *digs[1] = {p.config_digest};
  for (size_t k = 0; k < 1 + p.n_layers; k++) {
    const char *nm = k == 0 ? names[0] : p.layers[k - 1];
    const char *dg = k == 0 ? digs[0] : p.layer_digests[k - 1];
    if (strncmp(nm, "blobs/sha256/", 13) == 0 && strcmp(nm + 13, dg + 7) != 0) {
      cm_error_set(err, EIO, "docker-archive:%s: %s hashes to %s: refused", ref->path, nm, dg);
      goto out;
    }
  }
  /* Old-style names: <sha256 of the config>.json. */
  if (strlen(p.config) == 64 + 5 && strcmp(p.config + 64, ".json") == 0 && strncmp(p.config, p.config_digest + 7, 64)) {
    cm_error_set(err, EIO, "docker-archive:%s: the config %s hashes to %s: refused", ref->path, p.config,
                 p.config_digest);
    goto out;
  }
  if (check_diff_ids(ref->path, st, &p, err) < 0)
    goto out;
  manifest = synth_manifest(&p);
  md = digest_of_buffer(manifest, strlen(manifest));
  if (store_put_blob(st, manifest, strlen(manifest), md, err) < 0)
    goto out;
  *manifest_digest = cm_steal_ptr(&md);
  rc = 0;
out:
  plan_clear(&p);
  (void)found;
  return rc;
}
