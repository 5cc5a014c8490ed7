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

static char *const empty_env[] = {NULL};

static int hook_run_one(const struct spec_hook *h, const char *kind_name, size_t index, const char *state_json,
                        struct cm_error **err) {
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
    char *const *envp = h->env.count ? h->env.items : empty_env;
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
              struct cm_error **err) {
  const struct spec_hook_list *list = &hooks[kind];
  for (size_t i = 0; i < list->count; i++) {
    if (hook_run_one(&list->items[i], spec_hook_kind_name(kind), i, state_json, err) < 0)
      return -1;
  }
  return 0;
}
