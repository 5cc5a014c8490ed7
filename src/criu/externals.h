/* What CRIU must be told is not the container's own, on both sides (runc's rules, and
 * codemode's own mounts): each has a key in the image, named at dump, mapped back at restore.
 *   mnt[DEST]            a bind mount of the config (.mounts[] of type bind or option bind/rbind):
 *                        at restore the config's source, so a restore on another bundle binds
 *                        what its config says
 *   mnt[codemode-dev:N]  a host device node bound in (linux/devices.c does that in a user
 *                        namespace, where mknod is refused): the host's /dev/N again
 *   mnt[codemode-cgroup:P]  the container's own cgroup directory bound at P (linux/
 *                        mount_cgroup.c, without a cgroup namespace): the new cgroup's
 *   net[INODE]           a network namespace joined by path (.linux.namespaces[].path): at
 *                        restore the namespace the restoring config names, passed as an fd */
#ifndef CM_CRIU_EXTERNALS_H
#define CM_CRIU_EXTERNALS_H

#include <stdbool.h>
#include <sys/types.h>
#include "spec/spec.h"
#include "util/error.h"

struct criu_externals {
  char **ext; /* "mnt[…]:…" strings for criu_opts.external */
  size_t n;
  int netns_fd; /* restore: the namespace to inherit as "extRootNetNS", or -1 */
};

#define CRIU_EXT_NETNS_KEY "extRootNetNS"

/* Dump side: from the config and init's mountinfo (pid). */
int criu_externals_for_dump(const struct spec *s, pid_t pid, struct criu_externals *out, struct cm_error **err);
/* Restore side: from the restoring config (bundle: for relative sources) and the new cgroup
 * (cgroup_path: cgroup/cgroup.h's, NULL without one). */
int criu_externals_for_restore(const struct spec *s, const char *bundle, const char *cgroup_path,
                               struct criu_externals *out, struct cm_error **err);
/* Init's stdio at the dump (names[fd], "" when neither): "pipe:[N]" for a pipe, and for a file
 * outside the container (made external here) CRIU's "file[MNT:INODE]"; a restore gives its own
 * fd of the same number in their place (runc's descriptors.json, and CRIU's external files). */
#define CRIU_STDIO_NAME_MAX 64
int criu_externals_stdio(pid_t pid, struct criu_externals *e, char names[3][CRIU_STDIO_NAME_MAX]);
void criu_externals_free(struct criu_externals *e);

#endif
