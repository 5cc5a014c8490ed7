/* Helpers shared by the cgroup unit tests: spec building, processes placed in a cgroup, file
 * checks. Every cgroup a test creates is named cm-test-<pid>-<n> and destroyed by the test. */
#ifndef CM_TEST_CGROUP_UTIL_H
#define CM_TEST_CGROUP_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "spec/spec.h"
#include "util/error.h"

static int test_counter;

/* "/cm-test-<pid>-<n>" (static buffer per call site is enough: callers copy). */
static inline char *test_cgroup_name(void) {
  char *name = NULL;
  if (asprintf(&name, "/cm-test-%d-%d", (int)getpid(), ++test_counter) < 0)
    abort();
  return name;
}

static inline char *read_text(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline char *read_text(const char *fmt, ...) {
  char *path = NULL;
  va_list ap;
  va_start(ap, fmt);
  if (vasprintf(&path, fmt, ap) < 0)
    abort();
  va_end(ap);
  FILE *f = fopen(path, "re");
  free(path);
  if (f == NULL)
    return NULL;
  char *buf = calloc(1, 65536);
  size_t n = fread(buf, 1, 65535, f);
  fclose(f);
  buf[n] = '\0';
  return buf;
}

static inline bool path_exists(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline bool path_exists(const char *fmt, ...) {
  char *path = NULL;
  va_list ap;
  va_start(ap, fmt);
  if (vasprintf(&path, fmt, ap) < 0)
    abort();
  va_end(ap);
  bool r = access(path, F_OK) == 0;
  free(path);
  return r;
}

/* A child that waits until the parent has placed it in the cgroup, then runs fn and exits with
 * its result. Returns the exit status (128 + signal when killed). */
static inline int run_in_cgroup(struct cgroup *cg, int (*fn)(void *), void *arg) {
  int go[2];
  if (pipe2(go, O_CLOEXEC) < 0)
    return -1;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    close(go[1]);
    char c;
    if (read(go[0], &c, 1) != 1)
      _exit(99);
    _exit(fn(arg));
  }
  close(go[0]);
  struct cm_error *err = NULL;
  int entered = cgroup_enter(cg, pid, &err);
  if (entered < 0) {
    fprintf(stderr, "cgroup_enter: %s\n", err->msg);
    cm_error_free(err);
    kill(pid, SIGKILL);
  } else if (write(go[1], "x", 1) != 1) {
    kill(pid, SIGKILL);
  }
  close(go[1]);
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  if (entered < 0)
    return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* A child sleeping until killed. */
static inline pid_t spawn_sleeper(void) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    for (;;)
      pause();
  }
  return pid;
}

/* The "State:" letter of /proc/PID/status. */
static inline char proc_state(pid_t pid) {
  char *status = read_text("/proc/%d/status", (int)pid);
  if (status == NULL)
    return '?';
  char *s = strstr(status, "State:");
  char c = '?';
  if (s != NULL) {
    s += 6;
    while (*s == ' ' || *s == '\t')
      s++;
    c = *s;
  }
  free(status);
  return c;
}

/* Open path read-only: 0 on success, else errno. */
static int open_read(void *path) {
  int fd = open((const char *)path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return errno;
  close(fd);
  return 0;
}

#define ASSERT_OK(call_with_err) \
  do { \
    struct cm_error *err = NULL; \
    int r_ = (call_with_err); \
    if (r_ < 0) \
      fail_msg("%s failed: %s (%s)", #call_with_err, err && err->msg ? err->msg : "?", \
               err ? strerror(err->errnum) : "?"); \
    cm_error_free(err); \
  } while (0)

#define ASSERT_FAILS_WITH(call_with_err, needle) \
  do { \
    struct cm_error *err = NULL; \
    int r_ = (call_with_err); \
    if (r_ >= 0 || err == NULL || strstr(err->msg, (needle)) == NULL) \
      fail_msg("%s: expected an error containing \"%s\", got %d \"%s\"", #call_with_err, (needle), r_, \
               err && err->msg ? err->msg : "(none)"); \
    cm_error_free(err); \
  } while (0)

static inline struct spec_device_rule dev_rule(bool allow, char type, int64_t major, int64_t minor,
                                               const char *access) {
  struct spec_device_rule r = {.allow = allow, .type = type, .major = major, .minor = minor};
  snprintf(r.access, sizeof(r.access), "%s", access);
  return r;
}

#endif
