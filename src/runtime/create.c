/* create: the runtime side. Validates, makes the state dir and cgroup, forks stage1 and drives
 * it over the sync socket until init reports READY, then records the state and the pid file.
 * Any failure tears down everything made so far: no state dir, cgroup or process survives. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <yajl/yajl_gen.h>

#include "cgroup/cgroup.h"
#include "linux/console.h"
#include "linux/namespaces.h"
#include "linux/seccomp.h"
#include "linux/security_attrs.h"
#include "linux/clone_child.h"
#include "linux/net.h"
#include "linux/rootfs.h"
#include "linux/selfclone.h"
#include "linux/sysctl.h"
#include "runtime/container_init.h"
#include "runtime/egress.h"
#include "runtime/hooks.h"
#include "runtime/notify_socket.h"
#include "runtime/rootless.h"
#include "runtime/runtime.h"
#include "runtime/seccomp_listener.h"
#include "runtime/state.h"
#include "runtime/userns_setup.h"
#include "util/cleanup.h"
#include "util/log.h"
#include "util/sync.h"
#include "util/host_root.h"
#include "linux/inherited_mounts.h"

static bool seccomp_has_notify(const struct spec_seccomp *sc) {
  for (size_t i = 0; i < sc->n_syscalls; i++)
    if (sc->syscalls[i].action == SPEC_SECCOMP_NOTIFY && sc->syscalls[i].names.count)
      return true;
  return false;
}

/* Checks that need the whole config and the command line, before anything is made. */
static int validate_for_create(const struct spec *s, const struct create_options *o, struct cm_error **err) {
  if (s->process == NULL)
    return cm_error_set(err, 0, "config.json: .process: missing");
  /* Asked-for labels are never dropped silently: without SELinux, refuse. */
  if (s->linux_.mount_label && *s->linux_.mount_label && !lsm_selinux_enabled())
    return cm_error_set(err, 0, "config.json: .linux.mountLabel: SELinux is not enabled on this host");
  if (o->console_socket && !s->process->terminal)
    return cm_error_set(err, 0, "--console-socket given but config.json's .process.terminal is false");
  if (s->process->terminal && !o->foreground && o->console_socket == NULL)
    return cm_error_set(err, 0, "config.json: .process.terminal is true but --console-socket was not given");
  /* Without a mount namespace the runtime's is inherited (the spec) and init only chroots into
   * the rootfs (runc): whatever would need a mount there would be made in the runtime's own
   * namespace, the host's. runc refuses masked and readonly paths the same way (its wording);
   * it would make the mounts on the host, which we never do. */
  if (!s->linux_.namespaces[SPEC_NS_MOUNT].present) {
    const struct spec_linux *l = &s->linux_;
    const char *field = s->n_mounts ? ".mounts" : l->n_devices ? ".linux.devices" : s->root_readonly ? ".root.readonly" : NULL;
    if (l->masked_paths.count || l->readonly_paths.count)
      return cm_error_set(err, 0,
                          "config.json: .linux.maskedPaths/.linux.readonlyPaths: unable to restrict sys entries "
                          "without a private mount namespace (add {\"type\": \"mount\"} to .linux.namespaces)");
    /* The system's own namespace is the host's: never. A private one of the caller's is what the
     * spec says the container inherits, and its mounts are made there (runc). */
    if (field && mntns_is_pid1s())
      return cm_error_set(err, 0,
                          "config.json: %s: needs a mount namespace in .linux.namespaces: without one the mounts "
                          "would be made in the runtime's mount namespace, which is the host's initial one (pid "
                          "1's); add {\"type\": \"mount\"}, or run codemode in a mount namespace of its own "
                          "(unshare -m) to have them made there",
                          field);
  }
  /* A uts namespace joined by path counts: the names are set there (runc). */
  if ((s->hostname || s->domainname) && !s->linux_.namespaces[SPEC_NS_UTS].present)
    return cm_error_set(err, 0, "config.json: .%s: needs a uts namespace in .linux.namespaces",
                        s->hostname ? "hostname" : "domainname");
  if (spec_ns_is_new(s, SPEC_NS_USER) && !s->linux_.userns_auto &&
      (s->linux_.n_uid_mappings == 0 || s->linux_.n_gid_mappings == 0))
    return cm_error_set(err, 0, "config.json: .linux.uidMappings: a new user namespace needs uid and gid mappings");
  if (!s->linux_.namespaces[SPEC_NS_USER].present && (s->linux_.n_uid_mappings || s->linux_.n_gid_mappings))
    return cm_error_set(err, 0, "config.json: .linux.uidMappings: mappings need a user namespace in .linux.namespaces");
  if ((s->linux_.time_monotonic.present || s->linux_.time_boottime.present) && !spec_ns_is_new(s, SPEC_NS_TIME))
    return cm_error_set(err, 0, "config.json: .linux.timeOffsets: needs a new time namespace");
  if (s->linux_.sysctl.count && sysctl_validate(s, err) < 0)
    return -1;
  /* One listener per filter stack, and the supervisor's is handed over after `start`. */
  bool supervised = o->listener_filter || o->policy_seccomp;
  if (supervised && s->linux_.seccomp.present && seccomp_has_notify(&s->linux_.seccomp))
    return cm_error_set(
        err, 0,
        "config.json: .linux.seccomp: SCMP_ACT_NOTIFY rules cannot be combined with a learned "
        "policy or learn mode (a filter stack has one listener; remove listenerPath)");
  if (supervised && !o->start_at_once)
    return cm_error_set(err, 0, "internal error: a supervised seccomp filter needs start_at_once");
  /* Those filters are the last of the last steps, after no_new_privs; startContainer hooks run
   * through the same steps and would load them again, in a process that is not init. */
  if (supervised && !s->process->no_new_privileges)
    return cm_error_set(err, 0, "internal error: a supervised seccomp filter needs process.noNewPrivileges");
  if (supervised && s->hooks[SPEC_HOOK_START_CONTAINER].count)
    return cm_error_set(err, 0, "config.json: .hooks.startContainer: cannot run with a learned policy or learn mode "
                                "(they would run under the supervisor's filter too)");
  return 0;
}

