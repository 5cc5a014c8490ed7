/* exec: the runtime side. Opens the container (locked), builds the process from the kept
 * config.json and the options (or process.json), compiles the container's seccomp filter and
 * forks stage1 into the container's cgroup. Then, unlocked (the process may have to wait for a
 * paused container: `resume` must be able to run meanwhile): drives stage1 over the sync socket
 * until the process has exec'd (EOF) or reported an error, writes the pid file, and either
 * returns (--detach) or waits for the process in the foreground. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/pidfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "linux/console.h"
#include "linux/seccomp.h"
#include "linux/clone_child.h"
#include "linux/selfclone.h"
#include "runtime/container.h"
#include "runtime/exec_process.h"
#include "runtime/foreground.h"
#include "runtime/runtime.h"
#include "runtime/seccomp_listener.h"
#include "runtime/state.h"
#include "util/cleanup.h"
#include "util/log.h"
#include "util/sync.h"

/* policy/'s POLICY_PROFILE_ANNOTATION: runtime/ does not include policy/. */
#define EXEC_PROFILE_ANNOTATION "run.codemode.profile"

static char *xstrdup(const char *s) {
  char *d = strdup(s);
  if (d == NULL)
    abort();
  return d;
}

static void strv_clear(struct spec_strv *v) {
  for (size_t i = 0; i < v->count; i++)
    free(v->items[i]);
  free(v->items);
  *v = (struct spec_strv){0};
}

static void strv_push(struct spec_strv *v, const char *s) {
  v->items = realloc(v->items, (v->count + 2) * sizeof(char *));
  if (v->items == NULL)
    abort();
  v->items[v->count++] = xstrdup(s);
  v->items[v->count] = NULL;
}

/* K=V replaces an existing K (the later one wins, as with runc), else is appended. */
static void env_set(struct spec_strv *env, const char *kv) {
  const char *eq = strchr(kv, '=');
  size_t keylen = eq ? (size_t)(eq - kv) : strlen(kv);
  for (size_t i = 0; i < env->count; i++) {
    if (strncmp(env->items[i], kv, keylen) == 0 && env->items[i][keylen] == '=') {
      free(env->items[i]);
      env->items[i] = xstrdup(kv);
      return;
    }
  }
  strv_push(env, kv);
}

static int cap_number(const char *name, struct cm_error **err) {
  cleanup_free char *canon = NULL;
  /* runc accepts "CAP_X"; Docker-style "X" is accepted too. */
  if (strncasecmp(name, "CAP_", 4) != 0) {
    if (asprintf(&canon, "CAP_%s", name) < 0)
      abort();
    name = canon;
  }
  cap_value_t cap;
  if (cap_from_name(name, &cap) < 0 || cap < 0 || cap >= 64) {
    /* As in config.json (spec/process.c) and as runc: a warning, and the process gets less. */
    cm_warn("--cap: unknown capability \"%s\" ignored", name);
    return -1;
  }
  return (int)cap;
}

/* The process from the flags, on top of the container's own process (in place). */
static int process_from_flags(struct spec_process *p, const struct exec_options *o, struct cm_error **err) {
  if (o->n_args == 0)
    return cm_error_set(err, 0, "exec: args must not be empty");
  strv_clear(&p->args);
  for (size_t i = 0; i < o->n_args; i++)
    strv_push(&p->args, o->args[i]);
  if (o->cwd) {
    if (o->cwd[0] != '/')
      return cm_error_set(err, 0, "--cwd: \"%s\" must be an absolute path", o->cwd);
    free(p->cwd);
    p->cwd = xstrdup(o->cwd);
  }
  for (size_t i = 0; i < o->n_env; i++)
    env_set(&p->env, o->env[i]);
  p->terminal = o->tty;
  if (o->no_new_privs)
    p->no_new_privileges = true;
  if (o->has_user) {
    p->user.uid = o->uid;
    if (o->has_gid)
      p->user.gid = o->gid;
    free(p->user.username);
    p->user.username = NULL;
  }
  if (o->n_additional_gids) {
    size_t n = p->user.n_additional_gids + o->n_additional_gids;
    p->user.additional_gids = realloc(p->user.additional_gids, n * sizeof(uint32_t));
    if (p->user.additional_gids == NULL)
      abort();
    memcpy(p->user.additional_gids + p->user.n_additional_gids, o->additional_gids,
           o->n_additional_gids * sizeof(uint32_t));
    p->user.n_additional_gids = n;
  }
  for (size_t i = 0; i < o->n_caps; i++) {
    int cap = cap_number(o->caps[i], err);
    if (cap < 0)
      continue;
    /* Never inheritable: a cap there survives execve of non-privileged binaries (CVE-2022-29162). */
    uint64_t bit = 1ULL << cap;
    p->capabilities.present = true;
    p->capabilities.bounding |= bit;
    p->capabilities.effective |= bit;
    p->capabilities.permitted |= bit;
    p->capabilities.ambient |= bit;
  }
  if (o->apparmor) {
    free(p->apparmor_profile);
    p->apparmor_profile = xstrdup(o->apparmor);
  }
  if (o->process_label) {
    free(p->selinux_label);
    p->selinux_label = xstrdup(o->process_label);
  }
  return 0;
}

