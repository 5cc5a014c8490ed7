/* Images without Docker: references, the content-addressed store, layer unpacking, and the three
 * sources an image comes from (an OCI layout directory, a `docker save` archive, a registry).
 * Never on the container start path: this part is linked only into codemode-image, a separate
 * binary that links libcurl, libarchive and libcrypto; `codemode pull|images|rmi` and
 * `codemode-run --image` exec it (src/cli/image_exec.c). */
#ifndef CM_IMAGE_IMAGE_H
#define CM_IMAGE_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/error.h"

/* --- digests (digest.c) ---------------------------------------------------------------------- */
#define DIGEST_HEX_LEN 64
/* "sha256:<64 hex>" is the only algorithm accepted (OCI image-spec: sha256 is REQUIRED). */
bool digest_valid(const char *digest);
/* Incremental SHA-256. */
struct digest_ctx;
struct digest_ctx *digest_new(void);
void digest_update(struct digest_ctx *d, const void *buf, size_t len);
/* "sha256:<hex>" (malloc'd); frees d. */
char *digest_finish(struct digest_ctx *d);
char *digest_of_buffer(const void *buf, size_t len);

/* --- references (reference.c) ---------------------------------------------------------------- */
enum image_source { IMAGE_SRC_REGISTRY, IMAGE_SRC_OCI_LAYOUT, IMAGE_SRC_DOCKER_ARCHIVE };
struct image_ref {
  enum image_source source;
  /* registry: "registry-1.docker.io", "localhost:5000"; repository "library/busybox" */
  char *registry, *repository;
  char *tag;    /* NULL when only a digest was given */
  char *digest; /* "sha256:…" pinned, or NULL */
  char *path;   /* oci:/docker-archive: the directory or file */
  char *canonical; /* the name the store records: "docker.io/library/busybox:latest", "oci:/abs/dir:tag" */
};
int image_ref_parse(const char *text, struct image_ref *out, struct cm_error **err);
void image_ref_clear(struct image_ref *r);

/* --- manifests and configs (manifest.c) ------------------------------------------------------ */
#define MT_OCI_INDEX "application/vnd.oci.image.index.v1+json"
#define MT_OCI_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define MT_OCI_CONFIG "application/vnd.oci.image.config.v1+json"
#define MT_DOCKER_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
#define MT_DOCKER_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define MT_DOCKER_CONFIG "application/vnd.docker.container.image.v1+json"

/* The most a manifest or index (distribution's own limit) and an image config may be: they are
 * read whole into memory. Blobs are cut off at the size their descriptor declares. */
#define IMAGE_MANIFEST_MAX (4 << 20)
#define IMAGE_CONFIG_MAX (16 << 20)

struct image_descriptor {
  char *media_type;
  char *digest;
  int64_t size;
};
struct image_manifest {
  struct image_descriptor config;
  struct image_descriptor *layers;
  size_t n_layers;
};
/* An index (OCI or Docker list): the descriptor for this machine's platform (linux/amd64…, the
 * variant where the architecture has one). *is_index = false when the document is a manifest. */
int manifest_kind(const char *json, size_t len, bool *is_index, struct cm_error **err);
int index_pick_platform(const char *json, size_t len, struct image_descriptor *out, struct cm_error **err);
int manifest_parse(const char *json, size_t len, struct image_manifest *out, struct cm_error **err);
void image_descriptor_clear(struct image_descriptor *d);
void image_manifest_clear(struct image_manifest *m);
/* The architecture name images use for this machine ("amd64", "arm64"…). */
const char *image_this_arch(void);

/* --- the store (store.c) --------------------------------------------------------------------- */
struct image_store {
  char *root;  /* /var/lib/codemode, $XDG_DATA_HOME/codemode */
  int root_fd; /* O_PATH|O_DIRECTORY */
  bool rootless;
};
/* dir NULL: the default for this user (util/image_resolved.h). Creates the layout (blobs/sha256,
 * images, resolved, rootfs, tmp). */
int store_open(struct image_store *st, const char *dir, struct cm_error **err);
void store_close(struct image_store *st);
/* A blob by digest: 1 present (verified when it was written), 0 absent. */
int store_has_blob(struct image_store *st, const char *digest);
/* The blob's bytes (malloc'd; for manifests and configs, which are small). */
char *store_read_blob(struct image_store *st, const char *digest, size_t *len, struct cm_error **err);
int store_open_blob(struct image_store *st, const char *digest, struct cm_error **err);
/* Writing a blob: bytes go to a temp file while hashed; commit checks digest and size and renames
 * it into blobs/sha256/ (atomic: a reader never sees a partial blob). */
struct blob_writer {
  int fd;
  char tmp_name[64];
  struct digest_ctx *dg;
  int64_t written;
  char committed[80]; /* the digest of what was written, once committed */
};
int store_blob_begin(struct image_store *st, struct blob_writer *w, struct cm_error **err);
int store_blob_write(struct blob_writer *w, const void *buf, size_t len, struct cm_error **err);
/* expected_size < 0: not known. */
int store_blob_commit(struct image_store *st, struct blob_writer *w, const char *expected_digest,
                      int64_t expected_size, struct cm_error **err);
/* The same when the digest is not known in advance (a docker-archive layer): *digest_out is what
 * the bytes hash to. */
