/* One TCP connection from the container, from accept to the audit record.
 *
 *   proxy  (127.0.0.1:3128)  read the request head → CONNECT host:port, or GET http://host/…
 *   socks  (127.0.0.1:1080)  greeting → CONNECT to a name or an address
 *   transparent (*:PORT)     the address the client connected to is getsockname()'s
 *
 * then, by what is known:
 *   a name (CONNECT, SOCKS name, URL):  rule check → resolve here → guard every address →
 *       connect → reply to the client → wait for its first bytes (bytes that came with the
 *       CONNECT are the first): a TLS SNI must be the name (or another allowed name the stub
 *       gave out for the address connected to), an HTTP Host must be the name → relay
 *   an address (transparent, SOCKS or CONNECT to an IP):  reply → wait for the first bytes, the
 *       SNI or Host → decide (below) → connect to that same address → relay
 *
 * Nothing is relayed before the first bytes are seen and agree: a connection that sends none by
 * its deadline is closed, not relayed (issue 25: a timer that opened it was a bypass). Only
 * under a CIDR rule for the address is a client silent for SERVER_FIRST_GRACE relayed without
 * them (a server-first protocol: that rule allows the address whatever name comes later).
 *
 * Deciding for an address D on port P with a name N (SNI, else Host): a deny rule for N or D
 * wins; N must be allowed on P and D an address the stub answered for N (so a client cannot pick
 * its own address for an allowed name: no pinning to an internal address, no domain fronting
 * onto another IP); under a CIDR rule allowing D:P a name is not needed, but one that is given
 * must pass the same test (a lie would become a host rule when learned). No name, or bytes that
 * are neither TLS nor HTTP, and no CIDR rule: refused.
 *
 * Plain HTTP is then relayed request by request (relay.c): each later head decided as it comes.
 * The client's bytes are only peeked (MSG_PEEK) before the decision, so nothing of them has
 * been consumed when the relay, or the TLS interceptor, takes over. A refused connection gets a
 * 403 (proxy, or an HTTP client anywhere; 400 for a malformed request), SOCKS reply 2 (not
 * allowed by ruleset), or a reset. */
#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "supervisor/broker/conn.h"

#define CONNECT_TIMEOUT 10.0
#define HANDSHAKE_TIMEOUT BROKER_HEAD_TIMEOUT
/* How long a connection has to send its first bytes (a ClientHello, a request head) once we
 * wait for them. At the end it is closed, never relayed: the name decides, not a timer. */
#define FIRST_BYTES_TIMEOUT 10.0
/* A CIDR rule allows an address whatever the client says: a client silent this long under one
 * speaks a protocol where the server speaks first (SSH, SMTP), relayed by that rule alone. */
#define SERVER_FIRST_GRACE 0.3


static void on_client(struct broker *b, struct watch *w, uint32_t ev);
static void on_upstream(struct broker *b, struct watch *w, uint32_t ev);
static void start_connect(struct broker *b, struct conn *c);
static void on_sniff(struct broker *b, struct conn *c);
static void decide_first(struct broker *b, struct conn *c);
static void decide_addr(struct broker *b, struct conn *c, const char *name);

/* --- life and death ---------------------------------------------------------------------------- */

void conn_set_interest(struct broker *b, struct watch *w, uint32_t *cur, uint32_t want) {
  if (w->fd < 0 || *cur == want)
    return;
  broker_rewatch(b, w, want);
  *cur = want;
}

void conn_record(struct broker *b, struct conn *c, bool allowed, const char *reason) {
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
void conn_free(struct broker *b, struct conn *c) {
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
    free(c->h1);
    free(c);
  }
}

