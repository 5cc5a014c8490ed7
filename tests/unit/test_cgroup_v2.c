/* cgroup driver on cgroup v2. On a hybrid host (this machine) the test process first makes a
 * private mount namespace with cgroup2 mounted at /sys/fs/cgroup (DESIGN.md §5), which gives a
 * unified view with only the controllers cgroup2 holds here (hugetlb). What needs pids/memory/cpu
 * is checked when those controllers are there (the VM harness) and otherwise checked to fail
 * with a clear error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <linux/magic.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/vfs.h>

#include "test_cgroup_util.h"

#define ROOT "/sys/fs/cgroup"

static int teardown(void **state) {
  cleanup_test_leftovers(ROOT);
  return 0;
}

static bool root_has(const char *controller) {
  char *list = read_text(ROOT "/cgroup.controllers");
  bool r = false;
  if (list != NULL) {
    for (char *tok = strtok(list, " \n"); tok; tok = strtok(NULL, " \n"))
      r = r || strcmp(tok, controller) == 0;
  }
  free(list);
  return r;
}

static void assert_file(const char *path, const char *file, const char *want) {
  char *got = read_text(ROOT "%s/%s", path, file);
  if (got == NULL)
    fail_msg("cannot read " ROOT "%s/%s", path, file);
  got[strcspn(got, "\n")] = '\0';
  if (strcmp(got, want) != 0)
    fail_msg("%s/%s: got \"%s\", want \"%s\"", path, file, got, want);
  free(got);
}

static struct cgroup *create_or_fail(const char *path, struct spec_linux *l) {
  l->cgroups_path = (char *)path;
  struct cgroup *cg = NULL;
  ASSERT_OK(cgroup_create("cm-test", l, CGROUP_MANAGER_CGROUPFS, &cg, &err));
  return cg;
}

static void destroy_and_check(struct cgroup *cg, const char *path) {
  ASSERT_OK(cgroup_destroy(cg, &err));
  cgroup_free(cg);
  if (path_exists(ROOT "%s", path))
    fail_msg(ROOT "%s still exists", path);
}

static void test_lifecycle(void **state) {
  char *path = test_cgroup_name();
  struct spec_linux l = {0};
  struct cgroup *cg = create_or_fail(path, &l);
  char *saved = cgroup_serialize(cg);
  assert_non_null(strstr(saved, "v2:"));
  assert_non_null(strstr(saved, path));

  pid_t child = spawn_sleeper();
  ASSERT_OK(cgroup_enter(cg, child, &err));
  char *own = read_text("/proc/%d/cgroup", (int)child);
  char *want = NULL;
  assert_true(asprintf(&want, "0::%s\n", path) > 0);
  assert_non_null(strstr(own, want));
  free(want);
  free(own);
  char *procs = read_text(ROOT "%s/cgroup.procs", path);
  assert_int_equal(atoi(procs), child);
  free(procs);

  ASSERT_OK(cgroup_freeze(cg, true, &err));
  assert_int_equal(cgroup_is_frozen(cg, NULL), 1);
  char *events = read_text(ROOT "%s/cgroup.events", path);
  assert_non_null(strstr(events, "frozen 1"));
  free(events);
  ASSERT_OK(cgroup_freeze(cg, false, &err));
  assert_int_equal(cgroup_is_frozen(cg, NULL), 0);
  assert_int_equal(wait_proc_state(child, 'S'), 'S');

  struct cm_error *err = NULL;
  struct cgroup *again = cgroup_deserialize(saved, &err);
  assert_non_null(again);
  free(saved);
  pid_t *pids = NULL;
  size_t n = 0;
  ASSERT_OK(cgroup_pids(again, &pids, &n, &err));
  assert_int_equal(n, 1);
  assert_int_equal(pids[0], child);
  free(pids);
  ASSERT_OK(cgroup_kill_all(again, SIGKILL, &err)); /* cgroup.kill */
  int status;
  assert_int_equal(waitpid(child, &status, 0), child);
  assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  cgroup_free(again);
  destroy_and_check(cg, path);
  free(path);
}

