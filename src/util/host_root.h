/* "Are we root?" as the kernel means it for what only the host's root may do (cgroups of the
 * host's tree, device filters, allocating host uid ranges, idmapped disk mounts): uid 0 in the
 * host's (initial) user namespace. euid 0 inside a user namespace of our own, the one
 * codemode-run makes for its scratch mounts when a user runs it (supervisor/scratch.c), or
 * RootlessKit's, is not: there we act as rootless, as runc does when it finds itself in one. */
#ifndef CM_UTIL_HOST_ROOT_H
#define CM_UTIL_HOST_ROOT_H

#include <stdbool.h>

/* euid 0 and /proc/self/uid_map the initial namespace's identity map ("0 0 4294967295"). Read
 * once per process, then cached. */
bool cm_host_root(void);
/* Our effective uid as the parent user namespace (the host's, for codemode-run's own) sees it:
 * the uid to name in messages and in /run/user/UID. geteuid() when unmapped or unreadable. */
unsigned cm_host_uid(void);
/* Forget the cached answer (the process has just entered a user namespace). */
void cm_host_root_forget(void);

#endif