static int resolve_paths(const struct spec *s, const struct create_options *o, char **bundle_out,
                         char **rootfs_out, struct cm_error **err) {
  char buf[PATH_MAX];
  const char *bundle = o->bundle ? o->bundle : ".";
  if (realpath(bundle, buf) == NULL)
    return cm_error_set(err, errno, "--bundle %s", bundle);
  *bundle_out = strdup(buf);
  cleanup_free char *joined = NULL;
  const char *root = s->root_path;
  if (root[0] != '/') {
    if (asprintf(&joined, "%s/%s", *bundle_out, root) < 0)
      abort();
    root = joined;
  }
  struct stat st;
  if (realpath(root, buf) == NULL)
    return cm_error_set(err, errno, "config.json: .root.path: %s", root);
  if (stat(buf, &st) < 0 || !S_ISDIR(st.st_mode))
    return cm_error_set(err, ENOTDIR, "config.json: .root.path: %s", root);
  *rootfs_out = strdup(buf);
  return 0;
}

/* exec, poststart and poststop read the config as it was at create, whatever happens to the
 * bundle afterwards. */
static int keep_config(int dirfd, const struct create_options *o, const char *bundle, struct cm_error **err) {
  cleanup_free char *dflt = NULL;
  const char *src = o->config_path;
  if (src == NULL) {
    if (asprintf(&dflt, "%s/config.json", bundle) < 0)
      abort();
    src = dflt;
  }
  cleanup_close int in = open(src, O_RDONLY | O_CLOEXEC);
  if (in < 0)
    return cm_error_set(err, errno, "keep a copy of %s", src);
  struct stat st;
  if (fstat(in, &st) < 0)
    return cm_error_set(err, errno, "keep a copy of %s", src);
  cleanup_free char *buf = malloc((size_t)st.st_size + 1);
  ssize_t n = read(in, buf, (size_t)st.st_size);
  if (n < 0)
    return cm_error_set(err, errno, "keep a copy of %s", src);
  return write_file_atomic(dirfd, "config.json", buf, (size_t)n, 0600, err);
}

struct create_run {
  const struct runtime_context *ctx;
  /* The Landlock layers init enforces, kept for exec (landlock.json); landlock_abi: enforced at. */
  const struct spec_landlock *landlock;
  size_t n_landlock;
  int landlock_abi;
  const struct create_options *opts;
  const struct spec *spec;
  struct container_state st;
  struct cgroup *cgroup;
  int dirfd, sock, fifo_fd;
  struct state_progress progress; /* creating.json, until it becomes state.json */
  bool cgroup_done;               /* init was born in its whole cgroup (init_config.cgroup_done) */
  bool loopback_by_runtime;       /* init_config.loopback_by_runtime */
  pid_t stage1, init;
  int console_master;
  struct egress_broker broker; /* pid -1: no allowlist, or not started yet */
  /* Where the broker is to be born (the cgroup init was cloned into), kept from init's clone
   * until the broker starts: start_broker. */
  int broker_cg_fd, broker_v1[16], n_broker_v1;
  struct userns_setup userns;
  char *state_dir; /* absolute */
};

/* The host id container id 0 maps to; false when it is not mapped. */
static bool root_host_id(const struct spec_id_mapping *m, size_t n, uint32_t *out) {
  for (size_t i = 0; i < n; i++)
    if (m[i].container_id == 0 && m[i].size > 0) {
      *out = m[i].host_id;
      return true;
    }
  return false;
}

/* The ci profile (spec.hardening.nested_containers): the container's cgroup v2 subtree given to
 * its root (cgroup/delegate.c), whose host ids its own range holds. Only a root runtime can give
 * a directory to another uid, and the job's view is rooted at the cgroup only through the cgroup
 * namespace stage1 makes there. 1 delegated, 0 not, -1 on error. */
static int delegate_cgroup(struct create_run *r, struct cm_error **err) {
  const struct spec *s = r->spec;
  uint32_t uid, gid;
  if (!s->hardening.nested_containers || r->cgroup == NULL || !cm_host_root() || !spec_ns_is_new(s, SPEC_NS_USER) ||
      !spec_ns_is_new(s, SPEC_NS_CGROUP) ||
      !root_host_id(s->linux_.uid_mappings, s->linux_.n_uid_mappings, &uid) ||
      !root_host_id(s->linux_.gid_mappings, s->linux_.n_gid_mappings, &gid) || uid == 0 || gid == 0)
    return 0;
  return cgroup_delegate(r->cgroup, (uid_t)uid, (gid_t)gid, err);
}

/* CODEMODE_TEST_PAUSE_AT=<point>: tests/integration/crash_recovery.bats stops create here
 * (SIGSTOP) to SIGKILL it at a known step. Points: state-dir, cgroup, fork, ready, state.
 * It can only stop this process: whoever sets our environment could kill us anyway. */
static void test_pause_at(const char *point) {
  const char *want = getenv("CODEMODE_TEST_PAUSE_AT");
  if (want == NULL || strcmp(want, point) != 0)
    return;
  fprintf(stderr, "codemode: create paused at %s\n", point);
  raise(SIGSTOP);
}

