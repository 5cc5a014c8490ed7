/* The systemd driver's pure parts: "slice:prefix:name" parsing, and the refusal when systemd is
 * not PID 1. The D-Bus side runs in tests/vm (systemd variant). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cgroup/internal.h"

static void parses(const char *path, const char *want_slice, const char *want_unit, const char *want_cgroup) {
  char *slice = NULL, *unit = NULL, *cg = NULL;
  struct cm_error *err = NULL;
  if (cg_systemd_parse_path("ctr", path, &slice, &unit, &cg, &err) < 0)
    fail_msg("\"%s\": %s", path ? path : "(null)", err->msg);
  assert_string_equal(slice, want_slice);
  assert_string_equal(unit, want_unit);
  assert_string_equal(cg, want_cgroup);
  free(slice);
  free(unit);
  free(cg);
}

static void refuses(const char *path, const char *needle) {
  char *slice = NULL, *unit = NULL, *cg = NULL;
  struct cm_error *err = NULL;
  assert_int_equal(cg_systemd_parse_path("ctr", path, &slice, &unit, &cg, &err), -1);
  assert_non_null(err);
  if (strstr(err->msg, needle) == NULL)
    fail_msg("\"%s\": error \"%s\" lacks \"%s\"", path, err->msg, needle);
  cm_error_free(err);
}

static void test_paths(void **state) {
  (void)state;
  parses("system.slice:docker:abc", "system.slice", "docker-abc.scope", "/system.slice/docker-abc.scope");
  parses(NULL, "system.slice", "codemode-ctr.scope", "/system.slice/codemode-ctr.scope");
  parses("", "system.slice", "codemode-ctr.scope", "/system.slice/codemode-ctr.scope");
  parses(":cm:x", "system.slice", "cm-x.scope", "/system.slice/cm-x.scope");
  parses("machine-pod1.slice:crio:x", "machine-pod1.slice", "crio-x.scope",
         "/machine.slice/machine-pod1.slice/crio-x.scope");
  parses("a-b-c.slice::x", "a-b-c.slice", "x.scope", "/a.slice/a-b.slice/a-b-c.slice/x.scope");
  parses("-.slice:p:n", "-.slice", "p-n.scope", "/p-n.scope");
  parses("user.slice:p:given.scope", "user.slice", "given.scope", "/user.slice/given.scope");
}

static void test_bad_paths(void **state) {
  (void)state;
  refuses("/plain/path", "slice:prefix:name");
  refuses("a:b", "slice:prefix:name");
  refuses("a:b:c:d", "slice:prefix:name");
  refuses("system:p:n", "not a valid slice name");
  refuses("sys/tem.slice:p:n", "not a valid slice name");
  refuses("a--b.slice:p:n", "not a valid slice name");
  refuses("system.slice:p:../../x", "not a valid unit name");
  refuses("system.slice:p:n.slice", "not supported");
}

static void test_not_running(void **state) {
  (void)state;
  struct stat st;
  if (stat("/run/systemd/system", &st) == 0)
    skip();
  struct cm_error *err = NULL;
  assert_int_equal(cg_systemd_check_running(&err), -1);
  assert_string_equal(err->msg, "systemd cgroup driver: systemd is not running (no /run/systemd/system)");
  cm_error_free(err);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_paths),
      cmocka_unit_test(test_bad_paths),
      cmocka_unit_test(test_not_running),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
