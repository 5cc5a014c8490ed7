/* The relay: once a connection is decided, bytes move both ways through two bounded buffers,
 * half-closes pass through, and the connection's record is written when it ends.
 *
 * TLS and other protocols are a byte relay: their name was checked on the first bytes and a
 * TLS session cannot change its server. Plain HTTP can: a kept-alive or pipelined connection
 * carries request after request, each with its own Host, so every request's head is parsed
 * (http1.c) and decided before a byte of it goes on; its body follows by the length the parser
 * finds, and the next head is found where it starts. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "supervisor/broker/conn.h"

/* Room a proxy head may grow by when rewritten (a Host added, Connection: close). */
#define REWRITE_SLACK 512

static size_t up_cap(const struct conn *c) {
  return c->proxy_http ? BROKER_BUF - REWRITE_SLACK : BROKER_BUF;
}

/* What of up may be sent: all of it, or for plain HTTP what is decided. */
static size_t sendable(const struct conn *c) {
  return c->h1 ? c->up_ok : c->up_len;
}

static void relay_interest(struct broker *b, struct conn *c) {
  uint32_t cev = 0, uev = 0;
  if (!c->client_eof && c->up_len < up_cap(c))
    cev |= EPOLLIN;
  if (c->down_len)
    cev |= EPOLLOUT;
  if (!c->upstream_eof && c->down_len < BROKER_BUF)
    uev |= EPOLLIN;
  if (sendable(c))
    uev |= EPOLLOUT;
  conn_set_interest(b, &c->cw, &c->cw_ev, cev);
  conn_set_interest(b, &c->uw, &c->uw_ev, uev);
}

/* A later request refused: nothing of it (or after it) goes on; the client stops being read,
 * the upstream answers what it was sent, then the refusal is the last answer (conn_relay). */
static void refuse(struct conn *c, int status, const char *host, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->refuse_reason, sizeof(c->refuse_reason), fmt, ap);
  va_end(ap);
  c->refuse_status = status;
  snprintf(c->refuse_host, sizeof(c->refuse_host), "%s", host ? host : "");
  c->up_len = c->up_ok;
  c->client_eof = true;
}

void conn_gate(struct conn *c) {
  while (c->h1 && !c->refuse_status && c->up_ok < c->up_len) {
    const char *why = "?";
    uint8_t *p = c->up + c->up_ok;
    size_t avail = c->up_len - c->up_ok;
    if (c->h1->in_body) {
      bool done;
      ssize_t n = http1_body(c->h1, p, avail, &done, &why);
      if (n < 0) {
        refuse(c, 400, NULL, "a malformed or ambiguous HTTP request: %s", why);
        return;
      }
      c->up_ok += (size_t)n;
      if (!done)
        return;
      continue;
    }
    if (c->proxy_http) {
      struct proxy_request pr;
      int r = proto_proxy_request(c->h1, p, avail, &pr, &why);
      if (r == 0)
        return;
      if (r < 0 || pr.connect) {
        refuse(c, 400, pr.http_host, "a malformed or ambiguous HTTP request: %s",
               r < 0 ? why : "CONNECT on a connection that carries plain HTTP");
        free(pr.rewritten);
        return;
      }
      if (strcmp(pr.host, c->host) != 0 || pr.port != c->port) {
        /* One host per proxy connection: it was decided, resolved and connected for the first. */
        refuse(c, 403, pr.http_host[0] ? pr.http_host : pr.host,
               "the URL names %s:%u, not this connection's %s:%u", pr.host, pr.port, c->host, c->port);
        free(pr.rewritten);
        return;
      }
      size_t tail = avail - pr.head_len;
      if (c->up_ok + pr.rewritten_len + tail > BROKER_BUF) {
        refuse(c, 400, pr.http_host, "a malformed or ambiguous HTTP request: a head too large to rewrite");
        free(pr.rewritten);
        return;
      }
      memmove(p + pr.rewritten_len, p + pr.head_len, tail);
      memcpy(p, pr.rewritten, pr.rewritten_len);
      c->up_len = c->up_ok + pr.rewritten_len + tail;
      c->up_ok += pr.rewritten_len;
      free(pr.rewritten);
      continue;
    }
    struct http1_request rq;
    int r = http1_head(c->h1, p, avail, &rq, &why);
    if (r == 0)
      return;
    if (r < 0 || rq.connect) {
      refuse(c, 400, NULL, "a malformed or ambiguous HTTP request: %s",
             r < 0 ? why : "CONNECT inside a connection");
      return;
    }
    /* Every request names the host the connection was decided for (its first request's). */
    bool same = rq.has_host ? strcmp(rq.host, c->http_host) == 0 : c->http_host[0] == '\0';
    if (!same || (rq.host_port && rq.host_port != c->port) ||
        (rq.absolute && (strcmp(rq.url_host, rq.host) != 0 || (rq.url_port && rq.url_port != c->port)))) {
      refuse(c, 403, rq.has_host ? rq.host : rq.url_host,
             "the Host header names %s, not this connection's host %s", rq.has_host ? rq.host : "nothing",
             c->http_host[0] ? c->http_host : "(none)");
      return;
    }
    c->up_ok += rq.head_len;
  }
}