/* creating.json (atomic, like state.json): the cgroup and the pid (with its start time) made so
 * far, so a create killed before state.json exists leaves nothing `delete --force` cannot find. */
static int record_progress(struct create_run *r, pid_t pid, struct cm_error **err) {
  struct container_state early = r->st;
  early.pid = pid;
  early.pid_start_time = pid > 0 ? proc_pid_start_time(pid) : 0;
  if (pid > 0 && pid == r->init)
    r->st.pid_start_time = early.pid_start_time; /* read once: the state keeps it */
  return state_progress_write(r->dirfd, &r->progress, &early, err);
}

static int handle_hooks(struct create_run *r, struct cm_error **err) {
  cleanup_free char *json = state_oci_json(&r->st, "creating");
  /* In the bundle directory, as runc runs them. */
  struct hook_exec how = {.cwd = r->st.bundle};
  if (hooks_run(r->spec->hooks, SPEC_HOOK_PRESTART, json, &how, err) < 0 ||
      hooks_run(r->spec->hooks, SPEC_HOOK_CREATE_RUNTIME, json, &how, err) < 0)
    return -1;
  return sync_send(r->sock, SYNC_HOOKS_DONE, 0, NULL, -1, err);
}

/* exec applies exactly the layers init got (runtime/exec.c): never fewer, never looser. */
static int keep_landlock(const struct create_run *r, struct cm_error **err) {
  if (r->n_landlock == 0)
    return 0;
  cleanup_free char *json = spec_landlock_kept_json(r->landlock, r->n_landlock, r->landlock_abi);
  return write_file_atomic(r->dirfd, "landlock.json", json, strlen(json), 0600, err);
}

/* The Landlock layers for init, checked against this kernel before anything exists: the config's
 * run.codemode.landlock is refused where the kernel lacks a right it names (fail closed); the
 * profile's layer drops what the kernel lacks (best effort), or is skipped without Landlock. */
static int landlock_layers(const struct create_options *o, const struct spec *s, struct spec_landlock out[3],
                           size_t *n, int *abi, struct cm_error **err) {
  *n = 0;
  *abi = 0;
  bool profile = o->landlock && o->landlock->present;
  bool learned = o->policy_landlock && o->policy_landlock->present;
  /* A document whose rights all resolve to nothing ({"abi": 3, "ruleset": [{"scoped":
   * ["abi.all"]}]}: no scope before ABI 6) restricts nothing: no layer. */
  const uint64_t *h = s->landlock ? s->landlock->handled : NULL;
  bool asked = h && s->landlock->present && (h[0] | h[1] | h[2]);
  if (!profile && !asked && !learned)
    return 0;
  *abi = landlock_abi();
  if (asked && spec_landlock_check_abi(s->landlock, *abi, err) < 0)
    return -1;
  if (profile && *abi > 0) {
    spec_landlock_copy(&out[*n], o->landlock);
    spec_landlock_mask_abi(&out[*n], *abi);
    (*n)++;
  } else if (profile) {
    cm_debug("landlock: not available on this kernel: the %s layer is not enforced", o->landlock->source);
  }
  if (asked)
    spec_landlock_copy(&out[(*n)++], s->landlock);
  /* The learned layer is best effort like the profile's: a policy learned on a newer kernel
   * loses the rights this one lacks, and the profile's layer still holds underneath. */
  if (learned && *abi > 0) {
    spec_landlock_copy(&out[*n], o->policy_landlock);
    spec_landlock_mask_abi(&out[*n], *abi);
    (*n)++;
  } else if (learned) {
    cm_warn("landlock: not available on this kernel: the learned policy's file rules are not enforced");
  }
  if (*n)
    cm_debug("landlock: %zu layer(s) enforced at ABI %d", *n, *abi);
  return 0;
}

int runtime_landlock_abi(void) {
  return landlock_abi();
}

/* The state's annotations: the config's, and the ABI the Landlock layers are enforced at. */
static struct spec_kv *annotations_with_landlock(const struct spec *s, int abi, char *abi_text, size_t len,
                                                 struct spec_kv_list *out) {
  snprintf(abi_text, len, "%d", abi);
  struct spec_kv *items = calloc(s->annotations.count + 1, sizeof(*items));
  if (items == NULL)
    abort();
  size_t n = 0;
  for (size_t i = 0; i < s->annotations.count; i++)
    if (strcmp(s->annotations.items[i].key, SPEC_LANDLOCK_ABI_ANNOTATION) != 0)
      items[n++] = s->annotations.items[i];
  items[n++] = (struct spec_kv){(char *)SPEC_LANDLOCK_ABI_ANNOTATION, abi_text};
  *out = (struct spec_kv_list){items, n};
  return items;
}

/* The broker is the container's to pay for: its memory and pids count against the container's
 * limits, so a flood of connections from inside cannot grow it outside them. Moved there unless
 * it was born there; after cgroup_enter of init. */
static int place_broker(struct create_run *r, struct cm_error **err) {
  if (!r->cgroup || r->broker.pid <= 0 || r->broker.in_cgroup || cgroup_add_process(r->cgroup, r->broker.pid, err) == 0)
    return 0;
  /* Rootless, a cgroup made by a systemd user manager may refuse a process from outside its
   * subtree (the move needs write access above both cgroups): the broker's own bounds (man 5
   * codemode-profiles) still hold; said, not hidden. As root it is an error. */
  if (geteuid() == 0)
    return -1;
  fprintf(stderr, "codemode: warning: container %s: the egress broker (pid %d) stays outside the container's cgroup: %s\n",
          r->opts->id, (int)r->broker.pid, (*err)->msg);
  cm_error_freep(err);
  return 0;
}

