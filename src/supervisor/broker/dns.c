/* The DNS stub on port 53 inside the container, and name resolution for the broker itself.
 *
 * A question for a name no rule allows gets NXDOMAIN without leaving the broker (no lookup the
 * container could use as a side channel). An allowed name is resolved with c-ares, from the
 * host's resolv.conf or --dns-upstream, and only public addresses are answered: a name that
 * resolves to loopback, private, link-local or metadata addresses (SSRF), now or on a later
 * lookup (DNS rebinding: every question is resolved afresh, nothing is cached), gets an empty
 * answer unless a CIDR rule allows that address. Each address answered is remembered with its
 * name (the map), so that a transparent connection to it is known to be for that name. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "supervisor/broker/broker.h"

#define DNS_TTL_MAX 30 /* seconds the container may keep an answer */
#define DNS_MAX_PENDING 256

/* One question being resolved upstream. */
struct dns_query {
  struct broker *b;
  struct sockaddr_storage from;
  socklen_t from_len;
  struct in6_pktinfo pi6;
  struct in_pktinfo pi4;
  int has_pi6, has_pi4;
  uint8_t msg[512];
  size_t qend; /* end of the question section */
  uint16_t qtype;
  char name[254];
};

static size_t n_pending;

/* --- the address map --------------------------------------------------------------------------- */

static bool addr_eq(const struct addr *a, const struct addr *b) {
  return a->family == b->family && memcmp(a->bytes, b->bytes, a->family == AF_INET ? 4 : 16) == 0;
}

void dns_map_add(struct broker *b, const struct addr *a, const char *name) {
  for (size_t i = 0; i < DNS_MAP_SIZE; i++)
    if (b->map[i].used && addr_eq(&b->map[i].addr, a) && strcasecmp(b->map[i].name, name) == 0)
      return;
  struct dns_map_entry *e = &b->map[b->map_next];
  b->map_next = (b->map_next + 1) % DNS_MAP_SIZE;
  e->addr = *a;
  snprintf(e->name, sizeof(e->name), "%s", name);
  e->used = true;
}

bool dns_map_has(struct broker *b, const struct addr *a, const char *name) {
  for (size_t i = 0; i < DNS_MAP_SIZE; i++)
    if (b->map[i].used && addr_eq(&b->map[i].addr, a) && strcasecmp(b->map[i].name, name) == 0)
      return true;
  return false;
}

/* --- c-ares in our epoll loop ------------------------------------------------------------------ */

static void on_ares_event(struct broker *b, struct watch *w, uint32_t events) {
  ares_socket_t r = (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) ? w->fd : ARES_SOCKET_BAD;
  ares_socket_t wr = (events & EPOLLOUT) ? w->fd : ARES_SOCKET_BAD;
  ares_process_fd(b->ares, r, wr);
}

static void sock_state(void *data, ares_socket_t fd, int readable, int writable) {
  struct broker *b = data;
  struct watch *slot = NULL, *free_slot = NULL;
  for (size_t i = 0; i < sizeof(b->ares_w) / sizeof(b->ares_w[0]); i++) {
    if (b->ares_w[i].fd == fd)
      slot = &b->ares_w[i];
    else if (b->ares_w[i].fd < 0 && free_slot == NULL)
      free_slot = &b->ares_w[i];
  }
  uint32_t ev = (readable ? EPOLLIN : 0) | (writable ? EPOLLOUT : 0);
  if (ev == 0) {
    if (slot) {
      broker_unwatch(b, slot);
      slot->fd = -1;
    }
    return;
  }
  if (slot) {
    broker_rewatch(b, slot, ev);
    return;
  }
  if (free_slot == NULL)
    return; /* c-ares times the query out */
  free_slot->fd = fd;
  free_slot->on_event = on_ares_event;
  broker_watch(b, free_slot, ev);
}

