/* cgroup driver on a v1 / hybrid host (this machine): create with limits, enter, freeze, kill,
 * destroy; path handling; error messages. Skipped on a unified (v2-only) host. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <linux/magic.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/vfs.h>
#include <sys/wait.h>

#include "test_cgroup_util.h"

static const char *const hierarchies[] = {"memory", "pids",    "cpu",     "cpuacct", "cpuset", "devices",
                                          "freezer", "blkio", "systemd", "unified", NULL};

static int teardown(void **state) {
  cleanup_test_leftovers("/sys/fs/cgroup");
  return 0;
}

static void assert_gone(const char *path) {
  for (size_t i = 0; hierarchies[i]; i++)
    if (path_exists("/sys/fs/cgroup/%s%s", hierarchies[i], path))
      fail_msg("/sys/fs/cgroup/%s%s still exists", hierarchies[i], path);
}

static void assert_file(const char *hierarchy, const char *path, const char *file, const char *want) {
  char *got = read_text("/sys/fs/cgroup/%s%s/%s", hierarchy, path, file);
  if (got == NULL)
    fail_msg("cannot read /sys/fs/cgroup/%s%s/%s", hierarchy, path, file);
  got[strcspn(got, "\n")] = '\0';
  if (strcmp(got, want) != 0)
    fail_msg("%s/%s: got \"%s\", want \"%s\"", path, file, got, want);
  free(got);
}

static void test_full_lifecycle(void **state) {
  char *path = test_cgroup_name();
  struct spec_linux l = {0};
  l.cgroups_path = path;
  struct spec_resources *r = &l.resources;
  r->present = true;
  r->memory.present = true;
  r->memory.limit = (struct spec_opt_i64){true, 64 << 20};
  r->memory.swap = (struct spec_opt_i64){true, 128 << 20};
  r->memory.reservation = (struct spec_opt_i64){true, 32 << 20};
  r->memory.swappiness = (struct spec_opt_u64){true, 10};
  r->has_pids = true;
  r->pids_limit = 32;
  r->cpu.present = true;
  r->cpu.shares = (struct spec_opt_u64){true, 512};
  r->cpu.quota = (struct spec_opt_i64){true, 50000};
  r->cpu.period = (struct spec_opt_u64){true, 100000};
  r->cpu.cpus = "0";
  struct spec_device_rule rules[] = {dev_rule(false, 'a', -1, -1, "rwm"), dev_rule(true, 'c', 10, 200, "rwm")};
  r->devices = rules;
  r->n_devices = 2;

  struct cgroup *cg = NULL;
  ASSERT_OK(cgroup_create("cm-test", &l, CGROUP_MANAGER_CGROUPFS, &cg, &err));
  assert_string_equal(cgroup_path(cg), path);
  assert_file("memory", path, "memory.limit_in_bytes", "67108864");
  assert_file("memory", path, "memory.memsw.limit_in_bytes", "134217728");
  assert_file("memory", path, "memory.soft_limit_in_bytes", "33554432");
  assert_file("memory", path, "memory.swappiness", "10");
  assert_file("pids", path, "pids.max", "32");
  assert_file("cpu", path, "cpu.shares", "512");
  assert_file("cpu", path, "cpu.cfs_quota_us", "50000");
  assert_file("cpu", path, "cpu.cfs_period_us", "100000");
  assert_file("cpuset", path, "cpuset.cpus", "0");
  char *devices = read_text("/sys/fs/cgroup/devices%s/devices.list", path);
  assert_non_null(devices);
  assert_non_null(strstr(devices, "c 10:200 rwm"));
  assert_non_null(strstr(devices, "c 1:3 rwm")); /* /dev/null from the defaults */
  assert_null(strstr(devices, "a *:* rwm"));
  free(devices);
  assert_true(path_exists("/sys/fs/cgroup/systemd%s", path));
  assert_true(path_exists("/sys/fs/cgroup/unified%s", path));

  pid_t child = spawn_sleeper();
  assert_true(child > 0);
  ASSERT_OK(cgroup_enter(cg, child, &err));
  char *own = read_text("/proc/%d/cgroup", (int)child);
  char *want = NULL;
  assert_true(asprintf(&want, "memory:%s\n", path) > 0);
  assert_non_null(strstr(own, want));
  free(want);
  assert_true(asprintf(&want, "0::%s\n", path) > 0);
  assert_non_null(strstr(own, want));
  free(want);
  free(own);

  pid_t *pids = NULL;
  size_t n = 0;
  ASSERT_OK(cgroup_pids(cg, &pids, &n, &err));
  assert_int_equal(n, 1);
  assert_int_equal(pids[0], child);
  free(pids);

  ASSERT_OK(cgroup_freeze(cg, true, &err));
  assert_int_equal(cgroup_is_frozen(cg, NULL), 1);
  assert_file("freezer", path, "freezer.state", "FROZEN");
  char st = proc_state(child);
  assert_true(st == 'D' || st == 'S'); /* the v1 freezer parks tasks; never running */
  ASSERT_OK(cgroup_freeze(cg, false, &err));
  assert_int_equal(cgroup_is_frozen(cg, NULL), 0);
  assert_file("freezer", path, "freezer.state", "THAWED");
  assert_int_equal(wait_proc_state(child, 'S'), 'S');

  /* A serialized handle reopens the same cgroup. */
  char *saved = cgroup_serialize(cg);
  assert_true(strncmp(saved, "hybrid:", 7) == 0 || strncmp(saved, "v1:", 3) == 0);
  struct cgroup *again = NULL;
  struct cm_error *err = NULL;
  again = cgroup_deserialize(saved, &err);
  assert_non_null(again);
  assert_string_equal(cgroup_path(again), path);
  free(saved);

  ASSERT_OK(cgroup_kill_all(again, SIGKILL, &err));
  int status;
  assert_int_equal(waitpid(child, &status, 0), child);
  assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

  ASSERT_OK(cgroup_destroy(again, &err));
  cgroup_free(again);
  cgroup_free(cg);
  assert_gone(path);
  free(path);
}

