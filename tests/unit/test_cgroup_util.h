/* Helpers shared by the cgroup unit tests: spec building, processes placed in a cgroup, file
 * checks. Every cgroup a test creates is named cm-test-<pid>-<n> and destroyed by the test. */
#ifndef CM_TEST_CGROUP_UTIL_H
#define CM_TEST_CGROUP_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
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

/* Children a failed assertion could leave behind; the teardown kills them. */
static pid_t tracked_children[16];
static size_t n_tracked_children;

/* A child sleeping until killed. */
static inline pid_t spawn_sleeper(void) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    for (;;)
      pause();
  }
  if (pid > 0 && n_tracked_children < 16)
    tracked_children[n_tracked_children++] = pid;
  return pid;
}

/* Wait (1 s at most) for /proc/PID/status to show state, e.g. 'S' after a thaw. */
static inline char wait_proc_state(pid_t pid, char want);

/* Remove dir and its sub-directories (cgroupfs: rmdir only). */
static inline void rmdir_tree(const char *dir) {
  DIR *d = opendir(dir);
  if (d == NULL)
    return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_type != DT_DIR || e->d_name[0] == '.')
      continue;
    char *child = NULL;
    if (asprintf(&child, "%s/%s", dir, e->d_name) < 0)
      abort();
    rmdir_tree(child);
    free(child);
  }
  closedir(d);
  rmdir(dir);
}

/* Teardown for every test: kill leftover children, remove every cm-test-<pid>-* cgroup in every
 * hierarchy under cgroup_root, so a failed assertion leaves nothing behind. */
static inline void cleanup_test_leftovers(const char *cgroup_root) {
  for (size_t i = 0; i < n_tracked_children; i++) {
    kill(tracked_children[i], SIGKILL);
    waitpid(tracked_children[i], NULL, WNOHANG);
  }
  n_tracked_children = 0;
  while (waitpid(-1, NULL, WNOHANG) > 0)
    ;
  char prefix[64];
  snprintf(prefix, sizeof(prefix), "cm-test-%d-", (int)getpid());
  char *roots[32];
  size_t n_roots = 0;
  roots[n_roots++] = strdup(cgroup_root);
  DIR *d = opendir(cgroup_root);
  struct dirent *e;
  while (d != NULL && (e = readdir(d)) != NULL && n_roots < 32) {
    if (e->d_type != DT_DIR || e->d_name[0] == '.')
      continue;
    char *sub = NULL;
    if (asprintf(&sub, "%s/%s", cgroup_root, e->d_name) < 0)
      abort();
    roots[n_roots++] = sub;
  }
  if (d != NULL)
    closedir(d);
  for (size_t i = 0; i < n_roots; i++) {
    for (int pass = 0; pass < 2; pass++) { /* also under /codemode */
      char *base = NULL;
      if (asprintf(&base, "%s%s", roots[i], pass ? "/codemode" : "") < 0)
        abort();
      DIR *h = opendir(base);
      while (h != NULL && (e = readdir(h)) != NULL) {
        if (e->d_type == DT_DIR && strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
          char *dir = NULL;
          if (asprintf(&dir, "%s/%s", base, e->d_name) < 0)
            abort();
          rmdir_tree(dir);
          free(dir);
        }
      }
      if (h != NULL)
        closedir(h);
      free(base);
    }
    free(roots[i]);
  }
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

static inline char wait_proc_state(pid_t pid, char want) {
  char st = '?';
  for (int i = 0; i < 100; i++) {
    st = proc_state(pid);
    if (st == want)
      break;
    usleep(10000);
  }
  return st;
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
