/* The handshakes before a decision: an HTTP proxy request head (CONNECT, or an absolute-URI
 * request for plain http://) and a SOCKS5 greeting and CONNECT request. Each ends in
 * conn_decide_named() or a refusal. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "supervisor/broker/conn.h"

static ssize_t read_more(struct conn *c) {
  if (c->up_len >= BROKER_HEAD_MAX)
    return -2;
  ssize_t n = recv(c->cw.fd, c->up + c->up_len, BROKER_HEAD_MAX - c->up_len, 0);
  if (n > 0)
    c->up_len += (size_t)n;
  return n;
}

void conn_on_proxy_head(struct broker *b, struct conn *c) {
  ssize_t n = read_more(c);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
    conn_free(b, c);
    return;
  }
  struct proxy_request pr;
  const char *why = "a request head over 16 KiB";
  int r = n == -2 ? -1 : proto_proxy_request(c->h1, c->up, c->up_len, &pr, &why);
  if (r == 0)
    return;
  if (r < 0) {
    char reason[320];
    snprintf(reason, sizeof(reason), "a malformed or ambiguous HTTP request: %s", why);
    snprintf(c->host, sizeof(c->host), "%s", n == -2 ? "" : pr.host);
    c->port = n == -2 ? 0 : pr.port;
    conn_refuse_request(b, c, 400, n == -2 ? NULL : pr.http_host, reason);
    return;
  }
  snprintf(c->host, sizeof(c->host), "%s", pr.host);
  c->port = pr.port;
  if (pr.connect) {
    c->tunnel = true;
    free(c->h1); /* what the tunnel carries is parsed on its own, if it is HTTP */
    c->h1 = NULL;
    /* Bytes after the CONNECT head, before our 200 (a client that does not wait): kept, and
     * parsed as the tunnel's first bytes once it is open (conn.c, on_sniff). */
    memmove(c->up, c->up + pr.head_len, c->up_len - pr.head_len);
    c->up_len -= pr.head_len;
    conn_decide_named(b, c);
    return;
  }
  /* GET http://host/…: the origin server gets the rewritten head, then whatever followed it,
   * each later request decided in its turn (relay.c, conn_gate). */
  size_t rest = c->up_len - pr.head_len;
  if (pr.rewritten_len + rest > BROKER_BUF) {
    free(pr.rewritten);
    conn_free(b, c);
    return;
  }
  memmove(c->up + pr.rewritten_len, c->up + pr.head_len, rest);
  memcpy(c->up, pr.rewritten, pr.rewritten_len);
  c->up_len = pr.rewritten_len + rest;
  c->up_ok = pr.rewritten_len;
  free(pr.rewritten);
  snprintf(c->http_host, sizeof(c->http_host), "%s", pr.host);
  c->http = c->proxy_http = c->sniffed = true;
  c->replied = false;
  conn_decide_named(b, c);
}

void conn_on_socks(struct broker *b, struct conn *c) {
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
    conn_send_now(c->cw.fd, (const char *)reply, 2);
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
    conn_socks_reply(c, 0x08); /* address type not supported */
    conn_record(b, c, false, "a SOCKS request with an unknown address type");
    conn_free(b, c);
    return;
  }
  if (c->up_len < need)
    return;
  if (p[0] != 5 || p[1] != 1) {
    conn_socks_reply(c, 0x07); /* only CONNECT: no BIND, no UDP ASSOCIATE (UDP goes nowhere) */
    conn_record(b, c, false, "a SOCKS command other than CONNECT");
    conn_free(b, c);
    return;
  }
  c->port = (uint16_t)(p[need - 2] << 8 | p[need - 1]);
  if (p[3] == 3) {
    size_t l = p[4];
    for (size_t i = 0; i < l; i++) {
      unsigned char ch = p[5 + i];
      if (!(ch == '-' || ch == '.' || ch == '_' || (ch >= '0' && ch <= '9') ||
            ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'z'))) {
        conn_socks_reply(c, 0x04);
        conn_record(b, c, false, "a SOCKS host name that is not a DNS name");
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
  /* Bytes after the request (a client that does not wait for our reply): the tunnel's first. */
  memmove(c->up, c->up + need, c->up_len - need);
  c->up_len -= need;
  c->tunnel = true;
  conn_decide_named(b, c);
}
