/* linux/rlimits.c and linux/process_attrs.c, each case in a forked child. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <linux/ioprio.h>
#include <sched.h>
#include <sys/capability.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/personality.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "linux/process_attrs.h"
#include "test_linux_child.h"

/* This machine lacks CAP_SYS_RESOURCE already; drop it explicitly so the test means the same
 * everywhere. */
static void drop_sys_resource(void) {
  cap_t caps = cap_get_proc();
  cap_value_t v = CAP_SYS_RESOURCE;
  CHILD_CHECK(caps && cap_set_flag(caps, CAP_EFFECTIVE, 1, &v, CAP_CLEAR) == 0);
  CHILD_CHECK(cap_set_proc(caps) == 0);
  cap_free(caps);
}

static int rlimits_child(void *arg) {
  struct rlimit cur;
  CHILD_CHECK(getrlimit(RLIMIT_NOFILE, &cur) == 0 && cur.rlim_max > 300);
  struct spec_rlimit lims[] = {
      {.resource = RLIMIT_NOFILE, .type = "RLIMIT_NOFILE", .soft = 100, .hard = 200},
      {.resource = RLIMIT_CORE, .type = "RLIMIT_CORE", .soft = 0, .hard = 0},
  };
  struct spec_process p = {.rlimits = lims, .n_rlimits = 2};
  CHILD_OK(rlimits_apply(&p, &err));
  struct rlimit got;
  CHILD_CHECK(getrlimit(RLIMIT_NOFILE, &got) == 0 && got.rlim_cur == 100 && got.rlim_max == 200);
  CHILD_CHECK(getrlimit(RLIMIT_CORE, &got) == 0 && got.rlim_cur == 0 && got.rlim_max == 0);

  /* Raising the hard limit back needs CAP_SYS_RESOURCE: the error names the rlimit. */
  drop_sys_resource();
  struct spec_rlimit raise[] = {{.resource = RLIMIT_NOFILE, .type = "RLIMIT_NOFILE", .soft = 100, .hard = 4096}};
  struct spec_process q = {.rlimits = raise, .n_rlimits = 1};
  CHILD_FAILS_WITH(rlimits_apply(&q, &err), "RLIMIT_NOFILE to soft 100, hard 4096: raising the hard limit above 200");
  /* soft > hard is the kernel's EINVAL, still named. */
  struct spec_rlimit bad[] = {{.resource = RLIMIT_NOFILE, .type = "RLIMIT_NOFILE", .soft = 150, .hard = 120}};
  struct spec_process b = {.rlimits = bad, .n_rlimits = 1};
  CHILD_FAILS_WITH(rlimits_apply(&b, &err), "set RLIMIT_NOFILE to soft 150, hard 120");
  return 0;
}

static void test_rlimits(void **state) {
  assert_int_equal(run_in_child(rlimits_child, NULL), 0);
}

static int read_int_file(const char *path) {
  char buf[32] = {0};
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -99999;
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  return n > 0 ? atoi(buf) : -99999;
}

static int oom_child(void *arg) {
  struct spec_process p = {.has_oom_score_adj = true, .oom_score_adj = 500};
  CHILD_OK(oom_score_adj_apply(&p, &err));
  CHILD_CHECK(read_int_file("/proc/self/oom_score_adj") == 500);
  /* Below the minimum a privileged ancestor set: needs CAP_SYS_RESOURCE, named in the error. */
  drop_sys_resource();
  struct spec_process q = {.has_oom_score_adj = true, .oom_score_adj = -1000};
  CHILD_FAILS_WITH(oom_score_adj_apply(&q, &err), "CAP_SYS_RESOURCE");
  /* Absent: nothing happens. */
  struct spec_process none = {0};
  CHILD_OK(oom_score_adj_apply(&none, &err));
  CHILD_CHECK(read_int_file("/proc/self/oom_score_adj") == 500);
  return 0;
}

static void test_oom_score_adj(void **state) {
  assert_int_equal(run_in_child(oom_child, NULL), 0);
}

/* A file bind-mounted over /proc/self/oom_score_adj (CVE-2025-52881 class) must not receive the
 * write. The mount lives only in the child's private mount namespace. */