int store_blob_commit_any(struct image_store *st, struct blob_writer *w, char **digest_out, struct cm_error **err);
void store_blob_abort(struct image_store *st, struct blob_writer *w);
int store_put_blob(struct image_store *st, const void *buf, size_t len, const char *expected_digest,
                   struct cm_error **err);

/* Names: images/<escaped canonical name> holds the manifest digest it points at. */
int store_set_ref(struct image_store *st, const char *canonical, const char *manifest_digest, struct cm_error **err);
char *store_get_ref(struct image_store *st, const char *canonical); /* NULL: unknown */
int store_remove_ref(struct image_store *st, const char *canonical, struct cm_error **err);
struct store_image_entry {
  char *name, *manifest_digest;
  int64_t size;   /* bytes of the unpacked rootfs' blobs (config + layers) */
  char *created;  /* of the image config, "" when unknown */
};
int store_list(struct image_store *st, struct store_image_entry **out, size_t *n, struct cm_error **err);
void store_image_entries_free(struct store_image_entry *e, size_t n);

/* The unpacked image of a manifest: *dir = <store>/rootfs/<manifest hex>, holding rootfs/ (the
 * read-only root every run shares) and config.json (the image config). Made once: unpacked in
 * tmp/ and renamed into place. *dir malloc'd. */
struct unpack_limits;
int store_rootfs(struct image_store *st, const char *manifest_digest, const struct unpack_limits *lim, char **dir,
                 struct cm_error **err);
/* Remove rootfs dirs and blobs no name refers to; *freed bytes. */
int store_prune(struct image_store *st, int64_t *freed, struct cm_error **err);
/* flock on store/lock: exclusive for changes that remove things, shared for adding. */
int store_lock(struct image_store *st, bool exclusive, struct cm_error **err);

/* --- unpacking (unpack.c) -------------------------------------------------------------------- */
/* What one image may unpack to: a layer is an attacker's stream, and a small gzip can say
 * "a 512 MiB file of zeros" (a decompression bomb). Bytes are the declared sizes of the entries
 * (a sparse file's holes count), counted before anything is written. 0: no limit. The CLI's
 * --max-layer-size, --max-layer-ratio, --max-image-size and --max-inodes set them. */
struct unpack_limits {
  int64_t layer_bytes; /* one layer's files */
  int64_t layer_ratio; /* one layer's files ≤ ratio × its compressed size + UNPACK_RATIO_SLACK */
  int64_t image_bytes; /* every layer's files together */
  int64_t inodes;      /* entries of the whole image */
};
#define UNPACK_DEFAULT_LAYER_BYTES (16LL << 30)
#define UNPACK_DEFAULT_LAYER_RATIO 100
#define UNPACK_RATIO_SLACK (16LL << 20)
#define UNPACK_DEFAULT_IMAGE_BYTES (64LL << 30)
#define UNPACK_DEFAULT_INODES 2000000
void unpack_limits_default(struct unpack_limits *l);
struct unpack_options {
  bool rootless; /* no device nodes, no owners other than ours, no setuid/setgid bits */
  struct unpack_limits limits;
};
/* Apply one layer (a tar stream, compressed or not: gzip, zstd) to the directory root_fd.
 * A security boundary: no entry lands outside the rootfs (absolute names, "..", symlinks made
 * by an earlier entry or layer, hard links to outside), whiteouts and opaque directories as
 * the OCI image spec says. `label` names the layer in errors. */
int unpack_layer_fd(int root_fd, int layer_fd, const struct unpack_options *o, const char *label,
                    struct cm_error **err);
int unpack_layer_buffer(int root_fd, const void *buf, size_t len, const struct unpack_options *o,
                        const char *label, struct cm_error **err);

/* --- fetching into the store (pull.c, and one file per source) ------------------------------- */
struct pull_options {
  bool quiet;
  const char *ca_file;   /* extra CA bundle for registries (else the system's and certs.d) */
  const char *auth_file; /* default $DOCKER_CONFIG/config.json or ~/.docker/config.json */
};
/* Where blobs come from: fetch puts the blob of d into the store, verified (store_blob_*). */
struct blob_source {
  void *ctx;
  int (*fetch)(void *ctx, struct image_store *st, const struct image_descriptor *d, struct cm_error **err);
  const char *name; /* for messages: "registry.test:5000/app", "oci:/dir" */
  bool quiet;
};
/* From a top-level document already in the store (an index or a manifest): this platform's
 * manifest, its config and layers into the store; *manifest_digest malloc'd. */
int pull_tree(struct image_store *st, const struct blob_source *src, const char *top_digest, char **manifest_digest,
              struct cm_error **err);
/* Bring the image into the store and record its name. A pinned digest is checked against what
 * the source serves. */
int image_pull(struct image_store *st, const struct image_ref *ref, const struct pull_options *o,
               char **manifest_digest, struct cm_error **err);
/* registry.c: the top-level document of ref (by tag or digest) into the store. */
int registry_pull(struct image_store *st, const struct image_ref *ref, const struct pull_options *o,
                  char **manifest_digest, struct cm_error **err);
/* layout.c: the oci: and docker-archive: sources. */
int oci_layout_pull(struct image_store *st, const struct image_ref *ref, const struct pull_options *o,
                    char **manifest_digest, struct cm_error **err);
int docker_archive_pull(struct image_store *st, const struct image_ref *ref, const struct pull_options *o,
                        char **manifest_digest, struct cm_error **err);

#endif
