/* Helpers for tests of linux/: each check that changes process state (namespaces, ids, limits)
 * runs in a forked child so the test runner stays untouched. Inside a child, never use cmocka's
 * assert_* (they would longjmp into the runner's copy): use CHILD_CHECK and return/exit non-zero. */
#ifndef CM_TEST_LINUX_CHILD_H
#define CM_TEST_LINUX_CHILD_H

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/error.h"

/* Where CHILD_CHECK reports: a child that replaces its stdio (console tests) points this at a dup. */
static int child_report_fd = 2;

#define CHILD_CHECK(cond) \
  do { \
    if (!(cond)) { \
      dprintf(child_report_fd, "%s:%d: check failed: %s (errno: %s)\n", __FILE__, __LINE__, #cond, \
              strerror(errno)); \
      _exit(1); \
    } \
  } while (0)

/* Call a codemode function taking `struct cm_error **` and require success. */
#define CHILD_OK(call_with_err) \
  do { \
    struct cm_error *err = NULL; \
    if ((call_with_err) < 0) { \
      dprintf(child_report_fd, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, #call_with_err, \
              err && err->msg ? err->msg : "?", err ? strerror(err->errnum) : "?"); \
      _exit(1); \
    } \
    cm_error_free(err); \
  } while (0)

/* Require failure with a message containing `needle`. */
#define CHILD_FAILS_WITH(call_with_err, needle) \
  do { \
    struct cm_error *err = NULL; \
    int r_ = (call_with_err); \
    if (r_ >= 0 || !err || !strstr(err->msg, (needle))) { \
      dprintf(child_report_fd, "%s:%d: %s: expected an error containing \"%s\", got %d \"%s\"\n", __FILE__, \
              __LINE__, #call_with_err, (needle), r_, err && err->msg ? err->msg : "(none)"); \
      _exit(1); \
    } \
    cm_error_free(err); \
  } while (0)

/* Fork, run fn(arg) in the child, exit with its return value; returns the child's exit status,
 * or 128 + signal. */
static inline int run_in_child(int (*fn)(void *), void *arg) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0)
    _exit(fn(arg));
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return -1;
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

#endif