/* Move what can move; true when the connection is over. */
bool conn_pump(struct conn *c) {
  for (int round = 0; round < 4; round++) {
    bool moved = false;
    if (!c->client_eof && c->up_len < up_cap(c)) {
      ssize_t n = recv(c->cw.fd, c->up + c->up_len, up_cap(c) - c->up_len, 0);
      if (n > 0) {
        c->up_len += (size_t)n;
        moved = true;
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        c->client_eof = true;
      }
    }
    if (c->h1)
      conn_gate(c);
    size_t ready = sendable(c);
    if (ready) {
      ssize_t n = send(c->uw.fd, c->up, ready, MSG_NOSIGNAL);
      if (n > 0) {
        c->bytes_up += n; /* what reached the upstream, our rewritten head included */
        memmove(c->up, c->up + n, c->up_len - (size_t)n);
        c->up_len -= (size_t)n;
        if (c->h1)
          c->up_ok -= (size_t)n;
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
     * shutdown(SHUT_WR) towards the other. An HTTP head the client never finished is dropped. */
    if (c->client_eof && sendable(c) == 0 && !c->upstream_shut) {
      c->up_len = 0;
      shutdown(c->uw.fd, SHUT_WR);
      c->upstream_shut = true;
    }
    if (c->upstream_eof && c->down_len == 0 && !c->client_shut) {
      if (c->refuse_status)
        return true; /* the refusal is the last answer (conn_relay) */
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

void conn_finish_refusal(struct broker *b, struct conn *c) {
  /* The connection's own record (what it moved), then the refused request's. */
  conn_record(b, c, true, NULL);
  char first_host[256];
  snprintf(first_host, sizeof(first_host), "%s", c->http_host);
  snprintf(c->http_host, sizeof(c->http_host), "%s", c->refuse_host);
  conn_record(b, c, false, c->refuse_reason);
  snprintf(c->http_host, sizeof(c->http_host), "%s", first_host);
  conn_http_refusal(c->cw.fd, c->refuse_status, NULL, c->refuse_reason);
  conn_free(b, c);
}

void conn_relay(struct broker *b, struct conn *c) {
  bool refusing = c->refuse_status != 0;
  if (conn_pump(c)) {
    if (c->refuse_status) {
      conn_finish_refusal(b, c);
      return;
    }
    conn_record(b, c, true, NULL);
    conn_free(b, c);
    return;
  }
  if (c->refuse_status && !refusing)
    c->deadline = now_mono() + 5; /* an upstream that does not close after its answers */
  else if (!c->refuse_status)
    c->deadline = now_mono() + BROKER_IDLE_TIMEOUT; /* a stalled connection is not held forever */
  relay_interest(b, c);
}
