/* linux/user.c: groups, gid, uid and umask switched with capabilities kept, as last steps run in
 * place (linux/last_steps.h). In forked children. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/stat.h>

#include "linux/last_steps.h"
#include "linux/user.h"
#include "test_linux_child.h"

/* user.c's steps, run here as the last steps would run them. */
static int user_switch(const struct spec_user *u, struct cm_error **err) {
  struct last_steps ls;
  last_steps_init(&ls, 2, false);
  int rc = user_emit_switch(&ls, u, err);
  if (rc == 0)
    rc = last_steps_run_here(&ls, err);
  last_steps_free(&ls);
  return rc;
}

static int switch_child(void *arg) {
  uint32_t gids[] = {2000, 2001};
  struct spec_user u = {.uid = 1000, .gid = 1001, .has_umask = true, .umask = 077, .additional_gids = gids,
                        .n_additional_gids = 2};
  CHILD_OK(user_switch(&u, &err));
  uid_t r, e, s;
  CHILD_CHECK(getresuid(&r, &e, &s) == 0 && r == 1000 && e == 1000 && s == 1000);
  gid_t gr, ge, gs;
  CHILD_CHECK(getresgid(&gr, &ge, &gs) == 0 && gr == 1001 && ge == 1001 && gs == 1001);
  gid_t groups[8];
  CHILD_CHECK(getgroups(8, groups) == 2 && groups[0] == 2000 && groups[1] == 2001);
  CHILD_CHECK(umask(0) == 077);
  /* Capabilities survive in the permitted set so caps.c can set the exact sets next. */
  CHILD_CHECK(prctl(PR_GET_KEEPCAPS) == 1);
  cap_t caps = cap_get_proc();
  cap_flag_value_t v = CAP_CLEAR;
  CHILD_CHECK(caps && cap_get_flag(caps, CAP_SETUID, CAP_PERMITTED, &v) == 0 && v == CAP_SET);
  cap_free(caps);
  return 0;
}

static void test_user_switch(void **state) {
  assert_int_equal(run_in_child(switch_child, NULL), 0);
}

static int default_umask_child(void *arg) {
  umask(0);
  CHILD_CHECK(setgroups(1, (gid_t[]){4242}) == 0); /* a stale host group must not survive */
  struct spec_user u = {.uid = 0, .gid = 0};
  CHILD_OK(user_switch(&u, &err));
  CHILD_CHECK(umask(0) == 0022); /* runc's default */
  CHILD_CHECK(getgroups(0, NULL) == 0);
  CHILD_CHECK(getuid() == 0 && getgid() == 0);
  return 0;
}

static void test_user_default_umask_and_groups_cleared(void **state) {
  assert_int_equal(run_in_child(default_umask_child, NULL), 0);
}

static int write_file(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t n = write(fd, text, strlen(text));
  close(fd);
  return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* A user namespace mapped the unprivileged way: setgroups "deny". */
static void enter_setgroups_denied_userns(void) {
  char uid_map[32], gid_map[32];
  snprintf(uid_map, sizeof(uid_map), "0 %u 1\n", (unsigned)getuid());
  snprintf(gid_map, sizeof(gid_map), "0 %u 1\n", (unsigned)getgid());
  CHILD_CHECK(unshare(CLONE_NEWUSER) == 0);
  CHILD_CHECK(write_file("/proc/self/setgroups", "deny") == 0);
  CHILD_CHECK(write_file("/proc/self/uid_map", uid_map) == 0);
  CHILD_CHECK(write_file("/proc/self/gid_map", gid_map) == 0);
}

static int setgroups_denied_child(void *arg) {
  enter_setgroups_denied_userns();
  uint32_t gids[] = {0};
  struct spec_user asks = {.uid = 0, .gid = 0, .additional_gids = gids, .n_additional_gids = 1};
  CHILD_FAILS_WITH(user_switch(&asks, &err), "setgroups is denied");
  /* Not asking for groups is fine there. */
  struct spec_user plain = {.uid = 0, .gid = 0};
  CHILD_OK(user_switch(&plain, &err));
  CHILD_CHECK(getuid() == 0);
  return 0;
}

static void test_user_setgroups_denied(void **state) {
  assert_int_equal(run_in_child(setgroups_denied_child, NULL), 0);
}

static int unmapped_uid_child(void *arg) {
  enter_setgroups_denied_userns();
  struct spec_user u = {.uid = 1234, .gid = 0};
  CHILD_FAILS_WITH(user_switch(&u, &err), "process.user.uid: setresuid(1234)");
  return 0;
}

static void test_user_unmapped_uid(void **state) {
  assert_int_equal(run_in_child(unmapped_uid_child, NULL), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_user_switch),
      cmocka_unit_test(test_user_default_umask_and_groups_cleared),
      cmocka_unit_test(test_user_setgroups_denied),
      cmocka_unit_test(test_user_unmapped_uid),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
