/* The HTTP side of the TLS interceptor (intercept.h): every request on an intercepted
 * connection framed and checked by http1.c (the broker's one request parser, over nodejs'
 * http-parser) and decided on its own Host, the secret substituted only into a request for the
 * bound host, and what comes back scrubbed of the secret's value. man 5 codemode-profiles,
 * "Secrets", says each rule. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "supervisor/broker/intercept.h"

static void audit_request(struct icon *ic, bool allowed, const char *reason) {
  struct audit_record r = {.event = "request",
                           .decision = allowed ? "allow" : "deny",
                           .via = ic->via,
                           .host = ic->host,
                           .port = ic->port,
                           .sni = ic->host,
                           .http_host = ic->host_hdr[0] ? ic->host_hdr : NULL,
                           .addr = ic->addr,
                           .rule = ic->rule[0] ? ic->rule : NULL,
                           .reason = reason,
                           .intercepted = true,
                           .bytes_up = -1,
                           .bytes_down = -1,
                           .duration_ms = -1};
  audit_write(ic->b, &r);
}

/* --- the request side -------------------------------------------------------------------------- */

/* Every request head goes through http1.c (exported by the broker, the same code as for
 * plain HTTP): the same framing and smuggling refusals, in the same words, intercepted or not. */
#define MALFORMED "a malformed or ambiguous HTTP request: "

static void new_request(struct icon *ic) {
  ic->in_head = true;
  ic->head_len = 0;
  ic->host_hdr[0] = '\0';
}

static bool up_append(struct icon *ic, const void *p, size_t n) {
  if (ic->up_len + n > ic->up_cap)
    return false;
  memcpy(ic->upbuf + ic->up_len, p, n);
  ic->up_len += n;
  return true;
}

/* Append one header line (CRLF added), with every placeholder of the secrets this request may
 * carry replaced by its value. */
static bool emit_line(struct icon *ic, const uint8_t *line, size_t len, bool substitute) {
  const uint8_t *colon = memchr(line, ':', len);
  struct broker *b = ic->b;
  size_t pos = 0;
  if (substitute && colon) {
    size_t nl = (size_t)(colon - line);
    for (size_t i = 0; i < b->n_secrets; i++) {
      const struct secret_binding *s = &b->secrets[i];
      if (!egress_host_matches(s->host, ic->host) || strlen(s->header) != nl || strncasecmp((const char *)line, s->header, nl) != 0)
        continue;
      size_t pl = strlen(s->placeholder);
      for (size_t at = nl + 1; at + pl <= len;) {
        const uint8_t *hit = memmem(line + at, len - at, s->placeholder, pl);
        if (hit == NULL)
          break;
        size_t h = (size_t)(hit - line);
        if (!up_append(ic, line + pos, h - pos) || !up_append(ic, s->value, strlen(s->value)))
          return false;
        ic->secret_used = s->name;
        pos = at = h + pl;
      }
    }
  }
  return up_append(ic, line + pos, len - pos) && up_append(ic, "\r\n", 2);
}

/* One request head, checked by http1_head (rq; its bytes ic->head[0, rq->head_len)): decide it,
 * then queue it upstream, the secret substituted only if the request is for our host. False:
 * refused (*refusal, *status). */
static bool emit_head(struct icon *ic, const struct http1_request *rq, const char **refusal, int *status) {
  struct broker *b = ic->b;
  *status = 400;
  if (rq->connect) {
    *refusal = MALFORMED "CONNECT inside a connection";
    return false;
  }
  if (!rq->has_host) {
    /* An HTTP/1.0 request may lack one, but the secret follows the Host: none, no decision. */
    *refusal = MALFORMED "no Host header in an intercepted connection";
    return false;
  }
  snprintf(ic->host_hdr, sizeof(ic->host_hdr), "%s", rq->host);
  uint16_t host_port = rq->host_port ? rq->host_port : 443;
  /* An absolute URI: its authority must be the Host's, host and port (a server that routes by
   * the URI would otherwise serve a virtual host no rule was asked about). */
  if (rq->absolute && (strcmp(rq->url_host, rq->host) != 0 || (rq->url_port ? rq->url_port : 443) != host_port)) {
    *refusal = "the request URI's authority and its Host header disagree";
    return false;
  }
  bool ours = strcasecmp(rq->host, ic->host) == 0 && host_port == ic->port;
  if (!ours) {
    /* Another (virtual) host on this connection: never the secret; and only if allowed. */
    if (!egress_check_host(&b->policy, rq->host, ic->port).allowed) {
      *status = 403;
      *refusal = "the Host header names a host no rule allows";
      return false;
    }
    audit_request(ic, true, "the Host header is not the bound host: no secret substituted");
  }
  /* Line by line: http1_head let through only CRLF-ended lines, none folded. */
  size_t pos = 0, hl = rq->head_len;
  bool first = true, encoding_set = false;
  while (pos + 2 < hl) {
    const uint8_t *cr = memmem(ic->head + pos, hl - pos, "\r\n", 2);
    size_t len = (size_t)(cr - (ic->head + pos));
    const uint8_t *line = ic->head + pos;
    pos += len + 2;
    /* A substituted request asks for an identity encoding: a compressed echo of the secret
     * would pass the scrubber. */
    if (ours && len >= 16 && strncasecmp((const char *)line, "accept-encoding:", 16) == 0) {
      if (!encoding_set && !up_append(ic, "Accept-Encoding: identity\r\n", 27))
        goto full;
      encoding_set = true;
      continue;
    }
    if (!emit_line(ic, line, len, ours && !first))
      goto full;
    first = false;
  }
  if (!up_append(ic, "\r\n", 2))
    goto full;
  if (ic->n_inflight < IC_MAX_INFLIGHT)
    ic->heads[ic->n_inflight] = strcmp(rq->method, "HEAD") == 0;
  ic->n_inflight++;
  return true;
full:
  *status = 431;
  *refusal = "request head too large";
  return false;
}

