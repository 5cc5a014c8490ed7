#include "runtime/container_init.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "linux/console.h"
#include "linux/egress_sockets.h"
#include "linux/exec_trampoline.h"
#include "linux/fds.h"
#include "linux/last_steps.h"
#include "linux/namespaces.h"
#include "linux/net.h"
#include "linux/process_attrs.h"
#include "linux/rootfs.h"
#include "linux/seccomp_listener.h"
#include "linux/security_attrs.h"
#include "linux/sysctl.h"
#include "runtime/egress.h"
#include "runtime/hooks.h"
#include "runtime/state.h"
#include "util/log.h"
#include "util/cleanup.h"
#include "util/safepath.h"
#include "util/sync.h"
#include "util/host_root.h"

static __attribute__((noreturn)) void fail(int sync_fd, struct cm_error *err) {
  sync_send_error(sync_fd, err);
  _exit(1);
}

/* Wait for one message of `type` from the runtime; anything else (or EOF: the runtime died) ends
 * this process, so a half-built container never outlives its runtime. */
static int64_t expect(int sync_fd, uint32_t type) {
  struct sync_msg m;
  struct cm_error *err = NULL;
  int r = sync_recv(sync_fd, &m, NULL, &err);
  if (r != 0 || m.type != type)
    _exit(1);
  return m.value;
}

void process_load_seccomp_early(int sync_fd, struct landlock_prepared *ll, const struct seccomp_program *stacked,
                                const struct seccomp_program *prog) {
  struct cm_error *err = NULL;
  if (landlock_enforce(ll, &err) < 0)
    fail(sync_fd, err);
  if (stacked && seccomp_program_load(stacked, &err) < 0)
    fail(sync_fd, err);
  int listener = seccomp_program_load(prog, &err);
  if (listener < 0)
    fail(sync_fd, err);
  sync_send(sync_fd, SYNC_SECCOMP_NOTIFY_FD, 0, NULL, listener, NULL);
  close(listener);
  expect(sync_fd, SYNC_SECCOMP_NOTIFY_FD); /* delivered to the listener */
}

/* Join every namespace given by path. The user namespace comes first so the others are joined
 * with its privileges; all are opened before any setns, because joining the mount namespace
 * changes what the other paths resolve to. */
static int join_namespaces(const struct spec *s, struct cm_error **err) {
  static const enum spec_ns_type order[] = {SPEC_NS_USER, SPEC_NS_IPC, SPEC_NS_UTS, SPEC_NS_NETWORK,
                                            SPEC_NS_PID, SPEC_NS_CGROUP, SPEC_NS_TIME, SPEC_NS_MOUNT};
  for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
    const struct spec_namespace *ns = &s->linux_.namespaces[order[i]];
    if (ns->present && ns->path && ns_join(order[i], ns->path, err) < 0)
      return -1;
  }
  return 0;
}

/* The detached mounts the runtime made for us, until SYNC_MOUNTS_DONE. */
static void receive_premounts(const struct init_config *c, struct rootfs_premounts *pre) {
  size_t n = c->spec->n_mounts;
  pre->root_fd = -1;
  pre->n = n;
  pre->mount_fds = malloc((n ? n : 1) * sizeof(int));
  if (pre->mount_fds == NULL)
    _exit(1);
  for (size_t i = 0; i < n; i++)
    pre->mount_fds[i] = -1;
  for (;;) {
    struct sync_msg m;
    int fd = -1;
    struct cm_error *err = NULL;
    if (sync_recv(c->sync_fd, &m, &fd, &err) != 0)
      _exit(1);
    if (m.type == SYNC_MOUNTS_DONE)
      return;
    if (m.type != SYNC_MOUNT_FD || fd < 0 || m.value < -1 || m.value >= (int64_t)n)
      _exit(1);
    bool layer = strcmp(m.text, "layer") == 0, attach = strcmp(m.text, "attach") == 0;
    if (m.value >= 0 && (layer || attach)) {
      /* An overlay entry's layer (in order) or a mount one is on. */
      if (pre->layers == NULL && (pre->layers = calloc(n, sizeof(*pre->layers))) == NULL)
        _exit(1);
      struct rootfs_premount_layers *l = &pre->layers[m.value];
      int **v = layer ? &l->fds : &l->attach;
      size_t *nv = layer ? &l->n : &l->n_attach;
      int *grown = realloc(*v, (*nv + 1) * sizeof(int));
      if (grown == NULL)
        _exit(1);
      *v = grown;
      grown[(*nv)++] = fd;
    } else if (m.value == -1) {
      pre->root_fd = fd;
    } else {
      pre->mount_fds[m.value] = fd;
    }
  }
}

