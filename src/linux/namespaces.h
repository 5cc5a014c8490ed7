/* Namespaces: join by path, id mappings, time offsets, hostname. */
#ifndef CM_LINUX_NAMESPACES_H
#define CM_LINUX_NAMESPACES_H

#include <stdbool.h>
#include <sys/types.h>
#include "spec/spec.h"
#include "util/error.h"

/* Open `path`, check (ioctl NS_GET_NSTYPE) that it is a namespace of `type` — a path of the
 * wrong type is an error naming it — and setns() into it. */
int ns_join(enum spec_ns_type type, const char *path, struct cm_error **err);
/* Runtime side, for a child that just unshared CLONE_NEWUSER: write /proc/PID/{uid_map,gid_map}
 * from linux.uidMappings/gidMappings (setgroups is left "allow", as runc does when root). */
int ns_write_id_mappings(pid_t pid, const struct spec_linux *l, struct cm_error **err);
/* In a process that has just unshared CLONE_NEWTIME (before any child exists): write
 * /proc/self/timens_offsets from linux.timeOffsets. No-op when none is given. */
int ns_write_time_offsets(const struct spec_linux *l, struct cm_error **err);
/* The user namespace that owns the namespace at `path` (ioctl NS_GET_USERNS), as a path to join:
 * true and "/proc/PID/ns/user" in `out` when that owner is not `mine` (the caller's own user
 * namespace, an open fd) and `path` is a /proc/PID/ns/… file whose process's user namespace is
 * the owner; false otherwise, a path that cannot be opened included (joining it fails later,
 * naming it). */
bool ns_owner_userns_path(const char *path, int mine, char *out, size_t outsz);
/* The user namespace owning the namespace at `path` (NS_GET_USERNS): its inode and the uid that
 * created it (NS_GET_OWNER_UID). -1 with errno when path cannot be opened or asked. */
int ns_owner_of(const char *path, unsigned long *owner_ino, unsigned int *owner_uid);
/* sethostname/setdomainname (NULL = leave). */
int ns_set_uts_names(const char *hostname, const char *domainname, struct cm_error **err);

#endif
