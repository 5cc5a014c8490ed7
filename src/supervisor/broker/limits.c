/* The bounds of one container's broker (issue 25), so that a container flooding its broker
 * (hundreds of connections that stall after their ClientHello) exhausts only its own share:
 *   connections  at most BROKER_MAX_CONNS_PER_CONTAINER (256) at once, relayed and intercepted
 *                together (the intercepted at most 64 of them, intercept.c); one more is
 *                reset at accept, with an audit record
 *   buffers      64 KiB each way per connection, and a 16 KiB request head (an intercepted
 *                one under 128 KiB each way): about 50 MiB for a container at its limits,
 *                TLS state included
 *   threads      one: every connection, intercepted ones too, is on the event loop
 *   deadlines    10 s for a proxy request head or a SOCKS handshake, 300 s without a byte
 *                either way on a relayed connection (conn.c); intercepted (intercept.c): 10 s
 *                for the two TLS handshakes, 10 s for each request head, 120 s idle
 * The broker's process is in the container's cgroup (runtime/create.c), so its memory and
 * its pids count against the container's limits. */
#include <stdio.h>

#include "supervisor/broker/broker.h"

static size_t live(struct broker *b) {
  return b->n_conns + (b->tls && b->tls_ops ? b->tls_ops->count(b) : 0);
}

bool limits_admit(struct broker *b, const char *via) {
  if (live(b) < BROKER_MAX_CONNS_PER_CONTAINER)
    return true;
  char reason[96];
  snprintf(reason, sizeof(reason), "too many connections (at most %d at once)", BROKER_MAX_CONNS_PER_CONTAINER);
  struct audit_record r = {.event = "connect", .decision = "deny", .via = via, .reason = reason,
                           .bytes_up = -1, .bytes_down = -1, .duration_ms = -1};
  audit_write(b, &r);
  return false;
}

double limits_next_deadline(struct broker *b, double next) {
  if (b->tls && b->tls_ops) {
    double t = b->tls_ops->next_deadline(b);
    if (t > 0 && (next == 0 || t < next))
      next = t;
  }
  return next;
}

void limits_check_deadlines(struct broker *b, double now) {
  if (b->tls && b->tls_ops)
    b->tls_ops->check_deadlines(b, now);
}