static void close_premounts(const struct init_config *c) {
  const struct rootfs_premounts *pre = c->pre;
  if (pre == NULL)
    return;
  if (pre->root_fd >= 0)
    close(pre->root_fd);
  for (size_t i = 0; i < pre->n; i++) {
    if (pre->mount_fds[i] >= 0)
      close(pre->mount_fds[i]);
    for (size_t k = 0; pre->layers && k < pre->layers[i].n; k++)
      close(pre->layers[i].fds[k]);
    for (size_t k = 0; pre->layers && k < pre->layers[i].n_attach; k++)
      close(pre->layers[i].attach[k]);
  }
}

/* oom_set: stage1 already set process.oomScoreAdj, which init inherits. */
static __attribute__((noreturn)) void container_init(const struct init_config *c, bool oom_set);

void container_stage1(const struct init_config *c) {
  const struct spec *s = c->spec;
  struct cm_error *err = NULL;
  cm_log_route_to_sync(c->sync_fd, "stage1");

  /* The runtime has placed us in the container's cgroup before we create the cgroup
   * namespace, so the container sees its own cgroup as its root. */
  expect(c->sync_fd, SYNC_CGROUP_JOINED);
  cm_debug("in the container's cgroup");
  const struct spec_namespace *userns = &s->linux_.namespaces[SPEC_NS_USER];
  bool create_userns = userns->present && userns->path == NULL;
  /* The runtime's credentials, which ours are until the user namespace: only a root runtime can
   * join our mount namespace to open bind sources for us (below); root of a user namespace of
   * codemode-run's own is the caller, whose reach ours is. */
  bool runtime_is_root = cm_host_root();
  if (create_userns && c->userns)
    userns_child_begin(c->userns);
  /* Still in our user namespace: init, non-dumpable (CVE-2019-5736), has a /proc/self owned by
   * our root, which a new user namespace's root may not write; the value is inherited. */
  if (oom_score_adj_apply(s->process, &err) < 0 || loginuid_lock(s->process, &err) < 0)
    fail(c->sync_fd, err);

  /* Becoming an unprivileged host uid first (linux/userns.h): namespaces given by path are
   * joined while we still may. */
  bool joined_first = create_userns && c->userns && c->userns->become_creator;
  if (joined_first && join_namespaces(s, &err) < 0)
    fail(c->sync_fd, err);
  if (create_userns) {
    static const struct userns_plan plain = {.create = true};
    if (userns_child_create(c->userns ? c->userns : &plain, &err) < 0)
      fail(c->sync_fd, err);
    sync_send(c->sync_fd, SYNC_USERNS_READY, 0, NULL, -1, NULL);
    expect(c->sync_fd, SYNC_USERNS_MAPPED);
    userns_child_mapped(c->userns ? c->userns : &plain);
  }
  struct rootfs_premounts pre = {.root_fd = -1};
  if (c->premounts)
    receive_premounts(c, &pre);
  if (!joined_first && join_namespaces(s, &err) < 0)
    fail(c->sync_fd, err);
  if (userns->present) {
    /* Become the namespace's root, so every later step runs with the mapped root's identity. */
    if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0) {
      cm_error_set(&err, errno, "become root in the user namespace (is uid/gid 0 mapped?)");
      fail(c->sync_fd, err);
    }
  }

  int flags = 0;
  for (int t = 0; t < SPEC_NS_COUNT; t++) {
    if (t != SPEC_NS_USER && spec_ns_is_new(s, t))
      flags |= spec_ns_clone_flag(t);
  }
  cm_debug("namespaces: %s, unshare flags 0x%x", create_userns ? "new user namespace" : "no new user namespace", flags);
  if (flags && unshare(flags) < 0) {
    cm_error_set(&err, errno, "unshare namespaces (flags 0x%x)", flags);
    fail(c->sync_fd, err);
  }
  /* A delegated cgroup: our cgroup namespace is rooted at it now; init and all it starts live in
   * its leaf, so the job can hand controllers down (no internal processes). */
  if (c->cgroup_leaf_fd >= 0 && cgroup_enter_leaf_self(c->cgroup_leaf_fd, &err) < 0)
    fail(c->sync_fd, err);
  /* The namespace's root may not reach every bind source: the runtime opens them for us, in our
   * new mount namespace, with its own credentials (rootfs.h). Init inherits the fds. Not the
   * binds the runtime premounted; not rootless, where we are the caller and reach what it does
   * (and a runtime without CAP_SYS_ADMIN could not join our mount namespace). */
  struct init_config with_fds = *c;
  if (runtime_is_root && userns->present && s->linux_.namespaces[SPEC_NS_MOUNT].present &&
      rootfs_has_bind_mounts_besides(s, c->premounts ? &pre : NULL)) {
    with_fds.bind_fds = malloc(s->n_mounts * sizeof(int));
    if (with_fds.bind_fds == NULL)
      abort();
    for (size_t i = 0; i < s->n_mounts; i++)
      with_fds.bind_fds[i] = -1;
    sync_send(c->sync_fd, SYNC_MOUNT_SOURCES, 0, NULL, -1, NULL);
    for (;;) {
      struct sync_msg m;
      int fd = -1;
      if (sync_recv(c->sync_fd, &m, &fd, &err) != 0)
        _exit(1);
      if (m.type == SYNC_MOUNT_SOURCES)
        break;
      if (m.type != SYNC_MOUNT_SOURCE || m.value < 0 || (size_t)m.value >= s->n_mounts)
        _exit(1);
      with_fds.bind_fds[m.value] = fd;
    }
  }
  c = &with_fds;

  /* Offsets must be written before any process lives in the new time namespace. */
  if (spec_ns_is_new(s, SPEC_NS_TIME) && ns_write_time_offsets(&s->linux_, &err) < 0)
    fail(c->sync_fd, err);

  /* CLONE_PARENT: init becomes the runtime's child, so `run` can wait for it and create's
   * caller (the shim, a subreaper) inherits it when the runtime exits. */
  pid_t pid = (pid_t)syscall(SYS_clone, CLONE_PARENT | SIGCHLD, NULL, NULL, NULL, NULL);
  if (pid < 0) {
    cm_error_set(&err, errno, "clone container init");
    fail(c->sync_fd, err);
  }
  if (pid == 0) {
    struct init_config ic = *c;
    ic.pre = c->premounts ? &pre : NULL;
    container_init(&ic, true);
  }
  sync_send(c->sync_fd, SYNC_INIT_PID, pid, NULL, -1, NULL);
  _exit(0);
}

