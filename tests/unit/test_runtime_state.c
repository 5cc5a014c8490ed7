/* runtime/: container ids, the state file round trip, status derivation, signal names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka.h needs the four above first. */
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/runtime.h"
#include "runtime/state.h"

static void test_container_ids(void **state) {
  (void)state;
  static const char *good[] = {"a", "abc-123", "x_y.z", "A+B", "0"};
  for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
    assert_int_equal(container_id_validate(good[i], NULL), 0);
  char long_id[1026];
  memset(long_id, 'a', 1025);
  long_id[1025] = '\0';
  const char *bad[] = {"", ".", "..", "../x", "a/b", "a b", "a\nb", long_id, "ä"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    struct cm_error *err = NULL;
    assert_int_equal(container_id_validate(bad[i], &err), -1);
    assert_non_null(err);
    cm_error_free(err);
  }
  long_id[1024] = '\0'; /* exactly 1024 is allowed */
  assert_int_equal(container_id_validate(long_id, NULL), 0);
}

static void test_state_round_trip(void **state) {
  (void)state;
  char dir[] = "/tmp/cm-state-test-XXXXXX";
  assert_non_null(mkdtemp(dir));
  struct cm_error *err = NULL;
  int dirfd = state_dir_create(dir, "c1", &err);
  assert_true(dirfd >= 0);

  struct spec_kv ann[] = {{"k1", "v1"}, {"k\"2", "v\n2"}};
  struct container_state st = {
      .id = "c1",
      .pid = getpid(),
      .pid_start_time = proc_pid_start_time(getpid()),
      .bundle = "/b",
      .rootfs = "/b/rootfs",
      .created = "2026-01-01T00:00:00Z",
      .owner = "",
      .cgroup = "v1:/codemode/c1",
      .annotations = {ann, 2},
  };
  assert_int_equal(state_write(dirfd, &st, &err), 0);
  struct container_state back;
  assert_int_equal(state_read(dirfd, "c1", &back, &err), 0);
  assert_string_equal(back.id, "c1");
  assert_int_equal(back.pid, getpid());
  assert_int_equal(back.pid_start_time, st.pid_start_time);
  assert_string_equal(back.bundle, "/b");
  assert_string_equal(back.cgroup, "v1:/codemode/c1");
  assert_int_equal(back.annotations.count, 2);
  assert_string_equal(back.annotations.items[1].key, "k\"2");
  assert_string_equal(back.annotations.items[1].value, "v\n2");
  /* We are alive and there is no exec.fifo: running. */
  assert_int_equal(state_status(dirfd, &back), STATUS_RUNNING);
  assert_int_equal(mkfifoat(dirfd, "exec.fifo", 0600), 0);
  assert_int_equal(state_status(dirfd, &back), STATUS_CREATED);
  /* A reused pid (another start time) is a stopped container. */
  back.pid_start_time += 1;
  assert_int_equal(state_status(dirfd, &back), STATUS_STOPPED);
  container_state_clear(&back);

  /* A second create of the same id is refused. */
  assert_int_equal(state_dir_create(dir, "c1", &err), -1);
  assert_non_null(strstr(err->msg, "exists"));
  cm_error_free(err);
  err = NULL;
  close(dirfd);
  assert_int_equal(state_dir_remove(dir, "c1", &err), 0);
  assert_int_equal(state_dir_open(dir, "c1", STATE_DIR_WRITE, &err), -1);
  assert_string_equal(err->msg, "container does not exist: \"c1\"");
  cm_error_free(err);
  assert_int_equal(rmdir(dir), 0);
}

static void test_corrupt_state(void **state) {
  (void)state;
  char dir[] = "/tmp/cm-state-test-XXXXXX";
  assert_non_null(mkdtemp(dir));
  struct cm_error *err = NULL;
  int dirfd = state_dir_create(dir, "c2", &err);
  assert_true(dirfd >= 0);
  struct container_state st;
  assert_int_equal(state_read(dirfd, "c2", &st, &err), 1); /* no state.json yet: creating */
  assert_int_equal(write_file_atomic(dirfd, "state.json", "{\"id\":", 6, 0600, &err), 0);
  assert_int_equal(state_read(dirfd, "c2", &st, &err), -1);
  assert_non_null(strstr(err->msg, "corrupt"));
  cm_error_free(err);
  close(dirfd);
  assert_int_equal(state_dir_remove(dir, "c2", NULL), 0);
  assert_int_equal(rmdir(dir), 0);
}

/* While a create holds the lock (no state.json yet), a writer is refused at once and a reader
 * opens without waiting; once create is done, both open. */
static void test_lock_while_creating(void **state) {
  (void)state;
  char dir[] = "/tmp/cm-state-test-XXXXXX";
  assert_non_null(mkdtemp(dir));
  struct cm_error *err = NULL;
  int creating = state_dir_create(dir, "c3", &err);
  assert_true(creating >= 0);
  assert_int_equal(state_dir_open(dir, "c3", STATE_DIR_WRITE, &err), -1);
  assert_non_null(strstr(err->msg, "container \"c3\" is busy: another codemode process is creating"));
  cm_error_free(err);
  err = NULL;
  int reader = state_dir_open(dir, "c3", STATE_DIR_READ, &err);
  assert_true(reader >= 0);
  close(reader);
  close(creating); /* create done (or dead): the lock is free */
  int writer = state_dir_open(dir, "c3", STATE_DIR_WRITE, &err);
  assert_true(writer >= 0);
  close(writer);
  assert_int_equal(state_dir_remove(dir, "c3", &err), 0);
  assert_int_equal(rmdir(dir), 0);
}

static void test_zombie_is_stopped(void **state) {
  (void)state;
  pid_t pid = fork();
  if (pid == 0)
    _exit(0);
  uint64_t start = 0;
  /* Read the start time while it may still run, then let it become a zombie. */
  start = proc_pid_start_time(pid);
  usleep(100000);
  if (start == 0)
    start = proc_pid_start_time(pid);
  assert_true(start != 0);
  assert_false(state_pid_alive(pid, start));
  waitpid(pid, NULL, 0);
  assert_false(state_pid_alive(pid, start));
}

static void test_signal_names(void **state) {
  (void)state;
  assert_int_equal(signal_parse("9", NULL), 9);
  assert_int_equal(signal_parse("KILL", NULL), SIGKILL);
  assert_int_equal(signal_parse("SIGKILL", NULL), SIGKILL);
  assert_int_equal(signal_parse("sigterm", NULL), SIGTERM);
  assert_int_equal(signal_parse("TERM", NULL), SIGTERM);
  assert_int_equal(signal_parse("RTMIN+1", NULL), SIGRTMIN + 1);
  assert_int_equal(signal_parse("SIGWINCH", NULL), SIGWINCH);
  /* kill(2)'s probe: `kill ID 0` checks init is alive (runc takes it). */
  assert_int_equal(signal_parse("0", NULL), 0);
  static const char *bad[] = {"", "-1", "65", "SIGFOO", "KILLX", "9x"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    struct cm_error *err = NULL;
    assert_int_equal(signal_parse(bad[i], &err), -1);
    assert_non_null(strstr(err->msg, "signal"));
    cm_error_free(err);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_container_ids),     cmocka_unit_test(test_state_round_trip),
      cmocka_unit_test(test_corrupt_state),     cmocka_unit_test(test_zombie_is_stopped),
      cmocka_unit_test(test_signal_names),      cmocka_unit_test(test_lock_while_creating),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
