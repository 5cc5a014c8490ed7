#include "runtime/hooks.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/log.h"

extern char **environ;

static int hook_run_one(const struct spec_hook *h, const char *kind_name, size_t index, const char *state_json,
                        const struct hook_exec *how, struct cm_error **err) {
  int in[2];
  if (pipe2(in, O_CLOEXEC) < 0)
    return cm_error_set(err, errno, "%s hook %zu: pipe", kind_name, index);
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(in[0]);
    close(in[1]);
    return cm_error_set(err, e, "%s hook %zu: fork", kind_name, index);
  }
  if (pid == 0) {
    /* The hook gets the state on stdin and nothing else of ours. */
    dup2(in[0], STDIN_FILENO);
    close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    char *const argv0[] = {h->path, NULL};
    char *const *argv = h->args.count ? h->args.items : argv0;
    /* Without `env`, the runtime's environment (runc and crun), or the process's for the hooks
     * that run in the container (runc). */
    char *const *envp = h->env.count ? h->env.items : how && how->default_env ? how->default_env : environ;
    if (how && how->cwd && chdir(how->cwd) < 0) {
      dprintf(STDERR_FILENO, "codemode: %s hook %zu: chdir %s: %s\n", kind_name, index, how->cwd, strerror(errno));
      _exit(127);
    }
    if (how && how->exec)
      how->exec(how->exec_arg, h->path, argv, envp);
    else
      execve(h->path, argv, envp);
    dprintf(STDERR_FILENO, "codemode: %s hook %zu: exec %s: %s\n", kind_name, index, h->path, strerror(errno));
    _exit(127);
  }
  close(in[0]);
  /* A hook that does not read its stdin must not block us: ignore EPIPE. */
  signal(SIGPIPE, SIG_IGN);
  size_t len = strlen(state_json), off = 0;
  while (off < len) {
    ssize_t n = write(in[1], state_json + off, len - off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    off += (size_t)n;
  }
  close(in[1]);

  int status = 0;
  if (h->has_timeout) {
    cleanup_close int pidfd = pidfd_open(pid, 0);
    struct pollfd pfd = {.fd = pidfd, .events = POLLIN};
    int r;
    do
      r = poll(&pfd, 1, h->timeout * 1000);
    while (r < 0 && errno == EINTR);
    if (r == 0) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return cm_error_set(err, ETIMEDOUT, "%s hook %zu (%s): timed out after %d s", kind_name, index, h->path,
                          h->timeout);
    }
  }
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR)
      return cm_error_set(err, errno, "%s hook %zu: wait", kind_name, index);
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return 0;
  if (WIFSIGNALED(status))
    return cm_error_set(err, 0, "%s hook %zu (%s): killed by signal %d", kind_name, index, h->path,
                        WTERMSIG(status));
  return cm_error_set(err, 0, "%s hook %zu (%s): exit status %d", kind_name, index, h->path,
                      WEXITSTATUS(status));
}

int hooks_run(const struct spec_hook_list *hooks, enum spec_hook_kind kind, const char *state_json,
              const struct hook_exec *how, struct cm_error **err) {
  const struct spec_hook_list *list = &hooks[kind];
  for (size_t i = 0; i < list->count; i++) {
    struct cm_error *one = NULL;
    cm_debug("hooks.%s[%zu]: run %s", spec_hook_kind_name(kind), i, list->items[i].path);
    if (hook_run_one(&list->items[i], spec_hook_kind_name(kind), i, state_json, how, &one) == 0) {
      cm_debug("hooks.%s[%zu]: done", spec_hook_kind_name(kind), i);
      continue;
    }
    if (!how || !how->keep_going) {
      *err = one;
      return -1;
    }
    /* The spec: the runtime MUST log a warning, and the remaining hooks and the lifecycle go on. */
    cleanup_free char *msg = cm_error_format(one);
    cm_warn("%s", msg);
    cm_error_free(one);
  }
  return 0;
}
