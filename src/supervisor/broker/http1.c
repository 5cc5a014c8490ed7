/* HTTP/1.x request heads and message boundaries (http1.h): our framing checks, then
 * http-parser for the grammar and the body's length. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "supervisor/broker/broker.h"
#include "supervisor/broker/http1.h"

static struct http1_stream *of(http_parser *p) {
  return p->data;
}

static int on_url(http_parser *p, const char *at, size_t len) {
  struct http1_stream *s = of(p);
  if (s->cur->target == NULL)
    s->cur->target = at;
  s->cur->target_len = (size_t)(at + len - s->cur->target);
  return 0;
}

/* Which header a field/value pair is; the value of the ones we judge. Callbacks may come in
 * pieces (never here: a head is given whole), so both are appended to. */
static int on_field(http_parser *p, const char *at, size_t len) {
  struct http1_stream *s = of(p);
  if (s->field_done) {
    s->field_len = 0;
    s->field_done = false;
  }
  size_t room = sizeof(s->field) - 1 - s->field_len;
  memcpy(s->field + s->field_len, at, len < room ? len : room);
  s->field_len += len < room ? len : room;
  s->field[s->field_len] = '\0';
  return 0;
}

static bool is_field(struct http1_stream *s, const char *name) {
  return strcasecmp(s->field, name) == 0;
}

static int on_value(http_parser *p, const char *at, size_t len) {
  struct http1_stream *s = of(p);
  bool first = !s->field_done;
  s->field_done = true;
  if (is_field(s, "host")) {
    if (first)
      s->n_host++, s->host_len = 0;
    if (s->host_len + len >= sizeof(s->hostv)) {
      s->bad_value = true;
      return 0;
    }
    memcpy(s->hostv + s->host_len, at, len);
    s->host_len += len;
    s->hostv[s->host_len] = '\0';
  } else if (is_field(s, "content-length")) {
    s->n_cl += first;
  } else if (is_field(s, "transfer-encoding")) {
    s->n_te += first;
    /* Only a lone "chunked": a list ("gzip, chunked"), or "chunked" twice, is how a front and a
     * back end come to disagree on where a body ends. */
    s->te_chunked = first && len == 7 && strncasecmp(at, "chunked", 7) == 0;
  } else if (is_field(s, "upgrade")) {
    s->upgrade = true;
  }
  return 0;
}

static int on_message_complete(http_parser *p) {
  /* Stop at the boundary: what follows is the next request's head, to be checked first. */
  of(p)->message_done = true;
  of(p)->closed = !http_should_keep_alive(p);
  http_parser_pause(p, 1);
  return 0;
}

static const http_parser_settings settings = {
    .on_url = on_url,
    .on_header_field = on_field,
    .on_header_value = on_value,
    .on_message_complete = on_message_complete,
};

void http1_stream_init(struct http1_stream *s) {
  memset(s, 0, sizeof(*s));
  http_parser_init(&s->p, HTTP_REQUEST);
  s->p.data = s;
}

/* A method http-parser knows: "PING x" or "HELO x" is another protocol, not a broken request. */
static bool known_method(const uint8_t *m, size_t len) {
#define CM_METHOD(num, name, string) {#string, sizeof(#string) - 1},
  static const struct {
    const char *s;
    size_t n;
  } methods[] = {HTTP_METHOD_MAP(CM_METHOD)};
#undef CM_METHOD
  for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
    if (methods[i].n == len && memcmp(methods[i].s, m, len) == 0)
      return true;
  return false;
}

int http1_looks_like(const uint8_t *buf, size_t len) {
  for (size_t i = 0; i < len && i < 16; i++) {
    if (buf[i] == ' ')
      return i > 0 && known_method(buf, i) ? 1 : -1;
    if (buf[i] < 'A' || buf[i] > 'Z')
      return -1;
  }
  return len < 16 ? 0 : -1;
}

