/* linux/namespaces.c: join by path with a type check, id maps, time offsets, UTS names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <sched.h>
#include <time.h>

#include "linux/namespaces.h"
#include "test_linux_child.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

static void expect_error(int r, struct cm_error *err, const char *needle) {
  assert_int_equal(r, -1);
  assert_non_null(err);
  if (!strstr(err->msg, needle))
    fail_msg("error \"%s\" does not contain \"%s\"", err->msg, needle);
  cm_error_free(err);
}

static void test_join_rejects_wrong_type(void **state) {
  struct cm_error *err = NULL;
  int r = ns_join(SPEC_NS_UTS, "/proc/self/ns/net", &err);
  assert_non_null(err);
  assert_non_null(strstr(err->msg, "/proc/self/ns/net"));
  expect_error(r, err, "is a network namespace, not a uts namespace");
}

static void test_join_rejects_plain_file(void **state) {
  char path[] = "/tmp/cm-ns-test-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  struct cm_error *err = NULL;
  int r = ns_join(SPEC_NS_NETWORK, path, &err);
  unlink(path);
  expect_error(r, err, "is not a namespace file");
}

static void test_join_missing_path(void **state) {
  struct cm_error *err = NULL;
  int r = ns_join(SPEC_NS_IPC, "/nonexistent/ns/ipc", &err);
  assert_int_equal(err ? err->errnum : 0, ENOENT);
  expect_error(r, err, "/nonexistent/ns/ipc");
}

/* A holder child unshares UTS and names it; a second child joins it by path. */
static int join_uts_child(void *arg) {
  const char *path = arg;
  CHILD_OK(ns_join(SPEC_NS_UTS, path, &err));
  char name[128] = {0};
  CHILD_CHECK(gethostname(name, sizeof(name)) == 0);
  CHILD_CHECK(strcmp(name, "cm-joined") == 0);
  CHILD_CHECK(getdomainname(name, sizeof(name)) == 0);
  CHILD_CHECK(strcmp(name, "cm-domain") == 0);
  return 0;
}

