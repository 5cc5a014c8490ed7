/* The supervisor: what watches a container for its whole life from outside it. For codemode-run
 * (standalone): the cleanup watcher that survives a SIGKILL of codemode-run, the wait loop with
 * its timeouts and signal forwarding, and the stdio interposition of --idle-timeout. cli/
 * parses the flags into struct run_options and calls supervisor_run_standalone(). */
#ifndef CM_SUPERVISOR_SUPERVISOR_H
#define CM_SUPERVISOR_SUPERVISOR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "policy/egress.h"
#include "policy/profile.h"
#include "runtime/egress.h"
#include "runtime/runtime.h"
#include "spec/spec.h"

/* Exit statuses of codemode-run itself (the container's own pass through; 128+N for a signal). */
#define EXIT_RUN_ERROR 125 /* codemode-run or the runtime failed: the container never ran */
#define EXIT_TIMEOUT 124   /* --timeout or --idle-timeout expired (as timeout(1)) */

/* codemode-run's command line, parsed (src/cli/run_standalone.c). */
struct run_options {
  const char *profile;
  bool explain;
  const char *seccomp;
  const char *rootfs;
  const char *bundle;
  double timeout, idle_timeout, grace;
  bool ephemeral;
  struct spec_strv mounts, env, states; /* --mount, --env, --state */
  struct spec_strv deny; /* --deny: absolute paths in the container (Landlock) */
  const char *cwd;
  int64_t memory;
  int64_t pids;
  double cpus;
  const char *net;
  const char *id;
  const char *root;
  bool debug;
  char **cmd; /* after "--"; NULL: the config's (or the image's Cmd) */
  int n_cmd;
  /* --image REF: the store's read-only rootfs and the image config's process. */
  const char *image;
  const char *entrypoint; /* --entrypoint: replaces the image's Entrypoint (and its Cmd) */
  const char *store;      /* --store DIR: the image store (default /var/lib/codemode…) */
  const char *pull;       /* --pull missing|always|never */
  bool no_init;           /* --no-init: the server itself is pid 1 */
  bool host;              /* --host: the host's system directories, read-only (run_host.c) */
  /* Egress (issue 16): the allowlist, the resolver the broker uses, the audit log. */
  struct egress_flags egress;
  const char *dns_upstream;
  const char *audit_log;
  /* --secret NAME=@FILE | NAME, and --secret-host NAME=HOST[,HEADER] (placeholder mode). */
  struct spec_strv secrets, secret_hosts;
  /* Learn and audit (issue 19, run_observe.c): --learn FILE writes the run's policy, --policy
   * FILE applies one, --audit-summary prints the run's denials; --audit-log (above) records them
   * too (JSON Lines, the broker's schema). */
  const char *learn;
  const char *policy;
  bool audit_summary;
};

/* Everything after the flags: load and tighten the config, create, start, wait, delete.
 * Returns the exit status codemode-run exits with. Errors are printed on stderr. */
int supervisor_run_standalone(struct run_options *o);

/* --- the parts (one file each) --------------------------------------------------------------- */

/* watcher.c: what must be undone at exit, also by the watcher if codemode-run is killed. Each
 * path is sent to the watcher as soon as it exists (one record per pipe write: atomic below
 * PIPE_BUF). */
#define PLAN_PATH_MAX 200
struct cleanup_plan {
  char tmp_bundle[PLAN_PATH_MAX];    /* generated bundle dir (--rootfs), or "" */
  char ephemeral_dir[PLAN_PATH_MAX]; /* mount point dir of the scratch tmpfs (scratch.c), or "" */
  int watcher_fd;                    /* our end of the watcher's pipe, or -1 */
  pid_t watcher_pid;                 /* reaped at the end, so our exit means it is gone too */
  bool ephemeral_kept;               /* ephemeral_dir is scratch.c's per-user mount point:
                                        never removed (nor told to the watcher) */
  bool own_userns;                   /* scratch.c made us a user namespace (not root): the
                                        container's nests in it (scratch_nest_userns) */
};
/* 'B' tmp_bundle, 'E' ephemeral_dir, 'D' done: we cleaned up ourselves. */
void plan_tell(const struct cleanup_plan *plan, char kind, const char *path);
/* Remove the paths of the plan (the generated bundle, the --ephemeral mount point dir). */
void plan_remove_leftovers(const struct cleanup_plan *plan);
/* Fork the watcher before anything exists; returns our end of its pipe, or -1 (errno); *pid its pid. */
int watcher_start(const struct runtime_context *ctx, const char *id, pid_t *pid);

