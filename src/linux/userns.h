/* User namespaces: who creates one, and how its id maps are written.
 *
 * Three ways a container gets its user namespace (runtime/userns_setup.c decides which):
 * - the config's own mappings, written by a root runtime (runc's way);
 * - rootless: the caller is not root. The caller's uid and gid become the container's root; with
 *   subordinate ranges in /etc/subuid and /etc/subgid the setuid helpers newuidmap/newgidmap
 *   (Debian's `uidmap`) map the rest, as podman does. A single mapping of one's own id needs no
 *   helper, but then setgroups(2) must be denied first (the kernel's rule for unprivileged maps);
 * - under the mcp profiles, as root: a host range allocated per container, and the namespace is
 *   created by a process that has already become the range's first uid. That order matters: the
 *   kernel charges per-uid counts (inotify instances, mqueue bytes, RLIMIT_NPROC, keys) at every
 *   level up to the namespace's creator, so a namespace created by root would still spend host
 *   root's budgets (measured, DESIGN.md §7).
 * The runtime writes the maps from outside (or runs the helpers) while the child waits. */
#ifndef CM_LINUX_USERNS_H
#define CM_LINUX_USERNS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "spec/spec.h"
#include "util/error.h"

struct userns_plan {
  bool create;          /* a new user namespace (linux.namespaces lists "user" without a path) */
  bool become_creator;  /* the child becomes creator_uid/gid on the host before unshare */
  uid_t creator_uid;
  gid_t creator_gid;
  bool helpers;         /* newuidmap/newgidmap write the maps (a non-root runtime, several ranges) */
  bool deny_setgroups;  /* a non-root runtime writes a single gid mapping itself */
  /* A non-root runtime: the child is dumpable while its maps are written (a non-dumpable
   * process's /proc files belong to host root, and newuidmap checks the owner). */
  bool dumpable_while_mapping;
};

/* /etc/subuid, /etc/subgid ("name:start:count" or "uid:start:count" per line). */
struct subid_range {
  uint32_t start, count;
};
/* Ranges of `name` (or of the numeric `id`) in `file`, at most `max`; the count found (0 when the
 * file is missing or has none), -1 with err on a read error. */
int subid_ranges(const char *file, const char *name, uint32_t id, struct subid_range *out, size_t max,
                 struct cm_error **err);
/* The newuidmap/newgidmap binaries, or NULL when not installed (looked up in the usual places). */
const char *userns_helper_path(const char *name);

/* Ubuntu 24.04+: AppArmor lets an unconfined process create a user namespace only without any
 * capability in it (kernel.apparmor_restrict_unprivileged_userns=1), which a rootless container
 * cannot work with. -1 with err (the exact fix) when that applies to us: the sysctl is on and we
 * run unconfined, i.e. without the AppArmor profile codemode ships (contrib/apparmor). */
int userns_apparmor_check(struct cm_error **err);
/* The same with the sysctl and label files given (tests/unit/test_linux_userns.c). */
int userns_apparmor_check_at(const char *knob, const char *label, const char *label_old, struct cm_error **err);

/* Child side, first thing (before /proc/self writes such as oom_score_adj, which a non-root
 * process may make only to its own, dumpable /proc files): dumpable if the plan says so. */
void userns_child_begin(const struct userns_plan *p);
/* Child side, before the runtime writes the maps: become the creator (a root runtime's
 * allocated range), unshare(CLONE_NEWUSER). */
int userns_child_create(const struct userns_plan *p, struct cm_error **err);
/* Child side, once mapped: non-dumpable again (CVE-2019-5736: until its execve, a child is a
 * copy of the runtime; the container must not open its /proc/PID/exe). */
void userns_child_mapped(const struct userns_plan *p);

/* Runtime side: write /proc/PID/{setgroups,uid_map,gid_map} for the child, directly or through
 * the helpers, from l->uid_mappings/gid_mappings. Errors name the mapping and the fix. */
int userns_write_maps(pid_t pid, const struct spec_linux *l, const struct userns_plan *p, struct cm_error **err);

/* A user namespace with exactly these mappings, held by an fd (for idmapped mounts whose
 * mounts[].uidMappings differ from the container's): a short-lived child unshares it, we write
 * its maps (root only) and open /proc/PID/ns/user. */
int userns_open_with_mappings(const struct spec_id_mapping *uids, size_t n_uids, const struct spec_id_mapping *gids,
                              size_t n_gids, struct cm_error **err);

#endif
