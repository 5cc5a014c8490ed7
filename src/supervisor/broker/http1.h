/* HTTP/1.x requests for the broker: the one parser every request head on every connection goes
 * through (the proxy's own heads, the first bytes of a tunnel or a transparent connection, each
 * later request of a kept-alive or pipelined one), a thin layer over nodejs' http-parser
 * (Debian's libhttp-parser, 2.9) with the checks a request smuggler would defeat added in front:
 * a head must be CRLF-framed (no bare CR or LF), have no obs-fold, no control bytes, one Host,
 * at most one Content-Length, no Transfer-Encoding but a lone "chunked" and never with a
 * Content-Length, no Upgrade. The parser then tracks the message's body, so the next request's
 * head is found where it starts and checked in its turn. */
#ifndef CM_SUPERVISOR_BROKER_HTTP1_H
#define CM_SUPERVISOR_BROKER_HTTP1_H

#include <http_parser.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct http1_request {
  char method[24];
  bool connect;       /* CONNECT authority */
  bool absolute;      /* an absolute-form target: http://authority/path (https:// in TLS) */
  char url_host[256]; /* CONNECT's or the absolute URL's host, lower case, no brackets */
  uint16_t url_port;  /* its port; 0 when the URL gives none */
  const char *target; /* the request target as sent (into the caller's buffer) */
  size_t target_len;
  size_t path_off; /* absolute: where its origin-form part (path?query) starts in target */
  bool has_host;
  char host[256];      /* the Host header's host, lower case */
  uint16_t host_port;  /* its port; 0 when it gives none */
  unsigned http_minor; /* HTTP/1.<minor> */
  size_t head_len;     /* up to and including the blank line */
  bool complete;       /* the message ends with its head (no body follows) */
};

/* The state of one direction of one connection: where the current message is. */
struct http1_stream {
  http_parser p;
  bool tls; /* decrypted requests (the TLS interceptor): an absolute target is https:// */
  bool in_body;
  /* Filled by the callbacks while a head is parsed. */
  struct http1_request *cur;
  char field[32];
  size_t field_len;
  bool field_done;
  int n_host, n_cl, n_te;
  bool te_chunked, upgrade, bad_value;
  size_t host_len;
  char hostv[256];
  bool message_done;
  bool closed; /* the last message said Connection: close (or was HTTP/1.0 without keep-alive) */
};

void http1_stream_init(struct http1_stream *s);
/* Does buf start like an HTTP/1 request line? 1 yes, 0 cannot tell yet, -1 no. */
int http1_looks_like(const uint8_t *buf, size_t len);
/* The head of the stream's next request, at buf (what arrived of it). 1: complete and checked,
 * *out filled (pointers into buf), the stream past the head; 0: need more; -1: refused, *why. */
int http1_head(struct http1_stream *s, const uint8_t *buf, size_t len, struct http1_request *out,
               const char **why);
/* The same checks on bytes only looked at (MSG_PEEK): a throwaway stream. */
int http1_peek(const uint8_t *buf, size_t len, struct http1_request *out, const char **why);
/* The current message's body: how many of len belong to it (-1: refused, *why); *done when it
 * ended there, the next byte being the next request's. */
ssize_t http1_body(struct http1_stream *s, const uint8_t *buf, size_t len, bool *done, const char **why);
/* host[:port] or [v6]:port → lower-case host (brackets removed), port (0: none). 0 or -1. */
int http1_authority(const char *a, size_t alen, char *host, size_t host_len, uint16_t *port);

#endif