static void release_broker_cgroup(struct create_run *r) {
  if (r->broker_cg_fd >= 0)
    close(r->broker_cg_fd);
  r->broker_cg_fd = -1;
  for (int i = 0; i < r->n_broker_v1; i++)
    close(r->broker_v1[i]);
  r->n_broker_v1 = 0;
}

/* The broker, started when init sends its first socket: from then on it overlaps init's rootfs
 * work, and never delays what init needs from us first (a user namespace's maps: as a user, a
 * broker started at the clone held stage1 up for its whole spawn). Born in the container's
 * cgroup when init was (no migration); otherwise moved there, before it serves anything: it is
 * the container's to pay for, so a flood of connections from inside cannot grow it outside the
 * container's limits. */
static int start_broker(struct create_run *r, struct cm_error **err) {
  const struct create_options *opts = r->opts;
  struct egress_spawn_cgroup bcg = {.v2_fd = r->broker_cg_fd, .v1_tasks = r->broker_v1, .n_v1 = (size_t)r->n_broker_v1};
  int rc = egress_broker_spawn(opts->egress, opts->id, !opts->foreground, r->broker_cg_fd >= 0 ? &bcg : NULL,
                               &r->broker, err);
  release_broker_cgroup(r);
  if (rc < 0)
    return -1;
  return place_broker(r, err);
}

/* Drive stage1 and init until READY. */
static int drive_child(struct create_run *r, struct cm_error **err) {
  if (!r->cgroup_done && sync_send(r->sock, SYNC_CGROUP_JOINED, 0, NULL, -1, err) < 0)
    return -1;
  /* Idmapped mounts without a user namespace of ours to wait for: right away. */
  if (r->userns.premounts && !r->userns.plan.create &&
      userns_setup_send_mounts(&r->userns, -1, r->spec, r->st.bundle, r->st.rootfs, r->sock, err) < 0)
    return -1;
  /* Init cloned directly (no stage1): we know its pid already (sent right after the clone when
   * init does not wait for its cgroup). */
  if (r->init > 0 && !r->cgroup_done && sync_send(r->sock, SYNC_INIT_PID, r->init, NULL, -1, err) < 0)
    return -1;
  /* While the child sets up its namespaces and mounts (on the other CPU, if there is one): the
   * container's loopback, the cgroup's limits and device filter, all needed only before the
   * user's process runs (init execs it after READY), and the copy of the config that exec and
   * the hooks read later. The loopback first: bringing it up takes the kernel's rtnl lock, which
   * the teardown of an earlier container's network namespace may hold for a grace period;
   * started first, that wait overlaps init's mounts. A failure waits for init's own news: init
   * may have failed first (and exited, which is why we could not enter its namespace), and its
   * error is the one that explains. */
  cleanup_error struct cm_error *loopback_err = NULL;
  if (r->loopback_by_runtime) {
    int lo = net_loopback_up_in(r->init, &loopback_err);
    if (lo == -2) {
      *err = loopback_err;
      loopback_err = NULL;
      return -1;
    }
  }
  if (r->cgroup && cgroup_apply_resources(r->cgroup, &r->spec->linux_, err) < 0)
    return -1;
  if (r->cgroup)
    cm_debug("cgroup: linux.resources applied");
  if (keep_config(r->dirfd, r->opts, r->st.bundle, err) < 0 || keep_landlock(r, err) < 0)
    return -1;
  for (;;) {
    struct sync_msg m;
    int fd = -1;
    int rc = sync_recv(r->sock, &m, &fd, err);
    if (rc < 0)
      return -1;
    if (rc == 1)
      return cm_error_set(err, 0, "container init exited before it was ready");
    switch (m.type) {
    case SYNC_ERROR:
      return cm_error_set(err, (int)m.value, "%s", m.text);
    case SYNC_USERNS_READY:
      if (userns_setup_write_maps(&r->userns, r->stage1, r->spec, err) < 0 ||
          sync_send(r->sock, SYNC_USERNS_MAPPED, 0, NULL, -1, err) < 0)
        return -1;
      /* The namespace exists and is mapped: the idmapped mounts can be made through it. */
      if (userns_setup_send_mounts(&r->userns, r->stage1, r->spec, r->st.bundle, r->st.rootfs, r->sock, err) < 0)
        return -1;
      break;
    case SYNC_MOUNT_SOURCES: {
      /* stage1's user namespace may not reach them: opened with our credentials in its new
       * mount namespace (linux/rootfs.h). */
      cleanup_free int *fds = calloc(r->spec->n_mounts ? r->spec->n_mounts : 1, sizeof(int));
      if (fds == NULL)
        abort();
      rc = rootfs_open_bind_sources_in(r->stage1, r->spec, r->st.bundle, fds, err);
      for (size_t i = 0; i < r->spec->n_mounts; i++) {
        if (fds[i] < 0)
          continue;
        if (rc == 0 && sync_send(r->sock, SYNC_MOUNT_SOURCE, (int64_t)i, NULL, fds[i], err) < 0)
          rc = -1;
        close(fds[i]);
      }
      if (rc < 0 || sync_send(r->sock, SYNC_MOUNT_SOURCES, 0, NULL, -1, err) < 0)
        return -1;
      break;
    }
    case SYNC_INIT_PID:
      r->init = (pid_t)m.value;
      waitpid(r->stage1, NULL, 0);
      r->stage1 = 0;
      /* stage1 moved itself into a delegated cgroup's leaf before it cloned init: the cgroup
       * holds no process now, and can hand its controllers down. */
      if (r->cgroup && cgroup_delegate_controllers(r->cgroup, err) < 0)
        return -1;
      r->st.pid = r->init;
      if (record_progress(r, r->init, err) < 0)
        return -1;
      if (sync_send(r->sock, SYNC_INIT_PID, r->init, NULL, -1, err) < 0)
        return -1;
      break;
    case SYNC_RUN_HOOKS:
      if (handle_hooks(r, err) < 0)
        return -1;
      break;
    case SYNC_CONSOLE_FD:
      if (console_route_master(r->opts->console_socket, fd, &r->console_master, err) < 0)
        return -1;
      break;
    case SYNC_SECCOMP_NOTIFY_FD:
      if (fd < 0)
        return cm_error_set(err, EPROTO, "seccomp: no listener fd received");
      rc = seccomp_listener_send(&r->spec->linux_.seccomp, &r->st, "creating", r->init, fd, err);
      close(fd);
      if (rc < 0 || sync_send(r->sock, SYNC_SECCOMP_NOTIFY_FD, 0, NULL, -1, err) < 0)
        return -1;
      break;
    case SYNC_EGRESS_SOCKET:
      /* Each of init's sockets to the broker as it comes; after the last, init's pidfd: the
       * broker adds its routes while init goes on with the rootfs. */
      if (r->broker.pid <= 0 && (!r->opts->egress || start_broker(r, err) < 0))
        rc = r->opts->egress ? -1 : cm_error_set(err, EPROTO, "sync: an egress socket without an allowlist");
      else if (EGRESS_SOCK_ROLE(m.value) == EGRESS_SOCK_END)
        rc = egress_broker_start(&r->broker, r->init, err);
      else
        rc = fd >= 0 ? egress_broker_give_socket(&r->broker, m.value, fd, err)
                     : cm_error_set(err, EPROTO, "sync: an egress socket message without its socket");
      if (fd >= 0)
        close(fd);
      if (rc < 0)
        return -1;
      break;
    case SYNC_READY:
      if (loopback_err) {
        *err = loopback_err;
        loopback_err = NULL;
        return -1;
      }
      /* The capture routes are in place before anything of the user's can run. */
      if (r->opts->egress && r->broker.pid <= 0)
        return cm_error_set(err, EPROTO, "egress: init did not send its sockets");
      if (r->broker.pid > 0 && egress_broker_wait_ready(&r->broker, err) < 0)
        return -1;
      /* Init made the mounts in our own (inherited) namespace: recorded for delete. */
      if (!r->spec->linux_.namespaces[SPEC_NS_MOUNT].present && rootfs_mounts_inherited(r->spec) &&
          inherited_mounts_record(r->dirfd, r->st.rootfs, err) < 0)
        return -1;
      return 0;
    default:
      if (fd >= 0)
        close(fd);
      return cm_error_set(err, EPROTO, "sync: unexpected message %u", m.type);
    }
  }
}

