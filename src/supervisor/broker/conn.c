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

#include "supervisor/broker/conn.h"

#define CONNECT_TIMEOUT 10.0
#define HANDSHAKE_TIMEOUT 30.0
/* How long a transparent or tunnelled connection may stay silent before we decide without its
 * first bytes (protocols where the server speaks first: SMTP, SSH, MySQL). */
#define SNIFF_TIMEOUT 0.3
#define MAX_CONNS 1024


static void on_client(struct broker *b, struct watch *w, uint32_t ev);
static void on_upstream(struct broker *b, struct watch *w, uint32_t ev);
static void start_connect(struct broker *b, struct conn *c);
static void after_sniff(struct broker *b, struct conn *c);

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

/* Refuse: record it, tell the client in its protocol's words, close. */
void conn_deny(struct broker *b, struct conn *c, const char *reason) {
  conn_record(b, c, false, reason);
  if (strcmp(c->via, "proxy") == 0 && !c->replied) {
    char body[768], msg[1024];
    int bl = snprintf(body, sizeof(body), "codemode egress: %s:%u refused: %s\n", c->host, c->port, reason);
    int n = snprintf(msg, sizeof(msg),
                     "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                     "X-Codemode-Egress: denied\r\nContent-Length: %d\r\n\r\n%s",
                     bl, body);
    conn_send_now(c->cw.fd, msg, (size_t)n);
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
    if (b->n_conns >= MAX_CONNS || b->stopping) {
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
    if (strcmp(c->via, "proxy") == 0) {
      static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
      conn_send_now(c->cw.fd, ok, sizeof(ok) - 1);
    } else {
      conn_socks_reply(c, 0);
    }
    c->replied = true;
    c->st = CS_SNIFF;
    c->deadline = now_mono() + SNIFF_TIMEOUT;
    c->cw_ev = 0;
    conn_set_interest(b, &c->cw, &c->cw_ev, EPOLLIN | EPOLLET);
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
    if (egress_addr_is_internal(addrs[i].family, addrs[i].bytes, &w) &&
        !egress_check_addr(&b->policy, addrs[i].family, addrs[i].bytes, c->port).allowed) {
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

/* The address path, after the peek. */
static void decide_addr(struct broker *b, struct conn *c) {
  if (addr_is_loopback(&c->dst)) {
    conn_deny(b, c, "a loopback destination");
    return;
  }
  struct egress_verdict cidr = egress_check_addr(&b->policy, c->dst.family, c->dst.bytes, c->port);
  if (!cidr.allowed && cidr.rule) {
    c->rule = cidr.rule->text;
    conn_deny(b, c, "denied by rule");
    return;
  }
  const char *name = c->sni[0] ? c->sni : c->http_host[0] ? c->http_host : NULL;
  if (name) {
    snprintf(c->host, sizeof(c->host), "%s", name);
    struct egress_verdict v = egress_check_host(&b->policy, name, c->port);
    if (!v.allowed && v.rule) { /* deny wins, over a CIDR rule too */
      c->rule = v.rule->text;
      conn_deny(b, c, "denied by rule");
      return;
    }
    if (cidr.allowed) {
      c->rule = cidr.rule->text;
    } else if (!v.allowed) {
      conn_deny(b, c, "no rule allows this host and port");
      return;
    } else if (!dns_map_has(b, &c->dst, name)) {
      c->rule = v.rule->text;
      char reason[384], t[64];
      snprintf(reason, sizeof(reason), "%s is not an address the DNS stub gave out for %s", addr_text(&c->dst, t), name);
      conn_deny(b, c, reason);
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
      conn_deny(b, c, "a raw address: no SNI or Host, no name from the DNS stub, no CIDR rule");
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
    c->st = CS_SNIFF;
    c->deadline = now_mono() + SNIFF_TIMEOUT;
    conn_set_interest(b, &c->uw, &c->uw_ev, 0);
    c->cw_ev = 0;
    conn_set_interest(b, &c->cw, &c->cw_ev, EPOLLIN | EPOLLET);
    return;
  }
  enter_relay(b, c);
}

/* The upstream is connected and the decision made: the interceptor takes over the bound hosts,
 * everything else is relayed. */
static void enter_relay(struct broker *b, struct conn *c) {
  /* Only a TLS client (its ClientHello seen, nothing of it consumed) can be intercepted. */
  if (b->tls && c->sni[0] && c->up_len == 0 && intercept_binding(b, c->host)) {
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
  conn_set_interest(b, &c->cw, &c->cw_ev, 0);
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
        conn_deny(b, c, i == 0 ? "the TLS SNI names a host no rule allows" : "the Host header names a host no rule allows");
        return;
      }
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
  case CS_SNIFF: on_sniff(b, c, false); return;
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
        c->deadline = 0;
        on_sniff(b, c, true);
      } else if (c->st == CS_CONNECTING) {
        upstream_failed(b, c, "connect", ETIMEDOUT);
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
    if (c->st == CS_RELAY && conn_pump(c)) {
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
