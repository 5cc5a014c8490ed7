/* start, kill, delete, state and list: operations on a container that exists. start, kill and
 * delete take the state dir's flock, so two of them on one id are serialised, and give it up
 * before any wait the container or a hook decides; state and list take none (state.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "linux/inherited_mounts.h"
#include "linux/seccomp_listener.h"
#include "runtime/container.h"
#include "runtime/egress.h"
#include "runtime/hooks.h"
#include "runtime/notify_socket.h"
#include "runtime/runtime.h"
#include "runtime/idrange.h"
#include "runtime/state.h"
#include "util/cleanup.h"
#include "util/log.h"
#include "util/sync.h"

static struct spec *load_kept_config(int dirfd, struct cm_error **err) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/fd/%d/config.json", dirfd);
  return spec_load_file(path, "config.json", err);
}

static void run_hooks_logged_from(const struct spec *s, const struct container *o, enum spec_hook_kind kind,
                                  const char *status) {
  struct cm_error *err = NULL;
  if (s && s->hooks[kind].count) {
    cleanup_free char *json = state_oci_json(&o->st, status);
    /* poststart and poststop failures are warnings, by the spec, and the next hooks still run.
     * In the bundle directory, as runc runs them. */
    struct hook_exec how = {.cwd = o->st.bundle, .keep_going = true};
    hooks_run(s->hooks, kind, json, &how, &err);
  }
}

/* The kept config, for the hooks a later command runs; NULL (with a warning) when it cannot be
 * read: poststart and poststop failures are warnings, by the spec. */
static struct spec *load_config_for_hooks(const struct container *o) {
  struct cm_error *err = NULL;
  struct spec *s = load_kept_config(o->dirfd, &err);
  if (err) {
    cleanup_free char *msg = cm_error_format(err);
    cm_warn("%s", msg);
    cm_error_free(err);
  }
  return s;
}

int runtime_start(const struct runtime_context *ctx, const char *id, struct cm_error **err) {
  struct container o;
  if (container_open(ctx, id, STATE_DIR_WRITE_AFTER_CREATE, &o, err) < 0)
    return -1;
  int rc = -1;
  int fd = -1, notify_sock = -1;
  const char *notify_host = NULL;
  struct spec *s = NULL;
  switch (o.status) {
  case STATUS_CREATED: break;
  case STATUS_PAUSED: cm_error_set(err, 0, "cannot start a container in the paused state"); goto out;
  case STATUS_STOPPED: cm_error_set(err, 0, "cannot start a container that has stopped"); goto out;
  case STATUS_CREATING: cm_error_set(err, 0, "cannot start a container that is still being created"); goto out;
  default: cm_error_set(err, 0, "cannot start an already running container"); goto out;
  }
  /* NOTIFY_SOCKET: listen before the process can speak (notify_socket.h). */
  notify_host = getenv("NOTIFY_SOCKET");
  if (notify_host && (notify_sock = notify_socket_listen(o.dirfd, err)) < 0)
    goto out;
  /* Non-blocking: if init died, there is no reader and open fails with ENXIO. */
  fd = openat(o.dirfd, "exec.fifo", O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    cm_error_set(err, 0, "container not running");
    goto out;
  }
  if (write(fd, "0", 1) != 1) {
    cm_error_set(err, errno, "start: write exec.fifo");
    goto out;
  }
  unlinkat(o.dirfd, "exec.fifo", 0);
  cm_debug("start %s: init %d released (exec.fifo); waiting for its exec", id, (int)o.st.pid);
  /* Started: what the lock guards is done. What follows waits for init (paused meanwhile, it
   * waits until `resume`) and runs hooks (which may run codemode on this container): unlocked. */
  s = load_config_for_hooks(&o);
  container_unlock(&o);
  /* init holds the only read end of the fifo until it execs (close-on-exec) or dies; then our
   * write end reports POLLERR. Waiting for it makes `start` return once the user's process runs,
   * after the startContainer hooks, so poststart hooks run after it, as the spec orders. */
  struct pollfd pfd = {.fd = fd, .events = 0};
  while (poll(&pfd, 1, -1) < 0 && errno == EINTR)
    ;
  run_hooks_logged_from(s, &o, SPEC_HOOK_POSTSTART, "running");
  rc = 0;
out:
  if (fd >= 0)
    close(fd);
  spec_free(s);
  pid_t init = o.st.pid;
  container_close(&o);
  /* As runc, `start` returns once the container said READY (or died); unlocked meanwhile, so
   * state, kill and the rest never wait for it. */
  if (rc == 0 && notify_sock >= 0)
    notify_socket_relay(notify_sock, notify_host, init, init);
  if (notify_sock >= 0)
    close(notify_sock);
  return rc;
}

