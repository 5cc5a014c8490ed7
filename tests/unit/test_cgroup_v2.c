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

#include <linux/bpf.h>
#include <linux/magic.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>

#include "cgroup/internal.h" /* cg_device_rules: the rule list the filter is built from */
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

/* The filter against a reference evaluator, on random rule sets: each requested access bit is
 * decided by the last rule that matches the device and covers the bit; a request passes when
 * every bit it carries was allowed. Requests are real: opens of nodes of major 1 (the mem
 * driver: null, zero, kmsg, and minor 200, which opens with ENXIO once the filter lets it
 * through) and mknod of char and block nodes. No driver is ever loaded: major 1 exists, and
 * mknod opens nothing. */
struct dev_probe {
  char type; /* 'c' or 'b' */
  unsigned major, minor;
  unsigned access; /* BPF_DEVCG_ACC_* bits: 'm' is a mknod, the others an open */
};

static const unsigned probe_open_minors[] = {3, 5, 11, 200};
static const struct {
  char type;
  unsigned major, minor;
} probe_mknod_devs[] = {{'c', 1, 3}, {'c', 1, 11}, {'c', 5, 1}, {'c', 240, 7}, {'c', 1, 200},
                        {'b', 1, 3}, {'b', 1, 11}, {'b', 5, 1}, {'b', 240, 7}, {'b', 8, 0}};

static size_t make_probes(struct dev_probe *out) {
  size_t n = 0;
  const unsigned open_modes[] = {BPF_DEVCG_ACC_READ, BPF_DEVCG_ACC_WRITE, BPF_DEVCG_ACC_READ | BPF_DEVCG_ACC_WRITE};
  for (size_t i = 0; i < sizeof(probe_open_minors) / sizeof(probe_open_minors[0]); i++)
    for (size_t m = 0; m < 3; m++)
      out[n++] = (struct dev_probe){'c', 1, probe_open_minors[i], open_modes[m]};
  for (size_t i = 0; i < sizeof(probe_mknod_devs) / sizeof(probe_mknod_devs[0]); i++)
    out[n++] = (struct dev_probe){probe_mknod_devs[i].type, probe_mknod_devs[i].major, probe_mknod_devs[i].minor,
                                  BPF_DEVCG_ACC_MKNOD};
  return n;
}

static unsigned rule_access(const char *access) {
  unsigned bits = 0;
  for (const char *c = access; *c; c++)
    bits |= *c == 'r' ? BPF_DEVCG_ACC_READ : *c == 'w' ? BPF_DEVCG_ACC_WRITE : BPF_DEVCG_ACC_MKNOD;
  return access[0] ? bits : BPF_DEVCG_ACC_READ | BPF_DEVCG_ACC_WRITE | BPF_DEVCG_ACC_MKNOD;
}

static bool reference_allows(const struct spec_device_rule *rules, size_t n, const struct dev_probe *pr) {
  unsigned allowed = 0, decided = 0;
  for (size_t k = n; k-- > 0;) {
    const struct spec_device_rule *r = &rules[k];
    if ((r->type != 'a' && r->type != pr->type) || (r->major >= 0 && r->major != pr->major) ||
        (r->minor >= 0 && r->minor != pr->minor))
      continue;
    unsigned bits = rule_access(r->access) & pr->access & ~decided;
    decided |= bits;
    if (r->allow)
      allowed |= bits;
  }
  return allowed == pr->access;
}

struct probe_run {
  const char *dir; /* holds the open nodes, made outside the cgroup */
  const struct dev_probe *probes;
  size_t n;
  int *results; /* shared with the child: 0 allowed, EPERM denied, else an unexpected errno */
};

