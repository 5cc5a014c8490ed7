/* What the CLI asks of the runtime: one call per lifecycle operation. */
#ifndef CM_RUNTIME_RUNTIME_H
#define CM_RUNTIME_RUNTIME_H

#include "cgroup/cgroup.h"
#include "linux/seccomp.h"
#include "spec/landlock_config.h"
#include "spec/spec.h"
#include "util/error.h"
#include <stdbool.h>
#include <sys/types.h>

struct egress_config;

struct runtime_context {
  const char *root; /* state root, default /run/codemode (runtime/rootless.h when not root) */
  enum cgroup_manager cgroup_manager;
  /* Given on the command line (--systemd-cgroup, --cgroup-manager): a non-root caller's cgroup
   * choice (runtime/rootless.h) is then not automatic. */
  bool cgroup_manager_explicit;
};

struct create_options {
  const char *id;
  const char *bundle;      /* default "." */
  const char *config_path; /* default <bundle>/config.json */
  const char *pid_file;
  const char *console_socket;
  bool no_pivot;
  bool no_new_keyring;
  int preserve_fds;
  /* Set by `run`: the runtime stays the parent of init and keeps the pty master. */
  bool foreground;
  /* Set by `run`: no exec.fifo and no separate `start`; init waits for SYNC_START on the sync
   * socket, which create hands back in created_container.start_sock (runtime_start_at_once). */
  bool start_at_once;
  /* A spec already loaded (and possibly tightened by policy/); NULL: load config_path. */
  struct spec *spec;
  /* A second seccomp filter stacked on linux.seccomp (a policy profile's); NULL: none. Both are
   * loaded, so on every syscall the stricter answer wins. */
  const struct spec_seccomp *stacked_seccomp;
  /* A policy profile's Landlock layer (best effort: what the kernel lacks is dropped), enforced
   * with the config's own run.codemode.landlock layer (refused where the kernel lacks a right);
   * NULL: none. */
  const struct spec_landlock *landlock;
  /* codemode-run --policy (policy/learned_policy.h): the learned seccomp filter, loaded after
   * every other, and the learned Landlock layer, one more layer (best effort, as the profile's);
   * NULL: none. Both only ever add denials. */
  const struct spec_seccomp *policy_seccomp;
  const struct spec_landlock *policy_landlock;
  /* A compiled filter whose listener is the caller's supervisor (linux/seccomp_listener.h),
   * loaded last; init hands its listener over during runtime_start_at_once, so it needs
   * start_at_once and a config without SCMP_ACT_NOTIFY rules. NULL: none. */
  const struct seccomp_program *listener_filter;
  /* The caller has already made things a re-exec would leak or repeat (codemode-run), so create
   * must not re-exec from the sealed copy (linux/selfclone.h): the caller decided that first. */
  bool no_reexec;
  /* An egress allowlist (runtime/egress.h): a broker serves the container's network namespace.
   * NULL: loopback only. */
  const struct egress_config *egress;
};

/* The result of a create the caller keeps for run. */
struct created_container {
  pid_t pid;
  int console_master; /* -1 unless foreground with terminal: true */
  int start_sock;     /* -1 unless start_at_once: the sync socket init waits on */
};

/* What a hardening profile leaves for create time, because it looks at the system and policy/
 * only rewrites the config: a network namespace joined by path under "loopback only" is
 * replaced by a new one when it holds other interfaces (linux/net.c). Before runtime_create or
 * runtime_run, on the spec they get. */
int runtime_apply_profile_at_create(struct spec *s, struct cm_error **err);
int runtime_create(const struct runtime_context *ctx, const struct create_options *opts,
                   struct created_container *out, struct cm_error **err);
int runtime_start(const struct runtime_context *ctx, const char *id, struct cm_error **err);
/* `start` for a container created with start_at_once: tell init to go, wait for its execve (the
 * socket closes then), run the poststart hooks of spec. Closes start_sock. */
struct runtime_listener {
  pid_t init;
  /* Our copy of the listener fd of create_options.listener_filter (attach owns it), called
   * before init goes on: every syscall it makes next may wait for whoever reads the fd. */
  int (*attach)(void *arg, int fd, struct cm_error **err);
  void *arg;
};
/* listener: NULL unless the container was created with a listener_filter. */
int runtime_start_at_once(const struct runtime_context *ctx, const char *id, const struct spec *spec,
                          int start_sock, const struct runtime_listener *listener, struct cm_error **err);
/* Foreground run: create + start, forward signals, proxy the terminal, wait, delete unless keep.
 * *exit_status is the container's exit code or 128+signal. */