static int oom_redirect_child(void *arg) {
  const char *decoy = arg;
  CHILD_CHECK(unshare(CLONE_NEWNS) == 0);
  CHILD_CHECK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
  CHILD_CHECK(mount(decoy, "/proc/self/oom_score_adj", NULL, MS_BIND, NULL) == 0);
  struct spec_process p = {.has_oom_score_adj = true, .oom_score_adj = 300};
  struct cm_error *err = NULL;
  CHILD_CHECK(oom_score_adj_apply(&p, &err) < 0);
  CHILD_CHECK(err && err->errnum == EXDEV && strstr(err->msg, "open /proc/self/oom_score_adj"));
  cm_error_free(err);
  struct stat st;
  CHILD_CHECK(stat(decoy, &st) == 0 && st.st_size == 0);
  return 0;
}

static void test_oom_score_adj_refuses_bind_mounted_file(void **state) {
  char decoy[] = "/tmp/cm-oom-decoy-XXXXXX";
  int fd = mkstemp(decoy);
  assert_true(fd >= 0);
  close(fd);
  int rc = run_in_child(oom_redirect_child, decoy);
  unlink(decoy);
  assert_int_equal(rc, 0);
}

static int personality_child(void *arg) {
  struct spec_personality pers = {.present = true, .domain = PER_LINUX32};
  CHILD_OK(personality_apply(&pers, &err));
  CHILD_CHECK((personality(0xffffffff) & PER_MASK) == PER_LINUX32);
  pers.domain = PER_LINUX;
  CHILD_OK(personality_apply(&pers, &err));
  CHILD_CHECK((personality(0xffffffff) & PER_MASK) == PER_LINUX);
  char *flags[] = {"ADDR_NO_RANDOMIZE", NULL};
  struct spec_personality with_flags = {.present = true, .domain = PER_LINUX, .flags = {flags, 1}};
  CHILD_FAILS_WITH(personality_apply(&with_flags, &err), "\"ADDR_NO_RANDOMIZE\" is not supported");
  return 0;
}

static void test_personality(void **state) {
  assert_int_equal(run_in_child(personality_child, NULL), 0);
}

static int io_priority_child(void *arg) {
  struct spec_process p = {.has_io_priority = true, .io_priority_class = IOPRIO_CLASS_BE, .io_priority = 6};
  CHILD_OK(io_priority_apply(&p, &err));
  long got = syscall(SYS_ioprio_get, IOPRIO_WHO_PROCESS, 0);
  CHILD_CHECK(got == IOPRIO_PRIO_VALUE(IOPRIO_CLASS_BE, 6));
  struct spec_process bad = {.has_io_priority = true, .io_priority_class = IOPRIO_CLASS_BE, .io_priority = 99};
  CHILD_FAILS_WITH(io_priority_apply(&bad, &err), "99 is not in 0..7");
  return 0;
}

static void test_io_priority(void **state) {
  assert_int_equal(run_in_child(io_priority_child, NULL), 0);
}

static int scheduler_child(void *arg) {
  struct spec_process p = {.scheduler = {.present = true, .policy = SCHED_BATCH, .nice = 7}};
  CHILD_OK(scheduler_apply(&p, &err));
  CHILD_CHECK(sched_getscheduler(0) == SCHED_BATCH);
  errno = 0;
  CHILD_CHECK(getpriority(PRIO_PROCESS, 0) == 7 && errno == 0);
  /* A static priority is meaningless for SCHED_OTHER: the kernel says EINVAL, we name the policy. */
  struct spec_process bad = {.scheduler = {.present = true, .policy = SCHED_OTHER, .priority = 5}};
  CHILD_FAILS_WITH(scheduler_apply(&bad, &err), "sched_setattr(SCHED_OTHER, nice 0, priority 5");
  struct spec_process none = {0};
  CHILD_OK(scheduler_apply(&none, &err));
  CHILD_CHECK(sched_getscheduler(0) == SCHED_BATCH);
  return 0;
}

static void test_scheduler(void **state) {
  assert_int_equal(run_in_child(scheduler_child, NULL), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rlimits),      cmocka_unit_test(test_oom_score_adj),
      cmocka_unit_test(test_oom_score_adj_refuses_bind_mounted_file), cmocka_unit_test(test_personality),
      cmocka_unit_test(test_io_priority), cmocka_unit_test(test_scheduler),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
