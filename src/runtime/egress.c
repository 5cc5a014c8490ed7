/* The egress broker from create's side: start it, configure it, pass it the container's
 * sockets, wait for it, record it, stop it at delete; and the config changes the container gets
 * with it (runtime/egress.h). */
#include "runtime/egress.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <linux/sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/state.h"
#include "spec/json_util.h"
#include "util/cleanup.h"
#include "util/safepath.h"
#include "util/sync.h"

#ifndef CODEMODE_LIBEXECDIR
#define CODEMODE_LIBEXECDIR "/usr/local/libexec/codemode"
#endif
#define SUPERVISOR_FILE "supervisor"

/* Next to our own binary (a build tree, or an install that keeps them together), else where
 * `make install` puts it. */
static void broker_path(char out[PATH_MAX]) {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0 && self[0] == '/') {
    self[n] = '\0';
    snprintf(out, PATH_MAX, "%s/codemode-broker", dirname(self));
    if (access(out, X_OK) == 0)
      return;
  }
  snprintf(out, PATH_MAX, "%s/codemode-broker", CODEMODE_LIBEXECDIR);
}

static int send_text(struct egress_broker *b, uint32_t type, const char *text, struct cm_error **err) {
  return sync_send(b->ctl, type, 0, text, -1, err);
}

/* The broker's answer to its config (BROKER_CFG_OK, or BROKER_CA with the PEM). */
static int await_config(struct egress_broker *b, struct cm_error **err) {
  struct sync_msg m;
  int fd = -1;
  int r = sync_recv(b->ctl, &m, &fd, err);
  if (fd >= 0)
    close(fd);
  if (r != 0) {
    /* Its child's errno when the exec (or the cgroup join before it) failed: the socket then
     * closed with our config unread (EOF or ECONNRESET). */
    int e = 0;
    if (b->errpipe >= 0 && read(b->errpipe, &e, sizeof(e)) == (ssize_t)sizeof(e) && e != 0) {
      char path[PATH_MAX];
      broker_path(path);
      cm_error_freep(err);
      return cm_error_set(err, e, "egress: start %s", path);
    }
  }
  if (r == 1)
    return cm_error_set(err, 0, "egress: codemode-broker exited before it was configured (is it installed?)");
  if (r < 0)
    return cm_error_prefix(err, "egress: codemode-broker");
  if (m.type == BROKER_ERROR)
    return cm_error_set(err, 0, "egress: codemode-broker: %s", m.text);
  if (m.type == BROKER_CA) {
    b->ca_pem = strdup(m.text);
    return 0;
  }
  if (m.type != BROKER_CFG_OK)
    return cm_error_set(err, EPROTO, "egress: codemode-broker: unexpected message %u", m.type);
  return 0;
}

/* What the broker's child does between clone and execve: only system calls (no allocation, no
 * lock: it is a copy of a process that may have had other threads). It runs with every signal
 * blocked, which execve keeps (the broker sets its own mask first thing) while it resets every
 * handler: so nothing of ours can run here, and no per-signal reset is needed (glibc's
 * posix_spawn makes ~64 rt_sigaction calls for that while its parent waits). Failure: its errno
 * on errpipe, exit 127, which the parent reads when the control socket closes unconfigured. */
struct spawn_plan {
  const char *path;
  char *const *argv, *const *envp;
  int ctl, errpipe;
  bool detached;
  const int *v1_tasks;
  size_t n_v1;
};

static void __attribute__((noreturn)) spawn_child(const struct spawn_plan *p) {
  int e = 0;
  /* Into the v1 hierarchies by itself, as init does (cgroup/cgroup.h: no RCU grace period),
   * through the same tasks files init wrote to: what let init in lets it in. */
  for (size_t i = 0; i < p->n_v1; i++)
    if (write(p->v1_tasks[i], "0", 1) != 1)
      goto fail;
  if (setsid() < 0)
    goto fail;
  /* The control socket on 3 (dup2 clears close-on-exec; one already at 3 is cleared by hand),
   * first, so /dev/null cannot be opened there. Never the container's stdio on 0 and 1 (a
   * broker holding the container's stdout open would keep its reader, the shim or an MCP
   * client, from ever seeing EOF), nor on 2 when detached. */
  if (p->ctl == 3 ? fcntl(3, F_SETFD, 0) < 0 : dup2(p->ctl, 3) < 0)
    goto fail;
  int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devnull < 0 || (devnull != 0 && dup2(devnull, 0) < 0) || dup2(0, 1) < 0 || (p->detached && dup2(0, 2) < 0))
    goto fail;
  /* Nothing else: every other fd is close-on-exec or closed here (errpipe stays until the exec). */
  if (p->errpipe > 4)
    syscall(SYS_close_range, 4, p->errpipe - 1, 0);
  syscall(SYS_close_range, p->errpipe + 1, ~0U, 0);
  execve(p->path, p->argv, p->envp);
