/* A container's cgroup v2 subtree given to the container's own root, the way systemd delegates
 * (Delegate=yes) and as the kernel's cgroup-v2 "Delegation" section describes: the ci profile's
 * nested podman and buildah then make cgroups of their own, with limits of their own, inside
 * the job's, which they can neither raise nor leave.
 *
 * What the container's root (a host uid of its own range, never host root) gets, and why each
 * is safe:
 *   the directory          it may mkdir sub-cgroups and rmdir the empty ones it made. Every
 *                          sub-cgroup is charged to this one: the limits written here bound all
 *                          of them (a child's limit can only be lower in effect). How many and
 *                          how deep is capped by cgroup.max.descendants and cgroup.max.depth
 *                          here, which stay host root's.
 *   cgroup.procs           it may move its own processes between this cgroup and those below.
 *                          A move needs write access to cgroup.procs of the common ancestor of
 *                          source and destination, and the job's cgroup namespace is rooted
 *                          here: nothing above (nor a sibling job) is a destination it can name
 *                          or write, and the host's processes are not in its pid namespace.
 *   cgroup.threads         the same for threads (threaded sub-cgroups of its own).
 *   cgroup.subtree_control which of the controllers this cgroup has its children get. It cannot
 *                          add a controller the parent does not give (the kernel offers only
 *                          cgroup.controllers, which host root's parent decides), and taking
 *                          one away from its children lifts no limit of this cgroup's.
 * Never its own limit files (memory.max, memory.swap.max, pids.max, cpu.max, io.max, …,
 * cgroup.max.*, cgroup.freeze, cgroup.kill, cgroup.type): host root's, at an id the job's user
 * namespace does not map, so even its CAP_DAC_OVERRIDE does not reach them; it cannot raise
 * what the runtime set, freeze itself out of a `kill`, or change the tree's type. Under an
 * nsdelegate mount the kernel refuses those writes from inside the namespace anyway.
 *
 * The container's first process is placed here and creates the cgroup namespace, which is then
 * rooted here (the job sees this cgroup as /); it then moves itself into the leaf below
 * (CGROUP_DELEGATE_LEAF): "no internal processes" — a cgroup that hands controllers to its
 * children holds no process of its own. Then, and only then, the runtime hands every controller
 * down (cgroup_delegate_controllers). Every later process (exec, the egress broker) joins the
 * leaf too. The leaf is made for the job and is wholly its own, as a cgroup it had made itself. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup/internal.h"
#include "util/cleanup.h"
#include "util/log.h"

/* Deep enough for a nested runtime's tree (libpod_parent/libpod-ID/… and a container's own
 * nested one); few enough that the job cannot fill the kernel with cgroups. */
#define DELEGATE_MAX_DEPTH "16"
#define DELEGATE_MAX_DESCENDANTS "1024"

static const char *const delegated_files[] = {"cgroup.procs", "cgroup.threads", "cgroup.subtree_control"};

static int chown_at(int dirfd, const char *dir, const char *name, uid_t uid, gid_t gid, struct cm_error **err) {
  if (fchownat(dirfd, name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
    return cm_error_set(err, errno, "cgroup delegation: chown %u:%u %s/%s", (unsigned)uid, (unsigned)gid, dir, name);
  return 0;
}

/* The leaf and every file in it. */
static int chown_leaf(const char *leaf, uid_t uid, gid_t gid, struct cm_error **err) {
  int fd = open(leaf, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return cm_error_set(err, errno, "cgroup delegation: open %s", leaf);
  DIR *d = fdopendir(fd);
  if (d == NULL) {
    close(fd);
    return cm_error_set(err, errno, "cgroup delegation: read %s", leaf);
  }
  int rc = fchown(fd, uid, gid) < 0 ? cm_error_set(err, errno, "cgroup delegation: chown %s", leaf) : 0;
  struct dirent *e;
  while (rc == 0 && (e = readdir(d)) != NULL)
    if (e->d_type == DT_REG)
      rc = chown_at(fd, leaf, e->d_name, uid, gid, err);
  closedir(d);
  return rc;
}

int cgroup_delegate(struct cgroup *cg, uid_t uid, gid_t gid, struct cm_error **err) {
  if (cg->mode != CGROUP_MODE_UNIFIED || cg->systemd_unit != NULL || cg->v2_dir == NULL)
    return 0;
  if (cg_write(cg->v2_dir, "cgroup.max.depth", DELEGATE_MAX_DEPTH, NULL, err) < 0 ||
      cg_write(cg->v2_dir, "cgroup.max.descendants", DELEGATE_MAX_DESCENDANTS, NULL, err) < 0)
    return cm_error_prefix(err, "cgroup delegation");
  cleanup_free char *leaf = NULL;
  if (asprintf(&leaf, "%s/%s", cg->v2_dir, CGROUP_DELEGATE_LEAF) < 0)
    abort();
  if (mkdir(leaf, 0755) < 0 && errno != EEXIST)
    return cm_error_set(err, errno, "cgroup delegation: mkdir %s", leaf);
  if (chown_leaf(leaf, uid, gid, err) < 0)
    return -1;
  cleanup_close int fd = open(cg->v2_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return cm_error_set(err, errno, "cgroup delegation: open %s", cg->v2_dir);
  for (size_t i = 0; i < sizeof(delegated_files) / sizeof(delegated_files[0]); i++)
    if (chown_at(fd, cg->v2_dir, delegated_files[i], uid, gid, err) < 0)
      return -1;
  if (fchown(fd, uid, gid) < 0)
    return cm_error_set(err, errno, "cgroup delegation: chown %s", cg->v2_dir);
  cg->delegated = true;
  cm_debug("cgroup: %s delegated to %u:%u, processes in %s", cg->v2_dir, (unsigned)uid, (unsigned)gid, leaf);
  return 1;
}

int cgroup_delegate_controllers(struct cgroup *cg, struct cm_error **err) {
  if (!cg->delegated)
    return 0;
  /* Not before: a cgroup whose subtree_control names a domain controller takes no process,
   * not even through CLONE_INTO_CGROUP, and the first process had to be born here. */
  if (cg_v2_enable_subtree(cg->v2_dir, err) < 0)
    return cm_error_prefix(err, "cgroup delegation");
  return 0;
}

bool cgroup_is_delegated(const struct cgroup *cg) {
  return cg->delegated;
}

int cgroup_open_leaf_procs(const struct cgroup *cg, struct cm_error **err) {
  cleanup_free char *path = NULL;
  if (asprintf(&path, "%s/%s/cgroup.procs", cg->v2_dir, CGROUP_DELEGATE_LEAF) < 0)
    abort();
  int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return cm_error_set(err, errno, "cgroup delegation: open %s", path);
  return fd;
}

int cgroup_enter_leaf_self(int procs_fd, struct cm_error **err) {
  int rc = write(procs_fd, "0", 1) == 1 ? 0 : cm_error_set(err, errno, "cgroup: move into the delegated cgroup's leaf");
  close(procs_fd);
  return rc;
}

int cgroup_open_leaf(const struct cgroup *cg, struct cgroup **out, struct cm_error **err) {
  char *const spec[] = {(char *)CGROUP_DELEGATE_LEAF};
  return cgroup_open_sub(cg, spec, 1, out, err);
}
