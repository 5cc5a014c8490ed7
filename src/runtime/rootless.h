/* What a caller that is not root needs that root does not (beyond the user namespace, which is
 * runtime/userns_setup.h): where its state lives and, honestly, what its cgroups can be.
 *
 * State: $XDG_RUNTIME_DIR/codemode (as runc and crun), else /run/user/UID/codemode when that is
 * ours, else ~/.local/state/codemode/run; never a shared /tmp. --root still wins.
 *
 * cgroups, in this order:
 * 1. a systemd user session (its manager's socket in $XDG_RUNTIME_DIR) on cgroup v2: a transient
 *    scope with Delegate=yes through the user's bus (the systemd driver), so limits apply;
 * 2. cgroup v2 where the parent of our own cgroup is delegated to us (writable: cgroup.procs,
 *    cgroup.subtree_control): the container's cgroup is made there by the cgroupfs driver;
 * 3. otherwise none: one warning on stderr naming what is not enforced and how to get it, and
 *    under a hardening profile (the run.codemode.profile annotation) rlimits approximate the
 *    limits asked for: RLIMIT_NPROC (counted in the container's own user namespace, so a fork
 *    bomb stops), RLIMIT_AS and RLIMIT_FSIZE. */
#ifndef CM_RUNTIME_ROOTLESS_H
#define CM_RUNTIME_ROOTLESS_H

#include <limits.h>
#include <stdbool.h>

#include "runtime/runtime.h"
#include "spec/spec.h"
#include "util/error.h"

/* The subordinate ids a ci job run by a normal user maps beside its root: its ids 1-65536 (the
 * most userns_setup_rootless_maps maps). */
#define ROOTLESS_CI_SUBIDS 65536u
/* Under --profile ci run by a normal user: when /etc/subuid, /etc/subgid or the helpers give the
 * job fewer, the warning to print at start (malloc'd: the user, what was found, what then fails,
 * the lines that fix it), else NULL. Said at start because the failure comes late and silent
 * otherwise (EINVAL from setresuid at su or setpriv, rootless_subids.c). */
char *rootless_ci_subid_warning(void);

/* The default --root for a non-root caller (malloc'd), or NULL with err. */
char *rootless_state_root(struct cm_error **err);

enum rootless_cgroup_kind {
  ROOTLESS_CGROUP_SYSTEMD,   /* a scope of the user's systemd manager */
  ROOTLESS_CGROUP_DELEGATED, /* cgroupfs under a delegated cgroup v2 subtree: `path` */
  ROOTLESS_CGROUP_NONE,      /* `reason` says why */
};
struct rootless_cgroup {
  enum rootless_cgroup_kind kind;
  char path[PATH_MAX]; /* DELEGATED: the cgroupsPath to use */
  char reason[512];    /* NONE: why; otherwise where */
};
/* The choice for container `id` run by this (non-root) process. Explicit requests (--systemd-cgroup,
 * a cgroupsPath) that cannot be met are errors, not a silent fallback. */
int rootless_cgroup_choose(const struct runtime_context *ctx, const struct spec *s, const char *id,
                           struct rootless_cgroup *out, struct cm_error **err);
/* One line for `policy explain` and the warning ("cgroups: …"). */
void rootless_cgroup_describe(const struct rootless_cgroup *c, const struct spec *s, char *buf, size_t size);
/* The `policy explain` line for a non-root caller ("cgroups: …"), into buf; 0, or -1 with err. */
int rootless_cgroup_explain(const struct runtime_context *ctx, const struct spec *s, const char *id, char *buf,
                            size_t size, struct cm_error **err);
/* The choice applied to a create: the manager to use (in *ctx_out) and s->linux_.cgroups_path;
 * for NONE, the warning and (under a profile) the rlimits added to s->process. */
int rootless_cgroup_apply(const struct runtime_context *ctx, struct spec *s, const char *id,
                          struct runtime_context *ctx_out, struct cm_error **err);

#endif