bool container_init_direct_possible(const struct spec *s) {
  for (int t = 0; t < SPEC_NS_COUNT; t++) {
    if (s->linux_.namespaces[t].present && s->linux_.namespaces[t].path != NULL)
      return false;
  }
  return !s->linux_.namespaces[SPEC_NS_USER].present && !spec_ns_is_new(s, SPEC_NS_TIME);
}

int container_init_direct_clone_flags(const struct spec *s) {
  int flags = 0;
  for (int t = 0; t < SPEC_NS_COUNT; t++) {
    if (t != SPEC_NS_CGROUP && spec_ns_is_new(s, t))
      flags |= spec_ns_clone_flag(t);
  }
  return flags;
}

void container_init_direct(const struct init_config *c) {
  struct cm_error *err = NULL;
  cm_log_route_to_sync(c->sync_fd, "init");
  /* As in stage1: the cgroup namespace is made only once we are in the container's cgroup,
   * so the container sees its own cgroup as its root. */
  if (!c->cgroup_done)
    expect(c->sync_fd, SYNC_CGROUP_JOINED);
  if (loginuid_lock(c->spec->process, &err) < 0)
    fail(c->sync_fd, err);
  if (spec_ns_is_new(c->spec, SPEC_NS_CGROUP) && unshare(CLONE_NEWCGROUP) < 0) {
    cm_error_set(&err, errno, "unshare cgroup namespace");
    fail(c->sync_fd, err);
  }
  container_init(c, false);
}

/* The state JSON hooks run inside the container get. */
static char *init_state_json(const struct init_config *c, pid_t host_pid, const char *status) {
  struct container_state st = {
      .id = (char *)c->id,
      .pid = host_pid,
      .bundle = (char *)c->bundle,
      .rootfs = (char *)c->rootfs,
      .annotations = c->spec->annotations,
  };
  return state_oci_json(&st, status);
}

