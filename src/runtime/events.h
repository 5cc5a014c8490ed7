/* `events`: a container's cgroup statistics and OOM notifications. */
#ifndef CM_RUNTIME_EVENTS_H
#define CM_RUNTIME_EVENTS_H

#include "cgroup/cgroup.h"
#include "runtime/runtime.h"

/* One snapshot of the container's cgroup counters; free with cgroup_stats_free. */
int runtime_stats(const struct runtime_context *ctx, const char *id, struct cgroup_stats *out, struct cm_error **err);

struct runtime_events_handler {
  /* Return -1 to stop (e.g. stdout closed). */
  int (*on_stats)(const struct cgroup_stats *s, void *data);
  int (*on_oom)(void *data);
  void *data;
};
/* Until the container stops (or its cgroup goes away): on_oom for each OOM kill as it happens,
 * on_stats every interval_ms (0: never). Holds no lock meanwhile. */
int runtime_events(const struct runtime_context *ctx, const char *id, long interval_ms,
                   const struct runtime_events_handler *h, struct cm_error **err);

#endif
