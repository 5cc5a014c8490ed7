/* no_new_privs, LSM labels (AppArmor / SELinux) and the session keyring. */
#ifndef CM_LINUX_SECURITY_ATTRS_H
#define CM_LINUX_SECURITY_ATTRS_H
#include "spec/spec.h"
#include "util/error.h"
#include <stdbool.h>
int no_new_privs_apply(struct cm_error **err);
/* selinuxfs is mounted: SELinux labels (process and mount) can be applied. */
bool lsm_selinux_enabled(void);
/* Set the exec-time label (apparmor: /proc/self/attr/apparmor/exec "exec PROFILE"; selinux:
 * /proc/self/attr/exec). Error if asked for and the LSM is not active. The LSM checks read
 * /sys/module/apparmor and /sys/fs/selinux (or, on kernels >= 6.8, lsm_list_modules(2)), so on
 * older kernels call this while those are visible. */
int lsm_apply_exec_label(const struct spec_process *p, struct cm_error **err);
/* A new session keyring named after the container (skipped with --no-new-keyring). */
int keyring_join_new(const char *container_id, struct cm_error **err);

/* Open `relpath` (e.g. "sys/net/ipv4/ip_forward", "thread-self/attr/exec") inside a procfs that
 * cannot be faked or redirected (CVE-2019-16884 / CVE-2025-52881 class): a private procfs
 * instance (fsopen) when the kernel allows it, else /proc verified with fstatfs; the path is
 * resolved with openat2(RESOLVE_BENEATH|NO_SYMLINKS|NO_MAGICLINKS|NO_XDEV), so no symlink and
 * no mount on top of a component is followed. A leading "self/" or "thread-self/" is followed
 * once. The opened file is checked to be on procfs. Returns the fd (O_CLOEXEC added). */
int procfs_open(const char *relpath, int flags, struct cm_error **err);
#endif
