/* The audit log: one JSON object per line for every decision the broker makes, schema version 1
 * (man/codemode-profiles.5, AUDIT LOG):
 *
 *   {"v":1,"time":"2026-12-01T10:00:00.123Z","id":"…","event":"connect","decision":"allow",
 *    "via":"transparent","host":"api.example.com","port":443,"sni":"api.example.com",
 *    "addr":"203.0.113.10","rule":"allow-host api.example.com:443","bytes_up":517,
 *    "bytes_down":4242,"duration_ms":12.5}
 *
 * Keys with nothing to say are left out. An allowed connection is recorded when it ends (its
 * byte counts and duration are known then), a refused one at once, a DNS question when answered.
 * Each record is one write(2) on a file opened O_APPEND, so records never interleave, also with
 * the interceptor's threads. */
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "supervisor/broker/broker.h"

struct out {
  char buf[4096];
  size_t len;
};

static void put(struct out *o, const char *s) {
  size_t n = strlen(s);
  if (o->len + n < sizeof(o->buf) - 2) {
    memcpy(o->buf + o->len, s, n);
    o->len += n;
  }
}

/* A JSON string: quotes, backslashes and control bytes escaped; whatever the container sent
 * (a Host header, an SNI) cannot break the line. */
static void put_str(struct out *o, const char *key, const char *v) {
  if (v == NULL || *v == '\0')
    return;
  char tmp[8];
  put(o, ",\"");
  put(o, key);
  put(o, "\":\"");
  for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
    if (*p == '"' || *p == '\\') {
      tmp[0] = '\\';
      tmp[1] = (char)*p;
      tmp[2] = '\0';
    } else if (*p < 0x20 || *p == 0x7f) {
      snprintf(tmp, sizeof(tmp), "\\u%04x", *p);
    } else {
      tmp[0] = (char)*p;
      tmp[1] = '\0';
    }
    put(o, tmp);
  }
  put(o, "\"");
}

static void put_num(struct out *o, const char *key, const char *fmt, double v) {
  char tmp[96];
  snprintf(tmp, sizeof(tmp), ",\"%s\":", key);
  put(o, tmp);
  snprintf(tmp, sizeof(tmp), fmt, v);
  put(o, tmp);
}

void audit_write(struct broker *b, const struct audit_record *r) {
  if (b->audit_fd < 0)
    return;
  struct out o = {.len = 0};
  struct timeval tv;
  gettimeofday(&tv, NULL);
  struct tm tm;
  gmtime_r(&tv.tv_sec, &tm);
  char ts[64];
  snprintf(ts, sizeof(ts), "{\"v\":1,\"time\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03dZ\"", tm.tm_year + 1900,
           tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(tv.tv_usec / 1000));
  put(&o, ts);
  put_str(&o, "id", b->id);
  put_str(&o, "event", r->event);
  put_str(&o, "decision", r->decision);
  put_str(&o, "via", r->via);
  put_str(&o, "host", r->host);
  if (r->port)
    put_num(&o, "port", "%.0f", r->port);
  put_str(&o, "sni", r->sni);
  put_str(&o, "http_host", r->http_host);
  put_str(&o, "addr", r->addr);
  put_str(&o, "qtype", r->qtype);
  put_str(&o, "answers", r->answers);
  put_str(&o, "rule", r->rule);
  put_str(&o, "reason", r->reason);
  if (r->intercepted)
    put(&o, ",\"intercepted\":true");
  put_str(&o, "secret", r->secret);
  if (r->bytes_up >= 0)
    put_num(&o, "bytes_up", "%.0f", (double)r->bytes_up);
  if (r->bytes_down >= 0)
    put_num(&o, "bytes_down", "%.0f", (double)r->bytes_down);
  if (r->duration_ms >= 0)
    put_num(&o, "duration_ms", "%.1f", r->duration_ms);
  o.buf[o.len++] = '}';
  o.buf[o.len++] = '\n';
  ssize_t n = write(b->audit_fd, o.buf, o.len);
  (void)n; /* a full disk must not stop the container's traffic; the record is lost */
}