/* A reset, not a FIN: the client learns at once that there is nothing for it here. */
static void reset_client(struct conn *c) {
  struct linger lg = {.l_onoff = 1, .l_linger = 0};
  if (c->cw.fd >= 0)
    setsockopt(c->cw.fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
}

void conn_send_now(int fd, const char *s, size_t n) {
  ssize_t r = send(fd, s, n, MSG_DONTWAIT | MSG_NOSIGNAL);
  (void)r; /* a refusal that cannot be delivered is still a refusal */
}

void conn_socks_reply(struct conn *c, uint8_t rep) {
  uint8_t r[10] = {5, rep, 0, 1, 0, 0, 0, 0, 0, 0};
  conn_send_now(c->cw.fd, (const char *)r, sizeof(r));
}

void conn_http_refusal(int fd, int status, const char *what, const char *reason) {
  char body[1024], msg[1400];
  int bl = snprintf(body, sizeof(body), "codemode egress: %s%s%s\n", what ? what : "", what ? " refused: " : "", reason);
  if (bl >= (int)sizeof(body))
    bl = (int)sizeof(body) - 1;
  int n = snprintf(msg, sizeof(msg),
                   "HTTP/1.1 %s\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                   "X-Codemode-Egress: denied\r\nContent-Length: %d\r\n\r\n%.*s",
                   status == 400 ? "400 Bad Request" : "403 Forbidden", bl, bl, body);
  conn_send_now(fd, msg, (size_t)(n < (int)sizeof(msg) ? n : (int)sizeof(msg) - 1));
}

void conn_refuse_request(struct broker *b, struct conn *c, int status, const char *http_host, const char *reason) {
  if (http_host && http_host != c->http_host)
    snprintf(c->http_host, sizeof(c->http_host), "%s", http_host);
  conn_record(b, c, false, reason);
  conn_http_refusal(c->cw.fd, status, NULL, reason);
  conn_free(b, c);
}

/* Refuse: record it, tell the client in its protocol's words, close. */
void conn_deny(struct broker *b, struct conn *c, const char *reason) {
  conn_record(b, c, false, reason);
  if (strcmp(c->via, "proxy") == 0 && !c->replied) {
    char what[300];
    snprintf(what, sizeof(what), "%s:%u", c->host, c->port);
    conn_http_refusal(c->cw.fd, 403, what, reason);
  } else if (strcmp(c->via, "socks") == 0 && !c->replied) {
    conn_socks_reply(c, 0x02); /* connection not allowed by ruleset */
  } else {
    reset_client(c);
  }
  conn_free(b, c);
}

/* Allowed, but the upstream could not be reached: a 502 / SOCKS failure / reset. */
static void upstream_failed(struct broker *b, struct conn *c, const char *what, int e) {
  char reason[256];
  snprintf(reason, sizeof(reason), "%s: %s", what, strerror(e));
  conn_record(b, c, true, reason);
  if (strcmp(c->via, "proxy") == 0 && !c->replied) {
    char msg[512];
    int n = snprintf(msg, sizeof(msg),
                     "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                     "Content-Length: %zu\r\n\r\n%s\n",
                     strlen(reason) + 1, reason);
    conn_send_now(c->cw.fd, msg, (size_t)n);
  } else if (strcmp(c->via, "socks") == 0 && !c->replied) {
    conn_socks_reply(c, e == ECONNREFUSED ? 0x05 : 0x04);
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
      c->h1 = malloc(sizeof(*c->h1));
      if (c->h1 == NULL) {
        conn_free(b, c);
        return;
      }
      http1_stream_init(c->h1);
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
      c->cidr_ok = egress_check_addr(&b->policy, c->dst.family, c->dst.bytes, c->port).allowed;
      c->st = CS_SNIFF;
      c->deadline = c->started + (c->cidr_ok ? SERVER_FIRST_GRACE : FIRST_BYTES_TIMEOUT);
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
void conn_decide_named(struct broker *b, struct conn *c) {
  struct in6_addr probe;
  if (inet_pton(AF_INET, c->host, &probe) == 1 || inet_pton(AF_INET6, c->host, &probe) == 1) {
    /* An address, not a name: decided like a transparent connection, once its first bytes
     * (after our reply) tell the SNI or Host. */
    struct addr a = {.family = strchr(c->host, ':') ? AF_INET6 : AF_INET};
    inet_pton(a.family, c->host, a.bytes);
    c->dst = a;
    c->have_dst = true;
    c->named = false;
    if (!c->tunnel) { /* http://ADDRESS/ through the proxy: the address alone decides */
      decide_addr(b, c, NULL);
      return;
    }
    if (strcmp(c->via, "proxy") == 0) {
      static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
      conn_send_now(c->cw.fd, ok, sizeof(ok) - 1);
    } else {
      conn_socks_reply(c, 0);
    }
    c->replied = true;
    c->cidr_ok = egress_check_addr(&b->policy, a.family, a.bytes, c->port).allowed;
    c->st = CS_SNIFF;
    c->deadline = now_mono() + (c->cidr_ok ? SERVER_FIRST_GRACE : FIRST_BYTES_TIMEOUT);
    c->cw_ev = 0;
    conn_set_interest(b, &c->cw, &c->cw_ev, EPOLLIN | EPOLLET);
    if (c->up_len)
      on_sniff(b, c); /* bytes that came with the CONNECT head: the tunnel's first */
    return;
  }
  c->named = true;
  struct egress_verdict v = egress_check_host(&b->policy, c->host, c->port);
  c->rule = v.rule ? v.rule->text : NULL;
  if (!v.allowed) {
    conn_deny(b, c, v.rule ? "denied by rule" : "no rule allows this host and port");
    return;
  }
  c->st = CS_RESOLVING;
  conn_set_interest(b, &c->cw, &c->cw_ev, 0);
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
      conn_deny(b, c, reason);
    else
      upstream_failed(b, c, reason, EHOSTUNREACH);
    return;
  }
  c->next_cand = 0;
  start_connect(b, c);
}

/* Refused on the first bytes: an HTTP client is told in HTTP, the others by the protocol's way. */
static void refuse_first(struct broker *b, struct conn *c, const char *reason) {
  if (c->http)
    conn_refuse_request(b, c, 403, c->http_host, reason);
  else
    conn_deny(b, c, reason);
}

/* The address path, on the first bytes: name is the SNI or Host (NULL: none). */
static void decide_addr(struct broker *b, struct conn *c, const char *name) {
  if (addr_is_loopback(&c->dst)) {
    refuse_first(b, c, "a loopback destination");
    return;
  }
  char t[64], reason[512];
  addr_text(&c->dst, t);
  struct egress_verdict cidr = egress_check_addr(&b->policy, c->dst.family, c->dst.bytes, c->port);
  if (!cidr.allowed && cidr.rule) {
    c->rule = cidr.rule->text;
    refuse_first(b, c, "denied by rule");
    return;
  }
  const char *inside;
  if (guard_refuses(b, &c->dst, c->port, &inside)) { /* an answer gone stale, a CONNECT to an IP */
    refuse_first(b, c, inside);
    return;
  }
  if (name) {
    struct egress_verdict v = egress_check_host(&b->policy, name, c->port);
    bool given_out = v.allowed && dns_map_has(b, &c->dst, name);
    /* The host the record names is one the broker verified: the stub gave out this address for
     * it. A name the client merely claims stays in the sni / http_host field, the host is the
     * address (learning turns an allowed record's host into a rule: learn.c). */
    snprintf(c->host, sizeof(c->host), "%s", given_out || !cidr.allowed ? name : t);
    if (!v.allowed && v.rule) { /* deny wins, over a CIDR rule too */
      c->rule = v.rule->text;
      refuse_first(b, c, "denied by rule");
      return;
    }
    if (given_out) {
      c->rule = v.rule->text;
    } else if (cidr.allowed) {
      /* A CIDR rule allows the address, not any name a client puts on it: a name the stub did
       * not give out for it is a lie that learning would otherwise turn into a host rule. */
      c->rule = cidr.rule->text;
      snprintf(reason, sizeof(reason), "the %s names %s, which the DNS stub did not give out for %s (a CIDR rule allows the address, not that name)",
               c->tls ? "TLS SNI" : "Host header", name, t);
      refuse_first(b, c, reason);
      return;
    } else if (!v.allowed) {
      refuse_first(b, c, "no rule allows this host and port");
      return;
    } else {
      c->rule = v.rule->text;
      snprintf(reason, sizeof(reason), "%s is not an address the DNS stub gave out for %s", t, name);
      refuse_first(b, c, reason);
      return;
    }
  } else if (cidr.allowed) {
    c->rule = cidr.rule->text;
  } else {
    /* No name to check (TLS without SNI, HTTP without Host, another protocol): the address alone,
     * and only a CIDR rule allows an address. */
    refuse_first(b, c, c->tls    ? "a raw address: TLS without SNI, and no CIDR rule allows the address"
                       : c->http ? "a raw address: HTTP without a Host header, and no CIDR rule allows the address"
                       : c->other && c->sniffed ? "a raw address: neither TLS nor HTTP, and only a CIDR rule (--allow-cidr) allows other protocols"
                                                : "a raw address: no SNI or Host, and no CIDR rule");
    return;
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
    conn_set_interest(b, &c->cw, &c->cw_ev, 0);
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
      conn_send_now(c->cw.fd, ok, sizeof(ok) - 1);
    else
      conn_socks_reply(c, 0);
    c->replied = true;
  }
  if (c->named && !c->sniffed) {
    /* Nothing is relayed until the first bytes are seen and agree with the name. */
    const struct addr *a = &c->cands[c->next_cand - 1];
    c->cidr_ok = egress_check_addr(&b->policy, a->family, a->bytes, c->port).allowed;
    c->st = CS_SNIFF;
    c->deadline = now_mono() + (c->cidr_ok ? SERVER_FIRST_GRACE : FIRST_BYTES_TIMEOUT);
    conn_set_interest(b, &c->uw, &c->uw_ev, 0);
    c->cw_ev = 0;
    conn_set_interest(b, &c->cw, &c->cw_ev, EPOLLIN | EPOLLET);
    if (c->up_len)
      on_sniff(b, c); /* bytes that came with the CONNECT head: the tunnel's first */
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
  if (c->http && c->h1 == NULL) {
    c->h1 = malloc(sizeof(*c->h1));
    if (c->h1 == NULL) {
      conn_free(b, c);
      return;
    }
    http1_stream_init(c->h1);
    c->up_ok = 0; /* the first head again, read this time, and every one after it */
  }
  c->st = CS_RELAY;
  c->deadline = 0;
  c->cw_ev = c->uw_ev = 0xffffffff; /* force the first set_interest */
  on_client(b, &c->cw, 0);
}


/* The first bytes, before anything is relayed: a TLS ClientHello (its SNI), an HTTP request (its
 * head, whole and well-formed), or neither. They are peeked, so that the interceptor or the relay
 * finds them still in the socket; bytes that came with the CONNECT head are in up already, and
 * what follows them is read after them. */
static void on_sniff(struct broker *b, struct conn *c) {
  uint8_t peek[BROKER_HEAD_MAX];
  const uint8_t *buf = peek;
  size_t n;
  if (c->up_len) {
    for (;;) { /* edge-triggered: read until the socket is empty */
      ssize_t r = c->up_len < BROKER_HEAD_MAX ? recv(c->cw.fd, c->up + c->up_len, BROKER_HEAD_MAX - c->up_len, 0) : -1;
      if (r > 0) {
        c->up_len += (size_t)r;
        continue;
      }
      if (r == 0 || (c->up_len < BROKER_HEAD_MAX && errno != EAGAIN && errno != EINTR)) {
        conn_free(b, c); /* the client went away before it said enough */
        return;
      }
      break;
    }
    buf = c->up;
    n = c->up_len;
  } else {
    ssize_t r = recv(c->cw.fd, peek, sizeof(peek), MSG_PEEK);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
      conn_free(b, c);
      return;
    }
    if (r < 0)
      return;
    n = (size_t)r;
  }
  int t = proto_tls_sni(buf, n, c->sni, sizeof(c->sni));
  if (t == 0 && n < BROKER_HEAD_MAX)
    return; /* more of the ClientHello to come */
  if (t == 1) {
    c->tls = true;
    decide_first(b, c);
    return;
  }
  int h = http1_looks_like(buf, n);
  if (h == 0)
    return;
  if (h == 1) {
    struct http1_request rq;
    const char *why = NULL;
    int r = http1_peek(buf, n, &rq, &why);
    if (r == 0)
      return; /* the head is not complete yet */
    c->http = true;
    if (r < 0) {
      char reason[320];
      snprintf(reason, sizeof(reason), "a malformed or ambiguous HTTP request: %s", why);
      conn_refuse_request(b, c, 400, NULL, reason);
      return;
    }
    if (rq.connect || (rq.absolute && (!rq.has_host || strcmp(rq.url_host, rq.host) != 0 ||
                                         (rq.url_port && rq.url_port != c->port)))) {
      conn_refuse_request(b, c, 400, rq.has_host ? rq.host : rq.url_host,
                          rq.connect ? "a malformed or ambiguous HTTP request: CONNECT inside a connection"
                                     : "a malformed or ambiguous HTTP request: the Host header names another host than the URL");
      return;
    }
    snprintf(c->http_host, sizeof(c->http_host), "%s", rq.host);
    if (rq.host_port && rq.host_port != c->port) {
      conn_refuse_request(b, c, 403, rq.host, "the Host header names another port than the connection's");
      return;
    }
    decide_first(b, c);
    return;
  }
  c->other = true;
  decide_first(b, c);
}

/* No first bytes by the deadline: under a CIDR rule a server-first protocol, relayed by that
 * rule; otherwise closed. */
static void sniff_timeout(struct broker *b, struct conn *c) {
  c->deadline = 0;
  if (c->cidr_ok) {
    c->other = true;
    decide_first(b, c);
    return;
  }
  conn_deny(b, c, "no TLS ClientHello or HTTP request head within 10 s (other protocols need a CIDR rule)");
}

/* The first bytes are known: decide on them. */
static void decide_first(struct broker *b, struct conn *c) {
  c->sniffed = true;
  /* Back to level-triggered: from here the bytes are read, not peeked. */
  c->cw_ev = 0;
  conn_set_interest(b, &c->cw, &c->cw_ev, 0);
  const char *name = c->tls ? c->sni : c->http ? c->http_host : "";
  char t[64];
  if (name[0] && c->have_dst && strcmp(name, addr_text(&c->dst, t)) == 0)
    name = ""; /* an address where a name goes: no name */
  if (!c->named) {
    decide_addr(b, c, name[0] ? name : NULL);
    return;
  }
  /* A tunnel to a name the broker resolved and connected to: what is inside must be for that
   * name, else the tunnel to an allowed host's address carries a request for another. */
  char reason[768];
  if (c->other) {
    if (!c->cidr_ok) {
      conn_deny(b, c, "neither TLS nor HTTP: only a CIDR rule (--allow-cidr) allows other protocols");
      return;
    }
  } else if (name[0] == '\0') {
    if (!c->cidr_ok) {
      if (c->http)
        conn_refuse_request(b, c, 400, NULL, "an HTTP request without a Host header: a host rule needs the name");
      else
        conn_deny(b, c, "TLS without SNI: a host rule needs the name in the ClientHello");
      return;
    }
  } else if (strcmp(name, c->host) != 0) {
    const struct addr *a = &c->cands[c->next_cand - 1];
    struct egress_verdict v = egress_check_host(&b->policy, name, c->port);
    if (!v.allowed && v.rule) {
      c->rule = v.rule->text;
      conn_deny(b, c, "denied by rule");
      return;
    }
    /* The TLS SNI may name another allowed host served at the same address, one the stub gave
     * out for it (a certificate for several names); an HTTP Host must be the tunnel's. */
    if (c->http || !v.allowed || !dns_map_has(b, a, name)) {
      snprintf(reason, sizeof(reason), "the %s names %s, not the tunnel's host %s", c->tls ? "TLS SNI" : "Host header",
               name, c->host);
      if (c->http)
        conn_refuse_request(b, c, 403, name, reason);
      else
        conn_deny(b, c, reason);
      return;
    }
  }
  enter_relay(b, c);
}

static void on_client(struct broker *b, struct watch *w, uint32_t ev) {
  struct conn *c = (struct conn *)((char *)w - offsetof(struct conn, cw));
  if (c->closed)
    return;
  switch (c->st) {
  case CS_PROXY_HEAD: conn_on_proxy_head(b, c); return;
  case CS_SOCKS_GREETING:
  case CS_SOCKS_REQUEST: conn_on_socks(b, c); return;
  case CS_SNIFF: on_sniff(b, c); return;
  case CS_RELAY: conn_relay(b, c); return;
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
    conn_relay(b, c);
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
        sniff_timeout(b, c);
      } else if (c->st == CS_CONNECTING) {
        upstream_failed(b, c, "connect", ETIMEDOUT);
      } else if (c->st == CS_RELAY && c->refuse_status) {
        conn_finish_refusal(b, c);
      } else if (c->st == CS_RELAY) {
        conn_record(b, c, true, "idle: nothing moved either way for " BROKER_IDLE_TIMEOUT_TEXT);
        conn_free(b, c);
      } else if (c->st != CS_RESOLVING) {
        /* a handshake that never finished */
        conn_record(b, c, false, "the proxy or SOCKS handshake did not complete within " BROKER_HEAD_TIMEOUT_TEXT);
        conn_free(b, c);
      }
    }
    c = next;
  }
}

void conn_close_all(struct broker *b, const char *why) {
  while (b->conns) {
    struct conn *c = b->conns;
    /* One last move: a client that read its answer and exited has closed by now. */
    if (c->st == CS_RELAY && conn_pump(c)) {
      if (c->refuse_status) {
        conn_finish_refusal(b, c);
        continue;
      }
      conn_record(b, c, true, NULL);
      conn_free(b, c);
      continue;
    }
    if (c->st == CS_RELAY)
      conn_record(b, c, true, why);
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
