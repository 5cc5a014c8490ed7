/* The few bytes of each protocol the broker must understand to decide: the SNI of a TLS
 * ClientHello, the Host of a plain HTTP request, an HTTP proxy request's target, and the one
 * header a secret goes into. Each parser reads only what it was given and never past it. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor/broker/broker.h"

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

static const uint8_t *find_head_end(const uint8_t *buf, size_t len) {
  for (size_t i = 0; i + 3 < len; i++)
    if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' && buf[i + 3] == '\n')
      return buf + i + 4;
  return NULL;
}

/* Does the buffer start like an HTTP/1 request line ("GET ", "POST ", …)? 1 yes, 0 can't tell
 * yet, -1 no. */
static int looks_like_request(const uint8_t *buf, size_t len) {
  for (size_t i = 0; i < len && i < 16; i++) {
    if (buf[i] == ' ')
      return i > 0 ? 1 : -1;
    if (buf[i] < 'A' || buf[i] > 'Z')
      return -1;
  }
  return len < 16 ? 0 : -1;
}

/* host[:port] or [v6]:port → lower-case host (brackets removed) and port (0 if none). */
static int split_authority(const char *a, size_t alen, char *host, size_t host_len, uint16_t *port) {
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
    colon = memrchr(a, ':', alen);
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

/* The value of header `name` in a head (first match), or NULL; *vlen its length. */
static const char *header_value(const char *head, size_t len, const char *name, size_t *vlen) {
  size_t nlen = strlen(name);
  const char *p = memchr(head, '\n', len);
  const char *end = head + len;
  while (p && p + 1 < end) {
    const char *line = p + 1;
    const char *eol = memchr(line, '\n', (size_t)(end - line));
    if (eol == NULL)
      break;
    size_t ll = (size_t)(eol - line);
    if (ll && line[ll - 1] == '\r')
      ll--;
    if (ll > nlen && line[nlen] == ':' && strncasecmp(line, name, nlen) == 0) {
      const char *v = line + nlen + 1;
      const char *ve = line + ll;
      while (v < ve && (*v == ' ' || *v == '\t'))
        v++;
      while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
        ve--;
      *vlen = (size_t)(ve - v);
      return v;
    }
    p = eol;
  }
  return NULL;
}

int proto_http_host(const uint8_t *buf, size_t len, char *host, size_t host_len) {
  host[0] = '\0';
  int r = looks_like_request(buf, len);
  if (r <= 0)
    return r;
  const uint8_t *end = find_head_end(buf, len);
  if (end == NULL)
    return len >= BROKER_HEAD_MAX ? -1 : 0;
  size_t vlen;
  const char *v = header_value((const char *)buf, (size_t)(end - buf), "Host", &vlen);
  uint16_t port;
  if (v && split_authority(v, vlen, host, host_len, &port) < 0)
    return -1;
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

/* The head with its header lines filtered/rewritten: hop-by-hop headers dropped, `extra` lines
 * added, and for `sub_header` every `placeholder` in its value replaced by `value`. */
static char *rebuild_head(const char *first_line, size_t first_len, const char *head, size_t len,
                          const char *sub_header, const char *placeholder, const char *value, const char *extra,
                          size_t *out_len, int *substituted) {
  char *out = NULL;
  size_t olen = 0, cap = 0;
  append(&out, &olen, &cap, first_line, first_len);
  append(&out, &olen, &cap, "\r\n", 2);
  const char *end = head + len;
  const char *p = memchr(head, '\n', len);
  size_t hlen = sub_header ? strlen(sub_header) : 0;
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
    if (sub_header && ll > hlen && line[hlen] == ':' && strncasecmp(line, sub_header, hlen) == 0) {
      size_t plen = strlen(placeholder);
      const char *q = line, *qe = line + ll;
      while (q < qe) {
        const char *hit = plen ? memmem(q, (size_t)(qe - q), placeholder, plen) : NULL;
        if (hit == NULL) {
          append(&out, &olen, &cap, q, (size_t)(qe - q));
          break;
        }
        append(&out, &olen, &cap, q, (size_t)(hit - q));
        append(&out, &olen, &cap, value, strlen(value));
        (*substituted)++;
        q = hit + plen;
      }
      append(&out, &olen, &cap, "\r\n", 2);
      continue;
    }
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

int proto_proxy_request(const uint8_t *buf, size_t len, struct proxy_request *out, const char **why) {
  memset(out, 0, sizeof(*out));
  int r = looks_like_request(buf, len);
  if (r < 0) {
    *why = "not an HTTP request";
    return -1;
  }
  if (r == 0)
    return 0;
  const uint8_t *hend = find_head_end(buf, len);
  if (hend == NULL) {
    if (len >= BROKER_HEAD_MAX) {
      *why = "request head too large";
      return -1;
    }
    return 0;
  }
  const char *head = (const char *)buf;
  size_t head_len = (size_t)(hend - buf);
  out->head_len = head_len;
  const char *eol = memchr(head, '\r', head_len);
  const char *sp1 = memchr(head, ' ', head_len);
  const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
  if (eol == NULL || sp1 == NULL || sp2 == NULL || sp2 > eol || strncmp(sp2 + 1, "HTTP/1.", 7) != 0) {
    *why = "malformed request line";
    return -1;
  }
  size_t mlen = (size_t)(sp1 - head);
  const char *target = sp1 + 1;
  size_t tlen = (size_t)(sp2 - target);
  if (mlen == 7 && strncmp(head, "CONNECT", 7) == 0) {
    out->connect = true;
    if (split_authority(target, tlen, out->host, sizeof(out->host), &out->port) < 0 || out->port == 0) {
      *why = "CONNECT needs host:port";
      return -1;
    }
    return 1;
  }
  if (tlen < 8 || strncasecmp(target, "http://", 7) != 0) {
    *why = tlen >= 8 && strncasecmp(target, "https://", 8) == 0
               ? "https:// URLs go through CONNECT"
               : "a proxy request needs an absolute http:// URL or CONNECT";
    return -1;
  }
  const char *auth = target + 7;
  const char *path = memchr(auth, '/', (size_t)(target + tlen - auth));
  const char *auth_end = path ? path : target + tlen;
  const char *q = memchr(auth, '?', (size_t)(auth_end - auth));
  if (q)
    auth_end = q; /* "http://host?x" */
  if (memchr(auth, '@', (size_t)(auth_end - auth))) {
    *why = "credentials in the URL";
    return -1;
  }
  if (split_authority(auth, (size_t)(auth_end - auth), out->host, sizeof(out->host), &out->port) < 0) {
    *why = "bad host in the URL";
    return -1;
  }
  if (out->port == 0)
    out->port = 80;
  /* origin-form: the path (with its query), "/" when the URL has none. */
  char *line = NULL;
  const char *rest = auth_end;
  size_t rest_len = (size_t)(target + tlen - rest);
  if (asprintf(&line, "%.*s %s%.*s %.*s", (int)mlen, head, rest_len && *rest == '/' ? "" : "/", (int)rest_len,
               rest, (int)(eol - sp2 - 1), sp2 + 1) < 0)
    abort();
  size_t vlen;
  char *extra = NULL;
  if (header_value(head, head_len, "Host", &vlen) == NULL &&
      asprintf(&extra, "Host: %.*s\r\n", (int)(auth_end - auth), auth) < 0)
    abort();
  int subs = 0;
  out->rewritten = rebuild_head(line, strlen(line), head, head_len, NULL, NULL, NULL, extra, &out->rewritten_len, &subs);
  free(line);
  free(extra);
  return 1;
}

char *proto_substitute_header(const char *head, size_t len, const char *header, const char *placeholder,
                              const char *value, size_t *out_len, int *substituted) {
  const char *eol = memchr(head, '\r', len);
  if (eol == NULL)
    return NULL;
  return rebuild_head(head, (size_t)(eol - head), head, len, header, placeholder, value, NULL, out_len, substituted);
}