/* kill with a catchable signal goes through freeze → signal → thaw. */
static void test_kill_term_and_destroy_kills_rest(void **state) {
  char *path = test_cgroup_name();
  struct spec_linux l = {0};
  l.cgroups_path = path;
  struct cgroup *cg = NULL;
  ASSERT_OK(cgroup_create("cm-test", &l, CGROUP_MANAGER_CGROUPFS, &cg, &err));
  pid_t a = spawn_sleeper(), b = spawn_sleeper();
  ASSERT_OK(cgroup_enter(cg, a, &err));
  ASSERT_OK(cgroup_enter(cg, b, &err));
  ASSERT_OK(cgroup_kill_all(cg, SIGTERM, &err));
  int status;
  assert_int_equal(waitpid(a, &status, 0), a);
  assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
  assert_int_equal(waitpid(b, &status, 0), b);
  assert_int_equal(cgroup_is_frozen(cg, NULL), 0);

  /* Paused: a catchable signal leaves it paused; SIGKILL thaws it so the process dies. */
  pid_t p = spawn_sleeper();
  ASSERT_OK(cgroup_enter(cg, p, &err));
  ASSERT_OK(cgroup_freeze(cg, true, &err));
  ASSERT_OK(cgroup_kill_all(cg, SIGTERM, &err));
  assert_int_equal(cgroup_is_frozen(cg, NULL), 1);
  ASSERT_OK(cgroup_kill_all(cg, SIGKILL, &err));
  assert_int_equal(waitpid(p, &status, 0), p);
  assert_true(WIFSIGNALED(status));
  assert_int_equal(cgroup_is_frozen(cg, NULL), 0);

  /* destroy kills what is left before removing. */
  pid_t c = spawn_sleeper();
  ASSERT_OK(cgroup_enter(cg, c, &err));
  ASSERT_OK(cgroup_destroy(cg, &err));
  assert_int_equal(waitpid(c, &status, 0), c);
  assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  cgroup_free(cg);
  assert_gone(path);
  free(path);
}

