/* OCI hooks: each runs with the container state JSON on stdin, its own args and env, and an
 * optional timeout. The spec's failure rules: prestart, createRuntime, createContainer and
 * startContainer failures fail the operation (the first failing hook stops its phase);
 * poststart and poststop failures are logged and the remaining hooks still run
 * (hook_exec.keep_going).
 *
 * Where they run, as runc 1.1.5 runs them: the runtime-side ones (prestart, createRuntime,
 * poststart, poststop) in the bundle directory with the runtime's environment when they have no
 * `env`; createContainer in the rootfs directory with the process's environment; startContainer
 * in the process's cwd, with its environment, credentials, no_new_privs and seccomp filters: it
 * is exec'd through the same last steps as the process (hook_exec.exec). */
#ifndef CM_RUNTIME_HOOKS_H
#define CM_RUNTIME_HOOKS_H

#include <stdbool.h>

#include "spec/spec.h"
#include "util/error.h"

struct hook_exec {
  const char *cwd;          /* chdir here before exec (NULL: stay) */
  char *const *default_env; /* the environment of a hook without `env` (NULL: the runtime's) */
  /* Exec the hook instead of a plain execve; returns only on failure, with errno set. */
  void (*exec)(void *arg, const char *path, char *const argv[], char *const envp[]);
  void *exec_arg;
  bool keep_going; /* log a failure and run the rest (poststart, poststop) */
};

/* `how` may be NULL: stay in our cwd, the runtime's environment, plain execve, stop at a failure. */
int hooks_run(const struct spec_hook_list *hooks, enum spec_hook_kind kind, const char *state_json,
              const struct hook_exec *how, struct cm_error **err);

#endif