fail:
  e = errno;
  if (write(p->errpipe, &e, sizeof(e)) < 0) {
  }
  _exit(127);
}

/* The broker's process: a fork-like clone (the child has its own copy of our page tables, so no
 * stack of ours is shared), not waited for: we go on with init's messages while it execs and
 * loads, and its config waits in the control socket. Into the container's cgroup2 directory
 * when cg gives one (clone3 CLONE_INTO_CGROUP: born there, no migration, whose RCU grace period
 * was most of what the broker added to a start; 0.1-40 ms, 2.1 ms median at load 12), joining
 * the v1 hierarchies itself. *placed: whether it is wholly in the container's cgroup. A cgroup
 * that refuses (a full pids.max, a user's cgroup we may not clone into) or an old kernel: a
 * plain clone, and the caller moves it (cgroup_add_process). */
static pid_t spawn_broker(struct spawn_plan *p, const struct egress_spawn_cgroup *cg, bool *placed, int *child_errno) {
  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, &old);
  *placed = false;
  pid_t pid = -1;
  if (cg && cg->v2_fd >= 0) {
    struct clone_args args;
    memset(&args, 0, sizeof(args));
    args.flags = CLONE_INTO_CGROUP;
    args.exit_signal = SIGCHLD;
    args.cgroup = (uint64_t)cg->v2_fd;
    p->v1_tasks = cg->v1_tasks;
    p->n_v1 = cg->n_v1;
    pid = (pid_t)syscall(SYS_clone3, &args, sizeof(args));
    if (pid == 0)
      spawn_child(p);
    *placed = pid > 0;
  }
  if (pid < 0) {
    p->v1_tasks = NULL;
    p->n_v1 = 0;
    pid = (pid_t)syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, NULL);
    if (pid == 0)
      spawn_child(p);
  }
  *child_errno = errno;
  sigprocmask(SIG_SETMASK, &old, NULL);
  return pid;
}