void dns_process_timeouts(struct broker *b) {
  ares_process_fd(b->ares, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
}

int dns_init(struct broker *b, const char *upstream, char *why, size_t why_len) {
  b->map = calloc(DNS_MAP_SIZE, sizeof(*b->map));
  if (b->map == NULL) {
    snprintf(why, why_len, "out of memory");
    return -1;
  }
  for (size_t i = 0; i < sizeof(b->ares_w) / sizeof(b->ares_w[0]); i++)
    b->ares_w[i].fd = -1;
  int rc = ares_library_init(ARES_LIB_INIT_ALL);
  struct ares_options opts = {.sock_state_cb = sock_state, .sock_state_cb_data = b, .timeout = 2000, .tries = 2};
  if (rc == ARES_SUCCESS)
    rc = ares_init_options(&b->ares, &opts, ARES_OPT_SOCK_STATE_CB | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES);
  if (rc == ARES_SUCCESS && upstream && *upstream)
    rc = ares_set_servers_ports_csv(b->ares, upstream);
  if (rc != ARES_SUCCESS) {
    snprintf(why, why_len, "resolver%s%s: %s", upstream ? " " : "", upstream ? upstream : "", ares_strerror(rc));
    return -1;
  }
  return 0;
}

void dns_shutdown(struct broker *b) {
  ares_destroy(b->ares);
  ares_library_cleanup();
}

/* --- resolution for connections ---------------------------------------------------------------- */

/* Answers for proxy connections, kept for their TTL (at most DNS_TTL_MAX): a client that opens
 * a connection per request must not pay a lookup each time. What is kept is the upstream's
 * answer, checked by the guard at every use (conn_resolved), so a cached answer never lets more
 * through than a fresh one; a TTL of 0 (a rebinding server's) is never kept. */
#define CONN_CACHE_SIZE 64
struct cached_answer {
  char name[254];
  struct addr addrs[16];
  size_t n;
  double expires;
};
static struct cached_answer conn_cache[CONN_CACHE_SIZE];
static size_t conn_cache_next;

struct conn_lookup {
  struct broker *b;
  struct conn *c;
  char name[254];
};

static void on_conn_addrinfo(void *arg, int status, int timeouts, struct ares_addrinfo *res) {
  struct conn_lookup *cl = arg;
  struct addr addrs[16];
  size_t n = 0;
  int ttl = DNS_TTL_MAX;
  for (struct ares_addrinfo_node *nd = res ? res->nodes : NULL; nd && n < 16; nd = nd->ai_next) {
    uint16_t port;
    addr_from_sockaddr(&addrs[n], nd->ai_addr, &port);
    if (nd->ai_ttl < ttl)
      ttl = nd->ai_ttl;
    n++;
  }
  if (res)
    ares_freeaddrinfo(res);
  if (status == ARES_SUCCESS && n > 0 && ttl > 0) {
    struct cached_answer *e = &conn_cache[conn_cache_next];
    conn_cache_next = (conn_cache_next + 1) % CONN_CACHE_SIZE;
    snprintf(e->name, sizeof(e->name), "%s", cl->name);
    memcpy(e->addrs, addrs, n * sizeof(addrs[0]));
    e->n = n;
    e->expires = now_mono() + ttl;
  }
  conn_resolved(cl->b, cl->c, addrs, n, status);
  free(cl);
}

void dns_resolve_for(struct broker *b, struct conn *c, const char *name) {
  double now = now_mono();
  for (size_t i = 0; i < CONN_CACHE_SIZE; i++)
    if (conn_cache[i].n && conn_cache[i].expires > now && strcasecmp(conn_cache[i].name, name) == 0) {
      conn_resolved(b, c, conn_cache[i].addrs, conn_cache[i].n, ARES_SUCCESS);
      return;
    }
  struct conn_lookup *cl = malloc(sizeof(*cl));
  if (cl == NULL) {
    conn_resolved(b, c, NULL, 0, ARES_ENOMEM);
    return;
  }
  *cl = (struct conn_lookup){.b = b, .c = c};
  snprintf(cl->name, sizeof(cl->name), "%s", name);
  struct ares_addrinfo_hints hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
  ares_getaddrinfo(b->ares, name, NULL, &hints, on_conn_addrinfo, cl);
}

/* --- the stub ---------------------------------------------------------------------------------- */

enum { RCODE_OK = 0, RCODE_FORMERR = 1, RCODE_SERVFAIL = 2, RCODE_NXDOMAIN = 3, RCODE_REFUSED = 5 };

/* The question's name, lower-cased, dots between labels. Returns the offset after QTYPE/QCLASS. */
static size_t parse_question(const uint8_t *m, size_t len, char *name, uint16_t *qtype) {
  size_t p = 12, out = 0;
  for (;;) {
    if (p >= len)
      return 0;
    unsigned l = m[p++];
    if (l == 0)
      break;
    if (l > 63 || p + l > len || out + l + 2 > 254)
      return 0; /* a compression pointer has no place in a question */
    if (out)
      name[out++] = '.';
    for (unsigned i = 0; i < l; i++) {
      char ch = (char)m[p + i];
      if (ch >= 'A' && ch <= 'Z')
        ch = (char)(ch - 'A' + 'a');
      name[out++] = ch;
    }
    p += l;
  }
  name[out] = '\0';
  if (p + 4 > len)
    return 0;
  *qtype = (uint16_t)(m[p] << 8 | m[p + 1]);
  return p + 4;
}

static const char *qtype_name(uint16_t t) {
  switch (t) {
  case 1: return "A";
  case 28: return "AAAA";
  case 5: return "CNAME";
  case 15: return "MX";
  case 16: return "TXT";
  case 33: return "SRV";
  case 65: return "HTTPS";
  default: return "other";
  }
}

static void send_answer(struct broker *b, struct dns_query *q, const uint8_t *msg, size_t len) {
  struct iovec iov = {.iov_base = (void *)msg, .iov_len = len};
  union {
    char buf[CMSG_SPACE(sizeof(struct in6_pktinfo))];
    struct cmsghdr align;
  } ctrl;
  memset(&ctrl, 0, sizeof(ctrl));
  struct msghdr mh = {.msg_name = &q->from, .msg_namelen = q->from_len, .msg_iov = &iov, .msg_iovlen = 1};
  /* From the address the question went to: any address is ours in the container. */
  if (q->has_pi6 || q->has_pi4) {
    mh.msg_control = ctrl.buf;
    struct cmsghdr *c = (struct cmsghdr *)ctrl.buf;
    if (q->has_pi6) {
      struct in6_pktinfo pi = {.ipi6_addr = q->pi6.ipi6_addr};
      c->cmsg_level = IPPROTO_IPV6;
      c->cmsg_type = IPV6_PKTINFO;
      c->cmsg_len = CMSG_LEN(sizeof(pi));
      memcpy(CMSG_DATA(c), &pi, sizeof(pi));
      mh.msg_controllen = CMSG_SPACE(sizeof(pi));
    } else {
      struct in_pktinfo pi = {.ipi_spec_dst = q->pi4.ipi_addr};
      c->cmsg_level = IPPROTO_IP;
      c->cmsg_type = IP_PKTINFO;
      c->cmsg_len = CMSG_LEN(sizeof(pi));
      memcpy(CMSG_DATA(c), &pi, sizeof(pi));
      mh.msg_controllen = CMSG_SPACE(sizeof(pi));
    }
  }
  sendmsg(b->dns_w.fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* Header and question of the reply; the answers are appended by the caller. */
static size_t reply_header(struct dns_query *q, uint8_t *out, int rcode, unsigned ancount) {
  memcpy(out, q->msg, q->qend);
  out[2] = (uint8_t)(0x80 | (q->msg[2] & 0x79)); /* QR, opcode, RD kept; AA and TC clear */
  out[3] = (uint8_t)(0x80 | rcode);              /* RA */
  out[4] = 0;
  out[5] = 1;
  out[6] = (uint8_t)(ancount >> 8);
  out[7] = (uint8_t)ancount;
  memset(out + 8, 0, 4); /* no authority, no additional (an EDNS OPT record is dropped) */
  return q->qend;
}

static void answer_rcode(struct broker *b, struct dns_query *q, int rcode) {
  uint8_t out[512];
  size_t len = reply_header(q, out, rcode, 0);
  send_answer(b, q, out, len);
}

static void audit_dns(struct broker *b, struct dns_query *q, bool allowed, const char *rule, const char *reason,
                      const char *answers) {
  struct audit_record r = {.event = "dns",
                           .decision = allowed ? "allow" : "deny",
                           .via = "dns",
                           .host = q->name,
                           .qtype = qtype_name(q->qtype),
                           .answers = answers,
                           .rule = rule,
                           .reason = reason,
                           .bytes_up = -1,
                           .bytes_down = -1,
                           .duration_ms = -1};
  audit_write(b, &r);
}

static void on_stub_addrinfo(void *arg, int status, int timeouts, struct ares_addrinfo *res) {
  struct dns_query *q = arg;
  struct broker *b = q->b;
  n_pending--;
  if (b->stopping) {
    if (res)
      ares_freeaddrinfo(res);
    free(q);
    return;
  }
  struct egress_verdict v = egress_check_host(&b->policy, q->name, 0);
  uint8_t out[512];
  unsigned count = 0;
  size_t len = q->qend;
  char answers[512] = "", refused[256] = "";
  const char *why = NULL;
  for (struct ares_addrinfo_node *nd = res ? res->nodes : NULL; nd; nd = nd->ai_next) {
    struct addr a;
    uint16_t port;
    addr_from_sockaddr(&a, nd->ai_addr, &port);
    if ((q->qtype == 1 && a.family != AF_INET) || (q->qtype == 28 && a.family != AF_INET6))
      continue;
    char text[64];
    addr_text(&a, text);
    const char *w;
    /* The SSRF / rebinding guard: a public name never leads inside, unless a CIDR rule says
     * this address may be reached (on some port). */
    if (guard_refuses(b, &a, 0, &w)) {
      size_t rl = strlen(refused);
      snprintf(refused + rl, sizeof(refused) - rl, "%s%s", rl ? "," : "", text);
      why = w;
      continue;
    }
    size_t need = 12 + (a.family == AF_INET ? 4 : 16);
    if (len + need > sizeof(out) || count >= 16)
      break;
    uint32_t ttl = nd->ai_ttl > 0 && nd->ai_ttl < DNS_TTL_MAX ? (uint32_t)nd->ai_ttl : DNS_TTL_MAX;
    uint8_t *p = out + len;
    p[0] = 0xc0; /* the name: a pointer to the question's */
    p[1] = 12;
    p[2] = 0;
    p[3] = (uint8_t)q->qtype;
    p[4] = 0;
    p[5] = 1; /* IN */
    p[6] = (uint8_t)(ttl >> 24);
    p[7] = (uint8_t)(ttl >> 16);
    p[8] = (uint8_t)(ttl >> 8);
    p[9] = (uint8_t)ttl;
    p[10] = 0;
    p[11] = a.family == AF_INET ? 4 : 16;
    memcpy(p + 12, a.bytes, a.family == AF_INET ? 4 : 16);
    len += need;
    count++;
    dns_map_add(b, &a, q->name);
    size_t al = strlen(answers);
    snprintf(answers + al, sizeof(answers) - al, "%s%s", al ? "," : "", text);
  }
  if (res)
    ares_freeaddrinfo(res);
  if (status != ARES_SUCCESS && status != ARES_ENODATA) {
    int rcode = status == ARES_ENOTFOUND ? RCODE_NXDOMAIN : RCODE_SERVFAIL;
    answer_rcode(b, q, rcode);
    /* Allowed; the upstream had no answer. */
    audit_dns(b, q, true, v.rule ? v.rule->text : NULL,
              rcode == RCODE_NXDOMAIN ? "upstream: the name does not exist" : ares_strerror(status), NULL);
    free(q);
    return;
  }
  reply_header(q, out, RCODE_OK, count);
  send_answer(b, q, out, len);
  if (refused[0]) {
    char reason[384];
    snprintf(reason, sizeof(reason), "resolves to %s: %s, never answered%s", refused, why,
             count ? " (the public addresses were)" : "");
    audit_dns(b, q, count > 0, v.rule ? v.rule->text : NULL, reason, answers);
  } else {
    audit_dns(b, q, true, v.rule ? v.rule->text : NULL, NULL, answers);
  }
  free(q);
}

void dns_on_query(struct broker *b, struct watch *w, uint32_t events) {
  for (int budget = 64; budget > 0; budget--) {
    struct dns_query *q = calloc(1, sizeof(*q));
    if (q == NULL)
      return;
    q->b = b;
    struct iovec iov = {.iov_base = q->msg, .iov_len = sizeof(q->msg)};
    union {
      char buf[256];
      struct cmsghdr align;
    } ctrl;
    struct msghdr mh = {.msg_name = &q->from, .msg_namelen = sizeof(q->from), .msg_iov = &iov, .msg_iovlen = 1,
                        .msg_control = ctrl.buf, .msg_controllen = sizeof(ctrl.buf)};
    ssize_t n = recvmsg(w->fd, &mh, MSG_DONTWAIT);
    if (n < 0) {
      free(q);
      return;
    }
    q->from_len = mh.msg_namelen;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
      if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
        memcpy(&q->pi6, CMSG_DATA(c), sizeof(q->pi6));
        q->has_pi6 = 1;
      } else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
        memcpy(&q->pi4, CMSG_DATA(c), sizeof(q->pi4));
        q->has_pi4 = 1;
      }
    }
    /* A question: QR clear, standard query, exactly one question. */
    if (n < 12 || (q->msg[2] & 0x80) || (q->msg[2] & 0x78) || q->msg[4] != 0 || q->msg[5] != 1) {
      free(q);
      continue;
    }
    q->qend = parse_question(q->msg, (size_t)n, q->name, &q->qtype);
    if (q->qend == 0) {
      free(q);
      continue;
    }
    struct egress_verdict v = egress_check_host(&b->policy, q->name, 0);
    if (!v.allowed || !egress_hostname_valid(q->name)) {
      answer_rcode(b, q, RCODE_NXDOMAIN);
      audit_dns(b, q, false, v.rule ? v.rule->text : NULL,
                v.rule ? "denied by rule" : "no rule allows this name", NULL);
      free(q);
      continue;
    }
    if (q->qtype != 1 && q->qtype != 28) {
      /* Allowed name, a type we do not pass on (MX, TXT, HTTPS…): an empty answer. */
      answer_rcode(b, q, RCODE_OK);
      free(q);
      continue;
    }
    if (n_pending >= DNS_MAX_PENDING) {
      answer_rcode(b, q, RCODE_SERVFAIL);
      free(q);
      continue;
    }
    n_pending++;
    struct ares_addrinfo_hints hints = {.ai_family = q->qtype == 1 ? AF_INET : AF_INET6};
    ares_getaddrinfo(b->ares, q->name, NULL, &hints, on_stub_addrinfo, q);
  }
}
