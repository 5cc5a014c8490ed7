/* pause, resume, ps and update: operations on a running container's cgroup. Each opens the
 * container (locked, but for ps: state.h) and checks the status first, with runc's wording. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/container.h"
#include "runtime/runtime.h"
#include "util/cleanup.h"
#include "util/host_root.h"

static int no_cgroup_error(const char *id, const char *what, struct cm_error **err) {
  if (!cm_host_root())
    return cm_error_set(err, 0,
                        "container \"%s\" has no cgroup, which %s needs: run as uid %u, it gets one in a systemd "
                        "user session or under a cgroup v2 subtree delegated to that uid",
                        id, what, cm_host_uid());
  return cm_error_set(err, 0, "container \"%s\" has no cgroup (created with --cgroup-manager disabled)", id);
}

static int open_with_cgroup(const struct runtime_context *ctx, const char *id, enum state_dir_access access,
                            const char *what, struct container *c, struct cm_error **err) {
  if (container_open(ctx, id, access, c, err) < 0)
    return -1;
  if (c->cgroup == NULL && c->status != STATUS_STOPPED && c->status != STATUS_CREATING) {
    container_close(c);
    return no_cgroup_error(id, what, err);
  }
  return 0;
}

int container_pidns_pids(pid_t init, pid_t **pids, size_t *n, struct cm_error **err) {
  *pids = NULL;
  *n = 0;
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)init);
  struct stat want, self;
  if (stat(path, &want) < 0)
    return cm_error_set(err, errno, "stat %s", path);
  /* A container in our own pid namespace: there is no telling its processes from ours. */
  if (stat("/proc/self/ns/pid", &self) == 0 && self.st_ino == want.st_ino && self.st_dev == want.st_dev) {
    *pids = malloc(sizeof(pid_t));
    if (*pids == NULL)
      abort();
    (*pids)[(*n)++] = init;
    return 0;
  }
  DIR *d = opendir("/proc");
  if (d == NULL)
    return cm_error_set(err, errno, "open /proc");
  size_t cap = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    char *end;
    long pid = strtol(e->d_name, &end, 10);
    if (*end || pid <= 0)
      continue;
    snprintf(path, sizeof(path), "/proc/%ld/ns/pid", pid);
    struct stat st;
    if (stat(path, &st) < 0 || st.st_ino != want.st_ino || st.st_dev != want.st_dev)
      continue;
    if (*n == cap) {
      cap = cap ? cap * 2 : 16;
      pid_t *grown = realloc(*pids, cap * sizeof(pid_t));
      if (grown == NULL)
        abort();
      *pids = grown;
    }
    (*pids)[(*n)++] = (pid_t)pid;
  }
  closedir(d);
  return 0;
}

static bool is_alive(enum container_status s) {
  return s == STATUS_CREATED || s == STATUS_RUNNING || s == STATUS_PAUSED;
}

int runtime_pause(const struct runtime_context *ctx, const char *id, struct cm_error **err) {
  struct container c;
  if (open_with_cgroup(ctx, id, STATE_DIR_WRITE, "pause (the cgroup freezer)", &c, err) < 0)
    return -1;
  int rc;
  if (c.status == STATUS_PAUSED)
    rc = cm_error_set(err, 0, "container already paused");
  else if (c.status != STATUS_RUNNING && c.status != STATUS_CREATED)
    rc = cm_error_set(err, 0, "container not running");
  else
    rc = cgroup_freeze(c.cgroup, true, err);
  container_close(&c);
  return rc;
}

int runtime_resume(const struct runtime_context *ctx, const char *id, struct cm_error **err) {
  struct container c;
  if (open_with_cgroup(ctx, id, STATE_DIR_WRITE, "resume (the cgroup freezer)", &c, err) < 0)
    return -1;
  int rc;
  if (c.status != STATUS_PAUSED)
    rc = cm_error_set(err, 0, "container not paused");
  else
    rc = cgroup_freeze(c.cgroup, false, err);
  container_close(&c);
  return rc;
}

int runtime_pids(const struct runtime_context *ctx, const char *id, pid_t **pids, size_t *n, struct cm_error **err) {
  *pids = NULL;
  *n = 0;
  struct container c;
  if (container_open(ctx, id, STATE_DIR_READ, &c, err) < 0)
    return -1;
  int rc = 0;
  /* Without a cgroup (rootless, --cgroup-manager disabled): the members of its pid namespace. */
  if (is_alive(c.status) && c.cgroup == NULL) {
    rc = container_pidns_pids(c.st.pid, pids, n, err);
  } else if (is_alive(c.status)) {
    rc = cgroup_pids(c.cgroup, pids, n, err);
  } else if (c.status == STATUS_STOPPED) {
    /* A stopped container has no processes, except what outlived init in its cgroup (no pid
     * namespace): those, or none (`ps` prints the header alone, as runc). */
    struct cm_error *ignored = NULL;
    if (c.cgroup && cgroup_pids(c.cgroup, pids, n, &ignored) < 0) {
      free(*pids);
      *pids = NULL;
      *n = 0;
    }
    cm_error_freep(&ignored);
  } else {
    rc = cm_error_set(err, 0, "container not running");
  }
  container_close(&c);
  return rc;
}

int runtime_update(const struct runtime_context *ctx, const char *id, struct spec_resources *r,
                   runtime_update_harden harden, void *harden_arg, struct cm_error **err) {
  struct container c;
  if (open_with_cgroup(ctx, id, STATE_DIR_WRITE, "update (its limits)", &c, err) < 0)
    return -1;
  /* The profile the container was created under (recorded in its state) bounds every update. */
  const char *recorded = spec_kv_get(&c.st.annotations, "run.codemode.profile");
  int rc;
  if (!is_alive(c.status))
    rc = cm_error_set(err, 0, "container not running");
  else if (recorded && harden == NULL)
    rc = cm_error_set(err, EPERM, "container \"%s\" runs under profile %s: update refused without it", id,
                      recorded);
  else if (harden && harden(harden_arg, recorded, r, err) < 0)
    rc = -1;
  else
    rc = cgroup_update(c.cgroup, r, err);
  container_close(&c);
  return rc;
}
