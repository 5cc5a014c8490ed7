/* One TCP connection from the container, from accept to the audit record.
 *
 *   proxy  (127.0.0.1:3128)  read the request head → CONNECT host:port, or GET http://host/…
 *   socks  (127.0.0.1:1080)  greeting → CONNECT to a name or an address
 *   transparent (*:PORT)     the address the client connected to is getsockname()'s
 *
 * then, by what is known:
 *   a name (CONNECT, SOCKS name, URL):  rule check → resolve here → guard every address →
 *       connect → reply to the client → peek its first bytes: a TLS SNI or HTTP Host that
 *       names another host must be allowed too → relay
 *   an address (transparent, SOCKS or CONNECT to an IP):  reply → peek the first bytes for
 *       the SNI or Host → decide (below) → connect to that same address → relay
 *
 * Deciding for an address D on port P with a name N (SNI, else Host, else the name the DNS stub
 * gave out for D): a deny rule for N or D wins; a CIDR rule allowing D:P lets it through; else
 * N must be allowed on P and D must be an address the stub answered for N (so a client cannot
 * pick its own address for an allowed name: no pinning to an internal address, no domain
 * fronting onto another IP). No name at all and no CIDR rule: refused (a raw-IP connect).
 *
 * The client's bytes are only peeked (MSG_PEEK) before the decision, so nothing of them has
 * been consumed when the relay, or the TLS interceptor, takes over. A refused connection gets a
 * 403 (proxy), SOCKS reply 2 (not allowed by ruleset), or a reset: never a timeout. */
#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "supervisor/broker/broker.h"

#define CONNECT_TIMEOUT 10.0
#define HANDSHAKE_TIMEOUT BROKER_HEAD_TIMEOUT
/* How long a transparent or tunnelled connection may stay silent before we decide without its
 * first bytes (protocols where the server speaks first: SMTP, SSH, MySQL). */
#define SNIFF_TIMEOUT 0.3

enum conn_state {
  CS_PROXY_HEAD,
  CS_SOCKS_GREETING,
  CS_SOCKS_REQUEST,
  CS_RESOLVING,
  CS_CONNECTING,
  CS_SNIFF,
  CS_RELAY,
};

struct conn {
  struct conn *next, *prev;
  struct watch cw, uw; /* the client's and the upstream's sockets */
  uint32_t cw_ev, uw_ev;
  const char *via;
  enum conn_state st;
  bool named;   /* the client named the host (CONNECT, SOCKS name, URL) */
  bool tunnel;  /* CONNECT or SOCKS: a success reply is owed once the upstream is connected */
  bool unlinked; /* taken off the list at shutdown, freed by its pending lookup */
  bool closed;   /* its sockets are closed; freed after this round of events (conn_reap) */
  bool replied; /* the CONNECT / SOCKS success reply is queued: we are inside the tunnel */
  bool dead;    /* closed while a resolution was pending */
  bool sniffed;
  char host[256];
  uint16_t port;
  struct addr dst; /* the address the client asked for (address path) */
  bool have_dst;
  struct addr cands[16];
  size_t n_cands, next_cand;
  char sni[256], http_host[256];
  const char *rule;
  char upstream_text[64];
  uint8_t *up, *down; /* client → upstream, upstream → client */
  size_t up_len, down_len;
  bool client_eof, upstream_eof, upstream_shut, client_shut;
  long long bytes_up, bytes_down;
  double started, deadline;
};

static void on_client(struct broker *b, struct watch *w, uint32_t ev);
static void on_upstream(struct broker *b, struct watch *w, uint32_t ev);
static void start_connect(struct broker *b, struct conn *c);
static void after_sniff(struct broker *b, struct conn *c);

/* --- addresses --------------------------------------------------------------------------------- */

void addr_from_sockaddr(struct addr *a, const struct sockaddr *sa, uint16_t *port) {
  memset(a, 0, sizeof(*a));
  if (sa->sa_family == AF_INET) {
    const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
    a->family = AF_INET;
    memcpy(a->bytes, &s4->sin_addr, 4);
    *port = ntohs(s4->sin_port);
    return;
  }
  const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
  static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  *port = ntohs(s6->sin6_port);
  /* A dual-stack listener reports IPv4 clients as ::ffff:a.b.c.d: keep them IPv4. */
  if (memcmp(&s6->sin6_addr, mapped, 12) == 0) {
    a->family = AF_INET;
    memcpy(a->bytes, (const uint8_t *)&s6->sin6_addr + 12, 4);
    return;
  }
  a->family = AF_INET6;
  memcpy(a->bytes, &s6->sin6_addr, 16);
}

