/* The egress broker seen from the runtime: a per-container process outside the container
 * (src/supervisor/broker/, the codemode-broker binary) that serves the container's network
 * namespace through sockets made inside it. create starts it when an allowlist is active, hands
 * it those sockets (init makes them, linux/egress_sockets.h, and sends them over the sync
 * channel) and a pidfd of init, and waits until it is ready before the container's process may
 * run. It lives exactly as long as the container: it exits when init does (pidfd), when create
 * dies before recording the container (its control socket closes first), or when `delete` stops
 * it (the `supervisor` file of the state dir names it).
 *
 * Also here: what the container's config gets when the broker serves it (proxy variables, a
 * resolv.conf naming the DNS stub, the per-run CA in its trust store), and the control
 * protocol, which the broker shares. */
#ifndef CM_RUNTIME_EGRESS_H
#define CM_RUNTIME_EGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "linux/egress_sockets.h"
#include "spec/spec.h"
#include "util/error.h"

#define EGRESS_MAX_LISTEN_PORTS 64
#define EGRESS_PROXY_PORT 3128 /* = EGRESS_HTTP_PROXY_PORT of policy/egress.h */
#define EGRESS_SOCKS5_PORT 1080

/* A secret the broker substitutes into requests to `host` (placeholder mode): the container
 * sees only CODEMODE_SECRET_<NAME> in $NAME. */
struct egress_secret {
  char *name;
  char *value;
  char *host;   /* a host pattern in --allow-host syntax, without port */
  char *header; /* "Authorization" unless named */
};

/* What the caller (cli/, supervisor/) decided, for create. */
struct egress_config {
  struct spec_strv rules; /* the effective rules, one "FLAG VALUE" line each ("--allow-host api.x:443") */
  uint16_t tcp_ports[EGRESS_MAX_LISTEN_PORTS]; /* policy/egress.h egress_tcp_ports(): what the broker
                                                 * listens on and Landlock lets the container connect to */
  size_t n_tcp_ports;
  const char *dns_upstream; /* "IP[:PORT][,…]"; NULL: the host's resolver (/etc/resolv.conf) */
  int audit_fd;             /* the audit log, opened for append; -1: none */
  const struct egress_secret *secrets; /* placeholder-mode secrets */
  size_t n_secrets;
};

/* The control protocol between create and the broker (util/sync.h framing: one message per
 * SOCK_SEQPACKET packet, at most one fd). */
enum broker_msg_type {
  BROKER_CFG_ID = 100, /* text: the container id (audit records carry it) */
  BROKER_CFG_RULE,     /* text: "FLAG VALUE", a rule as egress_rule_parse() reads it */
  BROKER_CFG_DNS,      /* text: upstream resolvers "IP[:PORT],…" */
  BROKER_CFG_AUDIT,    /* fd: the audit log */
  BROKER_CFG_SECRET,   /* text: "NAME\nHOST\nHEADER\nVALUE" (the value has no CR/LF: headers cannot) */
  BROKER_CFG_DONE,     /* config complete: the broker answers BROKER_CA (text: the per-run CA
                        * certificate, PEM) when it intercepts TLS, else BROKER_CFG_OK */
  BROKER_CFG_OK,
  BROKER_CA,
  BROKER_SOCKET, /* fd: one of init's sockets; value: EGRESS_SOCK_VALUE(role, port) (linux/egress_sockets.h) */
  BROKER_INIT,   /* fd: pidfd of init. The broker installs its routes, drops its privileges and
                  * answers BROKER_READY, or BROKER_ERROR (text) */
  BROKER_READY,
  BROKER_ERROR,
  BROKER_COMMITTED, /* the container is recorded: from now on the broker lives as long as init */
};


/* A started broker, from create's side. */
struct egress_broker {
  pid_t pid;
  int ctl; /* our end of the control socket; -1 once closed */
  char *ca_pem; /* the per-run CA (placeholder mode), NULL otherwise */
  bool configured; /* its answer to the config has been read */
  bool started;    /* BROKER_INIT sent */
  bool in_cgroup;  /* born in the container's cgroup (every hierarchy): nothing to move */
  int errpipe;     /* its child's errno if the exec failed (read when it closes the socket early) */
};

/* Where the broker is born: the container's cgroup2 directory (an fd, -1: none) and its v1
 * hierarchies' `tasks` files, which the broker's child writes itself before its exec. */
struct egress_spawn_cgroup {
  int v2_fd;
  const int *v1_tasks;
  size_t n_v1;
};

/* fork + exec codemode-broker (next to our binary, else LIBEXECDIR), send it the config. cg
 * (or NULL): the container's cgroup to be born in (b->in_cgroup says whether it was).
 * Returns once the config is sent, without waiting for its exec (a failed one is reported when
 * its answer is read); with secrets, once it has made the per-run CA (b->ca_pem).
 * detached (create, for a shim): its stderr is /dev/null, not ours (which may be the
 * container's own stderr pipe, whose reader waits for EOF). */
int egress_broker_spawn(const struct egress_config *c, const char *id, bool detached,
                        const struct egress_spawn_cgroup *cg, struct egress_broker *b, struct cm_error **err);
/* Pass one of init's sockets on (the fd stays ours to close). */
int egress_broker_give_socket(struct egress_broker *b, int64_t role_port, int fd, struct cm_error **err);
/* Hand over init's pidfd (all its sockets are with the broker): the broker installs its routes
 * and drops its privileges meanwhile. */
int egress_broker_start(struct egress_broker *b, pid_t init, struct cm_error **err);
/* Wait for its READY (before anything of the user's may run). */
int egress_broker_wait_ready(struct egress_broker *b, struct cm_error **err);
/* The container is recorded: name the broker in the state dir's `supervisor` file ("PID
 * STARTTIME"), tell it, and close our end of its control socket. */
int egress_broker_commit(struct egress_broker *b, int state_dirfd, struct cm_error **err);
/* Failure before commit: kill and reap it. */
void egress_broker_abort(struct egress_broker *b);

/* delete: stop the broker named in the state dir (SIGTERM, then SIGKILL after a second), and
 * wait until it is gone. Nothing named, or already gone: 0. */
int egress_supervisor_stop(int state_dirfd, struct cm_error **err);

/* The config the container gets when the broker serves it: the proxy variables, a resolv.conf
 * naming 127.0.0.1 bound over /etc/resolv.conf, and (ca_pem) the per-run CA added to its trust
 * store (a combined bundle bound over the image's, and SSL_CERT_FILE, NODE_EXTRA_CA_CERTS,
 * CURL_CA_BUNDLE, REQUESTS_CA_BUNDLE pointing at it). The files are written into `dir` (in the
 * state dir). `rootfs` is the container's root on the host (read for its CA bundle). */
int egress_prepare_container(struct spec *s, int state_dirfd, const char *state_dir, const char *rootfs,
                             const char *ca_pem, struct cm_error **err);

#endif