static void test_kill_term_and_nested(void **state) {
  char *path = test_cgroup_name();
  struct spec_linux l = {0};
  struct cgroup *cg = create_or_fail(path, &l);
  pid_t a = spawn_sleeper(), b = spawn_sleeper();
  ASSERT_OK(cgroup_enter(cg, a, &err));
  /* A sub-cgroup the container made itself: pids and destroy must see into it. */
  char sub[256];
  snprintf(sub, sizeof(sub), ROOT "%s/inner", path);
  assert_int_equal(mkdir(sub, 0755), 0);
  char pid_text[32];
  snprintf(pid_text, sizeof(pid_text), "%d", (int)b);
  FILE *f = fopen(strcat(sub, "/cgroup.procs"), "we");
  assert_non_null(f);
  fputs(pid_text, f);
  assert_int_equal(fclose(f), 0);
  pid_t *pids = NULL;
  size_t n = 0;
  ASSERT_OK(cgroup_pids(cg, &pids, &n, &err));
  assert_int_equal(n, 2);
  free(pids);
  ASSERT_OK(cgroup_kill_all(cg, SIGTERM, &err));
  int status;
  assert_int_equal(waitpid(a, &status, 0), a);
  assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
  assert_int_equal(waitpid(b, &status, 0), b);
  assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);

  /* Paused: a catchable signal leaves it paused; SIGKILL (cgroup.kill) kills it anyway. */
  pid_t p = spawn_sleeper();
  ASSERT_OK(cgroup_enter(cg, p, &err));
  ASSERT_OK(cgroup_freeze(cg, true, &err));
  ASSERT_OK(cgroup_kill_all(cg, SIGTERM, &err));
  assert_int_equal(cgroup_is_frozen(cg, NULL), 1);
  ASSERT_OK(cgroup_kill_all(cg, SIGKILL, &err));
  assert_int_equal(waitpid(p, &status, 0), p);
  assert_true(WIFSIGNALED(status));
  ASSERT_OK(cgroup_freeze(cg, false, &err));

  pid_t c = spawn_sleeper();
  ASSERT_OK(cgroup_enter(cg, c, &err));
  destroy_and_check(cg, path); /* kills c, removes inner too */
  assert_int_equal(waitpid(c, &status, 0), c);
  assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  free(path);
}

/* The BPF device filter: deny by default, rules in order, later rules win per access bit. */
static void check_kmsg_read(struct spec_device_rule *rules, size_t n, int want_errno) {
  char *path = test_cgroup_name();
  struct spec_linux l = {0};
  l.resources.devices = rules;
  l.resources.n_devices = n;
  struct cgroup *cg = create_or_fail(path, &l);
  int got = run_in_cgroup(cg, open_read, "/dev/kmsg");
  int null_ok = run_in_cgroup(cg, open_read, "/dev/null");
  destroy_and_check(cg, path);
  free(path);
  if (got != want_errno)
    fail_msg("rules %zu: open /dev/kmsg: got %s, want %s", n, strerror(got), strerror(want_errno));
  assert_int_equal(null_ok, 0); /* the defaults are always allowed */
}

static void test_devices_bpf(void **state) {
  struct spec_device_rule deny_all[] = {dev_rule(false, 'a', -1, -1, "rwm")};
  check_kmsg_read(deny_all, 1, EPERM);
  check_kmsg_read(NULL, 0, EPERM); /* no rules: still deny-by-default */
  struct spec_device_rule allow_kmsg[] = {deny_all[0], dev_rule(true, 'c', 1, 11, "r")};
  check_kmsg_read(allow_kmsg, 2, 0);
  struct spec_device_rule allow_then_deny[] = {deny_all[0], dev_rule(true, 'c', 1, 11, "r"),
                                               dev_rule(false, 'c', 1, 11, "rwm")};
  check_kmsg_read(allow_then_deny, 3, EPERM);
  struct spec_device_rule allow_all_deny_write[] = {dev_rule(true, 'a', -1, -1, "rwm"),
                                                    dev_rule(false, 'c', 1, 11, "w")};
  check_kmsg_read(allow_all_deny_write, 2, 0);
  struct spec_device_rule allow_all_deny_read[] = {dev_rule(true, 'a', -1, -1, "rwm"),
                                                   dev_rule(false, 'c', 1, -1, "r")};
  check_kmsg_read(allow_all_deny_read, 2, EPERM);
  struct spec_device_rule wrong_type[] = {dev_rule(true, 'b', 1, 11, "rwm")};
  check_kmsg_read(wrong_type, 1, EPERM);
}

/* Updating the device policy replaces the old program (not stacked on it). */
static void test_devices_update(void **state) {
  char *path = test_cgroup_name();
  struct spec_linux l = {0};
  struct cgroup *cg = create_or_fail(path, &l);
  assert_int_equal(run_in_cgroup(cg, open_read, "/dev/kmsg"), EPERM);
  struct spec_resources r = {0};
  struct spec_device_rule rules[] = {dev_rule(true, 'c', 1, 11, "r")};
  r.devices = rules;
  r.n_devices = 1;
  ASSERT_OK(cgroup_update(cg, &r, &err));
  assert_int_equal(run_in_cgroup(cg, open_read, "/dev/kmsg"), 0);
  destroy_and_check(cg, path);
  free(path);
}

