/* Opening an existing container for one operation. */
#include "runtime/container.h"

#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

void container_close(struct container *o) {
  if (o->dirfd >= 0)
    close(o->dirfd);
  if (o->cgroup)
    cgroup_free(o->cgroup);
  container_state_clear(&o->st);
  o->dirfd = -1;
  o->cgroup = NULL;
}

void container_unlock(struct container *o) {
  if (o->dirfd >= 0)
    flock(o->dirfd, LOCK_UN);
}

int container_open(const struct runtime_context *ctx, const char *id, enum state_dir_access access,
                   struct container *o, struct cm_error **err) {
  memset(o, 0, sizeof(*o));
  o->dirfd = state_dir_open(ctx->root, id, access, err);
  if (o->dirfd < 0)
    return -1;
  int r = state_read(o->dirfd, id, &o->st, err);
  if (r < 0) {
    container_close(o);
    return -1;
  }
  if (r == 1) {
    /* A state dir without state.json: a create that is still running, or one that was killed
     * before it finished (or a delete under way). A writer holds the lock, so no create is
     * running: this is the leftover of a killed create. A reader cannot tell, and says
     * "creating" either way; a directory removed meanwhile does not exist. */
    struct stat dst;
    if (access == STATE_DIR_READ && (fstat(o->dirfd, &dst) < 0 || dst.st_nlink == 0)) {
      container_close(o);
      return cm_error_set(err, 0, "container does not exist: \"%s\"", id);
    }
    o->status = STATUS_CREATING;
    /* What it made before it died (creating.json): the cgroup and stage1's or init's pid, so
     * `delete --force` can remove them. Unreadable or absent: nothing was made yet. */
    struct cm_error *ignored = NULL;
    if (state_read_creating(o->dirfd, id, &o->st, &ignored) != 0)
      memset(&o->st, 0, sizeof(o->st));
    cm_error_freep(&ignored);
    if (o->st.id == NULL)
      o->st.id = strdup(id);
  } else {
    o->status = state_status(o->dirfd, &o->st);
  }
  if (o->st.cgroup) {
    struct cm_error *ignored = NULL;
    o->cgroup = cgroup_deserialize(o->st.cgroup, &ignored);
    cm_error_freep(&ignored);
  }
  /* Paused wins over created as well as running (runc): a created container can be paused, and
   * `start` must not wait for an init that cannot run. */
  if ((o->status == STATUS_RUNNING || o->status == STATUS_CREATED) && o->cgroup) {
    struct cm_error *ignored = NULL;
    if (cgroup_is_frozen(o->cgroup, &ignored) == 1)
      o->status = STATUS_PAUSED;
    cm_error_freep(&ignored);
  }
  return 0;
}