static void test_devices_enforced(void **state) {
  char *path = test_cgroup_name();
  struct spec_linux l = {0};
  l.cgroups_path = path;
  struct spec_device_rule rules[] = {dev_rule(false, 'a', -1, -1, "rwm")};
  l.resources.devices = rules;
  l.resources.n_devices = 1;
  struct cgroup *cg = NULL;
  ASSERT_OK(cgroup_create("cm-test", &l, CGROUP_MANAGER_CGROUPFS, &cg, &err));
  assert_int_equal(run_in_cgroup(cg, open_read, "/dev/kmsg"), EPERM);
  assert_int_equal(run_in_cgroup(cg, open_read, "/dev/null"), 0);
  ASSERT_OK(cgroup_destroy(cg, &err));
  cgroup_free(cg);
  assert_gone(path);
  free(path);
}

static void test_default_and_relative_paths(void **state) {
  char id[64];
  snprintf(id, sizeof(id), "cm-test-%d-default", (int)getpid());
  struct cgroup *cg = NULL;
  ASSERT_OK(cgroup_create(id, NULL, CGROUP_MANAGER_CGROUPFS, &cg, &err));
  char want[128];
  snprintf(want, sizeof(want), "/codemode/%s", id);
  assert_string_equal(cgroup_path(cg), want);
  assert_true(path_exists("/sys/fs/cgroup/memory%s", want));
  ASSERT_OK(cgroup_destroy(cg, &err));
  cgroup_free(cg);
  assert_gone(want);

  /* Relative: from the hierarchy root, cleaned. */
  struct spec_linux l = {0};
  char rel[64];
  snprintf(rel, sizeof(rel), "./cm-test-%d-rel//x/", (int)getpid());
  l.cgroups_path = rel;
  ASSERT_OK(cgroup_create("cm-test", &l, CGROUP_MANAGER_CGROUPFS, &cg, &err));
  snprintf(want, sizeof(want), "/cm-test-%d-rel/x", (int)getpid());
  assert_string_equal(cgroup_path(cg), want);
  ASSERT_OK(cgroup_destroy(cg, &err));
  cgroup_free(cg);
  assert_gone(want);
  /* destroy leaves the parent; the test removes it. */
  snprintf(want, sizeof(want), "/cm-test-%d-rel", (int)getpid());
  for (size_t i = 0; hierarchies[i]; i++) {
    char dir[256];
    snprintf(dir, sizeof(dir), "/sys/fs/cgroup/%s%s", hierarchies[i], want);
    rmdir(dir);
  }
  assert_gone(want);
}

static void test_bad_paths_and_drivers(void **state) {
  struct spec_linux l = {0};
  struct cgroup *cg = NULL;
  l.cgroups_path = "system.slice:codemode:abc";
  ASSERT_FAILS_WITH(cgroup_create("abc", &l, CGROUP_MANAGER_CGROUPFS, &cg, &err), "linux.cgroupsPath");
  l.cgroups_path = "/a/../../etc";
  ASSERT_FAILS_WITH(cgroup_create("abc", &l, CGROUP_MANAGER_CGROUPFS, &cg, &err), "must not contain \"..\"");
  l.cgroups_path = "/";
  ASSERT_FAILS_WITH(cgroup_create("abc", &l, CGROUP_MANAGER_CGROUPFS, &cg, &err), "root cgroup");
  l.cgroups_path = NULL;
  ASSERT_FAILS_WITH(cgroup_create("abc", &l, CGROUP_MANAGER_SYSTEMD, &cg, &err), "systemd is not running");
  assert_null(cg);
  struct cm_error *err = NULL;
  assert_null(cgroup_deserialize("v1:/../x", &err));
  cm_error_free(err);
}

static void test_disabled_manager(void **state) {
  struct cgroup *cg = NULL;
  ASSERT_OK(cgroup_create("cm-test-disabled", NULL, CGROUP_MANAGER_DISABLED, &cg, &err));
  ASSERT_OK(cgroup_enter(cg, getpid(), &err));
  char *saved = cgroup_serialize(cg);
  assert_true(strncmp(saved, "disabled:", 9) == 0);
  free(saved);
  ASSERT_FAILS_WITH(cgroup_freeze(cg, true, &err), "without a cgroup");
  ASSERT_OK(cgroup_destroy(cg, &err));
  cgroup_free(cg);
}