static void test_unified_keys(void **state) {
  char *path = test_cgroup_name();
  struct spec_linux l = {0};
  struct cgroup *cg = NULL;
  struct spec_kv bad[] = {{"../x.max", "1"}, {".hidden.max", "1"}, {"noprefix", "1"}, {"a/b.max", "1"}};
  for (size_t i = 0; i < 4; i++) {
    l.resources.unified = (struct spec_kv_list){&bad[i], 1};
    l.cgroups_path = path;
    ASSERT_FAILS_WITH(cgroup_create("cm-test", &l, CGROUP_MANAGER_CGROUPFS, &cg, &err), "not a cgroup interface file");
    assert_false(path_exists(ROOT "%s", path));
  }
  if (!root_has("memory")) {
    struct spec_kv mem = {"memory.high", "1000000"};
    l.resources.unified = (struct spec_kv_list){&mem, 1};
    ASSERT_FAILS_WITH(cgroup_create("cm-test", &l, CGROUP_MANAGER_CGROUPFS, &cg, &err),
                      "linux.resources.unified.\"memory.high\": the memory controller is not available");
    assert_false(path_exists(ROOT "%s", path));
  }
  struct spec_kv good[] = {{"cgroup.max.descendants", "7"}, {"hugetlb.2MB.max", "2097152"}};
  l.resources.unified = (struct spec_kv_list){good, root_has("hugetlb") ? 2 : 1};
  cg = create_or_fail(path, &l);
  assert_file(path, "cgroup.max.descendants", "7");
  if (root_has("hugetlb"))
    assert_file(path, "hugetlb.2MB.max", "2097152");
  destroy_and_check(cg, path);
  free(path);
}

static void test_resources(void **state) {
  char *path = test_cgroup_name();
  struct spec_linux l = {0};
  struct spec_resources *r = &l.resources;
  r->memory.limit = (struct spec_opt_i64){true, 64 << 20};
  r->memory.swap = (struct spec_opt_i64){true, 96 << 20};
  r->has_pids = true;
  r->pids_limit = 20;
  r->cpu.shares = (struct spec_opt_u64){true, 1024};
  r->cpu.quota = (struct spec_opt_i64){true, 50000};
  if (!root_has("memory") || !root_has("pids") || !root_has("cpu")) {
    /* This machine's unified view: the error names the field and the missing controller. */
    l.cgroups_path = path;
    struct cgroup *cg = NULL;
    ASSERT_FAILS_WITH(cgroup_create("cm-test", &l, CGROUP_MANAGER_CGROUPFS, &cg, &err),
                      root_has("memory") ? "controller is not available" : "linux.resources.memory: the memory controller");
    assert_false(path_exists(ROOT "%s", path));
    free(path);
    return;
  }
  struct cgroup *cg = create_or_fail(path, &l);
  assert_file(path, "memory.max", "67108864");
  assert_file(path, "memory.swap.max", "33554432");
  assert_file(path, "pids.max", "20");
  assert_file(path, "cpu.weight", "39"); /* 1 + (1022 * 9999) / 262142 */
  assert_file(path, "cpu.max", "50000 100000");
  destroy_and_check(cg, path);
  free(path);
}

static void test_realtime_refused(void **state) {
  char *path = test_cgroup_name();
  struct spec_linux l = {0};
  l.resources.cpu.realtime_runtime = (struct spec_opt_i64){true, 1000};
  l.cgroups_path = path;
  struct cgroup *cg = NULL;
  ASSERT_FAILS_WITH(cgroup_create("cm-test", &l, CGROUP_MANAGER_CGROUPFS, &cg, &err),
                    "linux.resources.cpu.realtimeRuntime: realtime scheduling limits are not supported on cgroup v2");
  assert_false(path_exists(ROOT "%s", path));
  free(path);
}

/* Put cgroup2 at /sys/fs/cgroup in a private mount namespace (hybrid hosts). */
static int enter_unified_view(void) {
  struct statfs st;
  if (statfs(ROOT, &st) == 0 && st.f_type == CGROUP2_SUPER_MAGIC)
    return 0;
  if (statfs(ROOT "/unified", &st) < 0 || st.f_type != CGROUP2_SUPER_MAGIC)
    return -1;
  if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
      umount2(ROOT, MNT_DETACH) < 0 || mount("none", ROOT, "cgroup2", 0, NULL) < 0)
    return -1;
  return statfs(ROOT, &st) == 0 && st.f_type == CGROUP2_SUPER_MAGIC ? 0 : -1;
}

int main(void) {
  if (geteuid() != 0 || enter_unified_view() < 0) {
    printf("test_cgroup_v2: skipped (needs root and a cgroup2 hierarchy: %s)\n", strerror(errno));
    return 0;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_lifecycle, teardown),
      cmocka_unit_test_teardown(test_kill_term_and_nested, teardown),
      cmocka_unit_test_teardown(test_devices_bpf, teardown),
      cmocka_unit_test_teardown(test_devices_update, teardown),
      cmocka_unit_test_teardown(test_unified_keys, teardown),
      cmocka_unit_test_teardown(test_resources, teardown),
      cmocka_unit_test_teardown(test_realtime_refused, teardown),
  };
  /* Creating cgroups enables the available controllers in the root; put it back as it was. */
  char *before = read_text(ROOT "/cgroup.subtree_control");
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  char *after = read_text(ROOT "/cgroup.subtree_control");
  for (char *tok = after ? strtok(after, " \n") : NULL; tok; tok = strtok(NULL, " \n")) {
    if (before != NULL && strstr(before, tok) != NULL)
      continue;
    FILE *f = fopen(ROOT "/cgroup.subtree_control", "we");
    if (f != NULL) {
      fprintf(f, "-%s", tok);
      fclose(f);
    }
  }
  free(before);
  free(after);
  return failed;
}
