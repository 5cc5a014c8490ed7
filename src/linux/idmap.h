/* Idmapped mounts (mount_setattr MOUNT_ATTR_IDMAP, Linux 5.12): a mount that shows its files'
 * owners through a user namespace's mapping, so a container whose root is host uid 100000 sees
 * its rootfs (owned by 0 on disk) as its own without a chown, and what it creates is stored as
 * owned by 0. Only a process holding CAP_SYS_ADMIN over the filesystem (host root, for disk
 * filesystems) may make one, and only on a detached clone (open_tree OPEN_TREE_CLONE) that was
 * never attached: so the runtime makes them before the child needs them and passes the fds.
 *
 * Measured on this kernel (6.18): ext4 and tmpfs can be idmapped; an overlay mount itself
 * cannot (EINVAL), but an overlay assembled over idmapped layers works (before 6.15 only once
 * the layers are attached in the assembler's mount namespace: idmap_overlay does that itself).
 * Such an overlay mounted by root cannot write its upper layer through an idmap (its work dir
 * is created with root's ids, which the mapping cannot store: EOVERFLOW), so the runtime
 * assembles it over a fresh throwaway upper layer that is not idmapped but owned by the
 * container's root (an overlay of the config's own is assembled by the child instead, in its
 * user namespace, from idmapped layers the runtime opened: linux/rootfs.h). */
#ifndef CM_LINUX_IDMAP_H
#define CM_LINUX_IDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "util/error.h"

/* idmap_clone's `tree`: IDMAP_TREE clones the mount tree at src_fd with its submounts (rbind),
 * IDMAP_TREE_MAPPED idmaps every mount of it, not only the top (runtime-spec's "ridmap"). */
enum { IDMAP_TREE = 1, IDMAP_TREE_MAPPED = 2 };

/* A detached clone of the mount at src_fd (with the submounts as `tree` says), idmapped through
 * userns_fd (-1: not idmapped), with MS_* `flags` set and `clear` cleared on its top mount,
 * read-only throughout when `rro`. A filesystem that refuses
 * idmapping is an error naming it, with errno EINVAL; then *refused (when not NULL) is true.
 * Returns the mount fd. */
int idmap_clone(int src_fd, int userns_fd, unsigned tree, unsigned long flags, unsigned long clear, bool rro,
                bool *refused, struct cm_error **err);

/* The overlay mount whose root is `path`, if it is one: its layers as absolute paths (upper
 * first, may be absent; then the lowers, top to bottom). 1 found, 0 not an overlay mount root,
 * -1 error (relative layer paths are an error: we cannot know what they were relative to). */
struct overlay_layers {
  char *upper;   /* NULL: none */
  char **lowers; /* NULL-terminated */
  size_t n_lowers;
  char *extra_options; /* metacopy=, redirect_dir=, xino=, userxattr kept as given, or NULL */
};
int overlay_layers_of(const char *path, struct overlay_layers *out, struct cm_error **err);
void overlay_layers_free(struct overlay_layers *l);

/* A detached overlay over idmapped clones of `l`'s layers: every layer read-only (the original
 * upper becomes the top lower) when owner_uid is (uid_t)-1; otherwise writable through a fresh
 * tmpfs upper layer of `upper_size` ("256m") whose dirs belong to owner_uid:owner_gid, thrown
 * away with the mount. Returns the mount fd. */
int idmap_overlay(const struct overlay_layers *l, int userns_fd, uid_t owner_uid, gid_t owner_gid,
                  const char *upper_size, struct cm_error **err);

/* idmap_overlay's way on kernels before 6.15, which refuse detached layer mounts: the overlay
 * over the `n` detached mounts `layer_fds` (named by /proc/self/fd paths in `lowerdir`; `tmp` the
 * throwaway upper's mount or -1) assembled by a child in a private mount namespace where they are
 * attached. The layer mounts are used up: attached in the child's namespace, they go with it.
 * Exported for its unit test, which runs it on any kernel. */
int idmap_overlay_assemble_attached(const int *layer_fds, size_t n, const char *lowerdir, int tmp,
                                    const char *extra_options, bool writable, struct cm_error **err);

#endif