static const char *env_get(const struct spec_strv *env, const char *name) {
  size_t n = strlen(name);
  for (size_t i = 0; i < env->count; i++) {
    if (strncmp(env->items[i], name, n) == 0 && env->items[i][n] == '=')
      return env->items[i] + n + 1;
  }
  return NULL;
}

static bool is_executable_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* Resolve args[0] against the container's PATH now, so a missing binary fails `create` with a
 * clear message instead of a silent exit after `start`. */
char *process_find_executable(const struct spec_process *p, struct cm_error **err) {
  const char *name = p->args.items[0];
  if (strchr(name, '/')) {
    if (!is_executable_file(name)) {
      /* Go's wording ("no such file or directory", "permission denied"): Docker matches it to
       * exit 127 / 126. */
      char reason[128];
      snprintf(reason, sizeof(reason), "%s", strerror(errno ? errno : EACCES));
      reason[0] = (char)tolower((unsigned char)reason[0]);
      return cm_error_set(err, 0, "exec: \"%s\": %s", name, reason), NULL;
    }
    return strdup(name);
  }
  const char *path = env_get(&p->env, "PATH");
  if (path == NULL)
    path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  cleanup_free char *copy = strdup(path);
  char *save = NULL;
  for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
    char *full;
    if (asprintf(&full, "%s/%s", *dir ? dir : ".", name) < 0)
      abort();
    if (is_executable_file(full))
      return full;
    free(full);
  }
  cm_error_set(err, 0, "exec: \"%s\": executable file not found in $PATH", name);
  return NULL;
}

/* runc and Docker give the process HOME from the container's /etc/passwd when the config has
 * none; read after pivot_root, so the file is the container's own. */
char **process_env_with_home(const struct spec_process *p) {
  if (env_get(&p->env, "HOME"))
    return p->env.items;
  const char *home = "/";
  char line[1024];
  cleanup_free char *found = NULL;
  cleanup_fclose FILE *f = fopen("/etc/passwd", "re");
  while (f && fgets(line, sizeof(line), f)) {
    /* name:pw:uid:gid:gecos:home:shell */
    char *fields[7] = {0}, *tok = line;
    int n = 0;
    for (char *q = line; n < 7; q++) {
      if (*q == ':' || *q == '\n' || *q == '\0') {
        bool end = *q != ':';
        *q = '\0';
        fields[n++] = tok;
        tok = q + 1;
        if (end)
          break;
      }
    }
    if (n >= 6 && strtoul(fields[2], NULL, 10) == p->user.uid && fields[2][0] && *fields[5]) {
      found = strdup(fields[5]);
      home = found;
      break;
    }
  }
  char **env = calloc(p->env.count + 2, sizeof(char *));
  if (env == NULL)
    abort();
  for (size_t i = 0; i < p->env.count; i++)
    env[i] = p->env.items[i];
  if (asprintf(&env[p->env.count], "HOME=%s", home) < 0)
    abort();
  return env;
}

/* LISTEN_FDS and LISTEN_PID for the process (sd_listen_fds checks the pid: ours, which execve
 * keeps; 1 in a new pid namespace, as runc always says). Added after the config's own. */
static char **env_with_socket_activation(char **env, int n_fds) {
  size_t n = 0;
  while (env[n])
    n++;
  char **out = calloc(n + 3, sizeof(char *));
  if (out == NULL)
    abort();
  memcpy(out, env, n * sizeof(char *));
  if (asprintf(&out[n], "LISTEN_FDS=%d", n_fds) < 0 || asprintf(&out[n + 1], "LISTEN_PID=%d", (int)getpid()) < 0)
    abort();
  return out;
}

static void reset_signals(void) {
  sigset_t none;
  sigemptyset(&none);
  for (int sig = 1; sig < NSIG; sig++)
    signal(sig, SIG_DFL);
  sigprocmask(SIG_SETMASK, &none, NULL);
}

/* How init and its startContainer hooks exec: through the trampoline, whose program holds the
 * last steps, or from the runtime's sealed copy by running them here. */
struct init_exec {
  const struct init_config *c;
  const struct last_steps *ls;
  /* Open across the trampoline's execve: exec.fifo or the sync socket (until the program's
   * execve), the Landlock rulesets (the trampoline enforces and closes them). */
  int keep_fds[1 + LANDLOCK_MAX_LAYERS];
  size_t n_keep_fds;
  struct exec_trampoline trampoline;
};

