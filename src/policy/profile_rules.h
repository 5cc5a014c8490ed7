/* Internal to src/policy: the rule sets behind each profile. */
#ifndef CM_POLICY_PROFILE_RULES_H
#define CM_POLICY_PROFILE_RULES_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/profile.h"

/* mcp and mcp-audit (the same rules: mcp-audit is codemode-run's learn mode on top of mcp). */
int policy_mcp_apply(struct spec *s, bool audit, const char *bundle, struct policy_result *out,
                     struct cm_error **err);

/* The process part of mcp (no_new_privs, no capabilities, oomScoreAdj, RLIMIT_NOFILE/CORE):
 * shared by create and exec. */
void policy_mcp_tighten_process(struct spec_process *p, struct policy_report *r);
/* `update` of an mcp container: clamp the new limits to the profile's, or refuse what has no clamp. */
int policy_mcp_tighten_update(struct spec_resources *res, struct policy_report *r, struct cm_error **err);
/* mcp.json resolved for a bounding set and this machine. */
int policy_mcp_load_seccomp(uint64_t bounding, struct spec_seccomp *out, struct cm_error **err);

/* ci (profile_ci.c): a CI job, root with a build's capabilities inside its own user namespace. */
int policy_ci_apply(struct spec *s, const char *bundle, struct policy_result *out, struct cm_error **err);
void policy_ci_tighten_process(struct spec_process *p, struct policy_report *r);
int policy_ci_tighten_update(struct spec_resources *res, struct policy_report *r, struct cm_error **err);
int policy_ci_load_seccomp(uint64_t bounding, struct spec_seccomp *out, struct cm_error **err);

/* The mounts allow-list (mount_policy.c), shared by mcp and ci: refuse what is not allowed,
 * tighten the rest, and have the child judge every source on its fd (spec.hardening). A tmpfs
 * without a size gets `tmpfs_size` ("size=64m"). */
int policy_tighten_mounts(struct spec *s, const char *bundle, const char *tmpfs_size, struct policy_report *r,
                          struct cm_error **err);

/* The isolation both profiles share (profile_isolation.c). `profile` names the profile in
 * errors; `slots`: the user namespace range's size in IDRANGE_SIZE slots (0: one). */
int policy_tighten_namespaces(struct spec *s, const char *profile, struct policy_report *r, struct cm_error **err);
int policy_tighten_userns(struct spec *s, uint32_t slots, struct policy_report *r, struct cm_error **err);
void policy_sys_bind_to_sysfs(struct spec *s, struct policy_report *r);
/* A mount namespace joined by path that the container's new user namespace cannot own: refused,
 * naming it and its owner (profile_isolation.c). */
int policy_check_joined_mount_ns(const struct spec *s, struct cm_error **err);
bool policy_has_mount_at(const struct spec *s, const char *dest);
/* Add mount option opt unless present, removing its opposite ("rw" for "ro"); flags re-decoded. */
void policy_mount_force_option(struct spec_mount *m, const char *opt, const char *opposite);
void policy_add_tmpfs(struct spec *s, const char *dest, const char *const *options, struct policy_report *r);
void policy_add_paths(struct spec_strv *v, const char *const *paths, const char *what, struct policy_report *r);
int policy_tighten_devices(struct spec_linux *l, struct policy_report *r, struct cm_error **err);
void policy_drop_sysctls(struct spec_linux *l, struct policy_report *r);
void policy_drop_unified(struct spec_resources *res, struct policy_report *r);
/* The names of the capabilities in mask ("CAP_CHOWN CAP_KILL"), malloc'd. */
char *policy_cap_names(uint64_t mask);
/* Clamp an rlimit to at most soft/hard (added when the config has none), one report line. */
void policy_tighten_rlimit(struct spec_process *p, int resource, const char *type, uint64_t soft, uint64_t hard,
                           struct policy_report *r);
/* The Landlock layer (profile_landlock.c): from the mounts under the mcp profiles (`mcp`), or
 * only the deny list (`mcp` false: every access but the denied paths). Nothing when neither. */
void policy_landlock_derive(const struct spec *s, bool mcp, struct spec_landlock *out, struct policy_report *r);

/* Refuse a bind mount whose host source is sensitive (bind_policy.c). `source` as written in
 * the config; `bundle` resolves a relative one. */
int policy_check_bind_source(const char *source, const char *bundle, struct cm_error **err);
/* The same for the lower layer of a --mount SRC:DST:cow (never mounted writable): a SRC inside
 * the invoking user's own home (its passwd entry, not $HOME) passes where that home is a host
 * system tree (/root: root's ~/.npm), still refused when it holds or is credentials. */
int policy_check_cow_source(const char *source, const char *bundle, struct cm_error **err);

#endif