/* A supervisor's seccomp listener (linux/seccomp_listener.h): init loaded its filter and waits
 * for us to take the fd (pidfd_getfd) and give it to the supervisor. */
static int take_listener(int sock, const struct sync_msg *m, const struct runtime_listener *l,
                         struct cm_error **err) {
  if (l == NULL || m->type != SYNC_LISTENER_READY)
    return cm_error_set(err, EPROTO, "sync: unexpected message %u after start", m->type);
  int fd = seccomp_listener_take(l->init, err);
  if (fd < 0 || l->attach(l->arg, fd, err) < 0)
    return -1;
  return sync_send(sock, SYNC_LISTENER_TAKEN, 0, NULL, -1, err);
}

int runtime_start_at_once(const struct runtime_context *ctx, const char *id, const struct spec *spec,
                          int start_sock, const struct runtime_listener *listener, struct cm_error **err) {
  if (sync_send(start_sock, SYNC_START, 0, NULL, -1, err) < 0) {
    close(start_sock);
    return cm_error_prefix(err, "start container \"%s\"", id);
  }
  /* init's end of the socket is close-on-exec: it hangs up at the execve of the user's process
   * (or when init dies), after the startContainer hooks, so poststart runs after it. Before
   * that, init may hand over a supervisor's listener. */
  for (;;) {
    /* With --debug, init's last lines (startContainer hooks, the exec) are read and logged. */
    struct pollfd pfd = {.fd = start_sock, .events = listener || cm_log_debug_enabled() ? POLLIN : 0};
    while (poll(&pfd, 1, -1) < 0 && errno == EINTR)
      ;
    if (!(pfd.revents & POLLIN))
      break;
    struct sync_msg m;
    if (sync_recv(start_sock, &m, NULL, err) != 0) {
      cm_error_freep(err);
      break; /* EOF: the execve (or init died, which wait reports) */
    }
    if (take_listener(start_sock, &m, listener, err) < 0) {
      close(start_sock);
      return cm_error_prefix(err, "start container \"%s\"", id);
    }
  }
  close(start_sock);
  /* Nothing else to do unless there are poststart hooks: most runs have none. */
  if (spec && spec->hooks[SPEC_HOOK_POSTSTART].count == 0)
    return 0;
  /* The state for the hooks' stdin only: no lock, so that a hook may run codemode on us. */
  struct container o;
  if (container_open(ctx, id, STATE_DIR_READ, &o, err) < 0)
    return -1;
  struct spec *kept = spec ? NULL : load_config_for_hooks(&o);
  run_hooks_logged_from(spec ? spec : kept, &o, SPEC_HOOK_POSTSTART, "running");
  spec_free(kept);
  container_close(&o);
  return 0;
}

