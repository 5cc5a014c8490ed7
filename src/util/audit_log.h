/* The per-run audit log: one JSON object per line (JSON Lines), schema version 1, shared with the
 * egress broker (src/supervisor/broker/audit.c writes its connect/dns records in the same form):
 *
 *   {"v":1,"time":"2026-12-01T10:00:00.123Z","id":"…","event":"connect","decision":"allow",
 *    "via":"transparent","host":"api.example.com","port":443,"sni":"api.example.com",
 *    "addr":"203.0.113.10","rule":"allow-host api.example.com:443","bytes_up":517,
 *    "bytes_down":4242,"duration_ms":12.5}
 *   {"v":1,"time":"2026-12-01T10:00:00.123Z","id":"…","event":"syscall","decision":"deny",
 *    "syscall":"rename","nr":82,"pid":4242,"comm":"node","exe":"/usr/bin/node","errno":1,
 *    "by":"seccomp","rule":"learned policy: not in seccomp.syscalls","allow_with":"…"}
 *
 * Keys with nothing to say are left out; a reader ignores keys it does not know. Events written
 * here: "syscall" (a seccomp denial the kernel reported), "file" (an access a Landlock layer
 * denies), "audit" (what this log cannot contain, once per run). The broker's: "connect", "dns".
 * Each record is one write(2) on a file opened O_APPEND, so concurrent writers never interleave. */
#ifndef CM_UTIL_AUDIT_LOG_H
#define CM_UTIL_AUDIT_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include "util/error.h"

/* Append to path, refusing anything but a new file or one of our logs: never a symlink, a device,
 * a fifo, a file with other links, or a file that does not start with {"v":1, (the path may come
 * from a config). Returns the fd (O_APPEND, close-on-exec). */
int audit_log_open(const char *path, struct cm_error **err);

struct audit_log_record {
  const char *time; /* NULL: now */
  const char *event, *decision, *by;
  /* the broker's (connect, dns) */
  const char *via, *host;
  unsigned port; /* 0: none */
  const char *sni, *http_host, *addr, *qtype, *answers;
  /* a denied call (syscall, file) */
  const char *syscall;
  int nr;    /* < 0 or no syscall: none */
  pid_t pid; /* 0: none */
  const char *comm, *exe;
  int errnum; /* 0: none */
  const char *path, *access, *layer;
  const char *rule, *reason, *allow_with;
  bool intercepted;
  const char *secret;
  bool with_bytes; /* bytes_up/bytes_down (each >= 0) are said */
  long long bytes_up, bytes_down;
  bool with_duration;
  double duration_ms;
  unsigned count; /* > 1: this many identical events */
};
/* One line; a full disk loses the record (the container must not stop for it). */
void audit_log_write(int fd, const char *id, const struct audit_log_record *r);
/* "2026-12-01T10:00:00.123Z" for sec + ms. */
void audit_time_format(time_t sec, long ms, char buf[32]);

#endif