/* Errors name the field and the file, and a failed create leaves nothing behind. */
static void test_errors_name_field_and_clean_up(void **state) {
  char *path = test_cgroup_name();
  struct spec_linux l = {0};
  l.cgroups_path = path;
  l.resources.cpu.quota = (struct spec_opt_i64){true, 1}; /* below the kernel's 1 ms minimum */
  struct cgroup *cg = NULL;
  char want[256];
  snprintf(want, sizeof(want), "linux.resources.cpu.quota: write 1 to /sys/fs/cgroup/cpu%s/cpu.cfs_quota_us", path);
  ASSERT_FAILS_WITH(cgroup_create("cm-test", &l, CGROUP_MANAGER_CGROUPFS, &cg, &err), want);
  assert_gone(path);

  l.resources.cpu.quota.set = false;
  struct spec_kv kv = {"memory.high", "100M"};
  l.resources.unified = (struct spec_kv_list){&kv, 1};
  ASSERT_FAILS_WITH(cgroup_create("cm-test", &l, CGROUP_MANAGER_CGROUPFS, &cg, &err),
                    "linux.resources.unified.\"memory.high\"");
  assert_gone(path);
  free(path);
}

/* In hybrid mode hugetlb lives in cgroup2 on this machine: limits and unified keys go there. */
static void test_hybrid_hugetlb(void **state) {
  char *controllers = read_text("/sys/fs/cgroup/unified/cgroup.controllers");
  if (controllers == NULL || strstr(controllers, "hugetlb") == NULL || path_exists("/sys/fs/cgroup/hugetlb")) {
    free(controllers);
    skip();
  }
  free(controllers);
  char *enabled = read_text("/sys/fs/cgroup/unified/cgroup.subtree_control");
  bool was_enabled = enabled != NULL && strstr(enabled, "hugetlb") != NULL;
  free(enabled);
  char *path = test_cgroup_name();
  struct spec_linux l = {0};
  l.cgroups_path = path;
  struct spec_hugepage_limit h = {"2MB", 4 << 20};
  l.resources.hugepage_limits = &h;
  l.resources.n_hugepage_limits = 1;
  /* A unified key beside the limit: the 2 MB reservation limit (every kernel with hugetlb in
   * cgroup2 has it; a 1 GB page size is not on every machine). */
  struct spec_kv kv = {"hugetlb.2MB.rsvd.max", "0"};
  l.resources.unified = (struct spec_kv_list){&kv, 1};
  struct cgroup *cg = NULL;
  ASSERT_OK(cgroup_create("cm-test", &l, CGROUP_MANAGER_CGROUPFS, &cg, &err));
  assert_file("unified", path, "hugetlb.2MB.max", "4194304");
  assert_file("unified", path, "hugetlb.2MB.rsvd.max", "0");
  ASSERT_OK(cgroup_destroy(cg, &err));
  cgroup_free(cg);
  assert_gone(path);
  /* Leave the host's cgroup2 root as it was. */
  if (!was_enabled) {
    FILE *f = fopen("/sys/fs/cgroup/unified/cgroup.subtree_control", "we");
    if (f != NULL) {
      fputs("-hugetlb", f);
      fclose(f);
    }
  }
  free(path);
}

static void test_reuse_only_when_empty(void **state) {
  char *path = test_cgroup_name();
  struct spec_linux l = {0};
  l.cgroups_path = path;
  struct cgroup *cg = NULL, *second = NULL;
  ASSERT_OK(cgroup_create("cm-test", &l, CGROUP_MANAGER_CGROUPFS, &cg, &err));
  ASSERT_OK(cgroup_create("cm-test", &l, CGROUP_MANAGER_CGROUPFS, &second, &err)); /* empty: reused */
  cgroup_free(second);
  pid_t child = spawn_sleeper();
  ASSERT_OK(cgroup_enter(cg, child, &err));
  ASSERT_FAILS_WITH(cgroup_create("cm-test", &l, CGROUP_MANAGER_CGROUPFS, &second, &err), "has processes");
  assert_true(path_exists("/sys/fs/cgroup/memory%s", path)); /* the failed reuse removed nothing */
  ASSERT_OK(cgroup_destroy(cg, &err));
  waitpid(child, NULL, 0);
  cgroup_free(cg);
  assert_gone(path);
  free(path);
}

