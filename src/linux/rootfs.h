/* The container's root filesystem: mounts, /dev, pivot_root.
 * All paths are resolved inside the rootfs and never follow a symlink out of it
 * (openat2 RESOLVE_IN_ROOT; mounts done through the resolved fd — CVE-2021-30465 class). */
#ifndef CM_LINUX_ROOTFS_H
#define CM_LINUX_ROOTFS_H

#include <stdbool.h>
#include "spec/spec.h"
#include "util/error.h"

/* In the container's fresh mount namespace, before pivot_root:
 * make / rslave (or linux.rootfsPropagation), bind `rootfs` (absolute host path) onto itself,
 * apply every spec mount in order, create /dev (default devices, linux.devices, /dev/fd and stdio
 * symlinks, /dev/pts + ptmx, /dev/shm if not mounted by the spec, /dev/console placeholder when
 * process.terminal). */
int rootfs_prepare(const struct spec *s, const char *rootfs, struct cm_error **err);
/* pivot_root into `rootfs` and detach the old root; with no_pivot, MS_MOVE + chroot. Leaves the
 * cwd at the new "/". */
int rootfs_pivot(const char *rootfs, bool no_pivot, struct cm_error **err);
/* Without a mount namespace (the runtime's is inherited): chroot into `rootfs`, as runc does,
 * and mount nothing. Leaves the cwd at the new "/". */
int rootfs_chroot(const char *rootfs, struct cm_error **err);
/* After pivot: maskedPaths, readonlyPaths, root.readonly, final rootfsPropagation. */
int rootfs_finalize(const struct spec *s, struct cm_error **err);

#endif