/* pidfd: the signal reaches the process we checked, never one that reused its pid. */
static int signal_init(const struct container *o, int signo, struct cm_error **err) {
  if (o->st.pid <= 0) /* kill(2) of 0 or -1 would reach our process group or everything */
    return cm_error_set(err, 0, "container not running");
  cleanup_close int pidfd = pidfd_open(o->st.pid, 0);
  bool no_pidfd = pidfd < 0 && errno == ENOSYS;
  if ((pidfd < 0 && !no_pidfd) || !state_pid_alive(o->st.pid, o->st.pid_start_time))
    return cm_error_set(err, 0, "container not running");
  /* No pidfd_open (a kernel before 5.3, or valgrind 3.19): kill(2) right after the start-time
   * check, so a reused pid could only be hit within that instant. */
  if (no_pidfd) {
    if (kill(o->st.pid, signo) == 0)
      return 0;
    if (errno == ESRCH)
      return cm_error_set(err, 0, "container not running");
    return cm_error_set(err, errno, "kill container \"%s\" with signal %d", o->st.id, signo);
  }
  if (pidfd_send_signal(pidfd, signo, NULL, 0) < 0) {
    if (errno == ESRCH)
      return cm_error_set(err, 0, "container not running");
    return cm_error_set(err, errno, "kill container \"%s\" with signal %d", o->st.id, signo);
  }
  return 0;
}

/* kill --all without a cgroup (rootless): every process of init's pid namespace, init last. */
static int kill_pidns(struct container *o, int signo, struct cm_error **err) {
  pid_t *pids = NULL;
  size_t n = 0;
  if (container_pidns_pids(o->st.pid, &pids, &n, err) < 0)
    return -1;
  for (size_t i = 0; i < n; i++)
    if (pids[i] != o->st.pid)
      kill(pids[i], signo);
  free(pids);
  return signal_init(o, signo, err);
}

int runtime_kill(const struct runtime_context *ctx, const char *id, int signo, bool all, struct cm_error **err) {
  struct container o;
  if (container_open(ctx, id, STATE_DIR_WRITE, &o, err) < 0)
    return -1;
  cm_debug("kill %s: signal %d%s, status %s, init pid %d", id, signo, all ? " to every process (--all)" : "",
           container_status_name(o.status), (int)o.st.pid);
  int rc = 0;
  if (o.status == STATUS_STOPPED && all) {
    /* --all still reaches what is left in the cgroup (processes that outlived init without a
     * pid namespace); nothing left, or no cgroup at all, is not an error (runc). */
    struct cm_error *kerr = NULL;
    /* Nothing left: the cgroup is not touched at all. containerd's shim kills --all once init
     * has exited; under the systemd driver the scope is being stopped by then, and freezing or
     * killing it made StopPodSandbox hang (tests/cri in the VM's systemd variant). */
    pid_t *left = NULL;
    size_t n_left = 0;
    bool any = o.cgroup && cgroup_pids(o.cgroup, &left, &n_left, &kerr) == 0 && n_left > 0;
    free(left);
    cm_error_freep(&kerr);
    if (any && cgroup_kill_all(o.cgroup, signo, &kerr) < 0 && kerr->errnum != ENOTSUP) {
      rc = -1;
      *err = kerr;
      kerr = NULL;
    }
    cm_error_freep(&kerr);
  } else if (o.status == STATUS_STOPPED || o.status == STATUS_CREATING)
    rc = cm_error_set(err, 0, "container not running");
  else if (all && o.cgroup)
    rc = cgroup_kill_all(o.cgroup, signo, err);
  else if (all && o.st.pid > 0)
    rc = kill_pidns(&o, signo, err);
  else
    rc = signal_init(&o, signo, err);
  container_close(&o);
  return rc;
}

/* Wait (up to timeout_ms) for init to be gone; it may not be our child, so poll its pidfd. */
static bool wait_gone(const struct container_state *st, int timeout_ms) {
  cleanup_close int pidfd = pidfd_open(st->pid, 0);
  if (pidfd < 0 || !state_pid_alive(st->pid, st->pid_start_time))
    return true;
  struct pollfd pfd = {.fd = pidfd, .events = POLLIN};
  int r;
  do
    r = poll(&pfd, 1, timeout_ms);
  while (r < 0 && errno == EINTR);
  waitpid(st->pid, NULL, WNOHANG); /* reap it if it is ours (run) */
  return r > 0;
}

