/* runtime/lock_holder.c: who holds a state directory's flock (/proc/locks), and whether that is
 * one of our ancestors: what lets `start` wait for a create that is not its own hook's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/lock_holder.h"

static void test_holder_of_a_flock(void **state) {
  (void)state;
  char dir[] = "/tmp/cm-test-lock.XXXXXX";
  assert_non_null(mkdtemp(dir));
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  assert_true(fd >= 0);
  assert_int_equal(flock_holder_pid(fd), -1); /* nobody */
  int ready[2];
  assert_int_equal(pipe(ready), 0);
  pid_t child = fork();
  assert_true(child >= 0);
  if (child == 0) {
    int own = open(dir, O_RDONLY | O_DIRECTORY);
    if (own < 0 || flock(own, LOCK_EX) < 0)
      _exit(1);
    if (write(ready[1], "x", 1) != 1)
      _exit(1);
    pause();
    _exit(0);
  }
  char c;
  assert_int_equal(read(ready[0], &c, 1), 1);
  assert_int_equal(flock_holder_pid(fd), child);
  /* Our child is not our ancestor; our parent is. */
  assert_false(pid_is_our_ancestor(child));
  assert_true(pid_is_our_ancestor(getppid()));
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  assert_int_equal(flock_holder_pid(fd), -1);
  close(fd);
  rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_holder_of_a_flock)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
