/* codemode-run's scratch space: one tmpfs in a mount namespace of codemode-run's own, made on
 * first use, holding what a run builds and throws away — the --ephemeral overlay's upper layer,
 * the --host root, the upper layers of :cow binds. The container's mount namespace is made from
 * ours and sees it; when codemode-run exits (even by SIGKILL) the namespace and every mount in it
 * go, and only the empty mount point directory is left, which the watcher removes. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "supervisor/supervisor.h"

const char *scratch_dir(struct cleanup_plan *plan, struct cm_error **err) {
  if (plan->ephemeral_dir[0])
    return plan->ephemeral_dir;
  if (unshare(CLONE_NEWNS) < 0) {
    if (errno == EPERM && geteuid() != 0)
      cm_error_set(err, errno,
                   "scratch space: a mount namespace of codemode-run's own needs root (uid %u here); rootless, "
                   "use a bundle of your own instead (README: Rootless)",
                   geteuid());
    else
      cm_error_set(err, errno, "scratch space: unshare mount namespace");
    return NULL;
  }
  /* Slave, not shared: nothing mounted here may propagate back to the host. */
  if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0) {
    cm_error_set(err, errno, "scratch space: make / rslave");
    return NULL;
  }
  snprintf(plan->ephemeral_dir, sizeof(plan->ephemeral_dir), "/tmp/codemode-run.XXXXXX");
  if (mkdtemp(plan->ephemeral_dir) == NULL) {
    plan->ephemeral_dir[0] = '\0';
    cm_error_set(err, errno, "scratch space: mkdtemp");
    return NULL;
  }
  plan_tell(plan, 'E', plan->ephemeral_dir);
  /* 256 MiB for all throwaway writes of the run (they are memory: the container's memory limit
   * does not cover this tmpfs, so it has its own). */
  if (mount("tmpfs", plan->ephemeral_dir, "tmpfs", MS_NOSUID | MS_NODEV, "size=256m,mode=0755") < 0) {
    cm_error_set(err, errno, "scratch space: mount tmpfs on %s", plan->ephemeral_dir);
    return NULL;
  }
  return plan->ephemeral_dir;
}

int scratch_layers(struct cleanup_plan *plan, const char *name, char *upper, char *work, size_t size,
                   struct cm_error **err) {
  const char *d = scratch_dir(plan, err);
  if (d == NULL)
    return -1;
  char base[4096];
  snprintf(base, sizeof(base), "%s/%s", d, name);
  snprintf(upper, size, "%s/upper", base);
  snprintf(work, size, "%s/work", base);
  if (mkdir(base, 0755) < 0 || mkdir(upper, 0755) < 0 || mkdir(work, 0755) < 0)
    return cm_error_set(err, errno, "scratch space: mkdir in %s", base);
  return 0;
}

int scratch_overlay_data(const char *lower, const char *upper, const char *work, char *data, size_t size,
                         struct cm_error **err) {
  /* Overlay option values cannot hold ',' or ':' unescaped; codemode-run's own paths never do,
   * and a lower directory that does is refused rather than misread. */
  for (const char *p = lower; *p; p++)
    if (*p == ',' || *p == ':' || *p == '\\')
      return cm_error_set(err, EINVAL, "%s: a path with ',' ':' or '\\' cannot be an overlay's lower layer", lower);
  snprintf(data, size, "lowerdir=%s,upperdir=%s,workdir=%s", lower, upper, work);
  return 0;
}

int scratch_overlay(struct cleanup_plan *plan, const char *name, const char *lower, char *merged, size_t size,
                    struct cm_error **err) {
  char upper[4200], work[4200], data[12800];
  if (scratch_layers(plan, name, upper, work, sizeof(upper), err) < 0 ||
      scratch_overlay_data(lower, upper, work, data, sizeof(data), err) < 0)
    return -1;
  snprintf(merged, size, "%s/%s/merged", plan->ephemeral_dir, name);
  if (mkdir(merged, 0755) < 0)
    return cm_error_set(err, errno, "scratch space: mkdir %s", merged);
  if (mount("overlay", merged, "overlay", 0, data) < 0)
    return cm_error_set(err, errno, "mount overlay (%s)", data);
  return 0;
}