static void refuse(struct icon *ic, int status, const char *prefix, const char *why) {
  char reason[300];
  snprintf(reason, sizeof(reason), "%s%s", prefix, why);
  audit_request(ic, false, reason);
  char msg[600];
  int n = snprintf(msg, sizeof(msg),
                   "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nConnection: close\r\nX-Codemode-Egress: denied\r\n"
                   "Content-Length: %zu\r\n\r\ncodemode egress: %s\n",
                   status, status == 403 ? "Forbidden" : status == 431 ? "Request Header Fields Too Large" : "Bad Request",
                   strlen(reason) + 18, reason); /* "codemode egress: " reason "\n" */
  SSL_write(ic->cs, msg, n); /* best effort: the refusal stands whether or not it is read */
  ic->closing = true;
}

/* Client bytes through http1.c: heads checked, decided and rewritten, bodies passed on. */
bool filter_request(struct icon *ic, const uint8_t *data, size_t len) {
  while (len > 0 && !ic->closing) {
    const char *why = "?";
    if (!ic->in_head) {
      bool done;
      ssize_t n = http1_body(&ic->h1, data, len, &done, &why);
      if (n < 0) {
        refuse(ic, 400, MALFORMED, why);
        return false;
      }
      if (!up_append(ic, data, (size_t)n)) {
        refuse(ic, 400, "", "internal: request buffer");
        return false;
      }
      data += n;
      len -= (size_t)n;
      if (done)
        new_request(ic);
      continue;
    }
    if (ic->head_len == 0)
      ic->deadline = now_mono() + IC_HEAD_TIMEOUT;
    /* The head so far plus what came: judged whole each time (a name cut across records is
     * judged only once it is complete). Bytes past the head stay in data for the body. */
    size_t had = ic->head_len, take = len < sizeof(ic->head) - had ? len : sizeof(ic->head) - had;
    memcpy(ic->head + had, data, take);
    ic->head_len += take;
    struct http1_request rq;
    int r = http1_head(&ic->h1, ic->head, ic->head_len, &rq, &why);
    if (r < 0) {
      refuse(ic, 400, MALFORMED, why);
      return false;
    }
    if (r == 0) {
      data += take;
      len -= take;
      continue;
    }
    const char *refusal = NULL;
    int status;
    if (!emit_head(ic, &rq, &refusal, &status)) {
      refuse(ic, status, "", refusal);
      return false;
    }
    data += rq.head_len - had;
    len -= rq.head_len - had;
    ic->deadline = now_mono() + IC_IDLE_TIMEOUT;
    if (rq.complete)
      new_request(ic);
    else
      ic->in_head = false;
  }
  return true;
}

/* --- the response side: the scrubber ------------------------------------------------------------ */

/* The secret's stand-in in what comes back: its placeholder at the value's own length. */
static void mask(const struct secret_binding *s, uint8_t *out, size_t vl) {
  size_t pl = strlen(s->placeholder);
  for (size_t i = 0; i < vl; i++)
    out[i] = i < pl ? (uint8_t)s->placeholder[i] : '_';
}

static void down_append(struct icon *ic, const void *p, size_t n) {
  memcpy(ic->downbuf + ic->down_len, p, n);
  ic->down_len += n;
}

