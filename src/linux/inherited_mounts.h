/* A config without a mount namespace inherits the runtime's (the runtime spec). Its mounts are
 * then made there, as runc does, unless that namespace is the system's own (pid 1's: the host's
 * initial one), which codemode never changes. The bind of the rootfs that holds them is recorded
 * and detached at delete, so nothing of the container stays in the caller's namespace. */
#ifndef CM_LINUX_INHERITED_MOUNTS_H
#define CM_LINUX_INHERITED_MOUNTS_H

#include <stdbool.h>
#include "util/error.h"

/* Whether our mount namespace is pid 1's, or the host's initial one by its inode when pid 1's
 * cannot be read (true when even ours cannot: the caller then refuses, never mounts). */
bool mntns_is_pid1s(void);
/* After init bound the rootfs onto itself in our namespace: "inherited-mounts" in the state dir,
 * naming the namespace and that topmost mount. */
int inherited_mounts_record(int dirfd, const char *rootfs, struct cm_error **err);
/* At delete: detach that mount (and everything under it) when we are in the namespace it was
 * made in and it is still the topmost one at rootfs. Nothing recorded: nothing done. */
void inherited_mounts_remove(int dirfd, const char *rootfs);

#endif
