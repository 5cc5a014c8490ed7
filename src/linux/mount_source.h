/* What a mount may bring into a hardened container, judged on the opened fd that is mounted.
 *
 * Under a hardening profile (spec.hardening.check_mount_sources, set by policy/) the config's
 * author may be hostile. A name says nothing about what a path is: a bind of "/srv/x" can be a
 * procfs, a disk's whole filesystem, a bind-mount alias of /etc or a directory holding the
 * docker socket. So every bind source and overlay layer is opened once, judged here on that fd
 * (fstat, fstatfs, statx, its ancestors by device and inode, the entries of the very tree that
 * gets mounted), and that same fd is what is mounted: no path is walked again in between. */
#ifndef CM_LINUX_MOUNT_SOURCE_H
#define CM_LINUX_MOUNT_SOURCE_H

#include <stdbool.h>
#include <sys/types.h>

#include "util/error.h"

/* The host trees a hardened container may not get, by device and inode (loaded once per
 * container, in the child, from the host's view before pivot_root). */
struct mount_source_rules;

struct mount_source_rules *mount_source_rules_load(void);
void mount_source_rules_free(struct mount_source_rules *r);

/* What the source turned out to be, for the caller's mount flags. */
struct mount_source_kind {
  bool is_dir;
  bool is_device; /* an allowed device node (null, zero, full, random, urandom, tty): bind it read-only */
};

/* Judge an opened bind source or overlay layer (any open flags, O_PATH too): refused when it is
 * a socket, a device outside the allowed set, on a pseudo-filesystem (proc, sysfs, cgroup,
 * debugfs, tracefs, securityfs, bpf, devpts, nsfs, pstore, configfs…), the whole filesystem of a
 * block device, a sensitive host tree (/, /etc, /proc, /sys, /dev, /boot, /root, /run…) or
 * inside one, /tmp, /var/tmp or the invoking user's home as a whole, an ancestor of any of
 * them, or inside a credentials directory (.ssh, .gnupg, .aws, .kube, .docker, .config…).
 * `what` names it in errors ("bind source", "lowerdir /x"). The container's root (is_rootfs) may
 * be a whole filesystem: storage drivers (devicemapper, zfs) hand out exactly that. */
int mount_source_check(const struct mount_source_rules *r, int fd, const char *what, bool is_rootfs,
                       struct mount_source_kind *kind, struct cm_error **err);

/* Walk the directory tree at dir_fd (a non-recursive clone of the source: exactly what the
 * container will see) and refuse it if it holds a socket anywhere (a host service the container
 * could connect(2) to: read-only does not stop that) or a credentials file or directory. */
int mount_source_check_tree(const struct mount_source_rules *r, int dir_fd, const char *what,
                            struct cm_error **err);

#endif
