/* `codemode doctor` (issue 29): what this machine can do for codemode, one check per line, each
 * with the fix. Every check is a small function over a doctor_env whose /proc, /sys and /etc
 * may be fake trees (tests/unit/test_doctor.c); what cannot be read from files (the Landlock
 * ABI, a real overlay mount in a user namespace) is probed by the caller and passed in. */
#ifndef CM_RUNTIME_DOCTOR_H
#define CM_RUNTIME_DOCTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum doctor_status { DOCTOR_OK, DOCTOR_WARN, DOCTOR_FAIL };

struct doctor_check {
  const char *check; /* "kernel", "user namespaces", … */
  enum doctor_status status;
  char detail[512];
  char fix[512]; /* "" when there is nothing to do */
};

struct doctor_env {
  const char *proc, *sys, *etc; /* "/proc", "/sys", "/etc" on this machine */
  uid_t uid;                    /* who asks: root's needs differ */
  const char *user;             /* its name (subordinate ranges), or NULL */
  const char *state_dir;        /* where containers' state goes (--root) */
  const char *store_dir;        /* the image store */
  const char *xdg_runtime_dir;  /* a systemd user session's socket lives there, or NULL */
  int landlock_abi;             /* probed: 0 when the kernel has none */
  int overlay_userns;           /* probed: 1 mounted, 0 refused, -1 not probed */
  const char *path;             /* $PATH, for criu and newuidmap */
  int criu_check;               /* probed: `criu check` 1 passed, 0 failed, -1 not run */
  const char *criu_detail;      /* its last line of output when it failed */
};

const char *doctor_status_name(enum doctor_status s);

void doctor_kernel(const struct doctor_env *e, struct doctor_check *c);
void doctor_userns(const struct doctor_env *e, struct doctor_check *c);
void doctor_apparmor(const struct doctor_env *e, struct doctor_check *c);
void doctor_cgroup_mode(const struct doctor_env *e, struct doctor_check *c);
void doctor_cgroup_delegation(const struct doctor_env *e, struct doctor_check *c);
void doctor_landlock(const struct doctor_env *e, struct doctor_check *c);
void doctor_seccomp(const struct doctor_env *e, struct doctor_check *c);
void doctor_idmap(const struct doctor_env *e, struct doctor_check *c);
void doctor_overlay_userns(const struct doctor_env *e, struct doctor_check *c);
void doctor_subid(const struct doctor_env *e, struct doctor_check *c);
void doctor_criu(const struct doctor_env *e, struct doctor_check *c);
void doctor_docker(const struct doctor_env *e, struct doctor_check *c);
void doctor_containerd(const struct doctor_env *e, struct doctor_check *c);

/* Every check in order into out (at most max); the count. */
size_t doctor_run(const struct doctor_env *e, struct doctor_check *out, size_t max);

/* Probes of the real machine for doctor_env: an overlay mounted in a new user and mount
 * namespace by a child (1 mounted, 0 refused). */
int doctor_probe_overlay_userns(void);
/* `criu check` as root (1 passed, 0 failed with its last line in detail, -1 not run). */
int doctor_probe_criu(const char *path, char *detail, size_t size);

/* The name of a runtime in Docker's daemon.json (at path) that runs codemode under the mcp
 * profile (a path named codemode-mcp, or runtimeArgs with --profile=mcp): true and the name. */
bool doctor_docker_mcp_runtime(const char *path, char *name, size_t size);

/* kernel "6.18.0-1-amd64" → 6, 18; false when it does not parse. */
bool doctor_kernel_version(const char *release, int *major, int *minor);

#endif
