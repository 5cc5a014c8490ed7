/* codemode-broker: the egress broker of one container (issue 16). It runs outside the container,
 * in the network namespace of whoever started it, and serves the container's own namespace
 * (which has nothing but lo) through sockets init made there:
 *
 *   127.0.0.1:3128   HTTP proxy (CONNECT, and absolute-URI requests for plain http://)
 *   127.0.0.1:1080   SOCKS5 (CONNECT; names resolved here, as socks5h)
 *   *:53/udp         DNS stub: allowed names only, NXDOMAIN for the rest
 *   *:PORT           transparent capture: a `local 0.0.0.0/0 dev lo` route (route.c) makes every
 *                    address local, so a connect() to any address on an allowed port lands on
 *                    our listener, and getsockname() tells where the client meant to go
 *
 * Every connection is decided before a byte leaves: the name (the CONNECT or SOCKS host, else
 * the TLS SNI or HTTP Host the client sends first) must be allowed on that port, and the address
 * we connect to is one we resolved ourselves and found public (the SSRF and DNS-rebinding
 * guard), unless a CIDR rule names it. Each decision is one JSON line in the audit log
 * (audit.c). Secrets bound to a host are substituted into its requests by a TLS interceptor
 * (intercept.c) that the container trusts through a per-run CA.
 *
 * Files: main.c (start, control protocol, event loop, end), route.c (netlink), conn.c (one TCP
 * connection: life, decision, connect, first bytes; conn.h its state), handshake.c (proxy head,
 * SOCKS5), relay.c (the relay), addr.c (addresses), proto.c (TLS ClientHello, the proxy
 * request's rewrite), http1.c (the HTTP/1 parser), dns.c (the stub, c-ares, the address map),
 * guard.c (the SSRF guard: internal ranges and the machine's own addresses), limits.c (a
 * container's bounds), audit.c, and in codemode-broker-tls.so intercept.c (TLS, the
 * interceptor's connections) with intercept_http.c (each request decided, the secret in, the
 * response scrubbed). */
#ifndef CM_SUPERVISOR_BROKER_BROKER_H
#define CM_SUPERVISOR_BROKER_BROKER_H

#include <ares.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

#include "policy/egress.h"
#include "runtime/egress.h"

#define BROKER_MAX_LISTENERS (EGRESS_MAX_LISTEN_PORTS + 4)
#define BROKER_MAX_CONNS 4096
#define BROKER_BUF 65536
#define BROKER_HEAD_MAX 16384 /* an HTTP request head, a ClientHello */

struct broker;

/* Everything registered in epoll starts with this: the handler for its events. */
struct watch {
  void (*on_event)(struct broker *b, struct watch *w, uint32_t events);
  int fd;
};

/* An address with its family (AF_INET / AF_INET6), in network order. */
struct addr {
  int family;
  uint8_t bytes[16];
};
void addr_from_sockaddr(struct addr *a, const struct sockaddr *sa, uint16_t *port);
void addr_to_sockaddr(const struct addr *a, uint16_t port, struct sockaddr_storage *ss, socklen_t *len);
const char *addr_text(const struct addr *a, char buf[static 64]);
bool addr_is_loopback(const struct addr *a);

struct listener {
  struct watch w;
  int role; /* enum egress_socket_role */
  uint16_t port;
};

/* The names the DNS stub gave out, by address: a transparent connection to an address is let
 * through only for a name we answered with that address (dns.c). */
#define DNS_MAP_SIZE 1024
struct dns_map_entry {
  struct addr addr;
  char name[254];
  bool used;
};

struct secret_binding {
  char *name, *value, *host, *header;
  char *placeholder; /* "CODEMODE_SECRET_<NAME>" */
};

struct broker {
  int ep;
  char id[128];
  struct egress_policy policy;
  int audit_fd;
  int ctl_fd;
  bool committed;
  int init_pidfd;
  int netlink_fd;
  struct watch ctl_w, init_w, sig_w, dns_w;
  struct listener listeners[BROKER_MAX_LISTENERS];
  size_t n_listeners;
  ares_channel ares;
  struct watch ares_w[16]; /* c-ares' sockets */
  struct dns_map_entry *map; /* DNS_MAP_SIZE entries, calloc'd: untouched pages cost nothing */
  size_t map_next;
  struct secret_binding *secrets;
  size_t n_secrets;
  void *tls; /* intercept.c's state, NULL without secrets */
  const struct broker_tls_ops *tls_ops;
  struct guard *guard; /* guard.c: this machine's own addresses */
  struct conn *conns; /* every live connection (for deadlines and the final records) */
  struct conn *graveyard; /* closed this round, freed at its end */
  size_t n_conns;
  bool stopping;
};

/* main.c */
int broker_watch(struct broker *b, struct watch *w, uint32_t events);
int broker_rewatch(struct broker *b, struct watch *w, uint32_t events);
void broker_unwatch(struct broker *b, struct watch *w);
double now_mono(void);

/* route.c: through the netlink socket init opened in the container's namespace. */
int route_setup(int nlfd, char *why, size_t why_len);

