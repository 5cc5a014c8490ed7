/* linux/exec_trampoline.c and the trampoline program (src/trampoline/): the sealed copy, the exec
 * through it, and its error report. Execs run in forked children (test_linux_child.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka.h needs the four above first. */
#include <cmocka.h>

#include <fcntl.h>
#include <sys/prctl.h>

#include "linux/exec_trampoline.h"
#include "test_linux_child.h"

extern char **environ;

static void test_copy_is_sealed(void **state) {
  struct exec_trampoline t;
  struct cm_error *err = NULL;
  char *argv[] = {"name", "arg", NULL};
  assert_int_equal(exec_trampoline_prepare(&t, "/bin/prog", argv, &err), 0);
  int seals = fcntl(t.fd, F_GET_SEALS);
  int want = F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;
  assert_int_equal(seals & want, want);
  /* What a container that grabbed it would try. */
  assert_int_equal(write(t.fd, "x", 1), -1);
  assert_int_equal(errno, EPERM);
  assert_int_equal(ftruncate(t.fd, 0), -1);
  assert_true(fcntl(t.fd, F_GETFD) & FD_CLOEXEC);
  /* argv: the path to exec, then the program's own argv, argv[0] included. */
  assert_string_equal(t.argv[0], "/bin/prog");
  assert_string_equal(t.argv[1], "name");
  assert_string_equal(t.argv[2], "arg");
  assert_null(t.argv[3]);
  close(t.fd);
  free(t.argv);
}

static int exec_sh_exit_7(void *unused) {
  struct exec_trampoline t;
  /* sh -c takes $0 and $1 from the words after its script: the argv reached it intact. */
  char *argv[] = {"custom0", "-c", "[ \"$0\" = zero ] && [ \"$1\" = one ] && exit 7; exit 1", "zero", "one", NULL};
  CHILD_OK(exec_trampoline_prepare(&t, "/bin/sh", argv, &err));
  exec_trampoline_exec(&t, environ);
  CHILD_CHECK(!"exec_trampoline_exec returned");
  return 1;
}

static void test_exec_runs_the_program(void **state) { assert_int_equal(run_in_child(exec_sh_exit_7, NULL), 7); }

static int exec_missing(void *pipe_fd) {
  dup2(*(int *)pipe_fd, STDERR_FILENO);
  struct exec_trampoline t;
  char *argv[] = {"missing", NULL};
  CHILD_OK(exec_trampoline_prepare(&t, "/nonexistent/program", argv, &err));
  exec_trampoline_exec(&t, environ);
  CHILD_CHECK(!"the trampoline itself failed to start");
  return 1;
}

static void test_failed_exec_is_reported(void **state) {
  int p[2];
  assert_int_equal(pipe(p), 0);
  /* The trampoline started (the runtime's execve succeeded) and its own execve failed: it says
   * so on stderr and exits 127, as a shell does. */
  assert_int_equal(run_in_child(exec_missing, &p[1]), 127);
  close(p[1]);
  char buf[256] = {0};
  ssize_t n = read(p[0], buf, sizeof(buf) - 1);
  close(p[0]);
  assert_true(n > 0);
  assert_string_equal(buf, "codemode: exec /nonexistent/program: no such file or directory (ENOENT)\n");
}

static int nondumpable(void *unused) {
  exec_guard_make_nondumpable();
  CHILD_CHECK(prctl(PR_GET_DUMPABLE) == (geteuid() == 0 ? 0 : 1));
  return 0;
}

static void test_make_nondumpable(void **state) { assert_int_equal(run_in_child(nondumpable, NULL), 0); }

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_copy_is_sealed),
      cmocka_unit_test(test_exec_runs_the_program),
      cmocka_unit_test(test_failed_exec_is_reported),
      cmocka_unit_test(test_make_nondumpable),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
