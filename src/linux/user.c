/* process.user: supplementary groups, gid, uid and umask, switched while keeping the capability
 * sets so caps.c can set exactly what the spec asks right after. */
#include "linux/user.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdbool.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/cleanup.h"

/* In a user namespace whose gid_map was written without privilege, /proc/self/setgroups says
 * "deny" and setgroups(2) fails with EPERM. A missing file (no /proc, old kernel) means allowed. */
static bool setgroups_denied(void) {
  cleanup_close int fd = open("/proc/self/setgroups", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  char buf[16] = {0};
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  return n > 0 && strncmp(buf, "deny", 4) == 0;
}

int user_switch(const struct spec_user *u, struct cm_error **err) {
  /* Without KEEPCAPS, setresuid to a non-zero uid would clear the permitted set before caps.c runs. */
  if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
    return cm_error_set(err, errno, "process.user: prctl(PR_SET_KEEPCAPS)");

  if (u->n_additional_gids > 0) {
    if (setgroups_denied())
      return cm_error_set(err, EPERM,
                          "process.user.additionalGids: cannot set %zu supplementary groups: setgroups is denied "
                          "in this user namespace",
                          u->n_additional_gids);
    if (setgroups(u->n_additional_gids, (const gid_t *)u->additional_gids) < 0)
      return cm_error_set(err, errno, "process.user.additionalGids: setgroups (%zu groups)", u->n_additional_gids);
  } else if (!setgroups_denied()) {
    /* Drop the groups inherited from the runtime's caller: they are host groups, not the container's. */
    if (setgroups(0, NULL) < 0)
      return cm_error_set(err, errno, "process.user: clear supplementary groups");
  }

  /* (uid_t)-1 would mean "unchanged": the process would keep our root (the spec layer refuses it
   * already; this keeps the guarantee whoever filled `u`). */
  if (u->uid == (uint32_t)-1 || u->gid == (uint32_t)-1)
    return cm_error_set(err, EINVAL, "process.user: 4294967295 is not a valid uid or gid");
  /* gid before uid: once the uid is not 0, changing the gid needs CAP_SETGID we may have lost. */
  if (setresgid(u->gid, u->gid, u->gid) < 0)
    return cm_error_set(err, errno, "process.user.gid: setresgid(%u)", u->gid);
  if (setresuid(u->uid, u->uid, u->uid) < 0)
    return cm_error_set(err, errno, "process.user.uid: setresuid(%u)", u->uid);

  umask(u->has_umask ? (mode_t)u->umask : 0022);
  return 0;
}
