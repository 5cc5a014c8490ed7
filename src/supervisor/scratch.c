/* codemode-run's scratch space: one tmpfs in a mount namespace of codemode-run's own, made on
 * first use, holding what a run builds and throws away — the --ephemeral overlay's upper layer,
 * the --host root, the upper layers of :cow binds. The container's mount namespace is made from
 * ours and sees it; when codemode-run exits (even by SIGKILL) the namespace and every mount in it
 * go, and only the empty mount point directory is left, which the watcher removes. Run by a user,
 * codemode-run first enters a user namespace of its own, the one place it may mount (below). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/userns_setup.h"
#include "supervisor/supervisor.h"
#include "util/host_root.h"
#include "util/log.h"

/* Not the host's root: a user namespace of our own first, in which we may mount a tmpfs and an
 * overlay (Linux 5.11). It maps what the rootless runtime would give the container: our uid and
 * gid as 0, and the first /etc/subuid and /etc/subgid ranges as 1… through newuidmap/newgidmap.
 * The container's user namespace then nests in ours with every id mapped to itself
 * (runtime/userns_setup.c), so it has the ids it would have had without ours, and the runtime
 * acts as rootless in it (util/host_root.h): the user's state directory, cgroups and image store.
 * Our maps are written from outside by a child forked before the unshare: only a process in the
 * parent namespace may write them, and newuidmap checks it is asked for ours. */
static int enter_own_userns(struct cm_error **err) {
  struct spec_linux l = {0};
  struct userns_plan p = {0};
  int rc = -1;
  if (userns_apparmor_check(err) < 0 || userns_setup_rootless_maps(&l, err) < 0)
    goto out;
  userns_setup_rootless_plan(&l, &p);
  uid_t uid = geteuid();
  if (!p.helpers) {
    /* Only our own uid and gid (no /etc/subuid ranges): the kernel lets us write those maps
     * from inside the new namespace, as `unshare -r` does; no writer to fork (issue 27). */
    int was_dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    if (unshare(CLONE_NEWUSER) < 0) {
      cm_error_set(err, errno,
                   "a user namespace for the scratch mounts (uid %u): unshare(CLONE_NEWUSER) was refused; "
                   "unprivileged user namespaces must be allowed (sysctl kernel.unprivileged_userns_clone=1, "
                   "user.max_user_namespaces > 0), or run a bundle of your own without --ephemeral/--image/--host/:cow",
                   uid);
      prctl(PR_SET_DUMPABLE, was_dumpable, 0, 0, 0);
      goto out;
    }
    int mapped = userns_write_maps(getpid(), &l, &p, err);
    prctl(PR_SET_DUMPABLE, was_dumpable, 0, 0, 0);
    if (mapped < 0) {
      cm_error_prefix(err, "map uid %u into the scratch user namespace", uid);
      goto out;
    }
    goto mapped;
  }
  int go[2], report[2];
  if (pipe2(go, O_CLOEXEC) < 0) {
    cm_error_set(err, errno, "pipe");
    goto out;
  }
  if (pipe2(report, O_CLOEXEC) < 0) {
    cm_error_set(err, errno, "pipe");
    close(go[0]);
    close(go[1]);
    goto out;
  }
  pid_t self = getpid();
  pid_t child = fork();
  if (child < 0) {
    cm_error_set(err, errno, "fork");
    close(go[0]), close(go[1]), close(report[0]), close(report[1]);
    goto out;
  }
  if (child == 0) {
    close(go[1]);
    close(report[0]);
    char c;
    struct cm_error *e = NULL;
    if (read(go[0], &c, 1) != 1)
      _exit(1); /* the unshare failed: nothing to map */
    if (userns_write_maps(self, &l, &p, &e) < 0) {
      char *msg = cm_error_format(e);
      if (write(report[1], msg, strlen(msg)) < 0)
        _exit(2);
      _exit(1);
    }
    _exit(0);
  }
  close(go[0]);
  close(report[1]);
  /* Our /proc files are the writer's only while we are dumpable (nothing else of ours runs). */
  int was_dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
  prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
  int unshared = unshare(CLONE_NEWUSER);
  int unshare_errno = errno;
  if (unshared == 0 && write(go[1], "m", 1) != 1)
    unshared = -1, unshare_errno = errno;
  close(go[1]);
  char msg[1024];
  ssize_t n = read(report[0], msg, sizeof(msg) - 1);
  msg[n > 0 ? n : 0] = '\0';
  close(report[0]);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR)
    ;
  prctl(PR_SET_DUMPABLE, was_dumpable, 0, 0, 0);
  if (unshared < 0) {
    cm_error_set(err, unshare_errno,
                 "a user namespace for the scratch mounts (uid %u): unshare(CLONE_NEWUSER) was refused; "
                 "unprivileged user namespaces must be allowed (sysctl kernel.unprivileged_userns_clone=1, "
                 "user.max_user_namespaces > 0), or run a bundle of your own without --ephemeral/--image/--host/:cow",
                 uid);
    goto out;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    cm_error_set(err, 0, "map uid %u into the scratch user namespace: %s", uid, msg[0] ? msg : "the mapper failed");
    goto out;
  }