static int run_probes(void *arg) {
  struct probe_run *run = arg;
  for (size_t i = 0; i < run->n; i++) {
    const struct dev_probe *pr = &run->probes[i];
    char path[256];
    int r;
    if (pr->access == BPF_DEVCG_ACC_MKNOD) {
      snprintf(path, sizeof(path), "%s/new-%c-%u-%u", run->dir, pr->type, pr->major, pr->minor);
      r = mknod(path, (pr->type == 'c' ? S_IFCHR : S_IFBLK) | 0600, makedev(pr->major, pr->minor)) == 0 ? 0 : errno;
      unlink(path);
    } else {
      snprintf(path, sizeof(path), "%s/open-%u", run->dir, pr->minor);
      int flags = pr->access == BPF_DEVCG_ACC_READ ? O_RDONLY : pr->access == BPF_DEVCG_ACC_WRITE ? O_WRONLY : O_RDWR;
      int fd = open(path, flags | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
      r = fd >= 0 ? 0 : errno;
      if (fd >= 0)
        close(fd);
      if (r == ENXIO && pr->minor == 200)
        r = 0; /* past the filter, refused by the driver */
    }
    run->results[i] = r;
  }
  return 0;
}

static uint32_t xorshift(uint32_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return *s;
}

static void test_devices_bpf_matches_reference(void **state) {
  char dir[] = "/tmp/cm-test-devices-XXXXXX";
  assert_non_null(mkdtemp(dir));
  for (size_t i = 0; i < sizeof(probe_open_minors) / sizeof(probe_open_minors[0]); i++) {
    char path[256];
    snprintf(path, sizeof(path), "%s/open-%u", dir, probe_open_minors[i]);
    assert_int_equal(mknod(path, S_IFCHR | 0600, makedev(1, probe_open_minors[i])), 0);
  }
  struct dev_probe probes[32];
  size_t n_probes = make_probes(probes);
  int *results = mmap(NULL, sizeof(int) * n_probes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  assert_true(results != MAP_FAILED);
  static const char types[] = {'a', 'c', 'b'};
  static const int64_t majors[] = {-1, 1, 5, 240, 8};
  static const int64_t minors[] = {-1, 3, 11, 200, 7, 1};
  static const char *accesses[] = {"", "r", "w", "m", "rw", "rm", "wm", "rwm"};
  uint32_t seed = 0x5eed1234;
  for (int set = 0; set < 200; set++) {
    struct spec_device_rule rules[8];
    size_t n_rules = xorshift(&seed) % 8;
    for (size_t k = 0; k < n_rules; k++)
      rules[k] = dev_rule(xorshift(&seed) % 2, types[xorshift(&seed) % 3], majors[xorshift(&seed) % 5],
                          minors[xorshift(&seed) % 6], accesses[xorshift(&seed) % 8]);
    char *path = test_cgroup_name();
    struct spec_linux l = {0};
    l.resources.devices = rules;
    l.resources.n_devices = n_rules;
    /* Odd sets: the filter of exactly these rules, without the defaults (which allow every
     * mknod and so would hide the 'm' bit). */
    bool raw = set % 2 == 1;
    if (raw)
      l.resources.n_devices = 0;
    struct cgroup *cg = create_or_fail(path, &l);
    if (raw)
      ASSERT_OK(cg_bpf_devices_apply(cg->v2_dir, rules, n_rules, &err));
    memset(results, 0xff, sizeof(int) * n_probes);
    struct probe_run run = {dir, probes, n_probes, results};
    int status = run_in_cgroup(cg, run_probes, &run);
    destroy_and_check(cg, path);
    free(path);
    assert_int_equal(status, 0);
    size_t n_all = n_rules;
    struct spec_device_rule *all = raw ? NULL : cg_device_rules(&l.resources, NULL, 0, &n_all);
    const struct spec_device_rule *checked = raw ? rules : all;
    for (size_t i = 0; i < n_probes; i++) {
      const struct dev_probe *pr = &probes[i];
      bool want = reference_allows(checked, n_all, pr);
      if (results[i] != 0 && results[i] != EPERM)
        fail_msg("set %d: %c %u:%u access %u: unexpected %s", set, pr->type, pr->major, pr->minor, pr->access,
                 strerror(results[i]));
      if ((results[i] == 0) != want) {
        for (size_t k = 0; k < n_rules; k++)
          print_message("  rule %zu: %s %c %lld:%lld \"%s\"\n", k, rules[k].allow ? "allow" : "deny", rules[k].type,
                        (long long)rules[k].major, (long long)rules[k].minor, rules[k].access);
        fail_msg("set %d%s: %c %u:%u access %u: filter says %s, reference says %s", set, raw ? " (no defaults)" : "", pr->type, pr->major,
                 pr->minor, pr->access, results[i] == 0 ? "allow" : "deny", want ? "allow" : "deny");
      }
    }
    free(all);
  }
  munmap(results, sizeof(int) * n_probes);
  for (size_t i = 0; i < sizeof(probe_open_minors) / sizeof(probe_open_minors[0]); i++) {
    char path[256];
    snprintf(path, sizeof(path), "%s/open-%u", dir, probe_open_minors[i]);
    unlink(path);
  }
  rmdir(dir);
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

/* An existing cgroup is reused only when empty; one we just made is not listed at all. And
 * destroy removes sub-cgroups too (the way past the one-rmdir fast path). */
static void test_reuse_and_destroy_tree(void **state) {
  char *path = test_cgroup_name();
  char *dir = NULL;
  assert_true(asprintf(&dir, ROOT "%s", path) > 0);
  assert_int_equal(mkdir(dir, 0755), 0);
  pid_t squatter = spawn_sleeper();
  char pid[32];
  snprintf(pid, sizeof(pid), "%d", (int)squatter);
  struct cm_error *werr = NULL;
  assert_int_equal(cg_write(dir, "cgroup.procs", pid, NULL, &werr), 0);
  struct spec_linux l = {.cgroups_path = path};
  struct cgroup *cg = NULL;
  ASSERT_FAILS_WITH(cgroup_create("cm-test", &l, CGROUP_MANAGER_CGROUPFS, &cg, &err), "already exists and has processes");
  assert_true(path_exists("%s", dir)); /* not ours to remove */
  kill(squatter, SIGKILL);
  assert_int_equal(waitpid(squatter, NULL, 0), squatter);

  cg = create_or_fail(path, &l); /* empty now: reused */
  char *sub = NULL;
  assert_true(asprintf(&sub, "%s/inner", dir) > 0);
  assert_int_equal(mkdir(sub, 0755), 0);
  pid_t c = spawn_sleeper();
  snprintf(pid, sizeof(pid), "%d", (int)c);
  assert_int_equal(cg_write(sub, "cgroup.procs", pid, NULL, &werr), 0);
  destroy_and_check(cg, path);
  assert_int_equal(waitpid(c, NULL, 0), c);
  free(sub);
  free(dir);
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
  r->cpu.burst = (struct spec_opt_u64){true, 50000};
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
  assert_file(path, "cpu.max.burst", "50000");
  /* A quota below the burst (the kernel refuses it while the burst is larger) goes in after
   * the burst is zeroed, and the new burst follows. */
  struct spec_resources u = {0};
  u.cpu.quota = (struct spec_opt_i64){true, 10000};
  u.cpu.burst = (struct spec_opt_u64){true, 5000};
  ASSERT_OK(cgroup_update(cg, &u, &err));
  assert_file(path, "cpu.max", "10000 100000");
  assert_file(path, "cpu.max.burst", "5000");
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

/* The ci profile's delegation (delegate.c): the directory and cgroup.procs, cgroup.threads and
 * cgroup.subtree_control to the job's root, its limits host root's; the leaf wholly the job's;
 * the state keeps it; exec joins the leaf; destroy kills and removes what the job made below. */
static void test_delegate(void **state) {
  char *path = test_cgroup_name();
  struct spec_linux l = {0};
  struct cgroup *cg = create_or_fail(path, &l);
  struct cm_error *err = NULL;
  assert_int_equal(cgroup_delegate(cg, 100000, 100001, &err), 1);
  static const char *const mine[] = {"", "/cgroup.procs", "/cgroup.threads", "/cgroup.subtree_control", "/job",
                                     "/job/cgroup.procs", "/job/cgroup.subtree_control", NULL};
  for (size_t i = 0; mine[i]; i++) {
    char f[256];
    struct stat st;
    snprintf(f, sizeof(f), ROOT "%s%s", path, mine[i]);
    assert_int_equal(stat(f, &st), 0);
    if (st.st_uid != 100000 || st.st_gid != 100001)
      fail_msg("%s: owner %u:%u, want 100000:100001", f, (unsigned)st.st_uid, (unsigned)st.st_gid);
  }
  static const char *const hosts[] = {"/cgroup.max.depth", "/cgroup.max.descendants", "/cgroup.freeze",
                                      "/cgroup.type", "/memory.max", "/pids.max", "/cpu.max", NULL};
  for (size_t i = 0; hosts[i]; i++) {
    char f[256];
    struct stat st;
    snprintf(f, sizeof(f), ROOT "%s%s", path, hosts[i]);
    if (stat(f, &st) < 0)
      continue; /* a controller this hierarchy lacks */
    if (st.st_uid != 0 || st.st_gid != 0)
      fail_msg("%s: owner %u:%u, want host root's", f, (unsigned)st.st_uid, (unsigned)st.st_gid);
  }
  assert_file(path, "cgroup.max.depth", "16");
  assert_file(path, "cgroup.max.descendants", "1024");
  char *saved = cgroup_serialize(cg);
  assert_int_equal(strncmp(saved, "delegated-v2:", 13), 0);
  struct cgroup *again = cgroup_deserialize(saved, &err);
  assert_non_null(again);
  assert_true(cgroup_is_delegated(again));
  free(saved);
  cgroup_free(cg);

  /* The first process moves itself into the leaf (stage1 does it through this fd). */
  int procs = cgroup_open_leaf_procs(again, &err);
  assert_true(procs >= 0);
  fflush(stdout);
  pid_t first = fork();
  if (first == 0) {
    if (cgroup_enter_leaf_self(procs, NULL) < 0)
      _exit(1);
    for (;;)
      pause();
  }
  tracked_children[n_tracked_children++] = first;
  close(procs);
  char *want = NULL;
  assert_true(asprintf(&want, "0::%s/job\n", path) > 0);
  for (int i = 0; i < 100; i++) {
    char *own = read_text("/proc/%d/cgroup", (int)first);
    bool there = own && strstr(own, want) != NULL;
    free(own);
    if (there)
      break;
    usleep(10000);
  }
  char *own = read_text("/proc/%d/cgroup", (int)first);
  assert_non_null(strstr(own, want));
  free(own);
  /* Then the controllers go down, and a cgroup of the job's own takes a process. */
  ASSERT_OK(cgroup_delegate_controllers(again, &err));
  char *available = read_text(ROOT "%s/cgroup.controllers", path);
  char *handed = read_text(ROOT "%s/cgroup.subtree_control", path);
  assert_string_equal(available, handed);
  free(available);
  free(handed);
  char sub[256];
  snprintf(sub, sizeof(sub), ROOT "%s/own", path);
  assert_int_equal(mkdir(sub, 0755), 0);
  strcat(sub, "/deeper");
  assert_int_equal(mkdir(sub, 0755), 0);
  pid_t nested = spawn_sleeper();
  char pid_text[32];
  snprintf(pid_text, sizeof(pid_text), "%d", (int)nested);
  FILE *f = fopen(strcat(sub, "/cgroup.procs"), "we");
  assert_non_null(f);
  fputs(pid_text, f);
  assert_int_equal(fclose(f), 0);
  /* exec's process: into the leaf, never the delegated cgroup itself. */
  struct cgroup *leaf = NULL;
  ASSERT_OK(cgroup_open_leaf(again, &leaf, &err));
  pid_t exec = spawn_sleeper();
  ASSERT_OK(cgroup_enter(leaf, exec, &err));
  own = read_text("/proc/%d/cgroup", (int)exec);
  assert_non_null(strstr(own, want));
  free(own);
  cgroup_free(leaf);
  ASSERT_OK(cgroup_add_process(again, spawn_sleeper(), &err)); /* the egress broker */
  char *procs_text = read_text(ROOT "%s/cgroup.procs", path);
  assert_string_equal(procs_text, "");
  free(procs_text);
  destroy_and_check(again, path);
  free(want);
  free(path);
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
      cmocka_unit_test_teardown(test_devices_bpf_matches_reference, teardown),
      cmocka_unit_test_teardown(test_devices_update, teardown),
      cmocka_unit_test_teardown(test_reuse_and_destroy_tree, teardown),
      cmocka_unit_test_teardown(test_unified_keys, teardown),
      cmocka_unit_test_teardown(test_resources, teardown),
      cmocka_unit_test_teardown(test_realtime_refused, teardown),
      cmocka_unit_test_teardown(test_delegate, teardown),
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