static void test_update(void **state) {
  char *path = test_cgroup_name();
  struct spec_linux l = {0};
  l.cgroups_path = path;
  l.resources.memory.limit = (struct spec_opt_i64){true, 64 << 20};
  l.resources.memory.swap = (struct spec_opt_i64){true, 64 << 20};
  struct cgroup *cg = NULL;
  ASSERT_OK(cgroup_create("cm-test", &l, CGROUP_MANAGER_CGROUPFS, &cg, &err));
  /* Growing both: memsw must be raised before the limit. */
  struct spec_resources r = {0};
  r.memory.limit = (struct spec_opt_i64){true, 256 << 20};
  r.memory.swap = (struct spec_opt_i64){true, 512 << 20};
  r.has_pids = true;
  r.pids_limit = 0;
  ASSERT_OK(cgroup_update(cg, &r, &err));
  assert_file("memory", path, "memory.limit_in_bytes", "268435456");
  assert_file("memory", path, "memory.memsw.limit_in_bytes", "536870912");
  assert_file("pids", path, "pids.max", "max");
  /* Shrinking both: the limit must go first. */
  r.memory.limit.value = 32 << 20;
  r.memory.swap.value = 32 << 20;
  ASSERT_OK(cgroup_update(cg, &r, &err));
  assert_file("memory", path, "memory.memsw.limit_in_bytes", "33554432");
  /* Unlimited. */
  r.memory.limit.value = -1;
  r.memory.swap.set = false;
  ASSERT_OK(cgroup_update(cg, &r, &err));
  assert_file("memory", path, "memory.memsw.limit_in_bytes", "9223372036854771712");
  ASSERT_OK(cgroup_destroy(cg, &err));
  cgroup_free(cg);
  assert_gone(path);
  free(path);
}

/* cpu.burst on the kernel's files: written after the quota at create; a quota lowered below the
 * burst (refused by the kernel while the burst is larger) goes in after the burst is zeroed. */
static void test_cpu_burst(void **state) {
  char *path = test_cgroup_name();
  struct spec_linux l = {0};
  l.cgroups_path = path;
  l.resources.cpu.quota = (struct spec_opt_i64){true, 100000};
  l.resources.cpu.period = (struct spec_opt_u64){true, 100000};
  l.resources.cpu.burst = (struct spec_opt_u64){true, 100000};
  l.resources.cpu.burst_optional = true;
  struct cgroup *cg = NULL;
  ASSERT_OK(cgroup_create("cm-test", &l, CGROUP_MANAGER_CGROUPFS, &cg, &err));
  assert_file("cpu", path, "cpu.cfs_quota_us", "100000");
  assert_file("cpu", path, "cpu.cfs_burst_us", "100000");
  struct spec_resources r = {0};
  r.cpu.quota = (struct spec_opt_i64){true, 10000};
  r.cpu.burst = (struct spec_opt_u64){true, 5000};
  ASSERT_OK(cgroup_update(cg, &r, &err));
  assert_file("cpu", path, "cpu.cfs_quota_us", "10000");
  assert_file("cpu", path, "cpu.cfs_burst_us", "5000");
  /* Without a burst to give, a quota below the current burst is the kernel's refusal (runc's too), named. */
  r.cpu.quota.value = 1000;
  r.cpu.burst.set = false;
  char want[256];
  snprintf(want, sizeof(want),
           "linux.resources.cpu.quota: write 1000 to /sys/fs/cgroup/cpu%s/cpu.cfs_quota_us", path);
  ASSERT_FAILS_WITH(cgroup_update(cg, &r, &err), want);
  /* A burst above the quota: the config's is an error that names it. */
  r.cpu.quota.set = false;
  r.cpu.burst = (struct spec_opt_u64){true, 20000};
  snprintf(want, sizeof(want),
           "linux.resources.cpu.burst: write 20000 to /sys/fs/cgroup/cpu%s/cpu.cfs_burst_us", path);
  ASSERT_FAILS_WITH(cgroup_update(cg, &r, &err), want);
  ASSERT_OK(cgroup_destroy(cg, &err));
  cgroup_free(cg);
  assert_gone(path);
  free(path);
}

