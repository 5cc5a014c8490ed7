/* Internal to src/image: an unpack session applies the layers of one image in order. */
#ifndef CM_IMAGE_UNPACK_INTERNAL_H
#define CM_IMAGE_UNPACK_INTERNAL_H

#include <time.h>

struct archive;

#include "image/image.h"

struct unpack_nameset {
  char **slots;
  size_t cap, count;
};
struct unpack_dir {
  char *name;
  mode_t mode;
  struct timespec mtime;
};
struct unpack_session {
  int root_fd;
  struct unpack_options opts;
  struct unpack_nameset names; /* what the current layer made */
  struct unpack_dir *dirs;     /* directory modes and times, applied at the end */
  size_t n_dirs, cap_dirs;
  size_t entries, whiteouts, skipped_devices, skipped_xattrs, skipped_other;
  /* Counted against opts.limits: this layer's and the image's declared file bytes, the image's
   * entries; layer_compressed is the current layer's blob size (for the ratio). */
  int64_t layer_bytes, image_bytes, inodes, layer_compressed;
};
void unpack_session_init(struct unpack_session *s, int root_fd, const struct unpack_options *o);
int unpack_session_layer_fd(struct unpack_session *s, int layer_fd, const char *label, struct cm_error **err);
int unpack_session_layer_buffer(struct unpack_session *s, const void *buf, size_t len, const char *label,
                                struct cm_error **err);
int unpack_session_finish(struct unpack_session *s, struct cm_error **err);
void unpack_session_clear(struct unpack_session *s);
/* Remove name in parent and everything below it, never following a symlink. */
int unpack_remove_tree_at(int parent, const char *name);
/* A libarchive reader for layers and docker-save archives: tar (ustar, pax, GNU), any filter. */
struct archive *unpack_archive_new(void);

#endif
