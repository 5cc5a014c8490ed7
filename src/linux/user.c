/* process.user: supplementary groups, gid, uid and umask, switched while keeping the capability
 * sets so caps.c can set exactly what the spec asks right after. */
#include "linux/user.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
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

/* runc gives the process user its stdio (fixStdioPermissions), so that a non-root program can
 * reopen /dev/stdout or use its terminal: the console pty, and the anonymous pipes and sockets
 * a shim passes. Only those: runc would also chown a host file or a named fifo passed as stdio,
 * and the host is never touched. The uid only, as runc; a failure is no error (runc skips
 * EINVAL, EPERM, EROFS). */
static void emit_stdio_chown(struct last_steps *ls, const struct spec_user *u) {
  struct stat null_st;
  bool have_null = stat("/dev/null", &null_st) == 0;
  for (int fd = 0; fd <= 2; fd++) {
    struct stat st;
    if (fstat(fd, &st) < 0 || st.st_uid == u->uid || (have_null && S_ISCHR(st.st_mode) && st.st_rdev == null_st.st_rdev))
      continue;
    struct statfs sfs;
    if (fstatfs(fd, &sfs) < 0)
      continue;
    bool pty = S_ISCHR(st.st_mode) && sfs.f_type == DEVPTS_SUPER_MAGIC;
    bool pipe = S_ISFIFO(st.st_mode) && sfs.f_type == PIPEFS_MAGIC;
    bool sock = S_ISSOCK(st.st_mode) && sfs.f_type == SOCKFS_MAGIC;
    if (!pty && !pipe && !sock)
      continue;
    last_steps_syscall(ls, SYS_fchown, 0, (uint64_t[6]){(uint64_t)fd, u->uid, (uint64_t)(uint32_t)-1},
                       "process.user: chown stdio fd %d", fd)
        ->flags |= LS_IGNORE_FAILURE;
  }
}

int user_emit_switch(struct last_steps *ls, const struct spec_user *u, struct cm_error **err) {
  emit_stdio_chown(ls, u);
  /* Without KEEPCAPS, setresuid to a non-zero uid would clear the permitted set before caps.c runs. */
  last_steps_syscall(ls, SYS_prctl, 0, (uint64_t[6]){PR_SET_KEEPCAPS, 1}, "process.user: prctl(PR_SET_KEEPCAPS)");

  bool denied = setgroups_denied();
  if (u->n_additional_gids > 0) {
    if (denied)
      return cm_error_set(err, EPERM,
                          "process.user.additionalGids: cannot set %zu supplementary groups: setgroups is denied "
                          "in this user namespace",
                          u->n_additional_gids);
    /* The raw syscall takes the kernel's 32-bit gid_t, as spec_user stores them. */
    uint32_t off = last_steps_data(ls, u->additional_gids, u->n_additional_gids * sizeof(uint32_t));
    last_steps_syscall(ls, SYS_setgroups, LS_ARG_DATA(1), (uint64_t[6]){u->n_additional_gids, off},
                       "process.user.additionalGids: setgroups (%zu groups)", u->n_additional_gids);
  } else if (!denied) {
    /* Drop the groups inherited from the runtime's caller: they are host groups, not the container's. */
    last_steps_syscall(ls, SYS_setgroups, 0, (uint64_t[6]){0, 0}, "process.user: clear supplementary groups");
  }

  /* (uid_t)-1 would mean "unchanged": the process would keep our root (the spec layer refuses it
   * already; this keeps the guarantee whoever filled `u`). */
  if (u->uid == (uint32_t)-1 || u->gid == (uint32_t)-1)
    return cm_error_set(err, EINVAL, "process.user: 4294967295 is not a valid uid or gid");
  /* gid before uid: once the uid is not 0, changing the gid needs CAP_SETGID we may have lost. */
  last_steps_syscall(ls, SYS_setresgid, 0, (uint64_t[6]){u->gid, u->gid, u->gid}, "process.user.gid: setresgid(%u)",
                     u->gid);
  last_steps_syscall(ls, SYS_setresuid, 0, (uint64_t[6]){u->uid, u->uid, u->uid}, "process.user.uid: setresuid(%u)",
                     u->uid);
  last_steps_syscall(ls, SYS_umask, 0, (uint64_t[6]){u->has_umask ? u->umask : 0022}, "process.user.umask");
  return 0;
}