/* guard.c: the SSRF / rebinding guard, the one test of every address we hand out or connect
 * to. guard_init (before the privileges go) learns this machine's addresses. */
int guard_init(struct broker *b, char *why, size_t why_len);
bool guard_refuses(struct broker *b, const struct addr *a, uint16_t port, const char **why);
/* Its sockets closed and its lists freed (the broker's end, a test's). */
void guard_free(struct broker *b);

/* limits.c: what one container may hold in its broker (man 5 codemode-profiles). */
#define BROKER_MAX_CONNS_PER_CONTAINER 256
#define BROKER_HEAD_TIMEOUT 10.0 /* a proxy request head, a SOCKS handshake */
#define BROKER_HEAD_TIMEOUT_TEXT "10 s"
#define BROKER_IDLE_TIMEOUT 300.0 /* a relayed connection where nothing moves */
#define BROKER_IDLE_TIMEOUT_TEXT "300 s"
/* May another connection be accepted? If not, the refusal is audited (reason). */
bool limits_admit(struct broker *b, const char *via);
double limits_next_deadline(struct broker *b, double conn_next);
void limits_check_deadlines(struct broker *b, double now);

/* conn.c */
void conn_accept(struct broker *b, struct listener *l);
void conn_check_deadlines(struct broker *b, double now);
double conn_next_deadline(struct broker *b);
void conn_close_all(struct broker *b, const char *why);
void conn_reap(struct broker *b);
/* Resolved for a named connection (dns.c calls back). */
struct conn;
void conn_resolved(struct broker *b, struct conn *c, const struct addr *addrs, size_t n, int status);

/* dns.c */
int dns_init(struct broker *b, const char *upstream, char *why, size_t why_len);
void dns_on_query(struct broker *b, struct watch *w, uint32_t events);
void dns_process_timeouts(struct broker *b);
/* Resolve for a connection; conn_resolved() is called, possibly before this returns. */
void dns_resolve_for(struct broker *b, struct conn *c, const char *name);
void dns_map_add(struct broker *b, const struct addr *a, const char *name);
bool dns_map_has(struct broker *b, const struct addr *a, const char *name);
void dns_shutdown(struct broker *b);

/* proto.c: parsers, each on the bytes received so far. 1: complete, 0: need more, -1: not it. */
int proto_tls_sni(const uint8_t *buf, size_t len, char *sni, size_t sni_len);
/* An HTTP proxy request head, parsed by the connection's http1 stream (http1.h), up to and
 * including its blank line (*head_len). CONNECT: *connect set, host and port from the authority.
 * Otherwise an absolute http:// URL whose Host header, if any, names the same host and port;
 * *rewritten gets the head the origin server receives: origin-form target, Connection: close, no
 * Proxy-* headers. host and http_host are filled as far as the head was read, refused or not. */
struct proxy_request {
  bool connect;
  char host[256], http_host[256];
  uint16_t port;
  char *rewritten; /* malloc'd; NULL for CONNECT */
  size_t rewritten_len;
  size_t head_len;
};
struct http1_stream;
int proto_proxy_request(struct http1_stream *s, const uint8_t *buf, size_t len, struct proxy_request *out,
                        const char **why);

/* audit.c: one JSON line per decision. */
struct audit_record {
  const char *event; /* "connect", "dns" */
  const char *decision; /* "allow", "deny" */
  const char *via;      /* "proxy", "socks", "transparent", "dns" */
  const char *host;
  uint16_t port;
  const char *sni, *http_host;
  const char *addr;
  const char *rule; /* NULL: none matched */
  const char *reason;
  const char *qtype;
  const char *answers; /* comma-separated */
  long long bytes_up, bytes_down; /* -1: not applicable */
  double duration_ms;             /* < 0: not applicable */
  const char *secret;             /* name of a substituted secret */
  bool intercepted;
};
void audit_write(struct broker *b, const struct audit_record *r);

/* intercept.c, built as codemode-broker-tls.so and loaded (tls.c) only when a secret is bound
 * to a host: OpenSSL is loaded by that broker alone, not by every broker at every start. */
struct broker_tls_ops {
  /* Make the per-run CA (its PEM in *ca_pem) and the TLS contexts. */
  int (*init)(struct broker *b, char **ca_pem, char *why, size_t why_len);
  /* Take over a decided connection: TLS to the client (a leaf for host), TLS upstream, the
   * substitution. On the broker's event loop (broker_watch); the fds are its to close. */
  void (*start)(struct broker *b, int client_fd, int upstream_fd, const char *host, uint16_t port, const char *via,
                const char *addr, const char *rule, double started);
  double (*next_deadline)(struct broker *b); /* 0: none */
  void (*check_deadlines)(struct broker *b, double now);
  void (*close_all)(struct broker *b, const char *why);
  size_t (*count)(struct broker *b); /* intercepted connections alive */
};
#define BROKER_TLS_OPS_SYMBOL "codemode_broker_tls_ops"

/* tls.c: load codemode-broker-tls.so (next to our binary). */
int tls_load(struct broker *b, char *why, size_t why_len);
/* The binding for host, if any. */
const struct secret_binding *intercept_binding(struct broker *b, const char *host);

#endif
