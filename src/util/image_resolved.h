/* The image store's memo of a resolve, shared by codemode-image (which writes it) and
 * codemode-run (which reads it): the rootfs and config a REF named the last time and what its
 * source looked like then. With it codemode-run starts an image already in the store without
 * running codemode-image, whose shared libraries (libcurl, libarchive, libcrypto and theirs)
 * take ~8 ms to load on every launch: the per-request path of an MCP client.
 *
 * <store>/resolved/<escaped REF>: {"ref","name","manifest","rootfs","config"} and, for a local
 * source (oci:DIR, docker-archive:FILE), "source" (DIR/index.json or FILE) with its stat stamp
 * taken before codemode-image read it. A memo is used only while
 * - the REF is one that means the same from any directory (an absolute local path, or a registry
 *   reference: those are read from the store with --pull missing anyway),
 * - the source's stamp (device, inode, size, mtime, ctime) is unchanged: an edited index.json or
 *   a new archive goes through codemode-image again,
 * - images/<escaped name> still names the same manifest (rmi, a newer pull of the tag), and
 * - the rootfs directory, once locked, is still the one at that path (prune).
 * Anything else, or anything unreadable, is the slow path: codemode-image, as before. */
#ifndef CM_UTIL_IMAGE_RESOLVED_H
#define CM_UTIL_IMAGE_RESOLVED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

/* /var/lib/codemode as the host's root, else $XDG_DATA_HOME/codemode (~/.local/share/codemode);
 * malloc'd, NULL without HOME. */
char *image_store_default_dir(void);
/* A name as one file name of the store ("oci:/a/b:t" → "oci%3A%2Fa%2Fb%3At"). */
void image_store_escape_name(const char *name, char *out, size_t size);

/* A name record of the store (images/<escaped name>: {"name","manifest"}) read at dirfd/file:
 * 0 with both strings malloc'd, -1 when it is missing or malformed. */
int image_store_read_ref(int dirfd, const char *file, char **name, char **manifest);

struct image_source_stamp {
  uint64_t dev, ino, size;
  int64_t mtime_ns, ctime_ns;
};
struct image_resolved {
  char *ref, *name, *manifest, *rootfs, *config;
  char *source; /* NULL for a registry reference */
  struct image_source_stamp stamp;
};

/* REF means the same wherever it is run from. */
bool image_resolved_cacheable(const char *ref);
/* The stamp of path; -1 (errno) when it cannot be read. */
int image_source_stamp_of(const char *path, struct image_source_stamp *out);
/* Write r into the store (atomically). */
int image_resolved_write(int store_fd, const struct image_resolved *r, struct cm_error **err);
/* The memo for ref if there is one, it parses, and it is still fresh (above, but for the rootfs
 * lock, which is the caller's): 0; else -1 and *out cleared. */
int image_resolved_lookup(int store_fd, const char *ref, struct image_resolved *out);
void image_resolved_clear(struct image_resolved *r);

#endif