/* Scrub hold + data and queue it for the client (as one chunk of a re-framed chunked body when
 * chunked); bytes that could begin a value stay held, unless flush (a head's or a message's
 * end: nothing more can complete a value). */
static void scrub(struct icon *ic, const uint8_t *data, size_t len, bool flush, bool chunked) {
  struct broker *b = ic->b;
  uint8_t work[sizeof(ic->hold) + IC_CHUNK];
  size_t wl = ic->hold_len;
  memcpy(work, ic->hold, wl);
  if (len)
    memcpy(work + wl, data, len);
  wl += len;
  ic->hold_len = 0;
  size_t keep = 0;
  for (size_t i = 0; i < b->n_secrets; i++) {
    const struct secret_binding *s = &b->secrets[i];
    size_t vl = strlen(s->value);
    if (vl == 0 || vl > sizeof(ic->hold))
      continue;
    for (uint8_t *p = work; (p = memmem(p, wl - (size_t)(p - work), s->value, vl)) != NULL; p += vl)
      mask(s, p, vl);
    /* The longest tail that could begin the value: held until more comes. */
    if (!flush)
      for (size_t k = vl - 1 < wl ? vl - 1 : wl; k > keep; k--)
        if (memcmp(work + wl - k, s->value, k) == 0) {
          keep = k;
          break;
        }
  }
  size_t out = wl - keep;
  if (out && chunked) {
    char size[24];
    int n = snprintf(size, sizeof(size), "%zx\r\n", out);
    down_append(ic, size, (size_t)n);
  }
  down_append(ic, work, out);
  if (out && chunked)
    down_append(ic, "\r\n", 2);
  memcpy(ic->hold, work + out, keep);
  ic->hold_len = keep;
}

static int on_resp_headers_complete(http_parser *p) {
  struct icon *ic = p->data;
  http_parser_pause(p, 1);
  ic->resp_chunked = (p->flags & F_CHUNKED) != 0;
  /* The answer to a HEAD has no body, whatever its Content-Length says. */
  return p->status_code >= 200 && ic->n_inflight && ic->n_inflight <= IC_MAX_INFLIGHT && ic->heads[0] ? 1 : 0;
}

/* A body, without its chunk framing: a value split across chunks is whole here. */
static int on_resp_body(http_parser *p, const char *at, size_t len) {
  struct icon *ic = p->data;
  scrub(ic, (const uint8_t *)at, len, false, ic->resp_chunked);
  return 0;
}

static int on_resp_message_complete(http_parser *p) {
  struct icon *ic = p->data;
  scrub(ic, NULL, 0, true, ic->resp_chunked);
  if (ic->resp_chunked)
    down_append(ic, "0\r\n\r\n", 5); /* the trailers, if any, are dropped */
  if (p->status_code >= 200 && ic->n_inflight) {
    ic->n_inflight--;
    memmove(ic->heads, ic->heads + 1, sizeof(ic->heads) - sizeof(ic->heads[0]));
  }
  http_parser_pause(p, 1);
  return 0;
}

static const http_parser_settings resp_settings = {
    .on_headers_complete = on_resp_headers_complete,
    .on_body = on_resp_body,
    .on_message_complete = on_resp_message_complete,
};

/* Upstream bytes: a response head passes scrubbed as it is; a body passes through on_body. */
bool filter_response(struct icon *ic, const uint8_t *data, size_t len) {
  while (len > 0) {
    size_t n = http_parser_execute(&ic->resp, &resp_settings, (const char *)data, len);
    enum http_errno e = HTTP_PARSER_ERRNO(&ic->resp);
    if (e != HPE_OK && e != HPE_PAUSED)
      return false;
    if (ic->resp_in_head) {
      /* Paused at the head's end: n bytes, then the blank line's LF, fed again below. */
      scrub(ic, data, e == HPE_PAUSED ? n + 1 : n, e == HPE_PAUSED, false);
      if (e == HPE_PAUSED)
        ic->resp_in_head = false;
    } else if (e == HPE_PAUSED) {
      ic->resp_in_head = true;
    }
    if (e == HPE_PAUSED)
      http_parser_pause(&ic->resp, 0);
    else if (n != len)
      return false;
    data += n;
    len -= n;
  }
  return true;
}

void filter_response_end(struct icon *ic) {
  http_parser_execute(&ic->resp, &resp_settings, NULL, 0);
  scrub(ic, NULL, 0, true, false);
}

void icon_http_init(struct icon *ic) {
  http1_stream_init(&ic->h1);
  ic->h1.tls = true;
  http_parser_init(&ic->resp, HTTP_RESPONSE);
  ic->resp.data = ic;
  new_request(ic);
  ic->resp_in_head = true;
}
