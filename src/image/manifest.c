/* OCI image index / manifest and their Docker schema-2 twins, read with yajl: the descriptor of
 * this machine's platform from an index, the config and layers of a manifest. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "image/image.h"
#include "spec/json_util.h"
#include "util/cleanup.h"

static void yajl_freep(yajl_val *v) {
  if (*v)
    yajl_tree_free(*v);
}
#define cleanup_yajl __attribute__((cleanup(yajl_freep)))

void image_descriptor_clear(struct image_descriptor *d) {
  free(d->media_type);
  free(d->digest);
  memset(d, 0, sizeof(*d));
}

void image_manifest_clear(struct image_manifest *m) {
  image_descriptor_clear(&m->config);
  for (size_t i = 0; i < m->n_layers; i++)
    image_descriptor_clear(&m->layers[i]);
  free(m->layers);
  memset(m, 0, sizeof(*m));
}

const char *image_this_arch(void) {
#if defined(__x86_64__)
  return "amd64";
#elif defined(__aarch64__)
  return "arm64";
#elif defined(__arm__)
  return "arm";
#elif defined(__i386__)
  return "386";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return "ppc64le";
#elif defined(__s390x__)
  return "s390x";
#elif defined(__riscv) && __riscv_xlen == 64
  return "riscv64";
#else
  return "unknown";
#endif
}

static int parse_descriptor(struct jctx *c, yajl_val v, struct image_descriptor *d, struct cm_error **err) {
  if (jval_object(c, v, err) < 0 || jrequire(c, v, "digest", err) < 0 ||
      jget_string(c, v, "digest", &d->digest, err) < 0 || jget_string(c, v, "mediaType", &d->media_type, err) < 0)
    return -1;
  d->size = -1;
  if (jget_i64(c, v, "size", 0, INT64_MAX, &d->size, err) < 0)
    return -1;
  if (!digest_valid(d->digest)) {
    size_t m = jpush_key(c, "digest");
    jerr(c, err, "\"%s\" is not a sha256 digest", d->digest);
    jpop(c, m);
    return -1;
  }
  return 0;
}

int manifest_kind(const char *json, size_t len, bool *is_index, struct cm_error **err) {
  cleanup_yajl yajl_val tree = json_parse(json, len, "manifest", err);
  if (tree == NULL)
    return -1;
  if (!YAJL_IS_OBJECT(tree))
    return cm_error_set(err, 0, "manifest: not a JSON object");
  const char *mt = YAJL_GET_STRING(jfind(tree, "mediaType"));
  /* The mediaType field is optional in OCI documents: "manifests" makes an index. */
  *is_index = (mt && (strcmp(mt, MT_OCI_INDEX) == 0 || strcmp(mt, MT_DOCKER_LIST) == 0)) ||
              (mt == NULL && YAJL_IS_ARRAY(jfind(tree, "manifests")));
  return 0;
}

/* The platform an index entry is for; an entry without one is taken as any platform's (an
 * attestation or single-platform layout). */
static bool platform_matches(yajl_val entry, int *score) {
  yajl_val p = jfind(entry, "platform");
  if (p == NULL) {
    *score = 0;
    return true;
  }
  const char *os = YAJL_GET_STRING(jfind(p, "os"));
  const char *arch = YAJL_GET_STRING(jfind(p, "architecture"));
  const char *variant = YAJL_GET_STRING(jfind(p, "variant"));
  if (os == NULL || arch == NULL || strcmp(os, "linux") != 0 || strcmp(arch, image_this_arch()) != 0)
    return false;
  *score = 2;
  /* arm64 images often say variant v8; prefer the plain entry or v8 over others. */
  if (variant && strcmp(variant, "v8") != 0)
    *score = 1;
  return true;
}

int index_pick_platform(const char *json, size_t len, struct image_descriptor *out, struct cm_error **err) {
  cleanup_yajl yajl_val tree = json_parse(json, len, "image index", err);
  if (tree == NULL)
    return -1;
  struct jctx c;
  jctx_init(&c, "image index");
  yajl_val arr;
  if (jval_object(&c, tree, err) < 0 || jrequire(&c, tree, "manifests", err) < 0 ||
      jget_array(&c, tree, "manifests", &arr, err) < 0)
    return -1;
  size_t mark = jpush_key(&c, "manifests");
  int best = -1, best_score = -1;
  for (size_t i = 0; i < YAJL_GET_ARRAY(arr)->len; i++) {
    yajl_val e = YAJL_GET_ARRAY(arr)->values[i];
    int score;
    if (!YAJL_IS_OBJECT(e) || !platform_matches(e, &score))
      continue;
    /* Attestation manifests (buildkit) carry this annotation: never an image to run. */
    yajl_val ann = jfind(e, "annotations");
    const char *kind = ann ? YAJL_GET_STRING(jfind(ann, "vnd.docker.reference.type")) : NULL;
    if (kind && strcmp(kind, "attestation-manifest") == 0)
      continue;
    if (score > best_score) {
      best = (int)i;
      best_score = score;
    }
  }
  if (best < 0)
    return cm_error_set(err, 0, "image index: no manifest for linux/%s (the image is built for other platforms)",
                        image_this_arch());
  size_t m2 = jpush_index(&c, (size_t)best);
  if (parse_descriptor(&c, YAJL_GET_ARRAY(arr)->values[best], out, err) < 0)
    return -1;
  jpop(&c, m2);
  jpop(&c, mark);
  return 0;
}

int manifest_parse(const char *json, size_t len, struct image_manifest *out, struct cm_error **err) {
  memset(out, 0, sizeof(*out));
  cleanup_yajl yajl_val tree = json_parse(json, len, "image manifest", err);
  if (tree == NULL)
    return -1;
  struct jctx c;
  jctx_init(&c, "image manifest");
  yajl_val cfg, layers;
  if (jval_object(&c, tree, err) < 0 || jrequire(&c, tree, "config", err) < 0 ||
      jrequire(&c, tree, "layers", err) < 0 || jget_object(&c, tree, "config", &cfg, err) < 0 ||
      jget_array(&c, tree, "layers", &layers, err) < 0)
    goto fail;
  size_t mark = jpush_key(&c, "config");
  if (parse_descriptor(&c, cfg, &out->config, err) < 0)
    goto fail;
  jpop(&c, mark);
  size_t n = YAJL_GET_ARRAY(layers)->len;
  out->layers = calloc(n ? n : 1, sizeof(*out->layers));
  if (out->layers == NULL)
    abort();
  mark = jpush_key(&c, "layers");
  for (size_t i = 0; i < n; i++) {
    size_t m2 = jpush_index(&c, i);
    if (parse_descriptor(&c, YAJL_GET_ARRAY(layers)->values[i], &out->layers[i], err) < 0)
      goto fail;
    out->n_layers++;
    const char *mt = out->layers[i].media_type;
    /* Foreign (non-distributable) layers are fetched from elsewhere by Docker; we refuse them
     * rather than run an image with a hole in it. */
    if (mt && strstr(mt, "nondistributable") != NULL) {
      jerr(&c, err, "non-distributable layer (%s) is not supported", mt);
      goto fail;
    }
    jpop(&c, m2);
  }
  jpop(&c, mark);
  return 0;
fail:
  image_manifest_clear(out);
  return -1;
}
