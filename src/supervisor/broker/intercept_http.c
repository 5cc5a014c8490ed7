/* The HTTP side of the TLS interceptor (intercept.h): every request on an intercepted
 * connection framed by nodejs' http-parser and decided on its own Host, the secret substituted
 * only into a request for the bound host, and what comes back scrubbed of the secret's value.
 * man 5 codemode-profiles, "Secrets", says each rule. */
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

static int on_url(http_parser *p, const char *at, size_t len) {
  struct icon *ic = p->data;
  if (ic->url_len + len >= sizeof(ic->url))
    return 1; /* an error: a URI longer than we keep */
  memcpy(ic->url + ic->url_len, at, len);
  ic->url_len += len;
  ic->url[ic->url_len] = '\0';
  return 0;
}

/* A field's name may come in pieces (a read ending inside it): it is judged whole, at its
 * value's first piece, so that no split "Ho" "st" passes as another header. */
static int on_header_field(http_parser *p, const char *at, size_t len) {
  struct icon *ic = p->data;
  if (!ic->in_field)
    ic->fname_len = 0;
  ic->in_field = true;
  for (size_t i = 0; i < len && ic->fname_len < sizeof(ic->fname); i++)
    ic->fname[ic->fname_len++] = at[i];
  if (ic->fname_len + len > sizeof(ic->fname))
    ic->fname_len = sizeof(ic->fname); /* longer than any name we look for */
  return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t len) {
  struct icon *ic = p->data;
  if (ic->in_field) {
    ic->in_field = false;
    ic->field_host = ic->fname_len == 4 && strncasecmp(ic->fname, "host", 4) == 0;
    if (ic->field_host)
      ic->n_host++;
    if (ic->fname_len == 7 && strncasecmp(ic->fname, "upgrade", 7) == 0)
      ic->upgrade = true;
  }
  if (ic->field_host && ic->n_host == 1) {
    size_t have = strlen(ic->host_hdr);
    if (have + len >= sizeof(ic->host_hdr))
      return 1;
    memcpy(ic->host_hdr + have, at, len);
    ic->host_hdr[have + len] = '\0';
  }
  return 0;
}

/* Stop at the head's end (and at the message's): each is decided before a byte goes on. */
static int on_req_headers_complete(http_parser *p) {
  http_parser_pause(p, 1);
  return 0;
}

static int on_req_message_complete(http_parser *p) {
  http_parser_pause(p, 1);
  return 0;
}

static const http_parser_settings req_settings = {
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_req_headers_complete,
    .on_message_complete = on_req_message_complete,
};

static void new_request(struct icon *ic) {
  ic->in_head = true;
  ic->head_len = 0;
  ic->n_host = 0;
  ic->in_field = ic->field_host = false;
  ic->host_hdr[0] = '\0';
  ic->url_len = 0;
  ic->url[0] = '\0';
  ic->upgrade = false;
}