static bool tchar(uint8_t ch) {
  return isalnum(ch) || (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

/* Where the head ends, judged on its bytes alone. The framing is checked here rather than left to
 * the parser's leniency: a bare LF or CR, a folded line or a space before a colon is read one way
 * by one server and another way by the next. */
static int frame(const uint8_t *b, size_t len, size_t *head_len, const char **why) {
  size_t line = 0;
  bool first = true;
  for (size_t i = 0; i < len; i++) {
    uint8_t ch = b[i];
    if (ch == '\r') {
      if (i + 1 < len && b[i + 1] != '\n') {
        *why = "a bare CR";
        return -1;
      }
      continue;
    }
    if (ch == '\n') {
      if (i == 0 || b[i - 1] != '\r') {
        *why = "a bare LF (a line not ended by CRLF)";
        return -1;
      }
      size_t ll = i - 1 - line;
      if (ll == 0) {
        if (first) {
          *why = "an empty line before the request line";
          return -1;
        }
        *head_len = i + 1;
        return 1;
      }
      if (!first) {
        if (b[line] == ' ' || b[line] == '\t') {
          *why = "a folded header line (obs-fold)";
          return -1;
        }
        size_t k = line;
        while (k < line + ll && tchar(b[k]))
          k++;
        if (k == line || k == line + ll || b[k] != ':') {
          *why = "a header line that is not NAME: VALUE";
          return -1;
        }
      }
      first = false;
      line = i + 1;
      continue;
    }
    if ((ch < 0x20 && ch != '\t') || ch == 0x7f) {
      *why = "a control character in the request head";
      return -1;
    }
  }
  if (len >= BROKER_HEAD_MAX) {
    *why = "a request head over 16 KiB";
    return -1;
  }
  return 0;
}

int http1_authority(const char *a, size_t alen, char *host, size_t host_len, uint16_t *port) {
  *port = 0;
  const char *end = a + alen, *colon = NULL;
  if (alen && a[0] == '[') {
    const char *rb = memchr(a, ']', alen);
    if (rb == NULL)
      return -1;
    if (rb + 1 < end) {
      if (rb[1] != ':')
        return -1;
      colon = rb + 1;
    }
    a++;
    alen = (size_t)(rb - a);
  } else {
    colon = memchr(a, ':', alen);
    if (colon)
      alen = (size_t)(colon - a);
  }
  if (alen == 0 || alen >= host_len)
    return -1;
  for (size_t i = 0; i < alen; i++) {
    unsigned char ch = (unsigned char)a[i];
    if (!isalnum(ch) && ch != '-' && ch != '.' && ch != '_' && ch != ':')
      return -1;
    host[i] = (char)tolower(ch);
  }
  host[alen] = '\0';
  if (colon) {
    unsigned long v = 0;
    const char *q = colon + 1;
    if (q == end)
      return -1;
    for (; q < end; q++) {
      if (!isdigit((unsigned char)*q))
        return -1;
      v = v * 10 + (unsigned long)(*q - '0');
      if (v > 65535)
        return -1;
    }
    if (v == 0)
      return -1;
    *port = (uint16_t)v;
  }
  return 0;
}

/* The request target: origin-form, OPTIONS' "*", CONNECT's authority, or an absolute URL:
 * http:// on a plain connection, https:// inside TLS (its own scheme; anything else would be a
 * request for another port the decision was not about). */
static int target(const struct http1_stream *s, struct http1_request *r, const char **why) {
  const char *t = r->target;
  size_t n = r->target_len;
  if (r->connect) {
    if (http1_authority(t, n, r->url_host, sizeof(r->url_host), &r->url_port) < 0 || r->url_port == 0) {
      *why = "CONNECT needs host:port";
      return -1;
    }
    return 0;
  }
  if (n && t[0] == '/')
    return 0;
  if (n == 1 && t[0] == '*' && s->p.method == HTTP_OPTIONS)
    return 0; /* asks about the server itself: the Host decides which */
  const char *scheme = s->tls ? "https://" : "http://";
  size_t sl = strlen(scheme);
  if (!s->tls && n >= 8 && strncasecmp(t, "https://", 8) == 0) {
    *why = "https:// URLs go through CONNECT";
    return -1;
  }
  if (n <= sl || strncasecmp(t, scheme, sl) != 0) {
    *why = s->tls ? "a request target that is neither a path nor an absolute https:// URL"
                  : "a request target that is neither a path nor an absolute http:// URL";
    return -1;
  }
  r->absolute = true;
  const char *auth = t + sl, *end = t + n, *ae = auth;
  while (ae < end && *ae != '/' && *ae != '?' && *ae != '#')
    ae++;
  if (memchr(auth, '@', (size_t)(ae - auth))) {
    *why = "credentials in the URL";
    return -1;
  }
  if (http1_authority(auth, (size_t)(ae - auth), r->url_host, sizeof(r->url_host), &r->url_port) < 0) {
    *why = "bad host in the URL";
    return -1;
  }
  r->path_off = (size_t)(ae - t);
  return 0;
}

int http1_head(struct http1_stream *s, const uint8_t *buf, size_t len, struct http1_request *out,
               const char **why) {
  size_t head_len = 0;
  if (len == 0)
    return 0;
  int lr = http1_looks_like(buf, len);
  if (lr < 0) {
    *why = "not an HTTP request";
    return -1;
  }
  if (s->closed) {
    /* A server reads nothing after such a request; one that did would take it unchecked. */
    *why = "a request after one that closes the connection";
    return -1;
  }
  int f = frame(buf, len, &head_len, why);
  if (f <= 0)
    return f;
  memset(out, 0, sizeof(*out));
  s->cur = out;
  s->field_len = 0;
  s->field_done = false;
  s->n_host = s->n_cl = s->n_te = 0;
  s->te_chunked = s->upgrade = s->bad_value = s->message_done = false;
  s->host_len = 0;
  size_t n = http_parser_execute(&s->p, &settings, (const char *)buf, head_len);
  enum http_errno e = HTTP_PARSER_ERRNO(&s->p);
  s->cur = NULL;
  if ((e != HPE_OK && e != HPE_PAUSED) || (n != head_len && !s->p.upgrade)) {
    *why = e == HPE_OK ? "a request the parser stopped in" : http_errno_description(e);
    return -1;
  }
  if (e == HPE_PAUSED)
    http_parser_pause(&s->p, 0);
  out->head_len = head_len;
  out->complete = s->message_done;
  s->in_body = !s->message_done;
  out->http_minor = s->p.http_minor;
  snprintf(out->method, sizeof(out->method), "%s", http_method_str((enum http_method)s->p.method));
  out->connect = s->p.method == HTTP_CONNECT;
  if (s->p.http_major != 1) {
    *why = "not HTTP/1.x";
    return -1;
  }
  if (s->n_host > 1) {
    *why = "more than one Host header";
    return -1;
  }
  if (s->n_cl > 1 || (s->n_cl && s->n_te)) {
    *why = s->n_te ? "both Content-Length and Transfer-Encoding" : "more than one Content-Length";
    return -1;
  }
  if (s->n_te > 1 || (s->n_te && !s->te_chunked) || (s->n_te && s->p.http_minor == 0)) {
    *why = "a Transfer-Encoding other than one \"chunked\" on HTTP/1.1";
    return -1;
  }
  if (s->upgrade) {
    /* After an Upgrade the bytes are another protocol's, or, if the server declines, more
     * requests we could no longer tell from the new protocol: not relayed. */
    *why = "an Upgrade request (ws:// is not relayed; wss:// is)";
    return -1;
  }
  if (s->bad_value) {
    *why = "a Host header too long";
    return -1;
  }
  if (s->n_host) {
    const char *v = s->hostv, *ve = s->hostv + s->host_len;
    while (v < ve && (*v == ' ' || *v == '\t'))
      v++;
    while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
      ve--;
    if (http1_authority(v, (size_t)(ve - v), out->host, sizeof(out->host), &out->host_port) < 0) {
      *why = "a Host header that is not host[:port]";
      return -1;
    }
    out->has_host = true;
  } else if (s->p.http_minor >= 1) {
    *why = "an HTTP/1.1 request without a Host header";
    return -1;
  }
  if (out->target == NULL) {
    *why = "no request target";
    return -1;
  }
  return target(s, out, why) < 0 ? -1 : 1;
}

int http1_peek(const uint8_t *buf, size_t len, struct http1_request *out, const char **why) {
  struct http1_stream s;
  http1_stream_init(&s);
  return http1_head(&s, buf, len, out, why);
}

ssize_t http1_body(struct http1_stream *s, const uint8_t *buf, size_t len, bool *done, const char **why) {
  *done = false;
  s->message_done = false;
  size_t n = http_parser_execute(&s->p, &settings, (const char *)buf, len);
  enum http_errno e = HTTP_PARSER_ERRNO(&s->p);
  if (e == HPE_PAUSED) {
    http_parser_pause(&s->p, 0);
    *done = true;
    s->in_body = false;
    return (ssize_t)n;
  }
  if (e != HPE_OK || n != len) {
    *why = e == HPE_OK ? "a body the parser stopped in" : http_errno_description(e);
    return -1;
  }
  return (ssize_t)n;
}
