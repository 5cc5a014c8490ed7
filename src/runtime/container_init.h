/* The container side of create: the code that runs in the processes the runtime forks.
 *
 * stage1 (forked by the runtime): joins the namespaces given by path, creates the user
 * namespace (the runtime writes its id maps) and the other new namespaces, then clones the
 * container init with CLONE_PARENT (so init is the runtime's own child, pid 1 in a new pid
 * namespace) and exits.
 * init: builds the root filesystem, runs the in-container hooks, sets up the console,
 * reports READY, waits on exec.fifo for `start`, then drops privileges and execs. */
#ifndef CM_RUNTIME_CONTAINER_INIT_H
#define CM_RUNTIME_CONTAINER_INIT_H

#include <stdbool.h>
#include "linux/landlock.h"
#include "linux/rootfs.h"
#include "linux/seccomp.h"
#include "linux/userns.h"
#include "spec/spec.h"

struct init_config {
  const struct spec *spec;
  const char *id;
  const char *bundle; /* absolute */
  const char *rootfs; /* absolute */
  int sync_fd;        /* child end of the sync socketpair */
  bool cgroup_done;   /* direct init born in its final cgroup: no SYNC_CGROUP_JOINED comes */
  int fifo_fd;        /* exec.fifo, opened O_RDWR: a read blocks until `start` writes; -1 with
                       * start_at_once: SYNC_START arrives on sync_fd instead */
  int preserve_fds; /* counting listen_fds */
  int listen_fds;   /* systemd socket activation: fds 3.. are those (LISTEN_FDS) */
  bool no_pivot;
  bool no_new_keyring;
  /* The runtime runs from its sealed copy (linux/selfclone.h): exec the program directly.
   * Otherwise through the exec trampoline (linux/exec_trampoline.h). */
  bool exec_direct;
  /* The runtime brings lo up in our new network namespace while we build the rootfs. */
  bool loopback_by_runtime;
  const struct seccomp_program *seccomp; /* NULL: none */
  /* The policy profile's filter, loaded just before `seccomp` (which may deny seccomp(2)
   * itself); NULL: none. */
  const struct seccomp_program *seccomp_stacked;
  /* codemode-run's learned policy (a plain filter) and the supervisor's listener filter
   * (linux/seccomp_listener.h), loaded after the others; NULL: none. */
  const struct seccomp_program *seccomp_policy;
  const struct seccomp_program *seccomp_listener;
  /* Landlock layers (linux/landlock.h), checked for this kernel: made before READY, enforced
   * just before the filters; n_landlock 0: none. */
  const struct spec_landlock *landlock;
  size_t n_landlock;
  /* An egress allowlist is active: make the broker's sockets (linux/egress_sockets.h) for these
   * TCP ports (the proxies' and the transparent ones) and send them over sync_fd first thing.
   * The same list is what the container may connect to (Landlock, issue 18). n = 0: none. */
  const uint16_t *egress_tcp_ports;
  size_t n_egress_tcp_ports;
  /* Bind sources opened by stage1 before the user namespace (rootfs_open_bind_sources); NULL. */
  int *bind_fds;
  /* How stage1 creates the user namespace (linux/userns.h), when the config asks for one. */
  const struct userns_plan *userns;
  /* The runtime sends detached mounts for the rootfs and binds (runtime/userns_setup.h). */
  bool premounts;
  /* Filled by stage1 with what it received, for init. */
  const struct rootfs_premounts *pre;
  /* The container's cgroup is delegated to its root (cgroup_delegate): stage1, once it has made
   * the cgroup namespace (rooted at the delegated cgroup), writes itself into the leaf through
   * this fd (the leaf's cgroup.procs, opened by the runtime) and closes it; -1 otherwise. */
  int cgroup_leaf_fd;
  bool cgroup_delegated;
};

/* spec.hardening.nested_containers: the containers.conf drop-in for podman and buildah in the
 * container (runtime/containers_dropin.c), after pivot_root; cgroups enabled when delegated. */
int containers_dropin_write(bool cgroups, struct cm_error **err);

/* Shared with exec (runtime/exec_process.c), both run inside the container's root:
 * args[0] resolved against the process's PATH (a clear error when missing), and the env with
 * HOME taken from the container's /etc/passwd when the process has none. */
char *process_find_executable(const struct spec_process *p, struct cm_error **err);
char **process_env_with_home(const struct spec_process *p);
/* The early load (a filter with NOTIFY rules, loaded before the last steps): enforce ll, load
 * stacked (NULL: none) then prog, hand prog's listener to the runtime over sync_fd and wait until
 * it is delivered. Any failure is sent over sync_fd and ends the process. */
void process_load_seccomp_early(int sync_fd, struct landlock_prepared *ll, const struct seccomp_program *stacked,
                                const struct seccomp_program *prog);

/* Never returns. */
__attribute__((noreturn)) void container_stage1(const struct init_config *c);

/* Can the runtime clone init itself with every new namespace, skipping stage1? Only when
 * nothing must happen between fork and the namespaces' creation: no namespace joined by path,
 * no user namespace (its id maps are written from outside before the others are made) and no
 * new time namespace (offsets must be written before any process lives in it). */
bool container_init_direct_possible(const struct spec *s);
/* The clone flags for that clone: every new namespace but the cgroup one, which init creates
 * itself once the runtime has placed it in the container's cgroup. */
int container_init_direct_clone_flags(const struct spec *s);
/* Init cloned directly by the runtime with those flags. Never returns. */
__attribute__((noreturn)) void container_init_direct(const struct init_config *c);

#endif