/* "host[:port]" names our host on our port. */
static bool names_us(struct icon *ic, const char *authority, size_t len) {
  const char *colon = memrchr(authority, ':', len);
  size_t hl = colon ? (size_t)(colon - authority) : len;
  if (hl != strlen(ic->host) || strncasecmp(authority, ic->host, hl) != 0)
    return false;
  if (colon == NULL)
    return ic->port == 443;
  char *end;
  unsigned long port = strtoul(colon + 1, &end, 10);
  return end == authority + len && port == ic->port;
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

/* The head of one request (its last byte the LF of its blank line): decide it, then queue it
 * upstream, the secret substituted only if the request is for our host. False: refused (and
 * answered). */
static bool emit_head(struct icon *ic, size_t hl, const char **refusal, int *status) {
  struct broker *b = ic->b;
  *status = 400;
  if (ic->n_host != 1) {
    *refusal = ic->n_host ? "two Host headers" : "no Host header";
    return false;
  }
  if (ic->upgrade || ic->req.method == HTTP_CONNECT) {
    *refusal = "an Upgrade or CONNECT inside an intercepted connection";
    return false;
  }
  struct http_parser_url u;
  http_parser_url_init(&u);
  if (ic->url[0] != '/' && ic->url[0] != '*' &&
      (http_parser_parse_url(ic->url, ic->url_len, 0, &u) != 0 || !(u.field_set & (1 << UF_HOST)))) {
    *refusal = "a request target that is neither a path nor an absolute URI";
    return false;
  }
  bool ours = names_us(ic, ic->host_hdr, strlen(ic->host_hdr));
  if (ic->url[0] != '/' && ic->url[0] != '*') {
    /* An absolute URI: its authority must be the Host's, host and port (a server that routes
     * by the URI would otherwise serve a virtual host no rule was asked about). */
    size_t off = u.field_data[UF_HOST].off, len = u.field_data[UF_HOST].len;
    unsigned dflt = strncasecmp(ic->url, "https:", 6) == 0 ? 443 : 80;
    char uri_auth[300], host_auth[300];
    snprintf(uri_auth, sizeof(uri_auth), "%.*s:%u", (int)len, ic->url + off,
             (u.field_set & (1 << UF_PORT)) ? u.port : dflt);
    const char *colon = strrchr(ic->host_hdr, ':');
    if (colon && strchr(colon, ']') == NULL)
      snprintf(host_auth, sizeof(host_auth), "%s", ic->host_hdr);
    else
      snprintf(host_auth, sizeof(host_auth), "%s:%u", ic->host_hdr, dflt);
    if (strcasecmp(uri_auth, host_auth) != 0) {
      *refusal = "the request URI's authority and its Host header disagree";
      return false;
    }
  }
  if (!ours) {
    /* Another (virtual) host on this connection: never the secret; and only if allowed. */
    char name[256];
    snprintf(name, sizeof(name), "%s", ic->host_hdr);
    char *colon = strrchr(name, ':');
    if (colon)
      *colon = '\0';
    if (!egress_check_host(&b->policy, name, ic->port).allowed) {
      *status = 403;
      *refusal = "the Host header names a host no rule allows";
      return false;
    }
    audit_request(ic, true, "the Host header is not the bound host: no secret substituted");
  }
  /* Line by line: http-parser accepted the head, which may end its lines with a bare LF. */
  size_t pos = 0;
  bool first = true, encoding_set = false;
  while (pos < hl) {
    const uint8_t *nl = memchr(ic->head + pos, '\n', hl - pos);
    size_t end = nl ? (size_t)(nl - ic->head) : hl, len = end - pos;
    if (len && ic->head[pos + len - 1] == '\r')
      len--;
    const uint8_t *line = ic->head + pos;
    pos = end + 1;
    if (len == 0)
      break;
    if (!first && (line[0] == ' ' || line[0] == '\t')) {
      *refusal = "a folded header line (obs-fold)";
      return false;
    }
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
    ic->heads[ic->n_inflight] = ic->req.method == HTTP_HEAD;
  ic->n_inflight++;
  return true;
full:
  *status = 431;
  *refusal = "request head too large";
  return false;
}

static void refuse(struct icon *ic, int status, const char *why) {
  audit_request(ic, false, why);
  char msg[512];
  int n = snprintf(msg, sizeof(msg),
                   "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nConnection: close\r\nX-Codemode-Egress: denied\r\n"
                   "Content-Length: %zu\r\n\r\ncodemode egress: %s\n",
                   status, status == 403 ? "Forbidden" : status == 431 ? "Request Header Fields Too Large" : "Bad Request",
                   strlen(why) + 18, why); /* "codemode egress: " why "\n" */
  SSL_write(ic->cs, msg, n); /* best effort: the refusal stands whether or not it is read */
  ic->closing = true;
}

/* Client bytes through the request parser: heads decided and rewritten, bodies passed on. */
bool filter_request(struct icon *ic, const uint8_t *data, size_t len) {
  while (len > 0 && !ic->closing) {
    if (ic->in_head) {
      if (ic->head_len == 0)
        ic->deadline = now_mono() + IC_HEAD_TIMEOUT;
      size_t take = len < sizeof(ic->head) - ic->head_len ? len : sizeof(ic->head) - ic->head_len;
      if (take == 0) {
        refuse(ic, 431, "request head too large");
        return false;
      }
      memcpy(ic->head + ic->head_len, data, take);
      size_t n = http_parser_execute(&ic->req, &req_settings, (const char *)ic->head + ic->head_len, take);
      enum http_errno e = HTTP_PARSER_ERRNO(&ic->req);
      if (e == HPE_OK && n != take) {
        refuse(ic, 400, "the request stream cannot be framed");
        return false;
      }
      if (e == HPE_OK) {
        ic->head_len += take;
        data += take;
        len -= take;
        continue;
      }
      if (e != HPE_PAUSED) {
        refuse(ic, 400, http_errno_description(e));
        return false;
      }
      /* Paused at the head's end: n bytes of data, then the blank line's LF. */
      const char *refusal = NULL;
      int status;
      if (!emit_head(ic, ic->head_len + n + 1, &refusal, &status)) {
        refuse(ic, status, refusal);
        return false;
      }
      http_parser_pause(&ic->req, 0);
      ic->in_head = false;
      ic->deadline = now_mono() + IC_IDLE_TIMEOUT;
      ic->skip = 1;
      data += n;
      len -= n;
      continue;
    }
    size_t n = http_parser_execute(&ic->req, &req_settings, (const char *)data, len);
    enum http_errno e = HTTP_PARSER_ERRNO(&ic->req);
    if ((e != HPE_OK && e != HPE_PAUSED) || (e == HPE_OK && n != len)) {
      refuse(ic, 400, e != HPE_OK ? http_errno_description(e) : "the request stream cannot be framed");
      return false;
    }
    if (n > ic->skip && !up_append(ic, data + ic->skip, n - ic->skip)) {
      refuse(ic, 400, "internal: request buffer");
      return false;
    }
    ic->skip = n < ic->skip ? ic->skip - n : 0;
    data += n;
    len -= n;
    if (e == HPE_PAUSED) {
      http_parser_pause(&ic->req, 0);
      new_request(ic);
    }
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
  http_parser_init(&ic->req, HTTP_REQUEST);
  http_parser_init(&ic->resp, HTTP_RESPONSE);
  ic->req.data = ic->resp.data = ic;
  new_request(ic);
  ic->resp_in_head = true;
}