int runtime_run(const struct runtime_context *ctx, const struct create_options *opts, bool detach, bool keep,
                int *exit_status, struct cm_error **err);
int runtime_kill(const struct runtime_context *ctx, const char *id, int signo, bool all, struct cm_error **err);
int runtime_delete(const struct runtime_context *ctx, const char *id, bool force, struct cm_error **err);
/* The same for a caller that still holds the container's config (`run`): its poststop hooks are
 * taken from spec instead of being parsed again from the state directory's copy. */
int runtime_delete_with_spec(const struct runtime_context *ctx, const char *id, bool force, const struct spec *spec,
                             struct cm_error **err);

/* exec: a new process in a running container (runc's `exec`). */
struct exec_options {
  const char *id;
  /* --process FILE: the whole process (process.json). Unset fields fall back to the container's
   * (capabilities, rlimits, LSM labels, oomScoreAdj); the process flags below are then ignored. */
  const char *process_path;
  /* Otherwise the container's own process, overridden by: */
  char **args; /* COMMAND ARG…, required without --process */
  size_t n_args;
  bool tty;
  const char *cwd;
  char **env; /* K=V appended (a later one wins) */
  size_t n_env;
  bool has_user, has_gid;
  uint32_t uid, gid;
  uint32_t *additional_gids;
  size_t n_additional_gids;
  char **caps; /* "CAP_X" added to bounding, effective, permitted and ambient */
  size_t n_caps;
  bool no_new_privs;
  const char *apparmor;
  const char *process_label;
  /* Always honoured: */
  bool detach;
  bool ignore_paused;
  /* --cgroup: run in an existing sub-cgroup of the container's (cgroup_open_sub's specs). */
  char *const *sub_cgroups;
  size_t n_sub_cgroups;
  const char *pid_file;
  const char *console_socket;
  int preserve_fds;
  /* Policy hardening (cli/ passes policy/'s): called under the container's lock with the profile
   * recorded in its state (the run.codemode.profile annotation; NULL: none); tightens p in place
   * and may point *stacked at a filter (owned by arg, kept until runtime_exec returns) to stack
   * on the container's own. A container with a recorded profile and no hook is refused: an exec
   * must never get more than init got. */
  int (*harden)(void *arg, const char *recorded_profile, struct spec_process *p,
                const struct spec_seccomp **stacked, struct cm_error **err);
  void *harden_arg;
};
/* Without detach: waits for the process, forwarding signals (and proxying its terminal when it
 * has one and no console socket was given); *exit_status is its code or 128+signal. With
 * detach: returns once the process runs and the pid file is written; *exit_status = 0. */
int runtime_exec(const struct runtime_context *ctx, const struct exec_options *opts, int *exit_status,
                 struct cm_error **err);

/* Operations on a live container's cgroup (runtime/control.c). */
int runtime_pause(const struct runtime_context *ctx, const char *id, struct cm_error **err);
int runtime_resume(const struct runtime_context *ctx, const char *id, struct cm_error **err);
/* Host pids of every process in the container's cgroup (malloc'd). */
int runtime_pids(const struct runtime_context *ctx, const char *id, pid_t **pids, size_t *n, struct cm_error **err);
/* `update`. harden (cli/ passes policy/'s; NULL: none) is called under the container's lock with
 * the profile recorded in its state, and clamps r in place or refuses; a container with a
 * recorded profile and no hook is refused, as for exec: an update must never loosen it. */
typedef int (*runtime_update_harden)(void *arg, const char *recorded_profile, struct spec_resources *r,
                                     struct cm_error **err);
int runtime_update(const struct runtime_context *ctx, const char *id, struct spec_resources *r,
                   runtime_update_harden harden, void *harden_arg, struct cm_error **err);

/* The OCI state document of one container (JSON, malloc'd). */
char *runtime_state_json(const struct runtime_context *ctx, const char *id, struct cm_error **err);

struct container_summary {
  char *id;
  pid_t pid;
  char *status;
  char *bundle;
  char *rootfs; /* absolute, as in `state` (runc lists it too) */
  char *created;
  char *owner;
};
int runtime_list(const struct runtime_context *ctx, struct container_summary **out, size_t *n,
                 struct cm_error **err);
void container_summaries_free(struct container_summary *s, size_t n);

/* The running kernel's Landlock ABI (0: none), for `features` and `policy explain`. */
int runtime_landlock_abi(void);

/* Signal names and numbers: "9", "KILL", "SIGKILL", "sigkill". */
int signal_parse(const char *s, struct cm_error **err);

#endif