mapped:
  cm_host_root_forget();
  cm_debug("scratch space: own user namespace, uid %u as 0 (%zu uid ranges)", uid, l.n_uid_mappings);
  rc = 0;
out:
  free(l.uid_mappings);
  free(l.gid_mappings);
  return rc;
}

/* The tmpfs's mount point: one directory per user, kept. Each run mounts its own tmpfs on it in
 * its own mount namespace, so runs share it without seeing each other's; made once, never
 * removed (a removal would detach the other runs' tmpfs, which the kernel does for a mount point
 * removed in another namespace). A directory made and removed per run cost ~0.3 ms of
 * codemode-run's start on an ext4 /tmp (its inode allocation scans the recently freed ones:
 * issue 27). Ours only if it is: a directory, not a symlink, owned by us, mode 0700 (/tmp is
 * everyone's: another user may have made it first); otherwise "" and a fresh mkdtemp. */
static int shared_mount_point(uid_t host_uid, char *out, size_t size) {
  snprintf(out, size, "/tmp/codemode-run-scratch.%u", (unsigned)host_uid);
  if (mkdir(out, 0700) < 0 && errno != EEXIST)
    return -1;
  int fd = open(out, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  if (fd >= 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
      (st.st_mode & 07777) == 0700) {
    /* Fresh for /tmp cleaners that remove what is old (systemd-tmpfiles' age): removed, it
     * would take the running servers' scratch mounts with it. */
    utimensat(AT_FDCWD, out, NULL, AT_SYMLINK_NOFOLLOW);
    return fd;
  }
  if (fd >= 0)
    close(fd);
  cm_debug("scratch space: %s is not a directory of ours with mode 0700: a fresh one instead", out);
  return -1;
}

const char *scratch_dir(struct cleanup_plan *plan, struct cm_error **err) {
  if (plan->ephemeral_dir[0])
    return plan->ephemeral_dir;
  uid_t host_uid = geteuid(); /* before our user namespace maps us to 0 */
  if (!cm_host_root() && geteuid() != 0) {
    if (enter_own_userns(err) < 0) {
      cm_error_prefix(err, "scratch space");
      return NULL;
    }
    plan->own_userns = true;
  }
  if (unshare(CLONE_NEWNS) < 0) {
    cm_error_set(err, errno, "scratch space: unshare mount namespace");
    return NULL;
  }
  /* Slave, not shared: nothing mounted here may propagate back to the host. */
  if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0) {
    cm_error_set(err, errno, "scratch space: make / rslave");
    return NULL;
  }
  char at[64];
  int point = shared_mount_point(host_uid, plan->ephemeral_dir, sizeof(plan->ephemeral_dir));
  if (point >= 0) {
    /* Mounted on the directory we checked, not on whatever the path names by now. */
    snprintf(at, sizeof(at), "/proc/self/fd/%d", point);
    plan->ephemeral_kept = true;
  } else {
    snprintf(plan->ephemeral_dir, sizeof(plan->ephemeral_dir), "/tmp/codemode-run.XXXXXX");
    if (mkdtemp(plan->ephemeral_dir) == NULL) {
      plan->ephemeral_dir[0] = '\0';
      cm_error_set(err, errno, "scratch space: mkdtemp");
      return NULL;
    }
    plan_tell(plan, 'E', plan->ephemeral_dir);
    snprintf(at, sizeof(at), "%s", "");
  }
  /* 256 MiB for all throwaway writes of the run (they are memory: the container's memory limit
   * does not cover this tmpfs, so it has its own). */
  int mounted = mount("tmpfs", at[0] ? at : plan->ephemeral_dir, "tmpfs", MS_NOSUID | MS_NODEV, "size=256m,mode=0755");
  if (point >= 0)
    close(point);
  if (mounted < 0) {
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
  /* In a user namespace overlayfs keeps its whiteouts and opaque marks in user.overlay.* xattrs
   * (userxattr): the trusted.* ones need the host's CAP_SYS_ADMIN. */
  snprintf(data, size, "lowerdir=%s,upperdir=%s,workdir=%s%s", lower, upper, work,
           cm_host_root() ? "" : ",userxattr");
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

void scratch_nest_userns(struct spec *s, const struct cleanup_plan *plan) {
  struct spec_namespace *ns = &s->linux_.namespaces[SPEC_NS_USER];
  if (!plan->own_userns || ns->present)
    return;
  /* Not ours shared with the container: its root would hold our namespace's capabilities over
   * our scratch mounts and, without a pid namespace, over us. */
  ns->present = true;
  s->linux_.userns_auto = true;
  s->has_linux = true;
}
