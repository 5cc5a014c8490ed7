/* One interface over cgroup v2, v1/hybrid and the systemd driver.
 * runtime/ creates a cgroup before the container's first process exists, places that process in
 * it, and reopens it from the saved state for pause/resume/update/ps/kill --all/delete. */
#ifndef CM_CGROUP_CGROUP_H
#define CM_CGROUP_CGROUP_H

#include <stdbool.h>
#include <sys/types.h>
#include "spec/spec.h"
#include "util/error.h"

enum cgroup_manager {
  CGROUP_MANAGER_CGROUPFS,
  CGROUP_MANAGER_SYSTEMD,
  CGROUP_MANAGER_DISABLED, /* crun's --cgroup-manager disabled: no cgroup at all */
};

struct cgroup;

/* Create (or reuse, when it already exists and is empty) the container's cgroup from
 * linux.cgroupsPath (absolute, relative or absent → a default under /codemode/<id>) and apply
 * linux.resources. Nothing is left behind on error. */
int cgroup_create(const char *id, const struct spec_linux *l, enum cgroup_manager mgr, struct cgroup **out,
                  struct cm_error **err);
/* Move pid (the container's first process) into the cgroup. */
int cgroup_enter(struct cgroup *cg, pid_t pid, struct cm_error **err);
/* A string to keep in the state file, and the way back from it. */
char *cgroup_serialize(const struct cgroup *cg);
struct cgroup *cgroup_deserialize(const char *saved, struct cm_error **err);
/* The path as the container sees it in /proc/self/cgroup (for the state and the docs). */
const char *cgroup_path(const struct cgroup *cg);

int cgroup_update(struct cgroup *cg, const struct spec_resources *r, struct cm_error **err);
int cgroup_freeze(struct cgroup *cg, bool frozen, struct cm_error **err);
/* 1 frozen, 0 not, -1 error. */
int cgroup_is_frozen(struct cgroup *cg, struct cm_error **err);
int cgroup_kill_all(struct cgroup *cg, int signo, struct cm_error **err);
int cgroup_pids(struct cgroup *cg, pid_t **pids, size_t *n, struct cm_error **err);
/* Kill what is left, wait, remove the cgroup(s) (retrying on EBUSY). */
int cgroup_destroy(struct cgroup *cg, struct cm_error **err);
void cgroup_free(struct cgroup *cg);

#endif
