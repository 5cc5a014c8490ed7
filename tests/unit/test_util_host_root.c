/* util/host_root.c: root of the host's user namespace or not. The answer must change when the
 * process enters a user namespace of its own (as codemode-run does for its scratch mounts), and
 * the uid named in messages is the one outside. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/host_root.h"

static void write_self(const char *file, const char *text) {
  int fd = open(file, O_WRONLY);
  if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
    _exit(10);
  close(fd);
}

static void test_host_root(void **state) {
  (void)state;
  if (geteuid() != 0) {
    assert_false(cm_host_root());
    assert_int_equal(cm_host_uid(), geteuid());
    skip();
  }
  assert_true(cm_host_root());
  assert_int_equal(cm_host_uid(), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    /* Host root: still "root" until the process is in a namespace of its own; uid 0 of ours is
     * host uid 0 here (a one-line map of our own id), and it is not the host's root. */
    if (unshare(CLONE_NEWUSER) < 0)
      _exit(77);
    write_self("/proc/self/setgroups", "deny");
    write_self("/proc/self/uid_map", "0 0 1");
    write_self("/proc/self/gid_map", "0 0 1");
    if (!cm_host_root())
      _exit(11); /* cached: the answer of before */
    cm_host_root_forget();
    if (geteuid() != 0 || cm_host_root())
      _exit(12);
    _exit(cm_host_uid() == 0 ? 0 : 13);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77)
    skip();
  assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_host_root)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
