/* The TLS interceptor's connection (intercept.c: the TLS, the event loop, the life) and its
 * HTTP side (intercept_http.c: each request framed and decided, the secret put in, what comes
 * back scrubbed). Both are in codemode-broker-tls.so only. */
#ifndef CM_SUPERVISOR_BROKER_INTERCEPT_H
#define CM_SUPERVISOR_BROKER_INTERCEPT_H

#include <http_parser.h>
#include <openssl/ssl.h>

#include "supervisor/broker/broker.h"
#include "supervisor/broker/http1.h"

#define INTERCEPT_MAX 64
#define IC_HANDSHAKE_TIMEOUT 10.0 /* both TLS handshakes */
#define IC_HEAD_TIMEOUT 10.0      /* a request head, from its first byte to its end */
#define IC_IDLE_TIMEOUT 120.0     /* nothing moved either way */
#define IC_CHUNK 16384
#define IC_MAX_INFLIGHT 32 /* pipelined requests awaiting their response */

enum ic_state { IC_UP_HANDSHAKE, IC_CLIENT_HANDSHAKE, IC_RELAY };

struct icon {
  struct icon *next, *prev;
  struct broker *b;
  struct watch cw, uw;
  uint32_t cw_ev, uw_ev;
  enum ic_state st;
  SSL *cs, *us;
  char host[256], via[16], addr[64], rule[300];
  uint16_t port;
  double started, deadline;
  const char *secret_used;
  long long up, down;
  bool client_eof, upstream_eof, closing;
  bool closed; /* its sockets are closed: an event of this round for it is ignored */
  /* client → upstream: the request stream (http1.c), the head being read, what is owed */
  struct http1_stream h1;
  bool in_head;
  uint8_t head[BROKER_HEAD_MAX];
  size_t head_len;
  char host_hdr[256]; /* the current request's Host (for the audit) */
  uint8_t *upbuf; /* BROKER_BUF + room for one rewritten head */
  size_t up_len, up_cap;
  /* upstream → client: the response parser, the scrubber's held-back bytes, what is owed */
  http_parser resp;
  bool heads[IC_MAX_INFLIGHT]; /* for each request in flight: was it HEAD */
  size_t n_inflight;
  bool resp_in_head, resp_chunked;
  uint8_t hold[512];
  size_t hold_len;
  uint8_t *downbuf;
  size_t down_len;
};

/* intercept_http.c */
void icon_http_init(struct icon *ic);
/* Client plaintext: heads decided and rewritten into upbuf, bodies passed on. False: refused
 * (answered and audited; the connection ends). */
bool filter_request(struct icon *ic, const uint8_t *data, size_t len);
/* Upstream plaintext, scrubbed into downbuf. False: not a response we can frame. */
bool filter_response(struct icon *ic, const uint8_t *data, size_t len);
/* The upstream's end: a body that ran to it is complete, nothing is held back. */
void filter_response_end(struct icon *ic);

#endif
