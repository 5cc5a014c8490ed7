/* Shared between rootfs.c, mounts.c, mount_cgroup.c, devices.c and paths.c; not for other layers.
 *
 * Mounts are made with the new mount API: a detached mount (fsmount or open_tree clone) gets its
 * attributes while detached and is then attached with move_mount() onto an O_PATH fd resolved
 * inside the rootfs — the target is the fd we resolved, never a path walked again later
 * (CVE-2021-30465 class). Needs Linux >= 5.12 (mount_setattr). */
#ifndef CM_LINUX_ROOTFS_INTERNAL_H
#define CM_LINUX_ROOTFS_INTERNAL_H

#include <stdbool.h>
#include <sys/mount.h>

#include "spec/spec.h"
#include "util/error.h"

/* MS_* flags (set / explicitly cleared) → struct mount_attr attr_set/attr_clr. */
void mount_attr_from_flags(unsigned long flags, unsigned long clear_flags, struct mount_attr *attr);

/* A new, detached filesystem mount ("tmpfs", "proc" …). `data` is the comma-separated option
 * string mount(2) would take. Returns the mount fd; errors name the type and include the
 * kernel's own message when it gives one. */
/* Each "key=value" or "flag" of comma-separated `data` as fsconfig(2) on fs_fd; an error names
 * the option and the kernel's own message. */
int mount_fs_config_options(int fs_fd, const char *type, const char *data, struct cm_error **err);
int mount_new_fs_labeled(const char *type, const char *source, unsigned long flags, const char *data,
                         const char *selinux_context, struct cm_error **err);
int mount_new_fs(const char *type, const char *source, unsigned long flags, const char *data,
                 struct cm_error **err);
/* A detached clone of the mount tree at src_fd (AT_RECURSIVE when `recursive`), with `flags`
 * applied to its top mount. Returns the mount fd. */
int mount_clone_tree(int src_fd, bool recursive, unsigned long flags, unsigned long clear_flags,
                     struct cm_error **err);
/* Attach a detached mount onto target_fd. The mount fd then refers to the attached mount. */
int mount_attach(int mnt_fd, int target_fd, struct cm_error **err);
/* mount_setattr helpers on an (attached or detached) mount fd. */
int mount_set_propagation(int mnt_fd, unsigned long propagation, struct cm_error **err);
int mount_set_readonly(int mnt_fd, bool recursive, struct cm_error **err);

/* A bind mount: type "bind" or the bind/rbind option. */
bool rootfs_mount_is_bind(const struct spec_mount *m);
/* The last spec mount whose destination is /dev, or NULL. */
const struct spec_mount *rootfs_dev_mount(const struct spec *s);

struct mount_source_rules;
struct rootfs_premounts;
/* Every entry of s->mounts, in order, inside the rootfs at root_fd. With `rules` (a hardened
 * container, linux/mount_source.h) every bind source and overlay layer is judged on its fd. With
 * `pre`, pre->mount_fds[i] (when >= 0) is attached instead of opening mounts[i]'s source;
 * bind_fds (NULL, or one per mount, -1 for none): bind sources the runtime opened for us
 * (rootfs_open_bind_sources_in), used instead of opening the source path. */
int mounts_apply(const struct spec *s, int root_fd, const struct mount_source_rules *rules,
                 const struct rootfs_premounts *pre, const int *bind_fds, struct cm_error **err);
/* A "cgroup"/"cgroup2" entry: see mount_cgroup.c. */
int mount_cgroup(const struct spec *s, const struct spec_mount *m, int target_fd, struct cm_error **err);

/* tmpfs_copyup.c: the new tmpfs mnt_fd (detached) over old_dir_fd, the directory the rootfs had
 * at dest, takes its mode and, with copy_up (the "tmpcopyup" option), its content. */
int tmpfs_take_over_dir(int old_dir_fd, int mnt_fd, bool copy_up, const char *dest, struct cm_error **err);

/* /dev: default devices, linux.devices, symlinks, ptmx, console placeholder. */
int devices_setup(const struct spec *s, int root_fd, struct cm_error **err);

/* After pivot, inside the container root. Missing paths are skipped. */
int paths_mask(const struct spec_strv *paths, int root_fd, struct cm_error **err);
int paths_readonly(const struct spec_strv *paths, int root_fd, struct cm_error **err);

#endif
