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
 * the interceptor's threads and codemode-run's own records of the same run: the writer is the one
 * of util/audit_log.h, shared with codemode-run's audit (syscall and file denials). */
#include "supervisor/broker/broker.h"
#include "util/audit_log.h"

void audit_write(struct broker *b, const struct audit_record *r) {
  struct audit_log_record w = {.event = r->event,
                               .decision = r->decision,
                               .via = r->via,
                               .host = r->host,
                               .port = r->port,
                               .sni = r->sni,
                               .http_host = r->http_host,
                               .addr = r->addr,
                               .qtype = r->qtype,
                               .answers = r->answers,
                               .nr = -1,
                               .rule = r->rule,
                               .reason = r->reason,
                               .intercepted = r->intercepted,
                               .secret = r->secret,
                               .with_bytes = true,
                               .bytes_up = r->bytes_up,
                               .bytes_down = r->bytes_down,
                               .with_duration = true,
                               .duration_ms = r->duration_ms};
  audit_log_write(b->audit_fd, b->id, &w);
}
