/* The cleanup watcher of codemode-run: a process forked before anything exists that deletes the
 * container and removes codemode-run's temporary paths if codemode-run vanishes (SIGKILL, OOM)
 * without saying it cleaned up itself. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "runtime/state.h"
#include "supervisor/supervisor.h"
#include "util/cleanup.h"

struct plan_record {
  char kind; /* 'B' tmp_bundle, 'E' ephemeral_dir, 'D' done: we cleaned up ourselves */
  char path[PLAN_PATH_MAX];
};

void plan_tell(const struct cleanup_plan *plan, char kind, const char *path) {
  if (plan->watcher_fd < 0)
    return;
  struct plan_record rec = {.kind = kind};
  if (path)
    snprintf(rec.path, sizeof(rec.path), "%s", path);
  ssize_t n;
  do
    n = write(plan->watcher_fd, &rec, sizeof(rec));
  while (n < 0 && errno == EINTR);
}

void plan_remove_leftovers(const struct cleanup_plan *plan) {
  if (plan->tmp_bundle[0]) {
    char p[PATH_MAX + 16];
    snprintf(p, sizeof(p), "%s/rootfs", plan->tmp_bundle);
    unlink(p);
    snprintf(p, sizeof(p), "%s/config.json", plan->tmp_bundle);
    unlink(p);
    rmdir(plan->tmp_bundle);
  }
  /* The mounts died with our mount namespace; only the empty directory is on the host. */
  if (plan->ephemeral_dir[0] && !plan->ephemeral_kept)
    rmdir(plan->ephemeral_dir);
}

/* Reads records until EOF: 'D' means codemode-run cleaned up itself; EOF without it means it was
 * killed: delete the container (SIGKILL to its cgroup, state dir, cgroup) and remove the paths
 * it told us about. */
int watcher_start(const struct runtime_context *ctx, const char *id, pid_t *watcher) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0)
    return -1;
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid > 0) {
    close(p[0]);
    *watcher = pid;
    return p[1];
  }
  close(p[1]);
  /* Its own session: a kill of the caller's process group must not take the cleaner with it. */
  setsid();
  int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devnull >= 0) {
    /* The client waits for EOF on the server's stdout: never hold its pipes. */
    dup2(devnull, STDIN_FILENO);
    dup2(devnull, STDOUT_FILENO);
  }
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, NULL);
  struct cleanup_plan plan = {.watcher_fd = -1};
  for (;;) {
    struct plan_record rec;
    ssize_t n = read(p[0], &rec, sizeof(rec));
    if (n < 0 && errno == EINTR)
      continue;
    if (n != (ssize_t)sizeof(rec))
      break;
    rec.path[sizeof(rec.path) - 1] = '\0';
    if (rec.kind == 'D')
      _exit(0);
    if (rec.kind == 'B')
      memcpy(plan.tmp_bundle, rec.path, sizeof(rec.path));
    if (rec.kind == 'E')
      memcpy(plan.ephemeral_dir, rec.path, sizeof(rec.path));
  }
  struct cm_error *err = NULL;
  cleanup_free char *dir = state_dir_path(ctx->root, id);
  if (access(dir, F_OK) == 0 && runtime_delete(ctx, id, true, &err) < 0) {
    cm_error_freep(&err);
    /* Killed mid-create: init died with the sync socket; only the state dir is left. */
    state_dir_remove(ctx->root, id, &err);
    cm_error_freep(&err);
  }
  plan_remove_leftovers(&plan);
  _exit(0);
}