/* The hierarchies are read once per mount namespace (v1.c's cache): a process that unshared its
 * mounts and has a hierarchy elsewhere creates its cgroup where its own mountinfo says. In a
 * private namespace of a child, the pids hierarchy is moved to a directory of the test's own and
 * an empty tmpfs covers its old place (so a stale answer could only write into that tmpfs). */
static void test_discover_per_mount_namespace(void **state) {
  char *path = test_cgroup_name();
  struct spec_linux l = {0};
  l.cgroups_path = path;
  struct cgroup *cg = NULL;
  ASSERT_OK(cgroup_create("cm-test", &l, CGROUP_MANAGER_CGROUPFS, &cg, &err)); /* fills the cache */
  ASSERT_OK(cgroup_destroy(cg, &err));
  cgroup_free(cg);
  char moved[] = "/tmp/cm-test-v1ns.XXXXXX";
  assert_non_null(mkdtemp(moved));
  pid_t child = fork();
  assert_true(child >= 0);
  if (child == 0) {
    if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
        mount("/sys/fs/cgroup/pids", moved, NULL, MS_MOVE, NULL) < 0 ||
        mount("cm-test", "/sys/fs/cgroup/pids", "tmpfs", 0, "size=64k") < 0)
      _exit(10);
    struct cgroup *mine = NULL;
    struct cm_error *e = NULL;
    if (cgroup_create("cm-test", &l, CGROUP_MANAGER_CGROUPFS, &mine, &e) < 0)
      _exit(11);
    if (path_exists("/sys/fs/cgroup/pids%s", path))
      _exit(12); /* the parent's answer, stale here */
    if (!path_exists("%s%s", moved, path))
      _exit(13);
    _exit(cgroup_destroy(mine, &e) < 0 ? 14 : 0);
  }
  int status = 0;
  assert_int_equal(waitpid(child, &status, 0), child);
  rmdir(moved);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fail_msg(
        "child: status %#x (10 setup, 11 create, 12 stale hierarchy, 13 none at the moved one, 14 destroy)",
        status);
  /* And this process, in its own namespace still, sees the hierarchy where it was. */
  ASSERT_OK(cgroup_create("cm-test", &l, CGROUP_MANAGER_CGROUPFS, &cg, &err));
  assert_true(path_exists("/sys/fs/cgroup/pids%s", path));
  ASSERT_OK(cgroup_destroy(cg, &err));
  cgroup_free(cg);
  assert_gone(path);
  free(path);
}

int main(void) {
  struct statfs st;
  if (statfs("/sys/fs/cgroup", &st) < 0 || st.f_type == CGROUP2_SUPER_MAGIC || geteuid() != 0) {
    printf("test_cgroup_v1: skipped (needs root on a cgroup v1 or hybrid host)\n");
    return 0;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_full_lifecycle, teardown),
      cmocka_unit_test_teardown(test_kill_term_and_destroy_kills_rest, teardown),
      cmocka_unit_test_teardown(test_devices_enforced, teardown),
      cmocka_unit_test_teardown(test_default_and_relative_paths, teardown),
      cmocka_unit_test_teardown(test_bad_paths_and_drivers, teardown),
      cmocka_unit_test_teardown(test_disabled_manager, teardown),
      cmocka_unit_test_teardown(test_errors_name_field_and_clean_up, teardown),
      cmocka_unit_test_teardown(test_hybrid_hugetlb, teardown),
      cmocka_unit_test_teardown(test_reuse_only_when_empty, teardown),
      cmocka_unit_test_teardown(test_update, teardown),
      cmocka_unit_test_teardown(test_cpu_burst, teardown),
      cmocka_unit_test_teardown(test_discover_per_mount_namespace, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