/* process.json replaces the container's process; what it leaves out comes from the container
 * (as runc does): capabilities, rlimits, LSM labels, oomScoreAdj. Moves fields out of `from`. */
static void process_fallbacks(struct spec_process *p, struct spec_process *from) {
  if (!p->capabilities.present)
    p->capabilities = from->capabilities;
  if (p->n_rlimits == 0) {
    p->rlimits = from->rlimits;
    p->n_rlimits = from->n_rlimits;
    from->rlimits = NULL;
    from->n_rlimits = 0;
  }
  if (p->apparmor_profile == NULL) {
    p->apparmor_profile = from->apparmor_profile;
    from->apparmor_profile = NULL;
  }
  if (p->selinux_label == NULL) {
    p->selinux_label = from->selinux_label;
    from->selinux_label = NULL;
  }
  if (!p->has_oom_score_adj) {
    p->has_oom_score_adj = from->has_oom_score_adj;
    p->oom_score_adj = from->oom_score_adj;
  }
}

/* The Landlock layers init was given (kept by create): the exec'd process gets the same ones.
 * The state says whether there are any; when it says so, a missing or unreadable file refuses
 * the exec rather than run it looser than init. */
static int load_kept_landlock(const struct container *c, struct spec_landlock **layers, size_t *n,
                              struct cm_error **err) {
  *layers = NULL;
  *n = 0;
  if (spec_kv_get(&c->st.annotations, SPEC_LANDLOCK_ABI_ANNOTATION) == NULL)
    return 0;
  cleanup_close int fd = openat(c->dirfd, "landlock.json", O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0)
    return cm_error_set(err, errno, "exec refused: the container's Landlock rules (landlock.json in its state) are missing");
  cleanup_free char *json = malloc((size_t)st.st_size + 1);
  if (json == NULL)
    abort();
  ssize_t len = read(fd, json, (size_t)st.st_size);
  if (len < 0)
    return cm_error_set(err, errno, "exec refused: read the container's Landlock rules");
  int abi;
  if (spec_landlock_kept_parse(json, (size_t)len, "landlock.json", layers, n, &abi, err) < 0)
    return cm_error_prefix(err, "exec refused: the container's Landlock rules");
  return 0;
}

static struct spec *load_kept_config(int dirfd, struct cm_error **err) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/fd/%d/config.json", dirfd);
  return spec_load_file(path, "config.json", err);
}

/* CLONE_NEW* of every namespace init has that we do not share. Joining one we are already in
 * is pointless, and for the user namespace an error (EINVAL). */
