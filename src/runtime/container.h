/* An existing container, opened for one operation: its state dir locked (flock), its state
 * read, its status derived and its cgroup reopened. */
#ifndef CM_RUNTIME_CONTAINER_H
#define CM_RUNTIME_CONTAINER_H

#include "runtime/runtime.h"
#include "runtime/state.h"

struct container {
  int dirfd; /* locked */
  struct container_state st;
  enum container_status status;
  struct cgroup *cgroup; /* NULL when created with --cgroup-manager disabled */
};

int container_open(const struct runtime_context *ctx, const char *id, struct container *o, struct cm_error **err);
void container_close(struct container *o);

#endif
