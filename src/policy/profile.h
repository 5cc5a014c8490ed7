/* Hardening profiles: tighten a loaded config.json, whoever wrote it.
 *
 *   default    the config as given
 *   mcp-audit  mcp's rules exactly; under codemode-run it is learn mode (supervisor/observe.h):
 *              the run's own policy is written (its old log-only filter is retired)
 *   mcp        hardened for untrusted code (an MCP server): see man/codemode-profiles.5
 *   ci         an untrusted CI job: root with a build's capabilities (nested containers, sudo),
 *              all of it inside a user namespace of its own; what faces the host is closed as
 *              under mcp (profile_ci.c)
 *
 * mcp and mcp-audit only ever tighten: every rule keeps the stricter of the config's value and its own.
 * What cannot be tightened without changing what the caller asked for in a way they must know
 * about (joining the host's network or pid namespace, binding a sensitive host path) is refused
 * with an error naming the profile. The changes are reported, one human-readable line each. */
#ifndef CM_POLICY_PROFILE_H
#define CM_POLICY_PROFILE_H

#include <stdbool.h>
#include <stddef.h>

#include "policy/egress.h"
#include "spec/landlock_config.h"
#include "spec/spec.h"
#include "util/error.h"

/* Ordered by strictness: the effective profile is the largest of those asked for. ci is
 * stricter than default (a user namespace always, the host's kernel settings closed) and looser
 * than mcp (capabilities inside that namespace, a writable root). */
enum policy_profile {
  POLICY_PROFILE_DEFAULT = 0,
  POLICY_PROFILE_CI = 1,
  POLICY_PROFILE_MCP_AUDIT = 2,
  POLICY_PROFILE_MCP = 3,
};

/* The annotation a config uses to ask for a profile (it can only make things stricter). */
#define POLICY_PROFILE_ANNOTATION "run.codemode.profile"

int policy_profile_from_name(const char *name, enum policy_profile *out, struct cm_error **err);
const char *policy_profile_name(enum policy_profile p);

/* The stricter of `requested` (NULL: default) and the config's annotation. */
int policy_effective_profile(const struct spec *s, const char *requested, enum policy_profile *out,
                             struct cm_error **err);

struct policy_report {
  char **lines;
  size_t count;
};

struct policy_result {
  enum policy_profile profile;
  /* A second seccomp filter to stack on the config's own (present == false: none). */
  struct spec_seccomp stacked_seccomp;
  /* The profile's Landlock layer (profile_landlock.c), derived from the mounts the config ends up
   * with, plus the deny list; best effort. present == false: none. The config's own
   * run.codemode.landlock layer stays in spec.landlock and is enforced on top. */
  struct spec_landlock landlock;
  struct policy_report report;
  /* The egress allowlist (policy_apply_egress; empty: loopback only). egress_tcp_ports() of it
   * is the list of ports the container may connect to. */
  struct egress_policy egress;
};

/* Tighten s in place. `bundle` (absolute) resolves relative bind sources. */
int policy_apply(struct spec *s, enum policy_profile p, const char *bundle, struct policy_result *out,
                 struct cm_error **err);
void policy_result_free(struct policy_result *r);
/* After policy_apply: the effective egress allowlist of the command line's flags and the
 * run.codemode.net.allow annotation (policy/egress.h) into out->egress, its lines added to the
 * report. An active allowlist needs the container's own network namespace. */
int policy_apply_egress(struct spec *s, const struct egress_flags *flags, struct policy_result *out,
                        struct cm_error **err);

/* exec: a process started later in a container gets no more than its init got. `recorded` is
 * the profile recorded at create (the run.codemode.profile annotation of the container's state;
 * NULL: none), `requested` the exec command's --profile (NULL: none); the stricter applies.
 * Tightens p in place like the profile tightened init's process; out->stacked_seccomp is the
 * filter to stack on the container's own. */
int policy_apply_exec(const char *requested, const char *recorded, struct spec_process *p,
                      struct policy_result *out, struct cm_error **err);

/* update: a container's limits never get looser than its profile's. The stricter of `recorded`
 * (the state's run.codemode.profile; NULL: none) and `requested` (--profile; NULL: none)
 * applies: r is clamped in place (each change one line in *report) or refused with the reason. */
int policy_apply_update(const char *requested, const char *recorded, struct spec_resources *r,
                        struct policy_report *report, struct cm_error **err);
/* codemode-run --ephemeral: the root is made writable after the profile (an overlay over a
 * throwaway tmpfs): root.readonly false, and the Landlock layer's root gets a writable mount's
 * rights. */
void policy_root_made_writable(struct spec *s, struct policy_result *r, const char *why);

/* A mount codemode-run adds itself after the profile (--host's system directories, a :cow
 * overlay made writable): the Landlock layer gives its destination that mount's rights, as if
 * the profile had seen it. Nothing without the profile's layer. */
void policy_landlock_add_mount(struct policy_result *r, const struct spec_mount *m);

/* The egress allowlist (issue 16) passes the TCP ports of its broker here: where the kernel has
 * Landlock ABI >= 4, the profile's layer then allows connect(2) only to `connect` and bind(2)
 * only to `bind` (none: no TCP bind at all; bind NULL: bind not restricted). Without this call no TCP right is handled: the
 * container's network namespace has only lo, and port rules cannot tell loopback from the
 * world, so they would only break a server talking to itself. Needs the profile's layer. */
struct policy_landlock_tcp {
  const uint16_t *connect;
  size_t n_connect;
  const uint16_t *bind;
  size_t n_bind;
};
int policy_landlock_restrict_tcp(struct policy_result *r, const struct policy_landlock_tcp *tcp,
                                 struct cm_error **err);

/* The Landlock layers of a tightened config and their rules, as `policy explain` prints them,
 * with what the kernel's ABI `kernel_abi` (runtime_landlock_abi) makes of them. */
void policy_landlock_describe(const struct spec *s, const struct policy_result *r, int kernel_abi,
                              struct policy_report *out);
void policy_report_free(struct policy_report *r);

/* Report helpers (used by the rule files). */
void policy_report_add(struct policy_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