int runtime_delete(const struct runtime_context *ctx, const char *id, bool force, struct cm_error **err) {
  return runtime_delete_with_spec(ctx, id, force, NULL, err);
}

int runtime_delete_with_spec(const struct runtime_context *ctx, const char *id, bool force, const struct spec *spec,
                             struct cm_error **err) {
  struct container o;
  if (container_open(ctx, id, STATE_DIR_WRITE, &o, err) < 0) {
    if (force && state_remove_if_corrupt(ctx->root, id) == 1) {
      cm_error_freep(err);
      return 0;
    }
    /* --force of a container that does not exist (a valid id, no state dir) has nothing to do
     * and succeeds, as with runc and crun: containerd deletes with --force after a failed
     * create and relies on it. */
    if (force && container_id_validate(id, NULL) == 0 && !state_dir_exists(ctx->root, id)) {
      cm_error_freep(err);
      return 0;
    }
    return -1;
  }
  int rc = -1;
  cm_debug("delete %s: status %s, init pid %d%s", id, container_status_name(o.status), (int)o.st.pid,
           force ? ", --force" : "");
  bool alive = o.status != STATUS_STOPPED && o.status != STATUS_CREATING;
  /* The leftover of a killed create (we hold the lock, so none is running): whatever it
   * recorded in creating.json — stage1 or init, the cgroup — is killed like a created one. */
  bool leftover = o.status == STATUS_CREATING && (o.st.pid > 0 || o.cgroup);
  /* A created container has not run anything of the user's yet: delete kills it, as runc does. */
  if (alive && o.status != STATUS_CREATED && !force) {
    cm_error_set(err, 0, "cannot delete container \"%s\" that is not stopped: %s", id,
                 container_status_name(o.status));
    goto out;
  }
  if (alive || leftover) {
    struct cm_error *ignored = NULL;
    if (o.cgroup)
      cgroup_kill_all(o.cgroup, SIGKILL, &ignored);
    cm_error_freep(&ignored);
    if (o.status == STATUS_PAUSED && o.cgroup)
      cgroup_freeze(o.cgroup, false, &ignored);
    cm_error_freep(&ignored);
    signal_init(&o, SIGKILL, &ignored);
    cm_error_freep(&ignored);
    if (!wait_gone(&o.st, 10000)) {
      cm_error_set(err, 0, "container \"%s\" did not die after SIGKILL", id);
      goto out;
    }
  }
  /* The egress broker goes with its container (it would anyway, on init's exit: this makes
   * sure, and waits for it). */
  {
    struct cm_error *ignored = NULL;
    egress_supervisor_stop(o.dirfd, &ignored);
    cm_error_freep(&ignored);
  }
  /* Mounts init made in our inherited mount namespace (linux/inherited_mounts.h). */
  inherited_mounts_remove(o.dirfd, o.st.rootfs);
  if (o.cgroup)
    cm_debug("delete %s: removing cgroup %s", id, cgroup_path(o.cgroup));
  if (o.cgroup && cgroup_destroy(o.cgroup, err) < 0)
    goto out;
  struct spec *kept = o.status != STATUS_CREATING && spec == NULL ? load_config_for_hooks(&o) : NULL;
  {
    /* The host id range of the mcp profile's user namespace is free again (runtime/idrange.h). */
    cleanup_free char *dir = state_dir_path(ctx->root, id);
    idrange_release(dir, o.dirfd);
  }
  rc = state_dir_remove(ctx->root, id, err);
  /* Poststop hooks once the state is gone (runc's order): one that runs codemode on this id gets
   * "does not exist" instead of waiting for our lock, which we hold until the hook returns. */
  if (o.status != STATUS_CREATING)
    run_hooks_logged_from(spec ? spec : kept, &o, SPEC_HOOK_POSTSTOP, "stopped");
  spec_free(kept);
out:
  container_close(&o);
  return rc;
}

