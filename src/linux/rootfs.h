/* The container's root filesystem: mounts, /dev, pivot_root.
 * All paths are resolved inside the rootfs and never follow a symlink out of it
 * (openat2 RESOLVE_IN_ROOT; mounts done through the resolved fd — CVE-2021-30465 class). */
#ifndef CM_LINUX_ROOTFS_H
#define CM_LINUX_ROOTFS_H

#include <stdbool.h>
#include "spec/spec.h"
#include "util/error.h"

/* In the container's fresh mount namespace, before pivot_root (bind_fds: NULL, or from
 * rootfs_open_bind_sources):
 * make / rslave (or linux.rootfsPropagation), bind `rootfs` (absolute host path) onto itself,
 * apply every spec mount in order, create /dev (default devices, linux.devices, /dev/fd and stdio
 * symlinks, /dev/pts + ptmx, /dev/shm if not mounted by the spec, /dev/console placeholder when
 * process.terminal). */
int rootfs_prepare(const struct spec *s, const char *rootfs, const int *bind_fds, struct cm_error **err);
/* In a user namespace the mapped root may not reach a bind source (a 0700 root-owned parent on
 * the host): the runtime, still the host's root, joins the container's new mount namespace (that
 * of `pid`, where the mounts will be made: a mount of another namespace cannot be cloned there),
 * opens every bind source (O_PATH, relative ones against `bundle`) and comes back, as runc does.
 * fds[i] for s->mounts[i], -1 where not a bind or not opened (the error is then met, named, when
 * the mount is made). */
bool rootfs_has_bind_mounts(const struct spec *s);
/* What needs mounts in the container's mount namespace: mounts, linux.devices, root.readonly.
 * Without a namespace of its own they are made in the inherited one (linux/inherited_mounts.h). */
bool rootfs_mounts_inherited(const struct spec *s);
int rootfs_open_bind_sources_in(pid_t pid, const struct spec *s, const char *bundle, int *fds, struct cm_error **err);
void rootfs_close_bind_sources(int *fds, size_t n);
/* pivot_root into `rootfs` and detach the old root; with no_pivot, MS_MOVE + chroot. Leaves the
 * cwd at the new "/". */
int rootfs_pivot(const char *rootfs, bool no_pivot, struct cm_error **err);
/* Without a mount namespace (the runtime's is inherited): chroot into `rootfs`, as runc does,
 * and mount nothing. Leaves the cwd at the new "/". */
int rootfs_chroot(const char *rootfs, struct cm_error **err);
/* Detached mounts the runtime made for us (runtime/userns_setup.h: idmapped, which only host
 * root may make), used in place of the rootfs path and of the config's bind sources. */
struct rootfs_premount_layers {
  int *fds; /* an overlay's layers, in the order its options name them */
  size_t n;
  int *attach; /* the detached mounts they are on, attached first (overlay clones layer mounts,
                * which must be in our mount namespace) */
  size_t n_attach;
};
/* The layers of an overlay entry of the config (mounts[] type overlay), opened, judged by `rules`
 * when hardened (linux/mount_source.h, may be NULL) and idmapped through userns_fd, as the child's
 * overlay takes them (runtime/userns_setup.h: its unprivileged child could not open them);
 * upperdir and workdir on one mount, as overlay requires. Malloc'd lists in *out. */
struct mount_source_rules;
int rootfs_overlay_layer_fds(const struct spec_mount *m, const struct mount_source_rules *rules, int userns_fd,
                             struct rootfs_premount_layers *out, struct cm_error **err);
struct rootfs_premounts {
  int root_fd;    /* the root: attached over "/" and pivoted into by fd; -1: the rootfs path */
  int *mount_fds; /* [n]: attached for s->mounts[i] instead of opening its source; -1: none */
  struct rootfs_premount_layers *layers; /* [n]: for an overlay entry, its layers; NULL: none */
  size_t n;
};
/* rootfs_has_bind_mounts, less the binds premounted in pre (NULL: none). */
bool rootfs_has_bind_mounts_besides(const struct spec *s, const struct rootfs_premounts *pre);
/* rootfs_prepare with premounts (NULL: none); a bind with a premount does not use bind_fds. */
int rootfs_prepare_premounted(const struct spec *s, const char *rootfs, const struct rootfs_premounts *pre,
                              const int *bind_fds, struct cm_error **err);
/* The same into pre->root_fd when the root was premounted. */
int rootfs_pivot_premounted(const char *rootfs, const struct rootfs_premounts *pre, bool no_pivot,
                            struct cm_error **err);
/* After pivot: maskedPaths, readonlyPaths, root.readonly, final rootfsPropagation. */
int rootfs_finalize(const struct spec *s, struct cm_error **err);

#endif
