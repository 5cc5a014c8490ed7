/* codemode-broker's life: configured by create over its control socket (fd 3, the protocol of
 * runtime/egress.h), it receives the container's sockets, installs the capture routes, drops
 * its privileges, says READY, and serves until the container's init exits (its pidfd), SIGTERM
 * (`delete`), or, before create recorded the container, the control socket closes (create
 * died: nothing may outlive it). Never started by hand. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "supervisor/broker/broker.h"
#include "util/sync.h"

#define CTL_FD 3
#define NOBODY 65534

double now_mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int broker_watch(struct broker *b, struct watch *w, uint32_t events) {
  struct epoll_event ev = {.events = events, .data.ptr = w};
  return epoll_ctl(b->ep, EPOLL_CTL_ADD, w->fd, &ev);
}

int broker_rewatch(struct broker *b, struct watch *w, uint32_t events) {
  struct epoll_event ev = {.events = events, .data.ptr = w};
  return epoll_ctl(b->ep, EPOLL_CTL_MOD, w->fd, &ev);
}

void broker_unwatch(struct broker *b, struct watch *w) {
  if (w->fd >= 0)
    epoll_ctl(b->ep, EPOLL_CTL_DEL, w->fd, NULL);
}

static void die(struct broker *b, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void die(struct broker *b, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  /* create reports it (the container is not started); after READY only stderr is left. */
  if (b->ctl_fd >= 0)
    sync_send(b->ctl_fd, BROKER_ERROR, 0, msg, -1, NULL);
  fprintf(stderr, "codemode-broker: %s\n", msg);
  _exit(1);
}

/* --- configuration ------------------------------------------------------------------------------ */

static void add_rule(struct broker *b, const char *line) {
  const char *sp = strchr(line, ' ');
  if (sp == NULL)
    die(b, "bad rule \"%s\"", line);
  char flag[32];
  snprintf(flag, sizeof(flag), "%.*s", (int)(sp - line), line);
  struct egress_rule r;
  struct cm_error *err = NULL;
  if (egress_rule_parse(flag, sp + 1, &r, &err) < 0)
    die(b, "%s", err->msg);
  egress_policy_add(&b->policy, &r);
  egress_rule_clear(&r);
}

/* "NAME\nHOST\nHEADER\nVALUE": the value last, it may hold anything but CR and LF. */
static void add_secret(struct broker *b, char *text) {
  char *fields[4] = {text, NULL, NULL, NULL};
  for (int i = 1; i < 4; i++) {
    char *nl = strchr(fields[i - 1], '\n');
    if (nl == NULL)
      die(b, "bad secret message");
    *nl = '\0';
    fields[i] = nl + 1;
  }
  struct secret_binding *grown = realloc(b->secrets, (b->n_secrets + 1) * sizeof(*grown));
  if (grown == NULL)
    die(b, "out of memory");
  b->secrets = grown;
  struct secret_binding *s = &b->secrets[b->n_secrets++];
  s->name = strdup(fields[0]);
  s->host = strdup(fields[1]);
  s->header = strdup(fields[2]);
  s->value = strdup(fields[3]);
  if (asprintf(&s->placeholder, "CODEMODE_SECRET_%s", s->name) < 0)
    die(b, "out of memory");
}

/* --- privileges ----------------------------------------------------------------------------------- */

/* After the routes, nothing here needs privilege: connect() out, write the audit fd, read the
 * listeners. Root becomes nobody (no capabilities left, no files of root's to touch); anyone
 * else keeps their uid but no capability. The CA key and the secrets stay in a non-dumpable
 * process (no ptrace, no core, no /proc/PID/mem for other processes of that uid). */
static void drop_privileges(struct broker *b) {
  if (geteuid() == 0 && setgroups(0, NULL) == 0 && setresgid(NOBODY, NOBODY, NOBODY) == 0)
    if (setresuid(NOBODY, NOBODY, NOBODY) < 0)
      die(b, "drop privileges: setresuid: %s", strerror(errno));
  cap_t none = cap_init();
  if (none == NULL || cap_set_proc(none) < 0)
    die(b, "drop capabilities: %s", strerror(errno));
  cap_free(none);
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); /* a uid change resets it */
}

