/* The per-run audit log: one JSON object per line (JSON Lines), schema version 1, shared with the
 * egress broker (src/supervisor/broker/audit.c writes its connect/dns records in the same form):
 *
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

struct audit_record {
  const char *time; /* NULL: now */
  const char *event, *decision, *by;
  const char *syscall;
  int nr;     /* < 0: none */
  pid_t pid;  /* 0: none */
  const char *comm, *exe;
  int errnum; /* 0: none */
  const char *path, *access, *layer;
  const char *host;
  unsigned port;
  const char *rule, *reason, *allow_with;
  unsigned count; /* > 1: this many identical denials (a repeated one is written once a second) */
};
/* One line; a full disk loses the record (the container must not stop for it). */
void audit_log_write(int fd, const char *id, const struct audit_record *r);
/* "2026-12-01T10:00:00.123Z" for sec + ms. */
void audit_time_format(time_t sec, long ms, char buf[32]);

#endif