int egress_broker_spawn(const struct egress_config *c, const char *id, bool detached,
                        const struct egress_spawn_cgroup *cg, struct egress_broker *b, struct cm_error **err) {
  *b = (struct egress_broker){.pid = -1, .ctl = -1, .errpipe = -1};
  char path[PATH_MAX];
  broker_path(path);
  int sv[2], ep[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
    return cm_error_set(err, errno, "egress: control socket");
  if (pipe2(ep, O_CLOEXEC) < 0) {
    int e = errno;
    close(sv[0]);
    close(sv[1]);
    return cm_error_set(err, e, "egress: pipe");
  }
  /* Only the trust store's location passes to the broker: nothing else of our environment
   * (which may hold a --secret taken from it). Its own session, so a signal to create's process
   * group (a terminal's ^C) is not for it. */
  char *envp[4] = {NULL};
  size_t ne = 0;
  static const char *const keep[] = {"SSL_CERT_FILE", "SSL_CERT_DIR"};
  for (size_t i = 0; i < 2; i++) {
    const char *v = getenv(keep[i]);
    if (v && asprintf(&envp[ne], "%s=%s", keep[i], v) >= 0)
      ne++;
  }
  char *argv[] = {"codemode-broker", NULL};
  struct spawn_plan plan = {.path = path, .argv = argv, .envp = envp, .ctl = sv[1], .errpipe = ep[1], .detached = detached};
  int e;
  pid_t pid = spawn_broker(&plan, cg, &b->in_cgroup, &e);
  close(ep[1]);
  for (size_t i = 0; i < ne; i++)
    free(envp[i]);
  close(sv[1]);
  if (pid < 0) {
    close(ep[0]);
    close(sv[0]);
    return cm_error_set(err, e, "egress: start %s", path);
  }
  b->errpipe = ep[0];
  b->pid = pid;
  b->ctl = sv[0];
  if (send_text(b, BROKER_CFG_ID, id, err) < 0)
    goto fail;
  for (size_t i = 0; i < c->rules.count; i++)
    if (send_text(b, BROKER_CFG_RULE, c->rules.items[i], err) < 0)
      goto fail;
  if (c->dns_upstream && send_text(b, BROKER_CFG_DNS, c->dns_upstream, err) < 0)
    goto fail;
  if (c->audit_fd >= 0 && sync_send(b->ctl, BROKER_CFG_AUDIT, 0, NULL, c->audit_fd, err) < 0)
    goto fail;
  for (size_t i = 0; i < c->n_secrets; i++) {
    const struct egress_secret *s = &c->secrets[i];
    char text[sizeof(((struct sync_msg *)0)->text)];
    int n = snprintf(text, sizeof(text), "%s\n%s\n%s\n%s", s->name, s->host, s->header ? s->header : "Authorization",
                     s->value);
    if (n < 0 || (size_t)n >= sizeof(text)) {
      cm_error_set(err, 0, "--secret %s: the value is too long for the broker (at most %zu bytes)", s->name,
                   sizeof(text) - 300);
      goto fail;
    }
    int rc = send_text(b, BROKER_CFG_SECRET, text, err);
    explicit_bzero(text, sizeof(text));
    if (rc < 0)
      goto fail;
  }
  if (send_text(b, BROKER_CFG_DONE, NULL, err) < 0)
    goto fail;
  /* The per-run CA must be in the container's trust store before its mounts are made: wait for
   * it now. Without secrets the broker's answer is read later, while init sets up. */
  if (c->n_secrets && await_config(b, err) < 0)
    goto fail;
  b->configured = c->n_secrets > 0;
  return 0;
fail:
  /* A send that failed because the child never got to exec: its reason is the one to give. */
  if (b->errpipe >= 0) {
    int e = 0;
    struct pollfd pfd = {.fd = b->errpipe, .events = POLLIN};
    if (poll(&pfd, 1, 0) == 1 && read(b->errpipe, &e, sizeof(e)) == (ssize_t)sizeof(e) && e != 0) {
      cm_error_freep(err);
      cm_error_set(err, e, "egress: start %s", path);
    }
  }
  egress_broker_abort(b);
  return -1;
}

int egress_broker_give_socket(struct egress_broker *b, int64_t role_port, int fd, struct cm_error **err) {
  if (sync_send(b->ctl, BROKER_SOCKET, role_port, NULL, fd, err) < 0)
    return cm_error_prefix(err, "egress: hand a socket to codemode-broker");
  return 0;
}

int egress_broker_start(struct egress_broker *b, pid_t init, struct cm_error **err) {
  /* A pidfd names exactly our init, never a later process that reuses its pid. */
  int pidfd = (int)syscall(SYS_pidfd_open, init, 0);
  if (pidfd < 0)
    return cm_error_set(err, errno, "egress: pidfd_open of init");
  int rc = sync_send(b->ctl, BROKER_INIT, 0, NULL, pidfd, err);
  close(pidfd);
  b->started = rc == 0;
  return rc;
}

int egress_broker_wait_ready(struct egress_broker *b, struct cm_error **err) {
  if (!b->started)
    return cm_error_set(err, EPROTO, "egress: init did not send its sockets");
  if (!b->configured && await_config(b, err) < 0)
    return -1;
  b->configured = true;
  struct sync_msg m;
  int fd = -1;
  int r = sync_recv(b->ctl, &m, &fd, err);
  if (fd >= 0)
    close(fd);
  if (r == 1)
    return cm_error_set(err, 0, "egress: codemode-broker exited during setup");
  if (r < 0)
    return -1;
  if (m.type == BROKER_ERROR)
    return cm_error_set(err, 0, "egress: %s", m.text);
  if (m.type != BROKER_READY)
    return cm_error_set(err, EPROTO, "egress: codemode-broker: unexpected message %u", m.type);
  return 0;
}

static void close_errpipe(struct egress_broker *b) {
  if (b->errpipe >= 0)
    close(b->errpipe);
  b->errpipe = -1;
}

int egress_broker_commit(struct egress_broker *b, int state_dirfd, struct cm_error **err) {
  close_errpipe(b);
  char line[64];
  int n = snprintf(line, sizeof(line), "%d %llu\n", (int)b->pid, (unsigned long long)proc_pid_start_time(b->pid));
  if (write_file_atomic(state_dirfd, SUPERVISOR_FILE, line, (size_t)n, 0600, err) < 0)
    return -1;
  if (sync_send(b->ctl, BROKER_COMMITTED, 0, NULL, -1, err) < 0)
    return -1;
  /* From now on it is bound to init's life, not to ours: create exits now (the shim, a
   * subreaper, inherits and reaps it), codemode-run and `run` reap it as their child. */
  close(b->ctl);
  b->ctl = -1;
  free(b->ca_pem);
  b->ca_pem = NULL;
  return 0;
}

void egress_broker_abort(struct egress_broker *b) {
  close_errpipe(b);
  if (b->ctl >= 0)
    close(b->ctl);
  b->ctl = -1;
  if (b->pid > 0) {
    kill(b->pid, SIGKILL);
    waitpid(b->pid, NULL, 0);
  }
  b->pid = -1;
  free(b->ca_pem);
  b->ca_pem = NULL;
}

/* Wait up to ms for the process behind pidfd to exit. */
static bool exited_within(int pidfd, int ms) {
  struct pollfd p = {.fd = pidfd, .events = POLLIN};
  return poll(&p, 1, ms) == 1;
}

int egress_supervisor_stop(int state_dirfd, struct cm_error **err) {
  char buf[64] = "";
  int fd = openat(state_dirfd, SUPERVISOR_FILE, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return 0;
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  int pid = 0;
  unsigned long long start = 0;
  if (n <= 0 || sscanf(buf, "%d %llu", &pid, &start) != 2 || pid <= 0)
    return 0;
  int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
  if (pidfd < 0)
    return 0; /* gone already */
  /* The pid is ours only if it started when the broker did (no signal to a stranger). */
  if (proc_pid_start_time(pid) != start) {
    close(pidfd);
    return 0;
  }
  syscall(SYS_pidfd_send_signal, pidfd, SIGTERM, NULL, 0);
  if (!exited_within(pidfd, 1000)) {
    syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
    if (!exited_within(pidfd, 2000)) {
      close(pidfd);
      return cm_error_set(err, ETIMEDOUT, "egress: codemode-broker (pid %d) did not exit", pid);
    }
  }
  close(pidfd);
  /* Ours to reap when we started it (codemode-run, `run`); anyone else's child is not. */
  waitpid(pid, NULL, WNOHANG);
  unlinkat(state_dirfd, SUPERVISOR_FILE, 0);
  return 0;
}

/* --- the container's side ------------------------------------------------------------------------- */

static void set_env(struct spec_strv *env, const char *name, const char *value) {
  size_t nl = strlen(name);
  cleanup_free char *kv = NULL;
  if (asprintf(&kv, "%s=%s", name, value) < 0)
    abort();
  for (size_t i = 0; i < env->count; i++)
    if (strncmp(env->items[i], name, nl) == 0 && env->items[i][nl] == '=') {
      free(env->items[i]);
      env->items[i] = xstrdup(kv);
      return;
    }
  spec_strv_push(env, kv);
}

/* Bind `source` (a file of ours) read-only over `dest`, replacing a mount the config already
 * has there (Docker's own resolv.conf). */
static void bind_file(struct spec *s, const char *source, const char *dest) {
  struct spec_mount *m = NULL;
  for (size_t i = 0; i < s->n_mounts; i++)
    if (strcmp(s->mounts[i].destination, dest) == 0)
      m = &s->mounts[i];
  if (m == NULL) {
    struct spec_mount *grown = realloc(s->mounts, (s->n_mounts + 1) * sizeof(*grown));
    if (grown == NULL)
      abort();
    s->mounts = grown;
    m = &s->mounts[s->n_mounts++];
    memset(m, 0, sizeof(*m));
    m->destination = xstrdup(dest);
  } else {
    free(m->type);
    free(m->source);
    free(m->data);
    spec_strv_free(&m->options);
    char *d = m->destination;
    memset(m, 0, sizeof(*m));
    m->destination = d;
  }
  m->type = xstrdup("bind");
  m->source = xstrdup(source);
  static const char *const opts[] = {"rbind", "ro", "nosuid", "nodev", "noexec"};
  for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
    spec_strv_push(&m->options, opts[i]);
  spec_mount_decode_options(m);
}

/* The image's CA bundle, where distributions keep it. */
static const char *const ca_bundle_paths[] = {
    "/etc/ssl/certs/ca-certificates.crt", /* Debian, Ubuntu, Alpine, Arch */
    "/etc/pki/tls/certs/ca-bundle.crt",   /* Fedora, RHEL */
    "/etc/ssl/ca-bundle.pem",             /* openSUSE */
    "/etc/ssl/cert.pem",                  /* Alpine's LibreSSL, others */
};

/* The image's bundle, read inside its root only (a symlink in a hostile rootfs cannot point
 * us at a host file); *path_out is where it was. NULL (and the Debian path) when there is none. */
static char *read_image_bundle(const char *rootfs, const char **path_out, size_t *len_out) {
  *path_out = ca_bundle_paths[0];
  *len_out = 0;
  cleanup_close int root = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0)
    return NULL;
  for (size_t i = 0; i < sizeof(ca_bundle_paths) / sizeof(ca_bundle_paths[0]); i++) {
    struct cm_error *ignored = NULL;
    cleanup_close int fd = safepath_open(root, ca_bundle_paths[i], O_RDONLY, &ignored);
    cm_error_freep(&ignored);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > 16 << 20)
      continue;
    char *buf = malloc((size_t)st.st_size + 1);
    ssize_t n = buf ? read(fd, buf, (size_t)st.st_size) : -1;
    if (n < 0) {
      free(buf);
      continue;
    }
    *path_out = ca_bundle_paths[i];
    *len_out = (size_t)n;
    return buf;
  }
  return NULL;
}