static void teardown(struct create_run *r) {
  struct cm_error *ignored = NULL;
  release_broker_cgroup(r);
  if (r->broker.pid > 0)
    egress_broker_abort(&r->broker);
  if (r->stage1 > 0) {
    kill(r->stage1, SIGKILL);
    waitpid(r->stage1, NULL, 0);
  }
  if (r->init > 0) {
    kill(r->init, SIGKILL);
    waitpid(r->init, NULL, 0);
  }
  if (r->console_master >= 0)
    close(r->console_master);
  if (r->cgroup) {
    cgroup_destroy(r->cgroup, &ignored);
    cm_error_freep(&ignored);
    cgroup_free(r->cgroup);
    r->cgroup = NULL;
  }
  if (r->dirfd >= 0) {
    userns_setup_release(&r->userns, r->state_dir, r->dirfd);
    state_dir_remove(r->ctx->root, r->opts->id, &ignored);
    cm_error_freep(&ignored);
  }
}

/* systemd socket activation (sd_listen_fds(3)): LISTEN_FDS fds from 3 on, meant for us when
 * LISTEN_PID is our pid. As runc and crun, they go to the container's process, before the
 * --preserve-fds ones, and it gets LISTEN_FDS and LISTEN_PID of its own (container_init.c). */
static int socket_activation_fds(void) {
  const char *fds = getenv("LISTEN_FDS"), *pid = getenv("LISTEN_PID");
  if (fds == NULL || pid == NULL || strtol(pid, NULL, 10) != (long)getpid())
    return 0;
  long n = strtol(fds, NULL, 10);
  return n > 0 && n < 4096 ? (int)n : 0;
}

int runtime_apply_profile_at_create(struct spec *s, struct cm_error **err) {
  return net_enforce_loopback_only(&s->linux_.namespaces[SPEC_NS_NETWORK], err);
}