char *runtime_state_json(const struct runtime_context *ctx, const char *id, struct cm_error **err) {
  struct container o;
  if (container_open(ctx, id, STATE_DIR_READ, &o, err) < 0)
    return NULL;
  char *json = NULL;
  if (o.status == STATUS_CREATING) {
    struct container_state st = {.id = o.st.id, .bundle = "", .rootfs = "", .created = ""};
    json = state_oci_json(&st, "creating");
  } else {
    json = state_oci_json(&o.st, container_status_name(o.status));
  }
  container_close(&o);
  return json;
}

/* The OWNER column, as runc fills it: the user owning the container's state dir, by name from
 * /etc/passwd (read directly: a static binary has no NSS), or "#UID" when it has none. */
static char *owner_of(int dirfd) {
  struct stat st;
  if (fstat(dirfd, &st) < 0)
    return strdup("");
  char *name = NULL;
  FILE *f = fopen("/etc/passwd", "re");
  if (f) {
    char *line = NULL;
    size_t cap = 0;
    while (name == NULL && getline(&line, &cap, f) > 0) {
      char *uid_field = strchr(line, ':');
      uid_field = uid_field ? strchr(uid_field + 1, ':') : NULL;
      if (uid_field == NULL)
        continue;
      char *end;
      unsigned long uid = strtoul(uid_field + 1, &end, 10);
      if (end != uid_field + 1 && *end == ':' && uid == st.st_uid)
        name = strndup(line, strcspn(line, ":"));
    }
    free(line);
    fclose(f);
  }
  if (name == NULL && asprintf(&name, "#%u", (unsigned)st.st_uid) < 0)
    name = NULL;
  return name ? name : strdup("");
}

static int summary_by_id(const void *a, const void *b) {
  return strcmp(((const struct container_summary *)a)->id, ((const struct container_summary *)b)->id);
}

int runtime_list(const struct runtime_context *ctx, struct container_summary **out, size_t *n,
                 struct cm_error **err) {
  *out = NULL;
  *n = 0;
  DIR *d = opendir(ctx->root);
  if (d == NULL) {
    if (errno == ENOENT)
      return 0;
    return cm_error_set(err, errno, "open --root %s", ctx->root);
  }
  size_t cap = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.' || container_id_validate(de->d_name, NULL) < 0)
      continue;
    struct container o;
    struct cm_error *ignored = NULL;
    if (container_open(ctx, de->d_name, STATE_DIR_READ, &o, &ignored) < 0) {
      cm_error_freep(&ignored);
      continue;
    }
    if (*n == cap) {
      cap = cap ? cap * 2 : 8;
      *out = realloc(*out, cap * sizeof(**out));
    }
    struct container_summary *s = &(*out)[(*n)++];
    s->id = strdup(de->d_name);
    s->pid = o.status == STATUS_STOPPED ? 0 : o.st.pid;
    s->status = strdup(container_status_name(o.status));
    s->bundle = strdup(o.st.bundle ? o.st.bundle : "");
    s->rootfs = strdup(o.st.rootfs ? o.st.rootfs : "");
    s->created = strdup(o.st.created ? o.st.created : "");
    s->owner = o.st.owner && *o.st.owner ? strdup(o.st.owner) : owner_of(o.dirfd);
    container_close(&o);
  }
  closedir(d);
  /* Sorted by id, as runc lists them (readdir's order is the filesystem's). */
  if (*n > 1)
    qsort(*out, *n, sizeof(**out), summary_by_id);
  return 0;
}

void container_summaries_free(struct container_summary *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(s[i].id);
    free(s[i].status);
    free(s[i].bundle);
    free(s[i].rootfs);
    free(s[i].created);
    free(s[i].owner);
  }
  free(s);
}