int egress_prepare_container(struct spec *s, int state_dirfd, const char *state_dir, const char *rootfs,
                             const char *ca_pem, struct cm_error **err) {
  struct spec_strv *env = &s->process->env;
  /* Clients that honour proxy variables use the proxy (names resolved by us), the rest are
   * captured transparently. NODE_USE_ENV_PROXY: Node's own fetch and https ignore the
   * variables without it (Node >= 22.21 / 24.5; older ones are captured). */
  static const char *const proxy_vars[][2] = {
      {"HTTP_PROXY", "http://127.0.0.1:3128"},  {"http_proxy", "http://127.0.0.1:3128"},
      {"HTTPS_PROXY", "http://127.0.0.1:3128"}, {"https_proxy", "http://127.0.0.1:3128"},
      {"ALL_PROXY", "socks5h://127.0.0.1:1080"}, {"all_proxy", "socks5h://127.0.0.1:1080"},
      {"NO_PROXY", "localhost,127.0.0.1,::1"},   {"no_proxy", "localhost,127.0.0.1,::1"},
      {"NODE_USE_ENV_PROXY", "1"},
  };
  for (size_t i = 0; i < sizeof(proxy_vars) / sizeof(proxy_vars[0]); i++)
    set_env(env, proxy_vars[i][0], proxy_vars[i][1]);

  static const char resolv[] = "# codemode egress: the broker's DNS stub answers the allowed names only\n"
                               "nameserver 127.0.0.1\noptions ndots:0\n";
  if (write_file_atomic(state_dirfd, "resolv.conf", resolv, sizeof(resolv) - 1, 0644, err) < 0)
    return cm_error_prefix(err, "egress");
  cleanup_free char *src = NULL;
  if (asprintf(&src, "%s/resolv.conf", state_dir) < 0)
    abort();
  bind_file(s, src, "/etc/resolv.conf");

  if (ca_pem == NULL)
    return 0;
  /* The per-run CA next to the image's own roots, bound over the image's bundle, and named by
   * the variables each runtime reads: OpenSSL (Python's ssl and urllib, curl built with it)
   * SSL_CERT_FILE, curl CURL_CA_BUNDLE, Node NODE_EXTRA_CA_CERTS (added to its built-in roots at
   * start), Python requests REQUESTS_CA_BUNDLE, git GIT_SSL_CAINFO. */
  const char *dest;
  size_t len;
  cleanup_free char *image = read_image_bundle(rootfs, &dest, &len);
  size_t plen = strlen(ca_pem);
  cleanup_free char *bundle = malloc(len + plen + 2);
  if (bundle == NULL)
    abort();
  memcpy(bundle, image ? image : "", len);
  size_t off = len;
  if (off && bundle[off - 1] != '\n')
    bundle[off++] = '\n';
  memcpy(bundle + off, ca_pem, plen);
  off += plen;
  if (write_file_atomic(state_dirfd, "ca-bundle.pem", bundle, off, 0644, err) < 0 ||
      write_file_atomic(state_dirfd, "ca.pem", ca_pem, plen, 0644, err) < 0)
    return cm_error_prefix(err, "egress: the per-run CA");
  cleanup_free char *bsrc = NULL;
  if (asprintf(&bsrc, "%s/ca-bundle.pem", state_dir) < 0)
    abort();
  bind_file(s, bsrc, dest);
  static const char *const ca_vars[] = {"SSL_CERT_FILE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE",
                                        "GIT_SSL_CAINFO"};
  for (size_t i = 0; i < sizeof(ca_vars) / sizeof(ca_vars[0]); i++)
    set_env(env, ca_vars[i], dest);
  return 0;
}