int runtime_create(const struct runtime_context *ctx, const struct create_options *opts,
                   struct created_container *out, struct cm_error **err) {
  if (container_id_validate(opts->id, err) < 0)
    return -1;
  struct spec *loaded = NULL;
  struct spec *s = opts->spec;
  if (s == NULL) {
    cleanup_free char *cfg = NULL;
    const char *path = opts->config_path;
    if (path == NULL) {
      if (asprintf(&cfg, "%s/config.json", opts->bundle ? opts->bundle : ".") < 0)
        abort();
      path = cfg;
    }
    s = loaded = spec_load_file(path, "config.json", err);
    if (s == NULL)
      return -1;
    cm_debug("config %s: parsed", path);
  }
  struct create_run r = {.ctx = ctx, .opts = opts, .spec = s, .dirfd = -1, .sock = -1, .fifo_fd = -1, .progress = {-1},
                         .console_master = -1, .broker = {.pid = -1, .ctl = -1, .errpipe = -1}, .broker_cg_fd = -1};
  struct seccomp_program seccomp = {0}, seccomp_stacked = {0}, seccomp_policy = {0};
  bool has_seccomp = false, has_stacked = false, has_policy = false;
  struct spec_landlock landlock[3];
  size_t n_landlock = 0;
  struct spec_kv *annotations = NULL; /* borrowed strings, our array */
  char landlock_abi_text[16];
  int child_sock = -1;
  int rc = -1;

  /* A caller that is not root gets a user namespace; mounts with their own id maps. */
  if (userns_setup_decide(s, &r.userns, err) < 0)
    goto out;
  /* And honest cgroups: a user scope, a delegated subtree, or none with a warning. */
  struct runtime_context rootless_ctx;
  if (!cm_host_root()) {
    if (rootless_cgroup_apply(ctx, s, opts->id, &rootless_ctx, err) < 0)
      goto out;
    ctx = r.ctx = &rootless_ctx;
  }
  if (validate_for_create(s, opts, err) < 0 || resolve_paths(s, opts, &r.st.bundle, &r.st.rootfs, err) < 0)
    goto out;
  cm_debug("create %s: bundle %s, rootfs %s, process %s, %zu mounts, seccomp %s", opts->id, r.st.bundle, r.st.rootfs,
           s->process->args.count ? s->process->args.items[0] : "-", s->n_mounts,
           s->linux_.seccomp.present ? "yes" : "no");
  /* CVE-2019-5736: init is a fork of us until its execve. Where non-dumpable plus the exec
   * trampoline do not cover it (selfclone.h), re-exec from a sealed copy now: nothing has been
   * made yet, so the re-exec (which does not return) loses nothing. */
  bool sealed = selfclone_is_sealed();
  if (!sealed && selfclone_required(s, s->process)) {
    if (opts->no_reexec) {
      cm_error_set(err, 0, "internal error: the caller did not re-exec from the sealed copy this container needs");
      goto out;
    }
    if (selfclone_ensure(err) < 0)
      goto out;
  }
  /* Once (not before a re-exec): relative mount destinations are allowed but deprecated. */
  for (size_t i = 0; i < s->n_mounts; i++)
    if (s->mounts[i].relative_destination)
      cm_warn("config.json: .mounts[%zu].destination \"%s\" is not absolute: taken relative to / as \"%s\" "
              "(relative destinations are deprecated)",
              i, s->mounts[i].destination + 1, s->mounts[i].destination);
  /* Running from a sealed copy (re-exec'd by the branch above, or started that way): the
   * trampoline would add nothing, and an exec from a sealed copy needs no procfs in the container. */
  bool exec_direct = sealed;
  /* In the log file an engine keeps per container (the shim's log.json), so that which path a
   * create took can be told afterwards; not on a terminal. */
  if (sealed && cm_log_is_file())
    cm_info("create: running from the sealed copy of the runtime (CVE-2019-5736)");
  /* Compiled before anything exists: a bad filter fails here, cleanly. */
  char cache_buf[PATH_MAX];
  const char *cache_dir = seccomp_cache_dir(cache_buf, sizeof(cache_buf));
  if (s->linux_.seccomp.present) {
    if (seccomp_compile_cached(&s->linux_.seccomp, cache_dir, &seccomp, err) < 0)
      goto out;
    has_seccomp = true;
  }
  if (opts->stacked_seccomp && opts->stacked_seccomp->present) {
    if (seccomp_compile_cached(opts->stacked_seccomp, cache_dir, &seccomp_stacked, err) < 0) {
      cm_error_prefix(err, "policy profile");
      goto out;
    }
    has_stacked = true;
  }
  if (opts->policy_seccomp && opts->policy_seccomp->present) {
    if (seccomp_compile_cached(opts->policy_seccomp, cache_dir, &seccomp_policy, err) < 0) {
      cm_error_prefix(err, "learned policy");
      goto out;
    }
    has_policy = true;
  }
  if (landlock_layers(opts, s, landlock, &n_landlock, &r.landlock_abi, err) < 0)
    goto out;
  r.landlock = landlock;
  r.n_landlock = n_landlock;
  r.dirfd = state_dir_create(ctx->root, opts->id, err);
  if (r.dirfd < 0)
    goto out;
  r.st.id = strdup(opts->id);
  r.state_dir = state_dir_path(ctx->root, opts->id);
  cm_debug("state directory %s", r.state_dir);
  /* Under the mcp profiles as root: this container's own host id range. */
  if (userns_setup_allocate(s, &r.userns, r.state_dir, r.dirfd, err) < 0)
    goto fail;
  char created[CM_RFC3339_LEN];
  cm_now_rfc3339(created);
  r.st.created = strdup(created);
  r.st.owner = strdup("");
  r.st.annotations = s->annotations;
  if (n_landlock)
    annotations = annotations_with_landlock(s, r.landlock_abi, landlock_abi_text, sizeof(landlock_abi_text),
                                            &r.st.annotations);
  test_pause_at("state-dir");
  /* An allowlist: the container's config gets the proxy variables, the stub's resolv.conf and
   * (secrets bound to hosts) the per-run CA, which the broker must make first: then it starts
   * now, otherwise just after init (its exec overlapping init's mounts). */
  if (opts->egress) {
    struct spec *ms = loaded ? loaded : opts->spec;
    cleanup_free char *dir = state_dir_path(ctx->root, opts->id);
    if ((opts->egress->n_secrets && egress_broker_spawn(opts->egress, opts->id, !opts->foreground, NULL, &r.broker, err) < 0) ||
        egress_prepare_container(ms, r.dirfd, dir, r.st.rootfs, r.broker.ca_pem, err) < 0)
      goto fail;
  }
  if (getenv("NOTIFY_SOCKET")) {
    struct spec *ms = loaded ? loaded : opts->spec;
    cleanup_free char *dir = state_dir_path(ctx->root, opts->id);
    if (notify_socket_prepare(ms, r.dirfd, dir, err) < 0)
      goto fail;
  }

  /* `run` starts at once over the sync socket: no fifo (one file fewer to create on /run). */
  if (!opts->start_at_once) {
    if (mkfifoat(r.dirfd, "exec.fifo", 0600) < 0) {
      cm_error_set(err, errno, "create exec.fifo");
      goto fail;
    }
    /* O_RDWR: init's read blocks until `start` writes, and never sees EOF meanwhile. */
    r.fifo_fd = openat(r.dirfd, "exec.fifo", O_RDWR | O_CLOEXEC);
    if (r.fifo_fd < 0) {
      cm_error_set(err, errno, "open exec.fifo");
      goto fail;
    }
  }
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0) {
    cm_error_set(err, errno, "create sync channel");
    goto fail;
  }
  int listen_fds = socket_activation_fds();
  int preserve_fds = listen_fds + opts->preserve_fds;
  int min_fd = 3 + preserve_fds;
  r.sock = fd_move_above(pair[0], min_fd, err);
  child_sock = fd_move_above(pair[1], min_fd, err);
  if (r.fifo_fd >= 0)
    r.fifo_fd = fd_move_above(r.fifo_fd, min_fd, err);
  if (r.sock < 0 || child_sock < 0 || (!opts->start_at_once && r.fifo_fd < 0))
    goto fail;

  if (ctx->cgroup_manager != CGROUP_MANAGER_DISABLED &&
      cgroup_create_without_resources(opts->id, &s->linux_, ctx->cgroup_manager, &r.cgroup, err) < 0)
    goto fail;
  int delegated = delegate_cgroup(&r, err);
  if (delegated < 0)
    goto fail;
  if (r.cgroup)
    r.st.cgroup = cgroup_serialize(r.cgroup);
  cm_debug("cgroup: %s", r.cgroup ? cgroup_path(r.cgroup) : "none (--cgroup-manager disabled)");
  if (record_progress(&r, 0, err) < 0)
    goto fail;
  test_pause_at("cgroup");

  /* Without joins, user or time namespaces, init is cloned with its namespaces in one step:
   * no stage1 process, one fork and two sync round trips fewer. */
  bool direct = container_init_direct_possible(s) && !r.userns.premounts;
  int ns_flags = direct ? container_init_direct_clone_flags(s) : 0;
  r.loopback_by_runtime = direct && spec_ns_is_new(s, SPEC_NS_NETWORK);
  int cgroup_fd = r.cgroup ? cgroup_open_for_clone(r.cgroup) : -1;
  int v1_tasks[16];
  int n_v1_tasks = r.cgroup ? cgroup_open_v1_tasks(r.cgroup, v1_tasks, 16, err) : 0;
  /* Not inherited by init: stage1 writes and closes it before it clones init. */
  int leaf_fd = delegated && n_v1_tasks >= 0 ? cgroup_open_leaf_procs(r.cgroup, err) : -1;
  if (leaf_fd >= 0)
    leaf_fd = fd_move_above(leaf_fd, min_fd, err);
  if (n_v1_tasks < 0 || (delegated && leaf_fd < 0)) {
    if (cgroup_fd >= 0)
      close(cgroup_fd);
    for (int i = 0; i < n_v1_tasks; i++)
      close(v1_tasks[i]);
    goto fail;
  }
  bool in_cgroup = false;
  cm_debug("namespaces: %s (clone flags 0x%x)", direct ? "init cloned into its new namespaces"
                                                       : "stage1 joins and unshares them, then clones init", ns_flags);
  pid_t child = clone_child((unsigned long)ns_flags, cgroup_fd, &in_cgroup);
  if (child > 0 && n_v1_tasks > 0)
    cgroup_mark_v1_self_attached(r.cgroup);
  if (child != 0 && leaf_fd >= 0)
    close(leaf_fd);
  /* The broker is born where init was (egress_broker_spawn): the parent keeps these until then.
   * Not into a delegated cgroup, which holds no process once its controllers are handed down:
   * that broker is moved into the leaf (place_broker). */
  bool keep_for_broker = child > 0 && opts->egress && r.broker.pid < 0 && in_cgroup && leaf_fd < 0;
  if (child != 0 && n_v1_tasks > 0 && !keep_for_broker)
    for (int i = 0; i < n_v1_tasks; i++)
      close(v1_tasks[i]);
  /* The same answer in parent and child: init then neither waits for nor gets a go message. */
  r.cgroup_done = child >= 0 && direct && in_cgroup && cgroup_whole_at_clone(r.cgroup);
  if (child < 0) {
    cm_error_set(err, errno, direct ? "clone container init with new namespaces (flags 0x%x)" : "fork", ns_flags);
    if (cgroup_fd >= 0)
      close(cgroup_fd);
    goto fail;
  }
  if (child > 0) {
    if (cgroup_fd >= 0 && !keep_for_broker)
      close(cgroup_fd);
    if (in_cgroup)
      cgroup_mark_cloned_into(r.cgroup);
    if (direct)
      r.init = r.st.pid = child;
    else
      r.stage1 = child;
    /* Nothing to wait for: init learns its host pid and sets up at once. If we die before
     * recording that pid, the cgroup in the progress record still leads `delete` to it. */
    if (r.cgroup_done && sync_send(r.sock, SYNC_INIT_PID, child, NULL, -1, err) < 0)
      goto fail;
  }
  if (child == 0) {
    cm_log_route_to_sync(child_sock, direct ? "init" : "stage1");
    /* First, while single-threaded and still the runtime's uid: into the v1 hierarchies by
     * ourselves (no RCU grace period, cgroup/cgroup.h), so everything we fork is there too. */
    struct cm_error *attach_err = NULL;
    if (cgroup_self_attach_v1(v1_tasks, (size_t)n_v1_tasks, &attach_err) < 0) {
      sync_send_error(child_sock, attach_err);
      _exit(1);
    }
    /* The state dir's flock is shared by every copy of this fd: init must not keep holding it
     * while it waits for `start`, or every later command on this id would block. */
    close(r.dirfd);
    close(r.sock);
    /* A directory fd on the host's cgroupfs: a way out of the rootfs for anything that could
     * reach init's fds before its execve (CVE-2024-21626 class). */
    if (cgroup_fd >= 0)
      close(cgroup_fd);
    state_progress_close(&r.progress); /* a writable host file, same reason */
    struct init_config ic = {
        .spec = s,
        .id = opts->id,
        .bundle = r.st.bundle,
        .rootfs = r.st.rootfs,
        .sync_fd = child_sock,
        .cgroup_done = r.cgroup_done,
        .fifo_fd = r.fifo_fd,
        .preserve_fds = preserve_fds,
        .listen_fds = listen_fds,
        .no_pivot = opts->no_pivot,
        .no_new_keyring = opts->no_new_keyring,
        .exec_direct = exec_direct,
        .loopback_by_runtime = r.loopback_by_runtime,
        .seccomp = has_seccomp ? &seccomp : NULL,
        .seccomp_stacked = has_stacked ? &seccomp_stacked : NULL,
        .seccomp_policy = has_policy ? &seccomp_policy : NULL,
        .seccomp_listener = opts->listener_filter,
        .landlock = landlock,
        .n_landlock = n_landlock,
        .egress_tcp_ports = opts->egress ? opts->egress->tcp_ports : NULL,
        .n_egress_tcp_ports = opts->egress ? opts->egress->n_tcp_ports : 0,
        .userns = &r.userns.plan,
        .premounts = r.userns.premounts,
        .cgroup_leaf_fd = leaf_fd,
        .cgroup_delegated = leaf_fd >= 0,
    };
    /* Never both: delegation needs a user namespace, which needs stage1. */
    if (direct) {
      if (leaf_fd >= 0)
        close(leaf_fd);
      ic.cgroup_leaf_fd = -1;
      container_init_direct(&ic);
    }
    container_stage1(&ic);
  }
  close(child_sock);
  child_sock = -1;
  if (r.fifo_fd >= 0)
    close(r.fifo_fd);
  r.fifo_fd = -1;
  if (keep_for_broker) {
    r.broker_cg_fd = cgroup_fd;
    for (int i = 0; i < n_v1_tasks; i++)
      r.broker_v1[i] = v1_tasks[i];
    r.n_broker_v1 = n_v1_tasks > 0 ? n_v1_tasks : 0;
  }
  if (record_progress(&r, child, err) < 0)
    goto fail;
  test_pause_at("fork");
  if (r.cgroup && cgroup_enter(r.cgroup, child, err) < 0)
    goto fail;
  /* Started before (it made the per-run CA): into the container's cgroup now. */
  if (place_broker(&r, err) < 0)
    goto fail;
  if (drive_child(&r, err) < 0)
    goto fail;
  test_pause_at("ready");

  if (r.st.pid_start_time == 0)
    r.st.pid_start_time = proc_pid_start_time(r.init);
  /* The broker first: named in the state dir before the container is (a create killed between
   * the two leaves a broker that dies with init, never one nobody knows of). */
  if (r.broker.pid > 0 && egress_broker_commit(&r.broker, r.dirfd, err) < 0)
    goto fail;
  if (state_progress_commit(r.dirfd, &r.progress, &r.st, err) < 0)
    goto fail;
  test_pause_at("state");
  if (opts->pid_file && pid_file_write(opts->pid_file, r.init, err) < 0)
    goto fail;
  if (sync_send(r.sock, SYNC_READY, 0, NULL, -1, err) < 0)
    goto fail;
  if (out) {
    out->pid = r.init;
    out->console_master = r.console_master;
    r.console_master = -1;
    out->start_sock = -1;
    if (opts->start_at_once) {
      out->start_sock = r.sock;
      r.sock = -1;
    }
  }
  rc = 0;
  goto out;

fail:
  if (child_sock >= 0)
    close(child_sock);
  teardown(&r);
out:
  if (r.fifo_fd >= 0)
    close(r.fifo_fd);
  if (r.sock >= 0)
    close(r.sock);
  state_progress_close(&r.progress);
  if (r.dirfd >= 0)
    close(r.dirfd);
  if (r.console_master >= 0)
    close(r.console_master);
  if (r.cgroup)
    cgroup_free(r.cgroup);
  if (has_seccomp)
    seccomp_program_free(&seccomp);
  if (has_stacked)
    seccomp_program_free(&seccomp_stacked);
  if (has_policy)
    seccomp_program_free(&seccomp_policy);
  r.st.annotations = (struct spec_kv_list){0};
  free(annotations);
  for (size_t i = 0; i < n_landlock; i++)
    spec_landlock_clear(&landlock[i]);
  container_state_clear(&r.st);
  free(r.state_dir);
  spec_free(loaded);
  return rc;
}