/* scratch.c: one tmpfs in a private mount namespace of ours for what a run throws away; made
 * on first use (plan->ephemeral_dir). scratch_overlay: an overlay of lower with an upper layer
 * there, mounted at merged (size bytes of buffer), under scratch/<name>. scratch_layers: only
 * the upper and work directories under scratch/<name>; scratch_overlay_data: overlay's mount
 * data for those layers (lower refused if overlay would misread it). */
const char *scratch_dir(struct cleanup_plan *plan, struct cm_error **err);
/* After scratch_dir made us a user namespace: the container gets one of its own nested in it
 * (the profile's, or one added here), never ours. */
void scratch_nest_userns(struct spec *s, const struct cleanup_plan *plan);
int scratch_overlay(struct cleanup_plan *plan, const char *name, const char *lower, char *merged, size_t size,
                    struct cm_error **err);
int scratch_layers(struct cleanup_plan *plan, const char *name, char *upper, char *work, size_t size,
                   struct cm_error **err);
int scratch_overlay_data(const char *lower, const char *upper, const char *work, char *data, size_t size,
                         struct cm_error **err);

/* run_spec.c: the command line applied to the config, before the profile tightens it. */
/* A bundle in /tmp with the default config whose rootfs is dir (flag names it in errors). */
int run_spec_generate_bundle(const char *flag, const char *dir, struct cleanup_plan *plan, struct cm_error **err);
/* profile: the one the run gets (a ci job's --state directories, run_spec.c). */
int run_spec_apply_options(struct spec *s, const struct run_options *o, enum policy_profile profile,
                           struct cm_error **err);
/* "~" and "~/x" expanded with $HOME; flag names the option in errors. */
char *run_spec_expand_home(const char *flag, const char *path, struct cm_error **err);
/* Checks before the container is made, on its config after the profile: --cwd exists (it is
 * never created in the bundle's rootfs), the command is not a directory. */
int run_spec_check_process(const struct spec *s, const struct run_options *o, const char *bundle,
                           struct cm_error **err);
/* Prefix err with the --mount or --state flag that made the mounts[N] it names, if any. */
void run_spec_name_mount_flag(const struct spec *s, const struct run_options *o, struct cm_error *err);
/* After the profile: each --mount SRC:DST:cow becomes an overlay mount of SRC with a throwaway
 * upper layer, mounted by the container (in its user namespace under mcp, over idmapped layers). */
int run_spec_cow_mounts(struct spec *s, const struct run_options *o, struct cleanup_plan *plan,
                        struct cm_error **err);
/* --ephemeral: the root becomes an overlay with a throwaway tmpfs upper layer. */
int run_spec_ephemeral_root(struct spec *s, const char *bundle, struct cleanup_plan *plan, struct cm_error **err);
/* Does the container need the runtime's sealed re-exec (linux/selfclone.h)? */
bool run_spec_needs_sealed_copy(const struct run_options *o);

/* run_image.c: --image. The process of s becomes the image's (cmd/entrypoint of o override),
 * s->root_path its rootfs in the store, locked (shared) until run_image_release. */
struct run_image {
  char *rootfs;
  int lock_fd;
};
int run_image_prepare(struct spec *s, const struct run_options *o, struct run_image *img, struct cm_error **err);
void run_image_release(struct run_image *img);

/* run_host.c: --host. run_host_make_root: the empty root (in the scratch tmpfs), made before the
 * bundle that points at it. run_host_root: that root gets the host's system directories and
 * an allow-list of /etc bound read-only, HOME and /tmp empty tmpfs (added after the profile:
 * they are ours, not the caller's). run_host_process: the process env and cwd for it. */
int run_host_make_root(struct cleanup_plan *plan, char *root, size_t size, struct cm_error **err);
int run_host_root(struct spec *s, size_t first_user_mount, bool overlay_root, struct cleanup_plan *plan,
                  struct cm_error **err);
/* npx/npm/uvx/uv in a container that may reach no host: their offline switch set (run_host.c). */
void run_host_process(struct spec *s, const struct run_options *o);
/* --profile ci --host: /etc/containers for the host's podman and buildah inside the job. */
int run_host_ci_containers(struct cleanup_plan *plan, struct cm_error **err);