static void test_join_and_uts_names(void **state) {
  int ready[2], hold[2];
  assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
  assert_int_equal(pipe2(hold, O_CLOEXEC), 0);
  fflush(NULL);
  pid_t holder = fork();
  assert_true(holder >= 0);
  if (holder == 0) {
    close(ready[0]);
    close(hold[1]);
    CHILD_CHECK(unshare(CLONE_NEWUTS) == 0);
    CHILD_OK(ns_set_uts_names("cm-joined", "cm-domain", &err));
    CHILD_CHECK(write(ready[1], "r", 1) == 1);
    char c;
    read(hold[0], &c, 1); /* until the parent closes its end */
    _exit(0);
  }
  close(ready[1]);
  close(hold[0]);
  char c;
  assert_int_equal(read(ready[0], &c, 1), 1);
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/ns/uts", (int)holder);
  int rc = run_in_child(join_uts_child, path);
  close(hold[1]);
  close(ready[0]);
  int status;
  assert_int_equal(waitpid(holder, &status, 0), holder);
  assert_int_equal(rc, 0);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static int read_file(const char *path, char *buf, size_t size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t n = read(fd, buf, size - 1);
  close(fd);
  if (n < 0)
    return -1;
  buf[n] = '\0';
  return 0;
}

/* Squeeze runs of spaces: /proc/PID/uid_map pads its columns. */
static void squeeze(char *s) {
  char *out = s;
  for (char *in = s; *in; in++) {
    if (*in == ' ' && (out == s || out[-1] == ' ' || out[-1] == '\n'))
      continue;
    *out++ = *in;
  }
  *out = '\0';
}

static void test_write_id_mappings(void **state) {
  int go[2], done[2];
  assert_int_equal(pipe2(go, O_CLOEXEC), 0);
  assert_int_equal(pipe2(done, O_CLOEXEC), 0);
  fflush(NULL);
  pid_t child = fork();
  assert_true(child >= 0);
  if (child == 0) {
    close(go[1]);
    close(done[0]);
    CHILD_CHECK(unshare(CLONE_NEWUSER) == 0);
    CHILD_CHECK(write(done[1], "u", 1) == 1);
    char c;
    CHILD_CHECK(read(go[0], &c, 1) == 1);
    char buf[256];
    CHILD_CHECK(read_file("/proc/self/uid_map", buf, sizeof(buf)) == 0);
    squeeze(buf);
    CHILD_CHECK(strcmp(buf, "0 100000 65536\n") == 0);
    CHILD_CHECK(read_file("/proc/self/gid_map", buf, sizeof(buf)) == 0);
    squeeze(buf);
    CHILD_CHECK(strcmp(buf, "0 200000 1000\n1000 300000 1\n") == 0);
    _exit(0);
  }
  close(go[0]);
  close(done[1]);
  char c;
  assert_int_equal(read(done[0], &c, 1), 1);

  struct spec_id_mapping uids[] = {{0, 100000, 65536}};
  struct spec_id_mapping gids[] = {{0, 200000, 1000}, {1000, 300000, 1}};
  struct spec_linux l = {.uid_mappings = uids, .n_uid_mappings = 1, .gid_mappings = gids, .n_gid_mappings = 2};
  struct cm_error *err = NULL;
  int r = ns_write_id_mappings(child, &l, &err);
  if (r < 0)
    fail_msg("ns_write_id_mappings: %s", err->msg);
  /* A map can be written once: the second attempt must fail, naming the map and the mapping. */
  r = ns_write_id_mappings(child, &l, &err);
  assert_non_null(err);
  assert_non_null(strstr(err->msg, "uid_map"));
  expect_error(r, err, "0 100000 65536");

  assert_int_equal(write(go[1], "g", 1), 1);
  close(go[1]);
  close(done[0]);
  int status;
  assert_int_equal(waitpid(child, &status, 0), child);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_write_id_mappings_requires_a_mapping(void **state) {
  struct spec_linux l = {0};
  struct cm_error *err = NULL;
  int r = ns_write_id_mappings(getpid(), &l, &err);
  expect_error(r, err, "uidMappings");
}

static int64_t monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#define TEN_DAYS 864000

static int time_offsets_child(void *arg) {
  CHILD_CHECK(unshare(CLONE_NEWTIME) == 0);
  struct spec_linux l = {.time_monotonic = {.present = true, .secs = TEN_DAYS, .nanosecs = 5},
                         .time_boottime = {.present = true, .secs = 1, .nanosecs = 0}};
  CHILD_OK(ns_write_time_offsets(&l, &err));
  int p[2];
  CHILD_CHECK(pipe(p) == 0);
  int64_t before = monotonic_ns();
  pid_t grandchild = fork();
  CHILD_CHECK(grandchild >= 0);
  if (grandchild == 0) {
    int64_t t = monotonic_ns(); /* in the new time namespace */
    _exit(write(p[1], &t, sizeof(t)) == sizeof(t) ? 0 : 1);
  }
  int64_t inside = 0;
  CHILD_CHECK(read(p[0], &inside, sizeof(inside)) == sizeof(inside));
  int64_t after = monotonic_ns();
  int status;
  CHILD_CHECK(waitpid(grandchild, &status, 0) == grandchild);
  CHILD_CHECK(inside - before >= (int64_t)TEN_DAYS * 1000000000);
  CHILD_CHECK(inside - after <= (int64_t)TEN_DAYS * 1000000000 + 5);
  /* Offsets are frozen once a process lives in the namespace. */
  CHILD_FAILS_WITH(ns_write_time_offsets(&l, &err), "monotonic 864000 5,boottime 1 0");
  return 0;
}

static void test_write_time_offsets(void **state) {
  assert_int_equal(run_in_child(time_offsets_child, NULL), 0);
}

static void test_time_offsets_none_is_noop(void **state) {
  struct spec_linux l = {0};
  struct cm_error *err = NULL;
  assert_int_equal(ns_write_time_offsets(&l, &err), 0);
  assert_null(err);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_join_rejects_wrong_type),
      cmocka_unit_test(test_join_rejects_plain_file),
      cmocka_unit_test(test_join_missing_path),
      cmocka_unit_test(test_join_and_uts_names),
      cmocka_unit_test(test_write_id_mappings),
      cmocka_unit_test(test_write_id_mappings_requires_a_mapping),
      cmocka_unit_test(test_write_time_offsets),
      cmocka_unit_test(test_time_offsets_none_is_noop),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
