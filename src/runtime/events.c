/* `events`: statistics and OOM notifications from the container's cgroup. */
#include "runtime/events.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <time.h>

#include "runtime/container.h"
#include "util/log.h"

struct watched {
  struct cgroup *cgroup;
  pid_t pid;
  uint64_t start_time;
};

/* Open the container just long enough to take its cgroup: `events` runs for as long as the
 * container does and must not hold the state dir lock that kill and delete need. */
static int take_cgroup(const struct runtime_context *ctx, const char *id, struct watched *w, struct cm_error **err) {
  struct container c;
  if (container_open(ctx, id, STATE_DIR_READ, &c, err) < 0)
    return -1;
  int rc = 0;
  if (c.status != STATUS_CREATED && c.status != STATUS_RUNNING && c.status != STATUS_PAUSED)
    rc = cm_error_set(err, 0, "container not running");
  else if (c.cgroup == NULL)
    rc = cm_error_set(err, 0, "container \"%s\" has no cgroup (created with --cgroup-manager disabled)", id);
  else {
    w->cgroup = c.cgroup;
    c.cgroup = NULL;
    w->pid = c.st.pid;
    w->start_time = c.st.pid_start_time;
  }
  container_close(&c);
  return rc;
}

int runtime_stats(const struct runtime_context *ctx, const char *id, struct cgroup_stats *out,
                  struct cm_error **err) {
  struct watched w = {0};
  if (take_cgroup(ctx, id, &w, err) < 0)
    return -1;
  int rc = cgroup_stats(w.cgroup, out, err);
  cgroup_free(w.cgroup);
  return rc;
}

static long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static int emit_ooms(const struct runtime_events_handler *h, int n) {
  for (int i = 0; i < n; i++)
    if (h->on_oom && h->on_oom(h->data) < 0)
      return -1;
  return 0;
}

int runtime_events(const struct runtime_context *ctx, const char *id, long interval_ms,
                   const struct runtime_events_handler *h, struct cm_error **err) {
  struct watched w = {0};
  if (take_cgroup(ctx, id, &w, err) < 0)
    return -1;
  struct cgroup_oom_watch *oom = NULL;
  struct cm_error *werr = NULL;
  /* Without a memory controller there are no OOM events to report; stats still work. */
  if (cgroup_oom_watch_open(w.cgroup, &oom, &werr) < 0) {
    cm_warn("%s", werr->msg);
    cm_error_freep(&werr);
  }
  int rc = 0;
  long next_stats = interval_ms > 0 ? now_ms() + interval_ms : -1;
  for (;;) {
    /* Wake at least every second to notice a stopped container (v1 has no "populated" event). */
    long timeout = 1000;
    if (next_stats >= 0) {
      long until = next_stats - now_ms();
      timeout = until < 0 ? 0 : until < timeout ? until : timeout;
    }
    struct pollfd p = {.fd = oom ? cgroup_oom_watch_fd(oom) : -1, .events = POLLIN};
    if (poll(&p, 1, (int)timeout) < 0 && errno != EINTR) {
      rc = cm_error_set(err, errno, "events: poll");
      break;
    }
    bool gone = false;
    if (oom != NULL) {
      int n = cgroup_oom_watch_read(oom, &gone, err);
      if (n < 0) {
        rc = -1;
        break;
      }
      if (emit_ooms(h, n) < 0) {
        rc = cm_error_set(err, errno, "events: write an event");
        break;
      }
    }
    if (gone || !state_pid_alive(w.pid, w.start_time))
      break;
    if (next_stats >= 0 && now_ms() >= next_stats) {
      struct cgroup_stats s;
      if (cgroup_stats(w.cgroup, &s, err) < 0) {
        rc = -1;
        break;
      }
      int r = h->on_stats ? h->on_stats(&s, h->data) : 0;
      cgroup_stats_free(&s);
      if (r < 0) {
        rc = cm_error_set(err, errno, "events: write an event");
        break;
      }
      next_stats = now_ms() + interval_ms;
    }
  }
  cgroup_oom_watch_free(oom);
  cgroup_free(w.cgroup);
  return rc;
}