/* run_init.c: the container's pid 1 is codemode-init (fd 3, a sealed memfd), the server its
 * child; *preserve_fds becomes 1. */
int run_init_prepare(struct spec *s, int *preserve_fds, struct cm_error **err);

/* erofs_hints.c: the server's output, passed through and read for EROFS reports. */
struct erofs_scan {
  char line[4096];
  size_t len;
};
struct erofs_hints {
  int to;              /* where hints go: the caller's stderr */
  const char *profile; /* named in the hint */
  char last_dir[1024];
  struct erofs_scan out, err;
};
/* Copy what is readable from `from` to `to`, hinting at EROFS; false on EOF. */
bool erofs_hints_pump(struct erofs_hints *h, struct erofs_scan *sc, int from, int to);
void erofs_hints_feed(struct erofs_hints *h, struct erofs_scan *sc, const char *buf, size_t n);
/* secrets.c: --secret values read (from a file, or from our environment, which is then wiped)
 * and put into the process env: the value itself, or, for a secret bound to a host, the
 * placeholder CODEMODE_SECRET_<NAME>, the value then going to the broker only. */
struct run_secrets {
  struct egress_secret *bound;
  size_t n_bound;
};
int run_secrets_apply(const struct run_options *o, struct spec *s, struct run_secrets *out, struct cm_error **err);
void run_secrets_free(struct run_secrets *r);

/* run_observe.c: codemode-run's side of --learn, --policy and the audit: the filters create
 * loads, the observer thread beside the wait loop, and what is written at the end. */
struct run_observe;
/* Before the egress policy is built: loads --policy (its hosts become allow rules of o->egress).
 * NULL *out: nothing to do. */
int run_observe_load(struct run_options *o, struct run_observe **out, struct cm_error **err);
/* After the profile: checks the flags against it, tightens pol (the profile's filter then reports
 * its denials to the kernel's audit records), starts the observer. */
int run_observe_prepare(struct run_observe *r, struct run_options *o, struct spec *s,
                        struct policy_result *pol, enum policy_profile profile, const char *bundle,
                        struct cm_error **err);
/* Learning with an egress allowlist: the broker's records (the hosts) reach us. */
void run_observe_egress(struct run_observe *r, struct egress_config *egress);
/* --explain lines. */
void run_observe_explain(const struct run_observe *r, const struct run_options *o);
void run_observe_create_options(struct run_observe *r, struct create_options *co);
/* Once init exists: whose kernel records are ours, the observer's thread started (never before
 * the fork of init), and the listener hand-over for start (NULL: none, or *err set). */
const struct runtime_listener *run_observe_started(struct run_observe *r, pid_t init, struct cm_error **err);
/* The container is gone (rc: its exit): the learned policy written, the summary printed. */
int run_observe_finish(struct run_observe *r, const struct run_options *o, const struct spec *s,
                       struct cm_error **err);
void run_observe_free(struct run_observe *r);

/* wait.c: the wait loop. */
struct supervise_loop {
  pid_t init;
  const struct runtime_context *ctx;
  const char *id;
  int sigfd, timeout_fd, grace_fd, idle_fd;
  double grace, idle;
  /* --idle-timeout only: we sit between the caller's stdio and the container's pipes. */
  int in_from, in_to, out_from, out_to;
  /* The server's stderr: a pipe we read (erofs_hints), -1 when passed as it is. */
  int err_from, err_to;
  /* NULL: no EROFS hints (the root is writable); else stdout and stderr are read for them. */
  struct erofs_hints *hints;
  bool timed_out;
  bool term_sent;
};
int supervise_timer_arm(int fd, double seconds);
/* Until init exits (and its output is drained): signals forwarded, timeouts enforced. Returns
 * init's exit code (128+N for signal N), EXIT_RUN_ERROR if it could not be waited for. */
int supervise_wait(struct supervise_loop *l);
/* The container gets pipes on 0 and 1 (--idle-timeout; with in = false only 1: the EROFS hints)
 * and on 2 (err); the originals are kept above 2. */
int supervise_interpose_stdio(struct supervise_loop *l, bool in, bool err, int saved[3]);
/* Ours again (the container has its own copies of the pipes), so they report EOF when the
 * container's processes are gone. */
void supervise_restore_stdio(int saved[3]);

#endif