void addr_to_sockaddr(const struct addr *a, uint16_t port, struct sockaddr_storage *ss, socklen_t *len) {
  memset(ss, 0, sizeof(*ss));
  if (a->family == AF_INET) {
    struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
    s4->sin_family = AF_INET;
    s4->sin_port = htons(port);
    memcpy(&s4->sin_addr, a->bytes, 4);
    *len = sizeof(*s4);
    return;
  }
  struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
  s6->sin6_family = AF_INET6;
  s6->sin6_port = htons(port);
  memcpy(&s6->sin6_addr, a->bytes, 16);
  *len = sizeof(*s6);
}

const char *addr_text(const struct addr *a, char buf[static 64]) {
  inet_ntop(a->family, a->bytes, buf, 64);
  return buf;
}

bool addr_is_loopback(const struct addr *a) {
  static const uint8_t v6lo[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  return (a->family == AF_INET && a->bytes[0] == 127) || (a->family == AF_INET6 && memcmp(a->bytes, v6lo, 16) == 0);
}

/* --- life and death ---------------------------------------------------------------------------- */

static void set_interest(struct broker *b, struct watch *w, uint32_t *cur, uint32_t want) {
  if (w->fd < 0 || *cur == want)
    return;
  broker_rewatch(b, w, want);
  *cur = want;
}

static void record(struct broker *b, struct conn *c, bool allowed, const char *reason) {
  struct audit_record r = {.event = "connect",
                           .decision = allowed ? "allow" : "deny",
                           .via = c->via,
                           .host = c->host,
                           .port = c->port,
                           .sni = c->sni,
                           .http_host = c->http_host,
                           .addr = c->upstream_text[0] ? c->upstream_text : NULL,
                           .rule = c->rule,
                           .reason = reason,
                           .bytes_up = allowed ? c->bytes_up : -1,
                           .bytes_down = allowed ? c->bytes_down : -1,
                           .duration_ms = allowed ? (now_mono() - c->started) * 1000 : -1};
  char dst[64];
  if (r.addr == NULL && c->have_dst)
    r.addr = addr_text(&c->dst, dst);
  audit_write(b, &r);
}

/* Close now, free later: the same round of epoll events may still hold the other socket's
 * event for this connection, and its handler must find it marked closed, not freed. */
static void conn_free(struct broker *b, struct conn *c) {
  if (c->closed)
    return;
  c->closed = true;
  if (c->cw.fd >= 0) {
    broker_unwatch(b, &c->cw);
    close(c->cw.fd);
  }
  if (c->uw.fd >= 0) {
    broker_unwatch(b, &c->uw);
    close(c->uw.fd);
  }
  if (!c->unlinked) {
    if (c->prev)
      c->prev->next = c->next;
    else
      b->conns = c->next;
    if (c->next)
      c->next->prev = c->prev;
  }
  b->n_conns--;
  c->next = b->graveyard;
  b->graveyard = c;
}

void conn_reap(struct broker *b) {
  while (b->graveyard) {
    struct conn *c = b->graveyard;
    b->graveyard = c->next;
    free(c->up);
    free(c->down);
    free(c);
  }
}

/* A reset, not a FIN: the client learns at once that there is nothing for it here. */
static void reset_client(struct conn *c) {
  struct linger lg = {.l_onoff = 1, .l_linger = 0};
  if (c->cw.fd >= 0)
    setsockopt(c->cw.fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
}

static void send_now(int fd, const char *s, size_t n) {
  ssize_t r = send(fd, s, n, MSG_DONTWAIT | MSG_NOSIGNAL);
  (void)r; /* a refusal that cannot be delivered is still a refusal */
}

static void socks_reply(struct conn *c, uint8_t rep) {
  uint8_t r[10] = {5, rep, 0, 1, 0, 0, 0, 0, 0, 0};
  send_now(c->cw.fd, (const char *)r, sizeof(r));
}

/* Refuse: record it, tell the client in its protocol's words, close. */
static void deny(struct broker *b, struct conn *c, const char *reason) {
  record(b, c, false, reason);
  if (strcmp(c->via, "proxy") == 0 && !c->replied) {
    char body[768], msg[1024];
    int bl = snprintf(body, sizeof(body), "codemode egress: %s:%u refused: %s\n", c->host, c->port, reason);
    int n = snprintf(msg, sizeof(msg),
                     "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                     "X-Codemode-Egress: denied\r\nContent-Length: %d\r\n\r\n%s",
                     bl, body);
    send_now(c->cw.fd, msg, (size_t)n);
  } else if (strcmp(c->via, "socks") == 0 && !c->replied) {
    socks_reply(c, 0x02); /* connection not allowed by ruleset */
  } else {
    reset_client(c);
  }
  conn_free(b, c);
}

/* Allowed, but the upstream could not be reached: a 502 / SOCKS failure / reset. */
static void upstream_failed(struct broker *b, struct conn *c, const char *what, int e) {
  char reason[256];
  snprintf(reason, sizeof(reason), "%s: %s", what, strerror(e));
  record(b, c, true, reason);
  if (strcmp(c->via, "proxy") == 0 && !c->replied) {
    char msg[512];
    int n = snprintf(msg, sizeof(msg),
                     "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                     "Content-Length: %zu\r\n\r\n%s\n",
                     strlen(reason) + 1, reason);
    send_now(c->cw.fd, msg, (size_t)n);
  } else if (strcmp(c->via, "socks") == 0 && !c->replied) {
    socks_reply(c, e == ECONNREFUSED ? 0x05 : 0x04);
  } else {
    reset_client(c);
  }
  conn_free(b, c);
}

void conn_accept(struct broker *b, struct listener *l) {
  for (int budget = 64; budget > 0; budget--) {
    struct sockaddr_storage local;
    int fd = accept4(l->w.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
      return;
    if (b->stopping || !limits_admit(b, l->role == EGRESS_SOCK_HTTP_PROXY ? "proxy" : l->role == EGRESS_SOCK_SOCKS ? "socks" : "transparent")) {
      struct linger lg = {.l_onoff = 1, .l_linger = 0}; /* a reset: refused at once, never a hang */
      setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
      close(fd);
      continue;
    }
    struct conn *c = calloc(1, sizeof(*c));
    if (c == NULL) {
      close(fd);
      return;
    }
    c->cw = (struct watch){on_client, fd};
    c->uw = (struct watch){on_upstream, -1};
    c->started = now_mono();
    c->deadline = c->started + HANDSHAKE_TIMEOUT;
    c->next = b->conns;
    if (b->conns)
      b->conns->prev = c;
    b->conns = c;
    b->n_conns++;
    c->up = malloc(BROKER_BUF);
    c->down = malloc(BROKER_BUF);
    if (c->up == NULL || c->down == NULL) {
      conn_free(b, c);
      return;
    }
    if (l->role == EGRESS_SOCK_HTTP_PROXY) {
      c->via = "proxy";
      c->st = CS_PROXY_HEAD;
    } else if (l->role == EGRESS_SOCK_SOCKS) {
      c->via = "socks";
      c->st = CS_SOCKS_GREETING;
    } else {
      c->via = "transparent";
      socklen_t len = sizeof(local);
      if (getsockname(fd, (struct sockaddr *)&local, &len) < 0) {
        conn_free(b, c);
        continue;
      }
      addr_from_sockaddr(&c->dst, (struct sockaddr *)&local, &c->port);
      c->have_dst = true;
      addr_text(&c->dst, c->host); /* until a name is known */
      c->st = CS_SNIFF;
      c->deadline = c->started + SNIFF_TIMEOUT;
    }
    /* Edge-triggered while we only peek: the bytes stay in the socket, a level trigger would
     * fire for them again and again. */
    c->cw_ev = c->st == CS_SNIFF ? (EPOLLIN | EPOLLET) : EPOLLIN;
    if (broker_watch(b, &c->cw, c->cw_ev) < 0) {
      conn_free(b, c);
      continue;
    }
  }
}

/* --- the decision -------------------------------------------------------------------------------- */

/* The name path: the client named host:port. */
static void decide_named(struct broker *b, struct conn *c) {
  struct in6_addr probe;
  if (inet_pton(AF_INET, c->host, &probe) == 1 || inet_pton(AF_INET6, c->host, &probe) == 1) {
    /* An address, not a name: decided like a transparent connection, once its first bytes
     * (after our reply) tell the SNI or Host. */
    struct addr a = {.family = strchr(c->host, ':') ? AF_INET6 : AF_INET};
    inet_pton(a.family, c->host, a.bytes);
    c->dst = a;
    c->have_dst = true;
    c->named = false;
    if (strcmp(c->via, "proxy") == 0) {
      static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
      send_now(c->cw.fd, ok, sizeof(ok) - 1);
    } else {
      socks_reply(c, 0);
    }
    c->replied = true;
    c->st = CS_SNIFF;
    c->deadline = now_mono() + SNIFF_TIMEOUT;
    c->cw_ev = 0;
    set_interest(b, &c->cw, &c->cw_ev, EPOLLIN | EPOLLET);
    return;
  }
  c->named = true;
  struct egress_verdict v = egress_check_host(&b->policy, c->host, c->port);
  c->rule = v.rule ? v.rule->text : NULL;
  if (!v.allowed) {
    deny(b, c, v.rule ? "denied by rule" : "no rule allows this host and port");
    return;
  }
  c->st = CS_RESOLVING;
  set_interest(b, &c->cw, &c->cw_ev, 0);
  dns_resolve_for(b, c, c->host);
}

void conn_resolved(struct broker *b, struct conn *c, const struct addr *addrs, size_t n, int status) {
  if (c->dead) {
    conn_free(b, c);
    return;
  }
  char refused[256] = "";
  const char *why = NULL;
  c->n_cands = 0;
  for (size_t i = 0; i < n && c->n_cands < 16; i++) {
    const char *w;
    /* The SSRF / rebinding guard, on the answer we are about to use (never one the container
     * got earlier): internal addresses only where a CIDR rule names them. */
    if (guard_refuses(b, &addrs[i], c->port, &w)) {
      char t[64];
      size_t rl = strlen(refused);
      snprintf(refused + rl, sizeof(refused) - rl, "%s%s", rl ? "," : "", addr_text(&addrs[i], t));
      why = w;
      continue;
    }
    c->cands[c->n_cands++] = addrs[i];
  }
  if (c->n_cands == 0) {
    char reason[384];
    if (refused[0])
      snprintf(reason, sizeof(reason), "resolves to %s: %s", refused, why);
    else
      snprintf(reason, sizeof(reason), "does not resolve (%s)", status == ARES_SUCCESS ? "no address" : ares_strerror(status));
    if (refused[0])
      deny(b, c, reason);
    else
      upstream_failed(b, c, reason, EHOSTUNREACH);
    return;
  }
  c->next_cand = 0;
  start_connect(b, c);
}

/* The address path, after the peek. */
static void decide_addr(struct broker *b, struct conn *c) {
  if (addr_is_loopback(&c->dst)) {
    deny(b, c, "a loopback destination");
    return;
  }
  struct egress_verdict cidr = egress_check_addr(&b->policy, c->dst.family, c->dst.bytes, c->port);
  if (!cidr.allowed && cidr.rule) {
    c->rule = cidr.rule->text;
    deny(b, c, "denied by rule");
    return;
  }
  const char *inside;
  if (guard_refuses(b, &c->dst, c->port, &inside)) { /* an answer gone stale, a CONNECT to an IP */
    deny(b, c, inside);
    return;
  }
  const char *name = c->sni[0] ? c->sni : c->http_host[0] ? c->http_host : NULL;
  if (name) {
    snprintf(c->host, sizeof(c->host), "%s", name);
    struct egress_verdict v = egress_check_host(&b->policy, name, c->port);
    if (!v.allowed && v.rule) { /* deny wins, over a CIDR rule too */
      c->rule = v.rule->text;
      deny(b, c, "denied by rule");
      return;
    }
    if (cidr.allowed) {
      c->rule = cidr.rule->text;
    } else if (!v.allowed) {
      deny(b, c, "no rule allows this host and port");
      return;
    } else if (!dns_map_has(b, &c->dst, name)) {
      c->rule = v.rule->text;
      char reason[384], t[64];
      snprintf(reason, sizeof(reason), "%s is not an address the DNS stub gave out for %s", addr_text(&c->dst, t), name);
      deny(b, c, reason);
      return;
    } else {
      c->rule = v.rule->text;
    }
  } else if (cidr.allowed) {
    c->rule = cidr.rule->text;
  } else {
    struct egress_verdict v = {0};
    const char *mapped = dns_map_allowed_name(b, &c->dst, c->port, &v);
    if (mapped == NULL) {
      deny(b, c, "a raw address: no SNI or Host, no name from the DNS stub, no CIDR rule");
      return;
    }
    snprintf(c->host, sizeof(c->host), "%s", mapped);
    c->rule = v.rule->text;
  }
  c->cands[0] = c->dst;
  c->n_cands = 1;
  c->next_cand = 0;
  start_connect(b, c);
}

/* --- connecting --------------------------------------------------------------------------------- */

static void start_connect(struct broker *b, struct conn *c) {
  while (c->next_cand < c->n_cands) {
    const struct addr *a = &c->cands[c->next_cand++];
    struct sockaddr_storage ss;
    socklen_t len;
    addr_to_sockaddr(a, c->port, &ss, &len);
    int fd = socket(a->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
      continue;
    addr_text(a, c->upstream_text);
    if (connect(fd, (struct sockaddr *)&ss, len) < 0 && errno != EINPROGRESS) {
      close(fd);
      continue;
    }
    c->uw.fd = fd;
    c->uw_ev = EPOLLOUT;
    if (broker_watch(b, &c->uw, EPOLLOUT) < 0) {
      close(fd);
      c->uw.fd = -1;
      continue;
    }
    c->st = CS_CONNECTING;
    c->deadline = now_mono() + CONNECT_TIMEOUT;
    set_interest(b, &c->cw, &c->cw_ev, 0);
    return;
  }
  upstream_failed(b, c, "connect", errno ? errno : EHOSTUNREACH);
}

static void enter_relay(struct broker *b, struct conn *c);

/* A relay adds no delay of its own: without TCP_NODELAY a small TLS record would wait for the
 * ACK of the previous one (Nagle against delayed ACKs), milliseconds per handshake. */
static void no_delay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void connected(struct broker *b, struct conn *c) {
  no_delay(c->cw.fd);
  no_delay(c->uw.fd);
  if (c->named && c->tunnel && !c->replied) {
    /* The tunnel is open; its first bytes are checked before they go anywhere. */
    static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
    if (strcmp(c->via, "proxy") == 0)
      send_now(c->cw.fd, ok, sizeof(ok) - 1);
    else
      socks_reply(c, 0);
    c->replied = true;
  }
  if (c->named && !c->sniffed) {
    c->st = CS_SNIFF;
    c->deadline = now_mono() + SNIFF_TIMEOUT;
    set_interest(b, &c->uw, &c->uw_ev, 0);
    c->cw_ev = 0;
    set_interest(b, &c->cw, &c->cw_ev, EPOLLIN | EPOLLET);
    return;
  }
  enter_relay(b, c);
}

/* The upstream is connected and the decision made: the interceptor takes over the bound hosts,
 * everything else is relayed. */
static void enter_relay(struct broker *b, struct conn *c) {
  /* Only a TLS client (its ClientHello seen, nothing of it consumed) can be intercepted, and
   * only when its SNI is the bound host itself: a secret never rides a connection to another
   * name. */
  if (b->tls && c->sni[0] && c->up_len == 0 && strcasecmp(c->sni, c->host) == 0 && intercept_binding(b, c->host)) {
    int cfd = c->cw.fd, ufd = c->uw.fd;
    broker_unwatch(b, &c->cw);
    broker_unwatch(b, &c->uw);
    c->cw.fd = c->uw.fd = -1;
    b->tls_ops->start(b, cfd, ufd, c->host, c->port, c->via, c->upstream_text, c->rule, c->started);
    conn_free(b, c);
    return;
  }
  c->st = CS_RELAY;
  c->deadline = 0;
  c->cw_ev = c->uw_ev = 0xffffffff; /* force the first set_interest */
  on_client(b, &c->cw, 0);
}

/* --- the handshakes ---------------------------------------------------------------------------- */

static ssize_t read_more(struct conn *c) {
  if (c->up_len >= BROKER_HEAD_MAX)
    return -2;
  ssize_t n = recv(c->cw.fd, c->up + c->up_len, BROKER_HEAD_MAX - c->up_len, 0);
  if (n > 0)
    c->up_len += (size_t)n;
  return n;
}

static void on_proxy_head(struct broker *b, struct conn *c) {
  ssize_t n = read_more(c);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
    conn_free(b, c);
    return;
  }
  struct proxy_request pr;
  const char *why = "request head too large";
  int r = n == -2 ? -1 : proto_proxy_request(c->up, c->up_len, &pr, &why);
  if (r == 0)
    return;
  if (r < 0) {
    char msg[512];
    int m = snprintf(msg, sizeof(msg),
                     "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                     "Content-Length: %zu\r\n\r\ncodemode egress: %s\n",
                     strlen(why) + 17, why);
    send_now(c->cw.fd, msg, (size_t)m);
    conn_free(b, c);
    return;
  }
  snprintf(c->host, sizeof(c->host), "%s", pr.host);
  c->port = pr.port;
  if (pr.connect) {
    c->tunnel = true;
    if (c->up_len > pr.head_len) {
      /* Bytes after the CONNECT head, before our 200 (a client that does not wait): kept, and
       * checked like the tunnel's first bytes. */
      memmove(c->up, c->up + pr.head_len, c->up_len - pr.head_len);
      c->up_len -= pr.head_len;
      c->sniffed = true;
      if (proto_tls_sni(c->up, c->up_len, c->sni, sizeof(c->sni)) != 1)
        proto_http_host(c->up, c->up_len, c->http_host, sizeof(c->http_host));
    } else {
      c->up_len = 0;
    }
    decide_named(b, c);
    return;
  }
  /* GET http://host/…: the origin server gets the rewritten head, then whatever followed it. */
  size_t rest = c->up_len - pr.head_len;
  if (pr.rewritten_len + rest > BROKER_BUF) {
    free(pr.rewritten);
    conn_free(b, c);
    return;
  }
  uint8_t *tail = malloc(rest ? rest : 1);
  memcpy(tail, c->up + pr.head_len, rest);
  memcpy(c->up, pr.rewritten, pr.rewritten_len);
  memcpy(c->up + pr.rewritten_len, tail, rest);
  free(tail);
  c->up_len = pr.rewritten_len + rest;
  proto_http_host(c->up, c->up_len, c->http_host, sizeof(c->http_host));
  free(pr.rewritten);
  c->sniffed = true;
  c->replied = false;
  /* A Host header naming another host than the URL must be allowed too. */
  if (c->http_host[0] && strcmp(c->http_host, c->host) != 0 &&
      !egress_check_host(&b->policy, c->http_host, c->port).allowed) {
    deny(b, c, "the Host header names a host no rule allows");
    return;
  }
  decide_named(b, c);
}

static void on_socks(struct broker *b, struct conn *c) {
  ssize_t n = read_more(c);
  if (n == 0 || n == -2 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
    conn_free(b, c);
    return;
  }
  const uint8_t *p = c->up;
  if (c->st == CS_SOCKS_GREETING) {
    if (c->up_len < 2)
      return;
    if (p[0] != 5) {
      conn_free(b, c);
      return;
    }
    size_t need = 2 + (size_t)p[1];
    if (c->up_len < need)
      return;
    bool noauth = memchr(p + 2, 0, p[1]) != NULL;
    uint8_t reply[2] = {5, noauth ? 0 : 0xff};
    send_now(c->cw.fd, (const char *)reply, 2);
    if (!noauth) {
      conn_free(b, c);
      return;
    }
    memmove(c->up, c->up + need, c->up_len - need);
    c->up_len -= need;
    c->st = CS_SOCKS_REQUEST;
    if (c->up_len == 0)
      return;
  }
  if (c->up_len < 5)
    return;
  size_t need;
  switch (p[3]) {
  case 1: need = 4 + 4 + 2; break;
  case 3: need = 4 + 1 + (size_t)p[4] + 2; break;
  case 4: need = 4 + 16 + 2; break;
  default:
    socks_reply(c, 0x08); /* address type not supported */
    conn_free(b, c);
    return;
  }
  if (c->up_len < need)
    return;
  if (p[0] != 5 || p[1] != 1) {
    socks_reply(c, 0x07); /* only CONNECT: no BIND, no UDP ASSOCIATE (UDP goes nowhere) */
    conn_free(b, c);
    return;
  }
  c->port = (uint16_t)(p[need - 2] << 8 | p[need - 1]);
  if (p[3] == 3) {
    size_t l = p[4];
    for (size_t i = 0; i < l; i++) {
      unsigned char ch = p[5 + i];
      if (!(ch == '-' || ch == '.' || ch == '_' || (ch >= '0' && ch <= '9') || ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'z'))) {
        socks_reply(c, 0x04);
        conn_free(b, c);
        return;
      }
      c->host[i] = (char)(ch | ((ch >= 'A' && ch <= 'Z') ? 0x20 : 0));
    }
    c->host[l] = '\0';
  } else {
    struct addr a = {.family = p[3] == 1 ? AF_INET : AF_INET6};
    memcpy(a.bytes, p + 4, p[3] == 1 ? 4 : 16);
    addr_text(&a, c->host);
  }
  c->up_len = 0;
  c->tunnel = true;
  decide_named(b, c);
}

/* Peek at the first bytes: a TLS ClientHello (its SNI), an HTTP request (its Host), or neither. */
static void on_sniff(struct broker *b, struct conn *c, bool timed_out) {
  uint8_t buf[BROKER_HEAD_MAX];
  ssize_t n = timed_out ? 0 : recv(c->cw.fd, buf, sizeof(buf), MSG_PEEK);
  if (!timed_out) {
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      conn_free(b, c); /* the client went away before saying anything */
      return;
    }
    if (n < 0)
      return;
    int t = proto_tls_sni(buf, (size_t)n, c->sni, sizeof(c->sni));
    int h = t == 1 ? -1 : proto_http_host(buf, (size_t)n, c->http_host, sizeof(c->http_host));
    if ((t == 0 || h == 0) && (size_t)n < sizeof(buf))
      return; /* more to come */
  }
  c->sniffed = true;
  after_sniff(b, c);
}

static void after_sniff(struct broker *b, struct conn *c) {
  /* Back to level-triggered: from here the bytes are read, not peeked. */
  c->cw_ev = 0;
  set_interest(b, &c->cw, &c->cw_ev, 0);
  if (!c->named) {
    decide_addr(b, c);
    return;
  }
  /* Inside an allowed tunnel: a TLS SNI or an HTTP Host naming another host must be allowed on
   * this port too (the tunnel to an allowed host's address must not carry a request for a host
   * the allowlist does not have). */
  const char *other[2] = {c->sni, c->http_host};
  for (int i = 0; i < 2; i++) {
    if (other[i][0] && strcasecmp(other[i], c->host) != 0) {
      struct egress_verdict v = egress_check_host(&b->policy, other[i], c->port);
      if (!v.allowed) {
        deny(b, c, i == 0 ? "the TLS SNI names a host no rule allows" : "the Host header names a host no rule allows");
        return;
      }
    }
  }
  enter_relay(b, c);
}

/* --- the relay ---------------------------------------------------------------------------------- */

static void relay_interest(struct broker *b, struct conn *c) {
  uint32_t cev = 0, uev = 0;
  if (!c->client_eof && c->up_len < BROKER_BUF)
    cev |= EPOLLIN;
  if (c->down_len)
    cev |= EPOLLOUT;
  if (!c->upstream_eof && c->down_len < BROKER_BUF)
    uev |= EPOLLIN;
  if (c->up_len)
    uev |= EPOLLOUT;
  set_interest(b, &c->cw, &c->cw_ev, cev);
  set_interest(b, &c->uw, &c->uw_ev, uev);
}

/* Move what can move; true when the connection is over. */
static bool pump(struct conn *c) {
  for (int round = 0; round < 4; round++) {
    bool moved = false;
    if (!c->client_eof && c->up_len < BROKER_BUF) {
      ssize_t n = recv(c->cw.fd, c->up + c->up_len, BROKER_BUF - c->up_len, 0);
      if (n > 0) {
        c->up_len += (size_t)n;
        moved = true;
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        c->client_eof = true;
      }
    }
    if (c->up_len) {
      ssize_t n = send(c->uw.fd, c->up, c->up_len, MSG_NOSIGNAL);
      if (n > 0) {
        c->bytes_up += n; /* what reached the upstream, our rewritten head included */
        memmove(c->up, c->up + n, c->up_len - (size_t)n);
        c->up_len -= (size_t)n;
        moved = true;
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        return true;
      }
    }
    if (!c->upstream_eof && c->down_len < BROKER_BUF) {
      ssize_t n = recv(c->uw.fd, c->down + c->down_len, BROKER_BUF - c->down_len, 0);
      if (n > 0) {
        c->down_len += (size_t)n;
        moved = true;
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        c->upstream_eof = true;
      }
    }
    if (c->down_len) {
      ssize_t n = send(c->cw.fd, c->down, c->down_len, MSG_NOSIGNAL);
      if (n > 0) {
        c->bytes_down += n;
        memmove(c->down, c->down + n, c->down_len - (size_t)n);
        c->down_len -= (size_t)n;
        moved = true;
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        return true;
      }
    }
    /* Half-close passes through: EOF from one side, once its bytes are delivered, is a
     * shutdown(SHUT_WR) towards the other. */
    if (c->client_eof && c->up_len == 0 && !c->upstream_shut) {
      shutdown(c->uw.fd, SHUT_WR);
      c->upstream_shut = true;
    }
    if (c->upstream_eof && c->down_len == 0 && !c->client_shut) {
      shutdown(c->cw.fd, SHUT_WR);
      c->client_shut = true;
    }
    if (c->upstream_shut && c->client_shut)
      return true;
    if (!moved)
      break;
  }
  return false;
}

static void relay(struct broker *b, struct conn *c) {
  if (pump(c)) {
    record(b, c, true, NULL);
    conn_free(b, c);
    return;
  }
  c->deadline = now_mono() + BROKER_IDLE_TIMEOUT; /* a stalled connection is not held forever */
  relay_interest(b, c);
}

static void on_client(struct broker *b, struct watch *w, uint32_t ev) {
  struct conn *c = (struct conn *)((char *)w - offsetof(struct conn, cw));
  if (c->closed)
    return;
  switch (c->st) {
  case CS_PROXY_HEAD: on_proxy_head(b, c); return;
  case CS_SOCKS_GREETING:
  case CS_SOCKS_REQUEST: on_socks(b, c); return;
  case CS_SNIFF: on_sniff(b, c, false); return;
  case CS_RELAY: relay(b, c); return;
  default:
    /* Resolving or connecting: we do not read. A client that hung up is dropped now (epoll
     * reports a hang-up whatever we asked for, so it must not stay watched). */
    if (ev & (EPOLLHUP | EPOLLERR)) {
      if (c->st == CS_RESOLVING) {
        broker_unwatch(b, &c->cw);
        c->dead = true; /* freed when the lookup answers */
      } else {
        conn_free(b, c);
      }
    }
    return;
  }
}

static void on_upstream(struct broker *b, struct watch *w, uint32_t ev) {
  struct conn *c = (struct conn *)((char *)w - offsetof(struct conn, uw));
  if (c->closed)
    return;
  if (c->st == CS_CONNECTING) {
    int e = 0;
    socklen_t el = sizeof(e);
    getsockopt(w->fd, SOL_SOCKET, SO_ERROR, &e, &el);
    if (e != 0) {
      broker_unwatch(b, &c->uw);
      close(c->uw.fd);
      c->uw.fd = -1;
      c->upstream_text[0] = '\0';
      errno = e;
      if (c->next_cand < c->n_cands) {
        start_connect(b, c);
        return;
      }
      upstream_failed(b, c, "connect", e);
      return;
    }
    connected(b, c);
    return;
  }
  if (c->st == CS_RELAY)
    relay(b, c);
}

/* --- time ----------------------------------------------------------------------------------------- */

double conn_next_deadline(struct broker *b) {
  double next = 0;
  for (struct conn *c = b->conns; c; c = c->next)
    if (c->deadline > 0 && (next == 0 || c->deadline < next))
      next = c->deadline;
  return next;
}

void conn_check_deadlines(struct broker *b, double now) {
  struct conn *c = b->conns;
  while (c) {
    struct conn *next = c->next;
    if (c->deadline > 0 && now >= c->deadline) {
      if (c->st == CS_SNIFF) {
        c->deadline = 0;
        on_sniff(b, c, true);
      } else if (c->st == CS_CONNECTING) {
        upstream_failed(b, c, "connect", ETIMEDOUT);
      } else if (c->st == CS_RELAY) {
        record(b, c, true, "idle: nothing moved either way for " BROKER_IDLE_TIMEOUT_TEXT);
        conn_free(b, c);
      } else if (c->st != CS_RESOLVING) {
        conn_free(b, c); /* a handshake that never finished */
      }
    }
    c = next;
  }
}

void conn_close_all(struct broker *b, const char *why) {
  while (b->conns) {
    struct conn *c = b->conns;
    /* One last move: a client that read its answer and exited has closed by now. */
    if (c->st == CS_RELAY && pump(c)) {
      record(b, c, true, NULL);
      conn_free(b, c);
      continue;
    }
    if (c->st == CS_RELAY)
      record(b, c, true, why);
    if (c->st == CS_RESOLVING) {
      /* c-ares calls back (with ARES_EDESTRUCTION) when it is destroyed; let it free. */
      c->dead = true;
      c->unlinked = true;
      if (c->prev)
        c->prev->next = c->next;
      else
        b->conns = c->next;
      if (c->next)
        c->next->prev = c->prev;
      c->next = c->prev = NULL;
      continue;
    }
    conn_free(b, c);
  }
}