static int namespaces_to_join(pid_t init, struct cm_error **err) {
  int flags = 0;
  for (int t = 0; t < SPEC_NS_COUNT; t++) {
    char theirs[64], ours[64];
    snprintf(theirs, sizeof(theirs), "/proc/%d/ns/%s", init, spec_ns_proc_name(t));
    snprintf(ours, sizeof(ours), "/proc/self/ns/%s", spec_ns_proc_name(t));
    struct stat a, b;
    if (stat(theirs, &a) < 0) {
      /* Not seeing a namespace is no reason to stay in ours: only a type this kernel lacks is. */
      if (errno == ENOENT)
        continue;
      if (errno == EACCES && geteuid() != 0)
        return cm_error_set(err, errno,
                            "cannot see the namespaces of the container's init (pid %d): it has not started "
                            "its program yet, and until then it is closed to a non-root runtime (CVE-2019-5736); "
                            "start the container first",
                            init);
      return cm_error_set(err, errno, "stat %s", theirs);
    }
    if (stat(ours, &b) < 0)
      continue;
    if (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
      flags |= spec_ns_clone_flag(t);
  }
  return flags;
}

struct exec_run {
  const struct exec_options *opts;
  int sock;
  pid_t stage1, child;
  int console_master; /* foreground with a terminal and no console socket */
  int host_tty;       /* the terminal it is proxied to (console_host_open) */
  const struct spec_seccomp *seccomp;  /* the container's, for a NOTIFY listener */
  const struct container_state *state; /* the container's */
};

/* The process's own NOTIFY listener goes to listenerPath (runc: status "running", the process's
 * pid); the process waits for our answer before going on. */
static int forward_listener(struct exec_run *r, int fd, struct cm_error **err) {
  int rc = -1;
  if (r->seccomp->listener_path == NULL)
    cm_error_set(err, 0, "config.json: .linux.seccomp: SCMP_ACT_NOTIFY rules need a listenerPath");
  else if (seccomp_listener_send(r->seccomp, r->state, "running", r->child, fd, err) == 0)
    rc = sync_send(r->sock, SYNC_SECCOMP_NOTIFY_FD, 0, NULL, -1, err);
  close(fd);
  return rc;
}

/* Drive stage1 and the process until EOF (the process exec'd) or an error. */
static int drive_child(struct exec_run *r, struct cm_error **err) {
  if (sync_send(r->sock, SYNC_CGROUP_JOINED, 0, NULL, -1, err) < 0)
    return -1;
  int pending_listener = -1; /* arrived before stage1 told us the process's pid */
  for (;;) {
    struct sync_msg m;
    int fd = -1;
    int rc = sync_recv(r->sock, &m, &fd, err);
    if (rc < 0)
      goto fail;
    if (rc == 1) {
      if (pending_listener >= 0)
        close(pending_listener);
      if (r->child <= 0)
        return cm_error_set(err, 0, "exec: the process could not be created");
      return 0;
    }
    switch (m.type) {
    case SYNC_ERROR: cm_error_set(err, (int)m.value, "%s", m.text); goto fail;
    case SYNC_INIT_PID:
      r->child = (pid_t)m.value;
      waitpid(r->stage1, NULL, 0);
      r->stage1 = 0;
      if (pending_listener >= 0) {
        int l = pending_listener;
        pending_listener = -1;
        if (forward_listener(r, l, err) < 0)
          goto fail;
      }
      break;
    case SYNC_CONSOLE_FD:
      if (console_route_master(r->opts->console_socket, fd, &r->console_master, err) < 0)
        goto fail;
      break;
    case SYNC_SECCOMP_NOTIFY_FD:
      if (fd < 0) {
        cm_error_set(err, EPROTO, "seccomp: no listener fd received");
        goto fail;
      }
      if (r->child <= 0)
        pending_listener = fd;
      else if (forward_listener(r, fd, err) < 0)
        goto fail;
      break;
    default:
      if (fd >= 0)
        close(fd);
      cm_error_set(err, EPROTO, "sync: unexpected message %u", m.type);
      goto fail;
    }
  }
fail:
  if (pending_listener >= 0)
    close(pending_listener);
  return -1;
}

static void reap(pid_t *pid) {
  if (*pid > 0) {
    kill(*pid, SIGKILL);
    waitpid(*pid, NULL, 0);
  }
  *pid = 0;
}

/* Everything up to the process having exec'd; under the container's lock until the process is
 * in the container's cgroup. Returns the pid. */
static int exec_start(const struct runtime_context *ctx, const struct exec_options *o, struct exec_run *r,
                      struct cm_error **err) {
  struct container c;
  if (container_open(ctx, o->id, STATE_DIR_WRITE, &c, err) < 0)
    return -1;
  struct spec *s = NULL;
  struct spec_process *loaded = NULL;
  struct seccomp_program seccomp = {0}, seccomp_stacked = {0};
  struct spec_landlock *landlock = NULL;
  size_t n_landlock = 0;
  const struct spec_seccomp *stacked_spec = NULL;
  bool has_seccomp = false, has_stacked = false;
  int pidfd = -1, child_sock = -1;
  struct cgroup *sub = NULL;
  int ns_fds[SPEC_NS_COUNT];
  for (int t = 0; t < SPEC_NS_COUNT; t++)
    ns_fds[t] = -1;
  int rc = -1;

  switch (c.status) {
  case STATUS_CREATED:
  case STATUS_RUNNING: break;
  case STATUS_PAUSED:
    if (o->ignore_paused)
      break;
    cm_error_set(err, 0, "cannot exec in a paused container (use --ignore-paused to override)");
    goto out;
  default: cm_error_set(err, 0, "cannot exec in a stopped container"); goto out;
  }
  if (o->n_sub_cgroups > 0) {
    if (c.cgroup == NULL) {
      cm_error_set(err, 0, "--cgroup: container \"%s\" has no cgroup (created with --cgroup-manager disabled)", o->id);
      goto out;
    }
    if (cgroup_open_sub(c.cgroup, o->sub_cgroups, o->n_sub_cgroups, &sub, err) < 0)
      goto out;
    /* A sub-cgroup frozen on its own: refused like a paused container. */
    if (!o->ignore_paused && cgroup_refuse_frozen(sub, err) < 0) {
      cm_error_prefix(err, "exec --cgroup (use --ignore-paused to wait for it to be thawed)");
      goto out;
    }
  }
  /* A delegated cgroup holds no process of its own (cgroup/delegate.c): its leaf, where init is. */
  if (sub == NULL && c.cgroup != NULL && cgroup_is_delegated(c.cgroup) && cgroup_open_leaf(c.cgroup, &sub, err) < 0) {
    cm_error_prefix(err, "exec: the delegated cgroup's leaf");
    goto out;
  }
  /* The cgroup the process joins: the container's, or the sub-cgroup --cgroup names. */
  struct cgroup *target = sub ? sub : c.cgroup;
  s = load_kept_config(c.dirfd, err);
  if (s == NULL)
    goto out;
  /* The container's own process counts too: what it may hold, the others in it may. */
  bool exec_direct = s->process && selfclone_required(s, s->process);
  if (o->process_path) {
    loaded = spec_process_load_file(o->process_path, err);
    if (loaded == NULL)
      goto out;
    if (s->process)
      process_fallbacks(loaded, s->process);
    spec_process_free(s->process);
    s->process = loaded;
    loaded = NULL;
  } else if (s->process == NULL) {
    cm_error_set(err, 0, "config.json: .process: missing");
    goto out;
  } else if (process_from_flags(s->process, o, err) < 0) {
    goto out;
  }
  const struct spec_process *p = s->process;
  cm_debug("exec %s: process %s (%s), status %s, init pid %d", o->id, p->args.count ? p->args.items[0] : "-",
           o->process_path ? o->process_path : "from the flags", container_status_name(c.status), (int)c.st.pid);
  if (p->terminal && o->detach && o->console_socket == NULL) {
    cm_error_set(err, 0, "cannot allocate a tty for a detached process without --console-socket");
    goto out;
  }
  /* In the foreground the pty is proxied to our terminal: there must be one (runc fails so). */
  if (p->terminal && !o->detach && o->console_socket == NULL &&
      (r->host_tty = console_host_open("--tty (or process.terminal)", err)) < 0)
    goto out;
  if (!p->terminal && o->console_socket) {
    cm_error_set(err, 0, "--console-socket needs a terminal (--tty or process.terminal)");
    goto out;
  }
  /* The container's filter applies to every process in it, exec'd ones too. */
  if (s->linux_.seccomp.present) {
    if (seccomp_compile(&s->linux_.seccomp, &seccomp, err) < 0)
      goto out;
    has_seccomp = true;
  }
  /* The kept config.json is the caller's, from before the profile tightened it: the profile
   * recorded in the state decides what this process may have, so an exec into a hardened
   * container gets no capability, filter or limit its init did not. */
  const char *recorded = spec_kv_get(&c.st.annotations, EXEC_PROFILE_ANNOTATION);
  if (recorded && o->harden == NULL) {
    cm_error_set(err, EPERM, "container \"%s\" runs under profile %s: exec refused without it", o->id,
                 recorded);
    goto out;
  }
  if (o->harden) {
    if (o->harden(o->harden_arg, recorded, s->process, &stacked_spec, err) < 0)
      goto out;
    if (stacked_spec && stacked_spec->present) {
      if (seccomp_compile(stacked_spec, &seccomp_stacked, err) < 0) {
        cm_error_prefix(err, "policy profile");
        goto out;
      }
      has_stacked = true;
    }
  }

  if (load_kept_landlock(&c, &landlock, &n_landlock, err) < 0)
    goto out;

  /* CVE-2019-5736: the exec'd process is a copy of us until its execve. Where non-dumpable
   * plus the exec trampoline do not cover it (selfclone.h), re-exec from a sealed copy now,
   * before anything names the container's init (does not return). */
  exec_direct = exec_direct || selfclone_required(s, s->process);
  if (exec_direct && selfclone_ensure(err) < 0)
    goto out;
  /* Already running from a sealed copy (started that way): no need for the trampoline. */
  exec_direct = exec_direct || selfclone_is_sealed();

  /* The pidfd first, then the start-time check: the fd then names the init we verified. */
  pidfd = (int)pidfd_open(c.st.pid, 0);
  bool no_pidfd = pidfd < 0 && errno == ENOSYS;
  int ns_flags = namespaces_to_join(c.st.pid, err);
  if (ns_flags < 0) {
    if (!state_pid_alive(c.st.pid, c.st.pid_start_time)) {
      cm_error_freep(err);
      cm_error_set(err, 0, "cannot exec in a stopped container");
    }
    goto out;
  }
  if (no_pidfd) {
    /* Kernels before 5.3 (and valgrind): the namespace files, opened before the same check. */
    for (int t = 0; t < SPEC_NS_COUNT; t++) {
      if (!(ns_flags & spec_ns_clone_flag(t)))
        continue;
      char path[64];
      snprintf(path, sizeof(path), "/proc/%d/ns/%s", c.st.pid, spec_ns_proc_name(t));
      ns_fds[t] = open(path, O_RDONLY | O_CLOEXEC);
      if (ns_fds[t] < 0)
        no_pidfd = false; /* init is gone: reported just below */
    }
  }
  if ((pidfd < 0 && !no_pidfd) || !state_pid_alive(c.st.pid, c.st.pid_start_time)) {
    cm_error_set(err, 0, "cannot exec in a stopped container");
    goto out;
  }

  int pair[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0) {
    cm_error_set(err, errno, "create sync channel");
    goto out;
  }
  int min_fd = 3 + o->preserve_fds;
  r->sock = fd_move_above(pair[0], min_fd, err);
  child_sock = fd_move_above(pair[1], min_fd, err);
  if (pidfd >= 0 && (pidfd = fd_move_above(pidfd, min_fd, err)) < 0)
    goto out;
  for (int t = 0; t < SPEC_NS_COUNT; t++)
    if (ns_fds[t] >= 0 && (ns_fds[t] = fd_move_above(ns_fds[t], min_fd, err)) < 0)
      goto out;
  if (r->sock < 0 || child_sock < 0)
    goto out;

  int cgroup_fd = target ? cgroup_open_for_clone(target) : -1;
  bool in_cgroup = false;
  cm_debug("exec: joining init's namespaces (flags 0x%x) and cgroup %s", ns_flags, target ? cgroup_path(target) : "none");
  r->stage1 = clone_child(0, cgroup_fd, &in_cgroup);
  if (r->stage1 < 0) {
    cm_error_set(err, errno, "fork");
    if (cgroup_fd >= 0)
      close(cgroup_fd);
    goto out;
  }
  if (r->stage1 == 0) {
    cm_log_route_to_sync(child_sock, "exec-stage1");
    /* The state dir's flock must not outlive this command in the process. */
    close(c.dirfd);
    close(r->sock);
    /* A host cgroupfs directory must not be reachable from the container (CVE-2024-21626). */
    if (cgroup_fd >= 0)
      close(cgroup_fd);
    struct exec_child_config cc = {
        .process = p,
        .id = o->id,
        .sync_fd = child_sock,
        .pidfd = pidfd,
        .ns_flags = ns_flags,
        .preserve_fds = o->preserve_fds,
        .exec_direct = exec_direct,
        .pty_onlcr_off = o->console_socket == NULL,
        .seccomp = has_seccomp ? &seccomp : NULL,
        .seccomp_stacked = has_stacked ? &seccomp_stacked : NULL,
        .landlock = landlock,
        .n_landlock = n_landlock,
    };
    memcpy(cc.ns_fds, ns_fds, sizeof(ns_fds));
    exec_stage1(&cc);
  }
  close(child_sock);
  child_sock = -1;
  if (cgroup_fd >= 0)
    close(cgroup_fd);
  if (in_cgroup)
    cgroup_mark_cloned_into(target);
  if (target && cgroup_enter(target, r->stage1, err) < 0) {
    cm_error_prefix(err, sub ? "exec --cgroup: join the sub-cgroup" : "exec: join the container's cgroup");
    goto fail;
  }
  /* In the container's cgroup: a delete from now on kills the process with the rest. Until it
   * has exec'd it runs only while the container does (--ignore-paused: until `resume`). */
  container_unlock(&c);
  r->seccomp = &s->linux_.seccomp;
  r->state = &c.st;
  if (drive_child(r, err) < 0)
    goto fail;
  rc = 0;
  goto out;
fail:
  reap(&r->stage1);
  reap(&r->child);
out:
  if (child_sock >= 0)
    close(child_sock);
  if (pidfd >= 0)
    close(pidfd);
  for (int t = 0; t < SPEC_NS_COUNT; t++)
    if (ns_fds[t] >= 0)
      close(ns_fds[t]);
  if (has_seccomp)
    seccomp_program_free(&seccomp);
  if (has_stacked)
    seccomp_program_free(&seccomp_stacked);
  for (size_t i = 0; i < n_landlock; i++)
    spec_landlock_clear(&landlock[i]);
  free(landlock);
  spec_process_free(loaded);
  spec_free(s);
  cgroup_free(sub);
  container_close(&c);
  return rc;
}

int runtime_exec(const struct runtime_context *ctx, const struct exec_options *o, int *exit_status,
                 struct cm_error **err) {
  *exit_status = 0;
  if (container_id_validate(o->id, err) < 0)
    return -1;
  /* In the foreground, every signal is blocked before the process exists, so none sent
   * meanwhile is lost: they wait in the signalfd and are forwarded once it runs. */
  sigset_t all, old;
  sigfillset(&all);
  sigdelset(&all, SIGSEGV);
  sigdelset(&all, SIGBUS);
  sigdelset(&all, SIGFPE);
  sigdelset(&all, SIGILL);
  if (!o->detach)
    sigprocmask(SIG_BLOCK, &all, &old);
  struct exec_run r = {.opts = o, .sock = -1, .console_master = -1, .host_tty = -1};
  int rc = -1;
  cleanup_close int sigfd = -1;
  if (exec_start(ctx, o, &r, err) < 0)
    goto out;
  if (o->pid_file && pid_file_write(o->pid_file, r.child, err) < 0) {
    reap(&r.child);
    goto out;
  }
  if (o->detach) {
    rc = 0;
    goto out;
  }
  sigfd = signalfd(-1, &all, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sigfd < 0) {
    cm_error_set(err, errno, "signalfd");
    reap(&r.child);
    goto out;
  }
  foreground_wait_and_forward(r.child, sigfd, r.console_master, r.host_tty, exit_status);
  rc = 0;
out:
  if (r.sock >= 0)
    close(r.sock);
  if (r.console_master >= 0)
    close(r.console_master);
  if (r.host_tty >= 0)
    close(r.host_tty);
  if (!o->detach)
    sigprocmask(SIG_SETMASK, &old, NULL);
  return rc;
}
