/* The state of one TCP connection from the container, shared by the files that handle it:
 * conn.c (life, the decision, connecting, the first bytes, events, deadlines), handshake.c (the
 * proxy request head, SOCKS5), relay.c (moving bytes once decided). */
#ifndef CM_SUPERVISOR_BROKER_CONN_H
#define CM_SUPERVISOR_BROKER_CONN_H

#include <sys/types.h>

#include "supervisor/broker/broker.h"
#include "supervisor/broker/http1.h"

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
  bool named;            /* the client named the host (CONNECT, SOCKS name, URL) */
  bool tunnel;           /* CONNECT or SOCKS: a success reply is owed once the upstream is connected */
  bool unlinked;         /* taken off the list at shutdown, freed by its pending lookup */
  bool closed;           /* its sockets are closed; freed after this round of events (conn_reap) */
  bool replied;          /* the CONNECT / SOCKS success reply is queued: we are inside the tunnel */
  bool dead;             /* closed while a resolution was pending */
  bool sniffed;          /* its first bytes are classified (or a CIDR rule let it through without them) */
  bool tls, http, other; /* what the first bytes were: a ClientHello, an HTTP request, neither */
  bool cidr_ok; /* a CIDR rule allows the address it goes to (the address path's, or the one chosen) */
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
  /* Plain HTTP: every request's head is parsed and decided before it goes (relay.c). Of up,
   * [0, up_ok) is decided and may be sent, the rest waits for its head to be complete. */
  struct http1_stream *h1;
  size_t up_ok;
  bool proxy_http; /* absolute-URI requests through the proxy: each head rewritten */
  /* A later request refused: what was decided is delivered, the upstream's answers to it
   * relayed, then this answer, and the connection closes. */
  int refuse_status;
  char refuse_reason[320], refuse_host[256];
  long long bytes_up, bytes_down;
  double started, deadline;
};

/* conn.c */
void conn_set_interest(struct broker *b, struct watch *w, uint32_t *cur, uint32_t want);
void conn_record(struct broker *b, struct conn *c, bool allowed, const char *reason);
void conn_free(struct broker *b, struct conn *c);
void conn_send_now(int fd, const char *s, size_t n);
void conn_socks_reply(struct conn *c, uint8_t rep);
void conn_deny(struct broker *b, struct conn *c, const char *reason);
void conn_decide_named(struct broker *b, struct conn *c);
/* An HTTP refusal (400, 403) with the reason in its body. */
void conn_http_refusal(int fd, int status, const char *what, const char *reason);
/* A refusal of one HTTP request: recorded (its Host), answered in HTTP, the connection closed. */
void conn_refuse_request(struct broker *b, struct conn *c, int status, const char *http_host,
                         const char *reason);

/* handshake.c */
void conn_on_proxy_head(struct broker *b, struct conn *c);
void conn_on_socks(struct broker *b, struct conn *c);

/* relay.c: move what can move (true when the connection is over); relay and re-arm. */
bool conn_pump(struct conn *c);
/* Decide what arrived of the plain-HTTP requests in up (advances up_ok, or sets refuse_*). */
void conn_gate(struct conn *c);
/* A later request was refused and the upstream is done: its record, its answer, close. */
void conn_finish_refusal(struct broker *b, struct conn *c);
void conn_relay(struct broker *b, struct conn *c);

#endif
