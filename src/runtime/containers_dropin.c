/* The ci profile's word to the container tools of the job (podman, buildah: containers.conf(5)):
 * a drop-in, /etc/containers/containers.conf.d/zz-codemode-ci.conf, written by init into the
 * job's own root (its throw-away layer) after pivot_root. A drop-in, because it changes only the
 * keys it names: an image's own containers.conf and drop-ins stay as they are, and these keys,
 * read last ("zz-"), win. Debian 12's podman 4.3.1 reads /etc/containers/containers.conf.d; it
 * ignores CONTAINERS_CONF_OVERRIDE (podman 4.4), and CONTAINERS_CONF would replace the image's
 * whole configuration (both tried).
 *
 * The keys, each something only the runtime knows:
 *   cgroups         "enabled" when the job's cgroup was delegated to it (cgroup/delegate.c):
 *                   nested containers get cgroups of their own below the job's, with their own
 *                   limits; "disabled" otherwise (cgroup v1 or hybrid host, the systemd driver,
 *                   --cgroup-manager disabled, a rootless runtime): the job's cgroup is then the
 *                   host's, read-only to the job, and nested containers stay in it.
 *   cgroup_manager  "cgroupfs": no systemd runs in the job to ask for scopes.
 *   events_logger   "file": no journald socket in the job.
 * Written only where the image has /etc/containers (podman or buildah installed: Debian's
 * containers-common ships /etc/containers/policy.json), so a job without them gains no file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/container_init.h"
#include "util/cleanup.h"
#include "util/log.h"
#include "util/safepath.h"

#define DROPIN_DIR "containers.conf.d"
#define DROPIN_NAME "zz-codemode-ci.conf"

int containers_dropin_write(bool cgroups, struct cm_error **err) {
  cleanup_close int root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root_fd < 0)
    return cm_error_set(err, errno, "open /");
  cleanup_close int etc_fd = safepath_open(root_fd, "/etc/containers", O_PATH | O_DIRECTORY, NULL);
  if (etc_fd < 0) {
    cm_debug("ci: no /etc/containers in the job's root: no containers.conf drop-in");
    return 0;
  }
  if (mkdirat(etc_fd, DROPIN_DIR, 0755) < 0 && errno != EEXIST) {
    /* A read-only root (root.readonly, a read-only /etc/containers bind): the job's own
     * configuration is all podman gets; said, not fatal. */
    if (errno == EROFS || errno == EACCES || errno == EPERM) {
      cm_warn("ci: /etc/containers/" DROPIN_DIR ": %s: podman in the job gets no codemode drop-in", strerror(errno));
      return 0;
    }
    return cm_error_set(err, errno, "mkdir /etc/containers/" DROPIN_DIR);
  }
  cleanup_close int dir_fd = openat(etc_fd, DROPIN_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir_fd < 0)
    return cm_error_set(err, errno, "open /etc/containers/" DROPIN_DIR);
  char text[512];
  int len = snprintf(text, sizeof(text),
                     "# codemode --profile ci (containers.conf(5) drop-in): what this job can do; read after\n"
                     "# the image's own containers.conf, only these keys change.\n"
                     "[containers]\n"
                     "# %s\n"
                     "cgroups = \"%s\"\n\n"
                     "[engine]\n"
                     "cgroup_manager = \"cgroupfs\"\n"
                     "events_logger = \"file\"\n",
                     cgroups ? "the job's cgroup v2 subtree is delegated to it: nested containers get their own"
                             : "no delegated cgroup v2 subtree here: nested containers stay in the job's cgroup",
                     cgroups ? "enabled" : "disabled");
  cleanup_close int fd = openat(dir_fd, DROPIN_NAME, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0 || write(fd, text, (size_t)len) != len)
    return cm_error_set(err, errno, "write /etc/containers/" DROPIN_DIR "/" DROPIN_NAME);
  cm_debug("ci: /etc/containers/" DROPIN_DIR "/" DROPIN_NAME ": cgroups %s", cgroups ? "enabled" : "disabled");
  return 0;
}
