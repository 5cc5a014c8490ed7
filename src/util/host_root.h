/* "Are we root?" as the kernel means it for what only the host's root may do (cgroups of the
 * host's tree, device filters, allocating host uid ranges, idmapped disk mounts): uid 0 in the
 * host's (initial) user namespace. euid 0 inside a user namespace of our own, the one
 * codemode-run makes for its scratch mounts when a user runs it (supervisor/scratch.c), or
 * RootlessKit's, is not: there we act as rootless, as runc does when it finds itself in one. */
#ifndef CM_UTIL_HOST_ROOT_H
#define CM_UTIL_HOST_ROOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One line of a /proc/PID/{uid,gid}_map: ids inside, the first one outside, how many. */
struct cm_id_range {
  uint32_t inside, outside, count;
};
/* Our own map (file: "/proc/self/uid_map" or "/proc/self/gid_map"), at most max ranges: their
 * number, -1 when it cannot be read. */
int cm_self_id_map(const char *file, struct cm_id_range *out, size_t max);

/* euid 0 and /proc/self/uid_map the initial namespace's identity map ("0 0 4294967295"). Read
 * once per process, then cached. */
bool cm_host_root(void);
/* Our effective uid as the parent user namespace (the host's, for codemode-run's own) sees it:
 * the uid to name in messages and in /run/user/UID. geteuid() when unmapped or unreadable. */
unsigned cm_host_uid(void);
/* Forget the cached answer (the process has just entered a user namespace). */
void cm_host_root_forget(void);

#endif
