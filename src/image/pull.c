/* Pulling: whatever the source, the same walk — the top-level document (an index or a manifest),
 * this platform's manifest, then its config and layers, each blob verified by digest before it
 * enters the store; the name is recorded last, so an interrupted pull leaves no name that points
 * at something incomplete. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "image/image.h"
#include "util/cleanup.h"

/* What a descriptor may declare before anything is fetched: the fetch is cut off at the
 * declared size, so the declaration itself is what bounds a download. */
static int check_declared(const struct blob_source *src, const struct image_descriptor *d, const char *what,
                          int64_t max, struct cm_error **err) {
  if (d->size < 0)
    return cm_error_set(err, 0, "%s: the %s %s has no size: refused (a descriptor must declare it)", src->name, what,
                        d->digest);
  if (max > 0 && d->size > max)
    return cm_error_set(err, 0, "%s: the %s %s declares %lld bytes, more than the %lld a %s may have: refused",
                        src->name, what, d->digest, (long long)d->size, (long long)max, what);
  return 0;
}

static int ensure_blob(struct image_store *st, const struct blob_source *src, const struct image_descriptor *d,
                       struct cm_error **err) {
  if (store_has_blob(st, d->digest))
    return 0;
  if (src->fetch(src->ctx, st, d, err) < 0)
    return cm_error_prefix(err, "%s", src->name);
  return 0;
}

int pull_tree(struct image_store *st, const struct blob_source *src, const char *top_digest, char **manifest_digest,
              struct cm_error **err) {
  cleanup_free char *current = strdup(top_digest);
  /* An index may point at another index (nested OCI layouts); two levels are plenty. */
  for (int depth = 0;; depth++) {
    size_t len;
    cleanup_free char *json = store_read_blob(st, current, &len, err);
    if (json == NULL)
      return -1;
    bool is_index;
    if (manifest_kind(json, len, &is_index, err) < 0)
      return cm_error_prefix(err, "%s", src->name);
    if (!is_index)
      break;
    if (depth >= 2)
      return cm_error_set(err, 0, "%s: image indexes nested more than twice", src->name);
    struct image_descriptor d = {0};
    if (index_pick_platform(json, len, &d, err) < 0)
      return cm_error_prefix(err, "%s", src->name);
    int rc = check_declared(src, &d, "manifest", IMAGE_MANIFEST_MAX, err);
    if (rc == 0)
      rc = ensure_blob(st, src, &d, err);
    free(current);
    current = strdup(d.digest);
    image_descriptor_clear(&d);
    if (rc < 0)
      return -1;
  }
  size_t len;
  cleanup_free char *json = store_read_blob(st, current, &len, err);
  if (json == NULL)
    return -1;
  struct image_manifest m;
  if (manifest_parse(json, len, &m, err) < 0)
    return cm_error_prefix(err, "%s", src->name);
  int rc = check_declared(src, &m.config, "config", IMAGE_CONFIG_MAX, err);
  for (size_t i = 0; rc == 0 && i < m.n_layers; i++)
    rc = check_declared(src, &m.layers[i], "layer", 0, err);
  if (rc == 0)
    rc = ensure_blob(st, src, &m.config, err);
  for (size_t i = 0; rc == 0 && i < m.n_layers; i++) {
    if (!src->quiet && !store_has_blob(st, m.layers[i].digest))
      fprintf(stderr, "codemode: pulling layer %zu/%zu %.19s (%lld bytes)\n", i + 1, m.n_layers,
              m.layers[i].digest, (long long)m.layers[i].size);
    rc = ensure_blob(st, src, &m.layers[i], err);
  }
  image_manifest_clear(&m);
  if (rc < 0)
    return -1;
  *manifest_digest = cm_steal_ptr(&current);
  return 0;
}

int image_pull(struct image_store *st, const struct image_ref *ref, const struct pull_options *o,
               char **manifest_digest, struct cm_error **err) {
  int lock = store_lock(st, false, err);
  if (lock < 0)
    return -1;
  int rc;
  switch (ref->source) {
  case IMAGE_SRC_OCI_LAYOUT: rc = oci_layout_pull(st, ref, o, manifest_digest, err); break;
  case IMAGE_SRC_DOCKER_ARCHIVE: rc = docker_archive_pull(st, ref, o, manifest_digest, err); break;
  default: rc = registry_pull(st, ref, o, manifest_digest, err); break;
  }
  if (rc == 0)
    rc = store_set_ref(st, ref->canonical, *manifest_digest, err);
  close(lock);
  return rc;
}
