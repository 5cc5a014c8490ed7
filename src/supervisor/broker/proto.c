/* The few bytes of each protocol the broker must understand to decide: the SNI of a TLS
 * ClientHello, an HTTP proxy request turned into the origin server's (its head parsed by
 * http1.c, the one HTTP parser), and the one header a secret goes into. Each parser reads only
 * what it was given and never past it. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor/broker/broker.h"
#include "supervisor/broker/http1.h"

static unsigned get16(const uint8_t *p) { return (unsigned)p[0] << 8 | p[1]; }
static unsigned get24(const uint8_t *p) { return (unsigned)p[0] << 16 | (unsigned)p[1] << 8 | p[2]; }

/* The ClientHello, reassembled from its TLS records (it may span several). */
int proto_tls_sni(const uint8_t *buf, size_t len, char *sni, size_t sni_len) {
  uint8_t hs[BROKER_HEAD_MAX];
  size_t hs_len = 0, off = 0;
  sni[0] = '\0';
  if (len >= 1 && buf[0] != 0x16)
    return -1; /* not a TLS handshake record */
  for (;;) {
    if (len - off < 5)
      return 0;
    if (buf[off] != 0x16 || buf[off + 1] != 0x03)
      return -1;
    size_t rec = get16(buf + off + 3);
    if (rec == 0 || rec > 16384)
      return -1;
    if (len - off - 5 < rec)
      return len >= BROKER_HEAD_MAX ? -1 : 0;
    if (hs_len + rec > sizeof(hs))
      return -1;
    memcpy(hs + hs_len, buf + off + 5, rec);
    hs_len += rec;
    off += 5 + rec;
    if (hs_len >= 4) {
      if (hs[0] != 0x01) /* ClientHello */
        return -1;
      size_t need = 4 + get24(hs + 1);
      if (need > sizeof(hs))
        return -1;
      if (hs_len >= need)
        break;
    }
  }
  /* version(2) random(32) session_id<1> cipher_suites<2> compression<1> extensions<2> */
  size_t end = 4 + get24(hs + 1), p = 4 + 2 + 32;
  if (p + 1 > end)
    return -1;
  p += 1 + hs[p];
  if (p + 2 > end)
    return -1;
  p += 2 + get16(hs + p);
  if (p + 1 > end)
    return -1;
  p += 1 + hs[p];
  if (p == end)
    return 1; /* no extensions: no SNI */
  if (p + 2 > end)
    return -1;
  size_t ext_end = p + 2 + get16(hs + p);
  if (ext_end > end)
    return -1;
  p += 2;
  while (p + 4 <= ext_end) {
    unsigned type = get16(hs + p), elen = get16(hs + p + 2);
    p += 4;
    if (p + elen > ext_end)
      return -1;
    if (type == 0) { /* server_name: list<2> of name_type(1) name<2> */
      if (elen < 5 || hs[p + 2] != 0)
        return -1;
      size_t nlen = get16(hs + p + 3);
      if (5 + nlen > elen || nlen == 0 || nlen >= sni_len)
        return -1;
      for (size_t i = 0; i < nlen; i++) {
        unsigned char ch = hs[p + 5 + i];
        /* A name, not arbitrary bytes: what goes into the audit log and the rule check. */
        if (!isalnum(ch) && ch != '-' && ch != '.' && ch != '_')
          return -1;
        sni[i] = (char)tolower(ch);
      }
      sni[nlen] = '\0';
      return 1;
    }
    p += elen;
  }
  return 1;
}

static void append(char **out, size_t *len, size_t *cap, const char *s, size_t n) {
  if (*len + n + 1 > *cap) {
    *cap = (*len + n + 1) * 2;
    *out = realloc(*out, *cap);
    if (*out == NULL)
      abort();
  }
  memcpy(*out + *len, s, n);
  *len += n;
  (*out)[*len] = '\0';
}

static bool hop_by_hop(const char *line, size_t ll) {
  static const char *const names[] = {"connection", "proxy-connection", "keep-alive", "proxy-authorization"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    size_t n = strlen(names[i]);
    if (ll > n && line[n] == ':' && strncasecmp(line, names[i], n) == 0)
      return true;
  }
  return false;
}

/* The head with its header lines filtered: hop-by-hop headers dropped, `extra` lines added. */
static char *rebuild_head(const char *first_line, size_t first_len, const char *head, size_t len, const char *extra,
                          size_t *out_len) {
  char *out = NULL;
  size_t olen = 0, cap = 0;
  append(&out, &olen, &cap, first_line, first_len);
  append(&out, &olen, &cap, "\r\n", 2);
  const char *end = head + len;
  const char *p = memchr(head, '\n', len);
  while (p && p + 1 < end) {
    const char *line = p + 1;
    const char *eol = memchr(line, '\n', (size_t)(end - line));
    if (eol == NULL)
      break;
    size_t ll = (size_t)(eol - line);
    if (ll && line[ll - 1] == '\r')
      ll--;
    p = eol;
    if (ll == 0)
      break; /* the blank line */
    if (hop_by_hop(line, ll))
      continue;
    append(&out, &olen, &cap, line, ll);
    append(&out, &olen, &cap, "\r\n", 2);
  }
  if (extra)
    append(&out, &olen, &cap, extra, strlen(extra));
  /* One request per connection: the next one opens a new connection and is checked again. */
  append(&out, &olen, &cap, "Connection: close\r\n\r\n", 21);
  *out_len = olen;
  return out;
}

int proto_proxy_request(struct http1_stream *s, const uint8_t *buf, size_t len, struct proxy_request *out,
                        const char **why) {
  memset(out, 0, sizeof(*out));
  struct http1_request rq;
  int r = http1_head(s, buf, len, &rq, why);
  if (r <= 0)
    return r;
  out->head_len = rq.head_len;
  snprintf(out->host, sizeof(out->host), "%s", rq.url_host);
  snprintf(out->http_host, sizeof(out->http_host), "%s", rq.host);
  out->port = rq.url_port;
  if (rq.connect) {
    out->connect = true;
    return 1;
  }
  if (!rq.absolute) {
    *why = "a proxy request needs an absolute http:// URL or CONNECT";
    return -1;
  }
  if (out->port == 0)
    out->port = 80;
  /* The URL and the Host header name one host: the decision is on the URL, the origin server
   * reads the Host (a request for an allowed URL must not reach another virtual host). */
  if (rq.has_host && (strcmp(rq.host, rq.url_host) != 0 || (rq.host_port ? rq.host_port : 80) != out->port)) {
    *why = "the Host header names another host than the URL";
    return -1;
  }
  /* origin-form: the path (with its query), "/" when the URL has none. */
  const char *rest = rq.target + rq.path_off;
  size_t rest_len = rq.target_len - rq.path_off;
  const char *head = (const char *)buf;
  const char *eol = memchr(head, '\r', rq.head_len);
  const char *ver = rq.target + rq.target_len + 1;
  char *line = NULL;
  if (asprintf(&line, "%s %s%.*s %.*s", rq.method, rest_len && *rest == '/' ? "" : "/", (int)rest_len, rest,
               (int)(eol - ver), ver) < 0)
    abort();
  char *extra = NULL;
  if (!rq.has_host && asprintf(&extra, "Host: %.*s\r\n", (int)(rq.path_off - 7), rq.target + 7) < 0)
    abort();
  out->rewritten = rebuild_head(line, strlen(line), head, rq.head_len, extra, &out->rewritten_len);
  free(line);
  free(extra);
  return 1;
}
