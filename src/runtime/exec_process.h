/* The container side of exec: the code that runs in the processes `exec` forks.
 *
 * stage1 (forked by the runtime, already moved into the container's cgroup): joins every
 * namespace of the container through a pidfd of its init (one setns call, the user namespace
 * first by the kernel's own ordering), then clones the exec'd process with CLONE_PARENT — joining
 * a pid or time namespace only affects children — reports its pid and exits.
 * The process: session, terminal, keyring, rlimits and attributes, LSM label, cwd, seccomp,
 * user, capabilities, no_new_privs, fds, execve. Every failure goes back over the sync socket. */
#ifndef CM_RUNTIME_EXEC_PROCESS_H
#define CM_RUNTIME_EXEC_PROCESS_H

#include "linux/landlock.h"
#include "linux/seccomp.h"
#include "spec/spec.h"

struct exec_child_config {
  const struct spec_process *process; /* complete: flags and fallbacks already merged */
  const char *id;
  int sync_fd;   /* child end of the sync socketpair (CLOEXEC) */
  int pidfd;     /* the container's init, or -1 where the kernel has no pidfd_open */
  int ns_flags;  /* CLONE_NEW* of the namespaces that differ from ours */
  int ns_fds[SPEC_NS_COUNT]; /* without a pidfd: an fd of /proc/PID/ns/TYPE to join, else -1 */
  int preserve_fds;
  bool exec_direct; /* as init_config.exec_direct */
  /* The runtime proxies the pty itself (no --console-socket): ONLCR off before the process runs
   * (linux/console.h), not after the runtime got the master, which would race its first output. */
  bool pty_onlcr_off;
  const struct seccomp_program *seccomp; /* NULL: none */
  /* A policy profile's filter, loaded just before `seccomp` as in init; NULL: none. */
  const struct seccomp_program *seccomp_stacked;
  /* The container's Landlock layers, as kept at create (the same as init's); n_landlock 0: none. */
  const struct spec_landlock *landlock;
  size_t n_landlock;
};

/* Never returns. */
__attribute__((noreturn)) void exec_stage1(const struct exec_child_config *c);

#endif
