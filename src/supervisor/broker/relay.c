/* The relay: once a connection is decided, bytes move both ways through two bounded buffers,
 * half-closes pass through, and the connection's record is written when it ends. */
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "supervisor/broker/conn.h"

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
  conn_set_interest(b, &c->cw, &c->cw_ev, cev);
  conn_set_interest(b, &c->uw, &c->uw_ev, uev);
}

/* Move what can move; true when the connection is over. */
bool conn_pump(struct conn *c) {
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

void conn_relay(struct broker *b, struct conn *c) {
  if (conn_pump(c)) {
    conn_record(b, c, true, NULL);
    conn_free(b, c);
    return;
  }
  relay_interest(b, c);
}