/* hook_exec.exec, and the process's own exec. Returns only on failure, errno set. */
static void exec_confined(void *arg, const char *path, char *const argv[], char *const envp[]) {
  const struct init_exec *ie = arg;
  if (ie->c->exec_direct)
    last_steps_exec_here(ie->ls, path, argv, envp); /* reports and exits on failure */
  exec_trampoline_exec(&ie->trampoline, path, argv, ie->keep_fds, ie->n_keep_fds, envp);
}

static void container_init(const struct init_config *c, bool oom_set) {
  const struct spec *s = c->spec;
  const struct spec_process *p = s->process;
  struct cm_error *err = NULL;
  int sync_fd = c->sync_fd;
  cm_log_route_to_sync(sync_fd, "init");

  /* The runtime answers our SYNC_INIT_PID (sent by stage1) with our host pid. */
  pid_t host_pid = (pid_t)expect(sync_fd, SYNC_INIT_PID);
  cm_debug("container init, host pid %d", (int)host_pid);
  /* First, so the broker can start serving while we build the rootfs. */
  if (c->n_egress_tcp_ports &&
      egress_sockets_send(sync_fd, c->egress_tcp_ports, c->n_egress_tcp_ports, EGRESS_PROXY_PORT, EGRESS_SOCKS5_PORT,
                          &err) < 0)
    fail(sync_fd, err);

  /* In a mount namespace of its own or one joined by path (we are in it by now), the rootfs is
   * built and pivoted into, as runc does. Without one the process inherits the runtime's mount
   * namespace (the spec), which nothing here may change: no mount, only a chroot into the rootfs
   * (runc's behaviour; create refuses what would need mounts there). */
  bool inherited = !s->linux_.namespaces[SPEC_NS_MOUNT].present && rootfs_mounts_inherited(s);
  bool build_rootfs = s->linux_.namespaces[SPEC_NS_MOUNT].present || inherited;
  /* The inherited namespace is the caller's: a user namespace of the container's own has no
   * right to mount there, and a tree the runtime prepared would be attached over its "/". */
  if (inherited && (c->pre || spec_ns_is_new(s, SPEC_NS_USER))) {
    cm_error_set(&err, 0,
                 "config.json: .mounts: without a mount namespace of its own, the container's new user "
                 "namespace cannot mount in the runtime's: add {\"type\": \"mount\"} to .linux.namespaces");
    fail(sync_fd, err);
  }
  if (build_rootfs) {
    /* Relative bind sources resolve against the bundle. */
    if (chdir(c->bundle) < 0 && !(errno == EACCES && c->pre)) {
      /* Premounted: the runtime opened every bind source, so no relative path is walked here. */
      if (errno == EACCES && s->linux_.namespaces[SPEC_NS_USER].present)
        cm_error_set(&err, errno,
                     "chdir to bundle %s (the user namespace's root must be able to search every "
                     "directory above the bundle)",
                     c->bundle);
      else
        cm_error_set(&err, errno, "chdir to bundle %s", c->bundle);
      fail(sync_fd, err);
    }
    cm_debug("rootfs %s: preparing (%zu mounts, propagation %s)", c->rootfs, s->n_mounts,
             s->linux_.rootfs_propagation ? s->linux_.rootfs_propagation : "rslave (default)");
    if (rootfs_prepare_premounted(s, c->rootfs, c->pre, c->bind_fds, &err) < 0)
      fail(sync_fd, err);
    rootfs_close_bind_sources(c->bind_fds, s->n_mounts);
  }

  if (s->hooks[SPEC_HOOK_PRESTART].count || s->hooks[SPEC_HOOK_CREATE_RUNTIME].count) {
    sync_send(sync_fd, SYNC_RUN_HOOKS, 0, NULL, -1, NULL);
    expect(sync_fd, SYNC_HOOKS_DONE);
  }
  if (s->hooks[SPEC_HOOK_CREATE_CONTAINER].count) {
    cleanup_free char *json = init_state_json(c, host_pid, "creating");
    /* As runc: in the rootfs directory (we are in the container's mount namespace, before
     * pivot_root), with the process's environment when the hook has none. */
    struct hook_exec how = {.cwd = c->rootfs, .default_env = p->env.items};
    if (hooks_run(s->hooks, SPEC_HOOK_CREATE_CONTAINER, json, &how, &err) < 0)
      fail(sync_fd, err);
  }

  cm_debug("rootfs %s: %s", c->rootfs,
           !build_rootfs || inherited ? "chroot (no mount namespace of its own)"
           : c->no_pivot              ? "move to / (--no-pivot)"
                                      : "pivot_root");
  /* Without a mount namespace of its own, pivot_root would move the caller's root: chroot. */
  if ((build_rootfs && !inherited ? rootfs_pivot_premounted(c->rootfs, c->pre, c->no_pivot, &err)
                                  : rootfs_chroot(c->rootfs, &err)) < 0)
    fail(sync_fd, err);
  close_premounts(c);
  /* A missing cwd is created, as runc does: after pivot_root, walked inside the container's root
   * only, before root.readonly applies. */
  {
    cleanup_close int root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    cleanup_close int cwd_fd = root_fd < 0 ? -1 : safepath_open(root_fd, p->cwd, O_PATH | O_DIRECTORY, NULL);
    if (root_fd >= 0 && cwd_fd < 0 && errno == ENOENT) {
      cwd_fd = safepath_mkdir_p(root_fd, p->cwd, 0755, &err);
      if (cwd_fd < 0) {
        cm_error_prefix(&err, "create cwd \"%s\"", p->cwd);
        fail(sync_fd, err);
      }
    }
  }
  /* Into the job's writable root, before root.readonly applies. */
  if (s->hardening.nested_containers && containers_dropin_write(c->cgroup_delegated, &err) < 0)
    fail(sync_fd, err);
  /* sysctls go in before /proc/sys is made read-only by readonlyPaths. */
  if (s->linux_.sysctl.count && sysctl_apply(&s->linux_.sysctl, &err) < 0)
    fail(sync_fd, err);
  if (build_rootfs && rootfs_finalize(s, &err) < 0)
    fail(sync_fd, err);
  if (s->linux_.namespaces[SPEC_NS_UTS].present && ns_set_uts_names(s->hostname, s->domainname, &err) < 0)
    fail(sync_fd, err);
  if (spec_ns_is_new(s, SPEC_NS_NETWORK) && !c->loopback_by_runtime && net_loopback_up(&err) < 0)
    fail(sync_fd, err);

  if (setsid() < 0) {
    cm_error_set(&err, errno, "setsid");
    fail(sync_fd, err);
  }
  if (p->terminal) {
    int master = console_setup(p, &err);
    if (master < 0)
      fail(sync_fd, err);
    sync_send(sync_fd, SYNC_CONSOLE_FD, 0, NULL, master, NULL);
    close(master);
  }
  if (!p->terminal && fds_localize_stdio_devices(&err) < 0)
    fail(sync_fd, err);
  if (!c->no_new_keyring && keyring_join_new(c->id, &err) < 0)
    fail(sync_fd, err);
  if ((!oom_set && oom_score_adj_apply(p, &err) < 0) || rlimits_apply(p, &err) < 0 ||
      personality_apply(&s->linux_.personality, &err) < 0 || io_priority_apply(p, &err) < 0 ||
      scheduler_apply(p, &err) < 0 || lsm_apply_exec_label(p, &err) < 0)
    fail(sync_fd, err);

  bool cwd_ok = chdir(p->cwd) == 0; /* retried as the user (last steps): it may be the user's only */
  if (!cwd_ok && errno != EACCES) {
    cm_error_set(&err, errno, "chdir to cwd \"%s\"", p->cwd);
    fail(sync_fd, err);
  }
  cleanup_free char *exe = process_find_executable(p, &err);
  if (exe == NULL)
    fail(sync_fd, err);
  char **envp = process_env_with_home(p);
  if (c->listen_fds)
    envp = env_with_socket_activation(envp, c->listen_fds);

  /* Landlock's rulesets, made while every mount is final and we are still root, before READY so
   * a rule create cannot honour fails create; enforced with the filters (the last steps). */
  struct landlock_prepared ll = {0};
  if (landlock_prepare(c->landlock, c->n_landlock, p->cwd, &ll, &err) < 0)
    fail(sync_fd, err);

  /* A NOTIFY filter's listener fd must reach linux.seccomp.listenerPath, and only the runtime
   * that is with us now can send it: the filters are loaded before READY (below), as runc does. */
  bool seccomp_early = c->seccomp && c->seccomp->notify;

  /* The last steps (linux/last_steps.h): credentials, no_new_privs, the filters, run after the
   * trampoline's execve (or here, from the sealed copy) right before the program's. Built now,
   * so what cannot work fails `create`; the memfd made now, as a filter may deny memfd_create.
   * The runtime waits for exec.fifo (create) or the sync socket (run) to close at the program's
   * execve: both stay open until then. After `start`, failures go to the container's stderr. */
  struct last_steps ls;
  last_steps_init(&ls, STDERR_FILENO, false);
  struct last_steps_process lp = {
      .process = p,
      .cwd_as_user = !cwd_ok,
      .filters = {seccomp_early ? NULL : c->seccomp_stacked, seccomp_early ? NULL : c->seccomp},
      .keep_fds = {c->fifo_fd >= 0 ? c->fifo_fd : sync_fd},
      .n_keep_fds = 1,
      .landlock = seccomp_early ? NULL : &ll,
  };
  if (last_steps_for_process(&ls, &lp, &err) < 0)
    fail(sync_fd, err);
  /* codemode-run's learned policy and its supervisor's listener: the last filters. */
  if ((c->seccomp_policy || c->seccomp_listener) &&
      seccomp_supervised_emit(&ls, c->seccomp_policy, c->seccomp_listener, sync_fd, &err) < 0)
    fail(sync_fd, err);
  struct init_exec ie = {.c = c, .ls = &ls, .keep_fds = {lp.keep_fds[0]}, .n_keep_fds = 1, .trampoline = {.fd = -1}};
  for (size_t i = 0; !seccomp_early && i < ll.n; i++)
    ie.keep_fds[ie.n_keep_fds++] = ll.fds[i];
  if (!c->exec_direct) {
    size_t len;
    cleanup_free void *prog = last_steps_serialize(&ls, &len);
    if (exec_trampoline_prepare(&ie.trampoline, prog, len, &err) < 0)
      fail(sync_fd, err);
  }

  /* The early load, after the trampoline is made (memfd, fchmod, seals): a NOTIFY rule for
   * chmod or memfd_create must not meet the runtime's own calls (issue 28). What is left under
   * the filter: the start fifo, startContainer hooks, the close-on-exec sweep and the execve. */
  if (seccomp_early) {
    process_load_seccomp_early(sync_fd, &ll, c->seccomp_stacked, c->seccomp);
  }

  cm_debug("ready: %s will be exec'd%s", exe, c->exec_direct ? "" : " through the sealed trampoline");
  sync_send(sync_fd, SYNC_READY, 0, NULL, -1, NULL);
  expect(sync_fd, SYNC_READY); /* the runtime has recorded us; EOF here means it died first */

  /* Wait for `start`. */
  if (c->fifo_fd >= 0) {
    cm_log_route_to_sync(-1, NULL);
    close(sync_fd);
    char byte;
    ssize_t n;
    do
      n = read(c->fifo_fd, &byte, 1);
    while (n < 0 && errno == EINTR);
    /* fifo_fd stays open: `start` waits for its last reader to go, which must be the program's
     * execve, after the startContainer hooks, not now. */
  } else {
    /* `run`: the go comes on the sync socket, which likewise stays open until the program's
     * execve. EOF: the runtime died, so must we. */
    expect(sync_fd, SYNC_START);
  }

  /* From here errors go to the container's stderr: the runtime that created us is gone. */
  reset_signals();
  if (s->hooks[SPEC_HOOK_START_CONTAINER].count) {
    /* runc 1.1.5 gives them status "created". They run as the process will: its cwd and
     * environment, and through the same last steps, so with its user, capabilities,
     * no_new_privs and filters. */
    cleanup_free char *json = init_state_json(c, host_pid, "created");
    struct hook_exec how = {.default_env = envp, .exec = exec_confined, .exec_arg = &ie};
    if (hooks_run(s->hooks, SPEC_HOOK_START_CONTAINER, json, &how, &err) < 0)
      goto exec_failed;
  }
  /* Nothing of the runtime's reaches the process but the fds asked for (CVE-2024-21626 class):
   * everything else is close-on-exec, the trampoline's own fd included (it closes it itself). */
  if (fds_close_on_exec_from(3 + c->preserve_fds, &err) < 0)
    goto exec_failed;
  cm_debug("start: exec %s", exe);
  exec_confined(&ie, exe, p->args.items, envp);
  cm_error_set(&err, errno, "exec %s", exe);
exec_failed:;
  cleanup_free char *msg = cm_error_format(err);
  dprintf(STDERR_FILENO, "codemode: %s\n", msg);
  _exit(127);
}