/* --- events --------------------------------------------------------------------------------------- */

static void on_listener(struct broker *b, struct watch *w, uint32_t ev) {
  conn_accept(b, (struct listener *)w);
}

static void on_ctl(struct broker *b, struct watch *w, uint32_t ev) {
  struct sync_msg m;
  int fd = -1;
  int r = sync_recv(w->fd, &m, &fd, NULL);
  if (fd >= 0)
    close(fd);
  if (r == 0 && m.type == BROKER_COMMITTED) {
    b->committed = true;
    return;
  }
  if (r == 0)
    return;
  /* Closed. Before the container was recorded, create died: so do we. After, create (or
   * codemode-run) is merely gone; init's pidfd decides. */
  broker_unwatch(b, w);
  close(w->fd);
  w->fd = -1;
  b->ctl_fd = -1;
  if (!b->committed)
    b->stopping = true;
}

static void on_init_exit(struct broker *b, struct watch *w, uint32_t ev) {
  b->stopping = true; /* the container is gone */
}

static void on_signal(struct broker *b, struct watch *w, uint32_t ev) {
  struct signalfd_siginfo si;
  while (read(w->fd, &si, sizeof(si)) == sizeof(si))
    if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT || si.ssi_signo == SIGHUP)
      b->stopping = true;
}

static void loop(struct broker *b) {
  struct epoll_event evs[64];
  while (!b->stopping) {
    double now = now_mono();
    double next = limits_next_deadline(b, conn_next_deadline(b));
    int timeout = -1;
    if (next > 0)
      timeout = next <= now ? 0 : (int)((next - now) * 1000) + 1;
    struct timeval tv, *tvp = ares_timeout(b->ares, NULL, &tv);
    if (tvp) {
      int at = (int)(tvp->tv_sec * 1000 + tvp->tv_usec / 1000) + 1;
      if (timeout < 0 || at < timeout)
        timeout = at;
    }
    int n = epoll_wait(b->ep, evs, 64, timeout);
    if (n < 0 && errno != EINTR)
      die(b, "epoll_wait: %s", strerror(errno));
    for (int i = 0; i < n; i++) {
      struct watch *w = evs[i].data.ptr;
      w->on_event(b, w, evs[i].events);
    }
    dns_process_timeouts(b);
    conn_check_deadlines(b, now_mono());
    limits_check_deadlines(b, now_mono());
    conn_reap(b);
  }
}

