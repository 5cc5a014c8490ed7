/* An existing container, opened for one operation: its state dir opened (and locked, for a
 * writer: state.h's state_dir_access), its state read, its status derived and its cgroup
 * reopened. */
#ifndef CM_RUNTIME_CONTAINER_H
#define CM_RUNTIME_CONTAINER_H

#include "runtime/runtime.h"
#include "runtime/state.h"

struct container {
  int dirfd; /* locked while opened with STATE_DIR_WRITE, until container_unlock */
  struct container_state st;
  enum container_status status;
  struct cgroup *cgroup; /* NULL when created with --cgroup-manager disabled */
};

int container_open(const struct runtime_context *ctx, const char *id, enum state_dir_access access,
                   struct container *o, struct cm_error **err);
/* Give the lock up early, before a wait the container decides (its init's execve, an exec'd
 * process that a paused container holds): what the lock guarded is done by then. */
void container_unlock(struct container *o);
void container_close(struct container *o);
/* The processes in init's pid namespace (init alone when it shares ours), for a container
 * without a cgroup (rootless): ps and kill --all. */
int container_pidns_pids(pid_t init, pid_t **pids, size_t *n, struct cm_error **err);

#endif