int main(int argc, char **argv) {
  struct broker b = {.audit_fd = -1, .ctl_fd = CTL_FD, .init_pidfd = -1, .netlink_fd = -1};
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); /* secrets and the CA key live in this memory */
  if (fcntl(CTL_FD, F_GETFD) < 0) {
    fprintf(stderr, "codemode-broker: started by codemode create for a container with an egress allowlist, "
                    "never by hand\n");
    return 2;
  }
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGHUP);
  /* The mask create started us with is "everything blocked" (runtime/egress.c): ours is set
   * whole, these three read from a signalfd, the rest delivered. */
  sigprocmask(SIG_SETMASK, &sigs, NULL);
  signal(SIGPIPE, SIG_IGN);
  b.ep = epoll_create1(EPOLL_CLOEXEC);
  if (b.ep < 0)
    die(&b, "epoll: %s", strerror(errno));

  /* The configuration. */
  char dns_upstream[1024] = "";
  for (bool done = false; !done;) {
    struct sync_msg m;
    int fd = -1;
    struct cm_error *err = NULL;
    int r = sync_recv(CTL_FD, &m, &fd, &err);
    if (r != 0)
      _exit(1); /* create is gone before it finished: nothing to serve */
    switch (m.type) {
    case BROKER_CFG_ID: snprintf(b.id, sizeof(b.id), "%.127s", m.text); break;
    case BROKER_CFG_RULE: add_rule(&b, m.text); break;
    case BROKER_CFG_DNS: snprintf(dns_upstream, sizeof(dns_upstream), "%.1023s", m.text); break;
    case BROKER_CFG_AUDIT: b.audit_fd = fd; fd = -1; break;
    case BROKER_CFG_SECRET:
      add_secret(&b, m.text);
      explicit_bzero(&m, sizeof(m));
      break;
    case BROKER_CFG_DONE: done = true; break;
    default: die(&b, "unexpected control message %u", m.type);
    }
    if (fd >= 0)
      close(fd);
  }
  char why[512];
  if (dns_init(&b, dns_upstream[0] ? dns_upstream : NULL, why, sizeof(why)) < 0)
    die(&b, "%s", why);
  if (b.n_secrets) {
    char *pem = NULL;
    if (tls_load(&b, why, sizeof(why)) < 0 || b.tls_ops->init(&b, &pem, why, sizeof(why)) < 0)
      die(&b, "%s", why);
    sync_send(CTL_FD, BROKER_CA, 0, pem, -1, NULL);
    free(pem);
  } else {
    sync_send(CTL_FD, BROKER_CFG_OK, 0, NULL, -1, NULL);
  }

  /* The address guard needs nothing of the container's (its lists are this machine's): made
   * while init opens the sockets, not after they came, so only the routes stand between the
   * last socket and READY. */
  if (guard_init(&b, why, sizeof(why)) < 0)
    die(&b, "%s", why);

  /* The container's sockets, then its init. */
  for (;;) {
    struct sync_msg m;
    int fd = -1;
    if (sync_recv(CTL_FD, &m, &fd, NULL) != 0)
      _exit(1);
    if (m.type == BROKER_INIT) {
      b.init_pidfd = fd;
      break;
    }
    if (m.type != BROKER_SOCKET || fd < 0)
      die(&b, "unexpected control message %u", m.type);
    int role = EGRESS_SOCK_ROLE(m.value);
    if (role == EGRESS_SOCK_NETLINK) {
      b.netlink_fd = fd;
    } else if (role == EGRESS_SOCK_DNS) {
      b.dns_w = (struct watch){dns_on_query, fd};
    } else if (b.n_listeners < BROKER_MAX_LISTENERS) {
      struct listener *l = &b.listeners[b.n_listeners++];
      l->w = (struct watch){on_listener, fd};
      l->role = role;
      l->port = EGRESS_SOCK_PORT(m.value);
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    } else {
      close(fd);
    }
  }
  if (b.init_pidfd < 0)
    die(&b, "no pidfd of the container's init");
  if (b.netlink_fd < 0 || b.dns_w.fd <= 0 || b.n_listeners == 0)
    die(&b, "the container's sockets did not all arrive");
  if (route_setup(b.netlink_fd, why, sizeof(why)) < 0)
    die(&b, "%s", why);
  drop_privileges(&b);

  b.ctl_w = (struct watch){on_ctl, CTL_FD};
  b.init_w = (struct watch){on_init_exit, b.init_pidfd};
  b.sig_w = (struct watch){on_signal, signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC)};
  if (broker_watch(&b, &b.ctl_w, EPOLLIN) < 0 || broker_watch(&b, &b.init_w, EPOLLIN) < 0 ||
      broker_watch(&b, &b.sig_w, EPOLLIN) < 0 || broker_watch(&b, &b.dns_w, EPOLLIN) < 0)
    die(&b, "epoll: %s", strerror(errno));
  for (size_t i = 0; i < b.n_listeners; i++)
    if (broker_watch(&b, &b.listeners[i].w, EPOLLIN) < 0)
      die(&b, "epoll: %s", strerror(errno));
  sync_send(CTL_FD, BROKER_READY, 0, NULL, -1, NULL);

  loop(&b);
  conn_close_all(&b, "the container ended");
  if (b.tls)
    b.tls_ops->close_all(&b, "the container ended");
  dns_shutdown(&b);
  guard_free(&b);
  conn_reap(&b);
  return 0;
}
