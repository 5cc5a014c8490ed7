/* policy/: the mcp profile tightens a config and never loosens it (a looser limit gets the
 * profile's, a stricter one keeps its own), refuses the host network/pid namespaces and sensitive
 * bind sources naming the profile, reports every change, is idempotent; the effective profile
 * (--profile vs annotation) only ever goes up; policy_apply_exec tightens an exec'd process. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka.h needs the four above first. */
#include <cmocka.h>

#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/mount.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <unistd.h>

#include "policy/profile.h"

/* A permissive config: capabilities, no nnp, rw root, sysctls, a tun device, loose limits. */
#define BASE_PROCESS                                                                                         \
  "\"process\":{\"user\":{\"uid\":0,\"gid\":0},\"args\":[\"sh\"],\"cwd\":\"/\",\"noNewPrivileges\":false,"   \
  "\"capabilities\":{\"bounding\":[\"CAP_SYS_ADMIN\",\"CAP_CHOWN\"],\"effective\":[\"CAP_SYS_ADMIN\"],"      \
  "\"permitted\":[\"CAP_SYS_ADMIN\"],\"inheritable\":[\"CAP_CHOWN\"],\"ambient\":[\"CAP_CHOWN\"]},"          \
  "\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"soft\":%s,\"hard\":%s}]}"

#define ALL_NAMESPACES                                                                                       \
  "\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"network\"},{\"type\":\"ipc\"},{\"type\":\"uts\"},"         \
  "{\"type\":\"mount\"}]"

static char *config_json(const char *nofile_soft, const char *nofile_hard, const char *resources,
                         const char *namespaces, const char *mounts) {
  char *process = NULL, *json = NULL;
  if (asprintf(&process, BASE_PROCESS, nofile_soft, nofile_hard) < 0)
    abort();
  if (asprintf(&json,
               "{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"rootfs\"},%s,\"mounts\":[%s],"
               "\"linux\":{%s,\"resources\":{%s},\"sysctl\":{\"net.ipv4.ip_forward\":\"1\"},"
               "\"devices\":[{\"path\":\"/dev/net/tun\",\"type\":\"c\",\"major\":10,\"minor\":200},"
               "{\"path\":\"/dev/null\",\"type\":\"c\",\"major\":1,\"minor\":3}]}}",
               process, mounts ? mounts : "", namespaces ? namespaces : ALL_NAMESPACES,
               resources ? resources : "") < 0)
    abort();
  free(process);
  return json;
}

static struct spec *load(const char *json) {
  struct cm_error *err = NULL;
  struct spec *s = spec_load_string(json, strlen(json), "config.json", &err);
  if (s == NULL) {
    print_error("unexpected error: %s\n", err->msg);
    cm_error_free(err);
    fail();
  }
  return s;
}

static void apply_ok(struct spec *s, enum policy_profile p, struct policy_result *r) {
  struct cm_error *err = NULL;
  if (policy_apply(s, p, "/nonexistent-bundle", r, &err) < 0) {
    print_error("unexpected error: %s\n", err->msg);
    cm_error_free(err);
    fail();
  }
}

/* The error policy_apply gives (caller frees). */
static char *apply_fails(struct spec *s, enum policy_profile p) {
  struct cm_error *err = NULL;
  struct policy_result r;
  assert_int_equal(policy_apply(s, p, "/nonexistent-bundle", &r, &err), -1);
  assert_non_null(err);
  char *msg = strdup(err->msg);
  cm_error_free(err);
  return msg;
}

static const struct spec_rlimit *rlimit(const struct spec *s, int resource) {
  for (size_t i = 0; i < s->process->n_rlimits; i++)
    if (s->process->rlimits[i].resource == resource)
      return &s->process->rlimits[i];
  return NULL;
}

static bool report_mentions(const struct policy_result *r, const char *what) {
  for (size_t i = 0; i < r->report.count; i++)
    if (strstr(r->report.lines[i], what))
      return true;
  return false;
}

static bool strv_has(const struct spec_strv *v, const char *s) {
  for (size_t i = 0; i < v->count; i++)
    if (strcmp(v->items[i], s) == 0)
      return true;
  return false;
}

static const struct spec_mount *mount_at(const struct spec *s, const char *dest) {
  for (size_t i = 0; i < s->n_mounts; i++)
    if (strcmp(s->mounts[i].destination, dest) == 0)
      return &s->mounts[i];
  return NULL;
}

static void test_default_changes_nothing(void **state) {
  char *json = config_json("100000", "100000", NULL, NULL, NULL);
  struct spec *s = load(json);
  struct policy_result r;
  apply_ok(s, POLICY_PROFILE_DEFAULT, &r);
  assert_int_equal(r.report.count, 0);
  assert_false(r.stacked_seccomp.present);
  assert_false(s->process->no_new_privileges);
  assert_true(s->process->capabilities.bounding != 0);
  assert_int_equal(rlimit(s, RLIMIT_NOFILE)->soft, 100000);
  assert_null(spec_kv_get(&s->annotations, POLICY_PROFILE_ANNOTATION));
  policy_result_free(&r);
  spec_free(s);
  free(json);
}

static void test_mcp_looser_limits_get_the_profiles(void **state) {
  char *json = config_json("100000", "100000",
                           "\"memory\":{\"limit\":1073741824,\"swap\":2147483648},\"pids\":{\"limit\":1000},"
                           "\"cpu\":{\"quota\":200000,\"period\":100000,\"burst\":400000}",
                           NULL, NULL);
  struct spec *s = load(json);
  struct policy_result r;
  apply_ok(s, POLICY_PROFILE_MCP, &r);
  const struct spec_resources *res = &s->linux_.resources;
  assert_int_equal(res->memory.limit.value, 512LL * 1024 * 1024);
  assert_int_equal(res->memory.swap.value, 512LL * 1024 * 1024); /* memory+swap == memory: no swap */
  assert_int_equal(res->pids_limit, 256);
  assert_int_equal(res->cpu.quota.value, 100000);
  assert_int_equal(res->cpu.period.value, 100000);
  assert_int_equal(res->cpu.burst.value, 100000); /* one quota at most */
  assert_false(res->cpu.burst_optional);          /* the config's: an error where unsupported */
  assert_true(report_mentions(&r, "cpu.burst: 400000 -> 100000"));
  assert_int_equal(rlimit(s, RLIMIT_NOFILE)->soft, 1024);
  assert_int_equal(rlimit(s, RLIMIT_NOFILE)->hard, 4096);
  assert_non_null(rlimit(s, RLIMIT_CORE));
  assert_int_equal(rlimit(s, RLIMIT_CORE)->hard, 0);
  assert_true(report_mentions(&r, "memory.limit: 1073741824 -> 536870912"));
  assert_true(report_mentions(&r, "pids.limit: 1000 -> 256"));
  assert_true(report_mentions(&r, "RLIMIT_NOFILE"));
  policy_result_free(&r);
  spec_free(s);
  free(json);
}

static void test_mcp_unset_limits_are_set(void **state) {
  char *json = config_json("1024", "1024", NULL, NULL, NULL);
  struct spec *s = load(json);
  struct policy_result r;
  apply_ok(s, POLICY_PROFILE_MCP, &r);
  const struct spec_resources *res = &s->linux_.resources;
  assert_true(res->memory.limit.set);
  assert_int_equal(res->memory.limit.value, 512LL * 1024 * 1024);
  assert_true(res->has_pids);
  assert_int_equal(res->pids_limit, 256);
  assert_true(res->cpu.quota.set);
  assert_int_equal(res->cpu.quota.value, (int64_t)res->cpu.period.value);
  /* The quota's burst: unused time spent later, one quota at most (skipped where the kernel
   * has no such file: optional). */
  assert_true(res->cpu.burst.set);
  assert_int_equal(res->cpu.burst.value, res->cpu.period.value);
  assert_true(res->cpu.burst_optional);
  assert_true(report_mentions(&r, "cpu.burst: set to 100000"));
  policy_result_free(&r);
  spec_free(s);
  free(json);
}

static void test_mcp_stricter_limits_are_kept(void **state) {
  char *json = config_json("100", "200",
                           "\"memory\":{\"limit\":134217728,\"swap\":134217728},\"pids\":{\"limit\":10},"
                           "\"cpu\":{\"quota\":50000,\"period\":100000}",
                           NULL, NULL);
  struct spec *s = load(json);
  struct policy_result r;
  apply_ok(s, POLICY_PROFILE_MCP, &r);
  const struct spec_resources *res = &s->linux_.resources;
  assert_int_equal(res->memory.limit.value, 134217728);
  assert_int_equal(res->memory.swap.value, 134217728);
  assert_int_equal(res->pids_limit, 10);
  assert_int_equal(res->cpu.quota.value, 50000);
  assert_int_equal(res->cpu.burst.value, 50000); /* its quota's */
  assert_int_equal(rlimit(s, RLIMIT_NOFILE)->soft, 100);
  assert_int_equal(rlimit(s, RLIMIT_NOFILE)->hard, 200);
  assert_false(report_mentions(&r, "memory.limit"));
  assert_false(report_mentions(&r, "pids.limit"));
  assert_false(report_mentions(&r, "RLIMIT_NOFILE"));
  policy_result_free(&r);
  spec_free(s);
  free(json);
}

static void test_mcp_process_mounts_devices(void **state) {
  char *json =
      config_json("1024", "1024", NULL, NULL,
                  "{\"destination\":\"/dev\",\"type\":\"tmpfs\",\"source\":\"tmpfs\"},"
                  "{\"destination\":\"/sys\",\"type\":\"sysfs\",\"source\":\"sysfs\",\"options\":[\"rw\"]}");
  struct spec *s = load(json);
  struct policy_result r;
  apply_ok(s, POLICY_PROFILE_MCP, &r);
  const struct spec_process *p = s->process;
  assert_true(p->no_new_privileges);
  assert_true(p->capabilities.present);
  assert_int_equal(p->capabilities.bounding | p->capabilities.effective | p->capabilities.permitted |
                       p->capabilities.inheritable | p->capabilities.ambient,
                   0);
  assert_true(report_mentions(&r, "CAP_SYS_ADMIN"));
  assert_true(p->has_oom_score_adj);
  assert_int_equal(p->oom_score_adj, 1000);
  assert_true(s->root_readonly);
  /* /tmp and /dev/shm: size-limited tmpfs; the /dev tmpfs got a size; sysfs forced ro. */
  const struct spec_mount *tmp = mount_at(s, "/tmp");
  assert_non_null(tmp);
  assert_string_equal(tmp->type, "tmpfs");
  assert_true(strv_has(&tmp->options, "size=64m"));
  assert_non_null(mount_at(s, "/dev/shm"));
  assert_true(strv_has(&mount_at(s, "/dev")->options, "size=64m"));
  assert_true(strv_has(&mount_at(s, "/sys")->options, "ro"));
  assert_false(strv_has(&mount_at(s, "/sys")->options, "rw"));
  /* Docker's masked and read-only paths. */
  assert_true(strv_has(&s->linux_.masked_paths, "/proc/kcore"));
  assert_true(strv_has(&s->linux_.readonly_paths, "/proc/sys"));
  /* Only the standard devices; a deny-all device rule last; no sysctls; a cgroup namespace. */
  assert_int_equal(s->linux_.n_devices, 1);
  assert_string_equal(s->linux_.devices[0].path, "/dev/null");
  assert_true(report_mentions(&r, "/dev/net/tun"));
  const struct spec_resources *res = &s->linux_.resources;
  assert_true(res->n_devices > 0);
  assert_false(res->devices[res->n_devices - 1].allow);
  assert_int_equal(res->devices[res->n_devices - 1].type, 'a');
  assert_int_equal(s->linux_.sysctl.count, 0);
  assert_true(s->linux_.namespaces[SPEC_NS_CGROUP].present);
  /* The stacked filter and the annotation. */
  assert_true(r.stacked_seccomp.present);
  assert_true(r.stacked_seccomp.n_syscalls > 0);
  assert_string_equal(spec_kv_get(&s->annotations, POLICY_PROFILE_ANNOTATION), "mcp");
  policy_result_free(&r);
  spec_free(s);
  free(json);
}

static void test_mcp_is_idempotent(void **state) {
  char *json = config_json(
      "100000", "100000", "\"pids\":{\"limit\":1000}", NULL,
      "{\"destination\":\"/data\",\"type\":\"bind\",\"source\":\"/usr/share\",\"options\":[\"rbind\"]}");
  struct spec *s = load(json);
  struct policy_result r1, r2;
  apply_ok(s, POLICY_PROFILE_MCP, &r1);
  assert_true(r1.report.count > 5);
  apply_ok(s, POLICY_PROFILE_MCP, &r2);
  /* The second pass finds nothing to tighten: only the lines of what the profile adds on top
   * (the stacked filter, the Landlock layer) remain. */
  for (size_t i = 0; i < r2.report.count; i++)
    if (strncmp(r2.report.lines[i], "seccomp:", 8) != 0 && strncmp(r2.report.lines[i], "landlock:", 9) != 0) {
      print_error("second pass changed: %s\n", r2.report.lines[i]);
      fail();
    }
  policy_result_free(&r1);
  policy_result_free(&r2);
  spec_free(s);
  free(json);
}

/* mcp-audit's log-only filter is retired (issue 19): it enforces exactly mcp.json, and says so. */
static void test_mcp_audit_enforces_mcp(void **state) {
  char *json = config_json("1024", "1024", NULL, NULL, NULL);
  struct spec *s = load(json);
  struct policy_result r, m;
  apply_ok(s, POLICY_PROFILE_MCP_AUDIT, &r);
  assert_true(r.stacked_seccomp.present);
  assert_true(s->process->no_new_privileges);
  assert_string_equal(spec_kv_get(&s->annotations, POLICY_PROFILE_ANNOTATION), "mcp-audit");
  for (size_t i = 0; i < r.stacked_seccomp.n_syscalls; i++)
    assert_int_not_equal(r.stacked_seccomp.syscalls[i].action, SPEC_SECCOMP_LOG);
  assert_int_not_equal(r.stacked_seccomp.default_action, SPEC_SECCOMP_LOG);
  bool said = false;
  for (size_t i = 0; i < r.report.count; i++)
    said = said || strstr(r.report.lines[i], "mcp-audit enforces mcp.json") != NULL;
  assert_true(said);
  struct spec *s2 = load(json);
  apply_ok(s2, POLICY_PROFILE_MCP, &m);
  assert_int_equal(r.stacked_seccomp.n_syscalls, m.stacked_seccomp.n_syscalls);
  policy_result_free(&r);
  policy_result_free(&m);
  spec_free(s);
  spec_free(s2);
  free(json);
}

static void expect_refused(const char *namespaces, const char *mounts, const char *want) {
  char *json = config_json("1024", "1024", NULL, namespaces, mounts);
  struct spec *s = load(json);
  char *msg = apply_fails(s, POLICY_PROFILE_MCP);
  /* The error names the profile, so the user knows who refused and why. */
  if (strstr(msg, "profile mcp") == NULL || strstr(msg, want) == NULL) {
    print_error("\"%s\" does not mention \"profile mcp\" and \"%s\"\n", msg, want);
    fail();
  }
  free(msg);
  spec_free(s);
  free(json);
}

static void test_mcp_refuses_host_namespaces(void **state) {
  /* No network namespace: the host's. */
  expect_refused("\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"mount\"}]", NULL, "network");
  /* No pid namespace. */
  expect_refused("\"namespaces\":[{\"type\":\"network\"},{\"type\":\"mount\"}]", NULL, "pid");
  /* Joining the host's by path (init's, or ours, which is what a container without one shares). */
  expect_refused("\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"mount\"},"
                 "{\"type\":\"network\",\"path\":\"/proc/self/ns/net\"}]",
                 NULL, "network");
  expect_refused("\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"network\"},{\"type\":\"mount\"},"
                 "{\"type\":\"ipc\",\"path\":\"/proc/self/ns/ipc\"}]",
                 NULL, "ipc");
}

static void test_mcp_refuses_sensitive_binds(void **state) {
  static const char *const sources[] = {"/",
                                        "/etc",
                                        "/etc/passwd",
                                        "/var/run/docker.sock",
                                        "/run",
                                        "/proc",
                                        "/sys/fs",
                                        "/dev",
                                        "/root",
                                        "/var",
                                        "/home/someone/.ssh",
                                        "/srv/x/.aws/credentials",
                                        "/var/lib/docker"};
  for (size_t i = 0; i < sizeof(sources) / sizeof(sources[0]); i++) {
    char *mount = NULL;
    if (asprintf(&mount,
                 "{\"destination\":\"/x\",\"type\":\"bind\",\"source\":\"%s\",\"options\":[\"rbind\"]}",
                 sources[i]) < 0)
      abort();
    expect_refused(NULL, mount, "refused");
    free(mount);
  }
  /* A symlink to /etc is judged by where it leads. */
  char dir[] = "/tmp/cm-test-policy-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char link[128], mount[256];
  snprintf(link, sizeof(link), "%s/innocent", dir);
  assert_int_equal(symlink("/etc", link), 0);
  snprintf(mount, sizeof(mount), "{\"destination\":\"/x\",\"type\":\"bind\",\"source\":\"%s\"}", link);
  expect_refused(NULL, mount, "/etc");
  /* A directory holding credentials (a home) is refused; a plain data directory is fine. */
  char home[128], ssh[160];
  snprintf(home, sizeof(home), "%s/home", dir);
  snprintf(ssh, sizeof(ssh), "%s/.ssh", home);
  assert_int_equal(mkdir(home, 0700), 0);
  assert_int_equal(mkdir(ssh, 0700), 0);
  snprintf(mount, sizeof(mount), "{\"destination\":\"/x\",\"type\":\"bind\",\"source\":\"%s\"}", home);
  expect_refused(NULL, mount, "credentials");
  rmdir(ssh);
  char *json = config_json("1024", "1024", NULL, NULL, mount);
  struct spec *s = load(json);
  struct policy_result r;
  apply_ok(s, POLICY_PROFILE_MCP, &r);
  /* Allowed binds lose setuid and device nodes. */
  assert_true(strv_has(&mount_at(s, "/x")->options, "nosuid"));
  assert_true(strv_has(&mount_at(s, "/x")->options, "nodev"));
  policy_result_free(&r);
  spec_free(s);
  free(json);
  rmdir(home);
  unlink(link);
  rmdir(dir);
}

static void test_effective_profile_only_goes_up(void **state) {
  struct cm_error *err = NULL;
  enum policy_profile p;
  char *json = config_json("1024", "1024", NULL, NULL, NULL);
  struct spec *s = load(json);
  assert_int_equal(policy_effective_profile(s, NULL, &p, &err), 0);
  assert_int_equal(p, POLICY_PROFILE_DEFAULT);
  assert_int_equal(policy_effective_profile(s, "mcp", &p, &err), 0);
  assert_int_equal(p, POLICY_PROFILE_MCP);
  spec_free(s);
  free(json);

  /* The annotation may ask for more than the command line, never for less. */
  static const char annotated[] =
      "{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"rootfs\"},"
      "\"process\":{\"user\":{\"uid\":0,\"gid\":0},\"args\":[\"sh\"],\"cwd\":\"/\"},"
      "\"annotations\":{\"run.codemode.profile\":\"%s\"}}";
  char buf[256];
  snprintf(buf, sizeof(buf), annotated, "mcp");
  s = load(buf);
  assert_int_equal(policy_effective_profile(s, "default", &p, &err), 0);
  assert_int_equal(p, POLICY_PROFILE_MCP);
  spec_free(s);
  snprintf(buf, sizeof(buf), annotated, "default");
  s = load(buf);
  assert_int_equal(policy_effective_profile(s, "mcp", &p, &err), 0);
  assert_int_equal(p, POLICY_PROFILE_MCP);
  assert_int_equal(policy_effective_profile(s, "mcp-audit", &p, &err), 0);
  assert_int_equal(p, POLICY_PROFILE_MCP_AUDIT);
  spec_free(s);
  snprintf(buf, sizeof(buf), annotated, "yolo");
  s = load(buf);
  assert_int_equal(policy_effective_profile(s, NULL, &p, &err), -1);
  assert_non_null(strstr(err->msg, "run.codemode.profile"));
  cm_error_free(err);
  err = NULL;
  spec_free(s);
  assert_int_equal(policy_effective_profile(NULL, "nope", &p, &err), -1);
  assert_non_null(strstr(err->msg, "--profile"));
  cm_error_free(err);
}

static struct spec_process *exec_process(void) {
  char *json = config_json("100000", "100000", NULL, NULL, NULL);
  struct spec *s = load(json);
  free(json);
  struct spec_process *p = s->process;
  s->process = NULL;
  spec_free(s);
  return p;
}

static void test_apply_exec(void **state) {
  struct cm_error *err = NULL;
  struct policy_result r;
  /* Nothing recorded, nothing asked: the process is left alone. */
  struct spec_process *p = exec_process();
  assert_int_equal(policy_apply_exec(NULL, NULL, p, &r, &err), 0);
  assert_int_equal(r.profile, POLICY_PROFILE_DEFAULT);
  assert_false(r.stacked_seccomp.present);
  assert_false(p->no_new_privileges);
  policy_result_free(&r);
  spec_process_free(p);

  /* Recorded mcp, asked for default: still mcp (exec cannot loosen the container). */
  p = exec_process();
  assert_int_equal(policy_apply_exec("default", "mcp", p, &r, &err), 0);
  assert_int_equal(r.profile, POLICY_PROFILE_MCP);
  assert_true(p->no_new_privileges);
  assert_int_equal(p->capabilities.bounding | p->capabilities.ambient | p->capabilities.inheritable, 0);
  assert_int_equal(p->oom_score_adj, 1000);
  assert_true(r.stacked_seccomp.present);
  for (size_t i = 0; i < p->n_rlimits; i++)
    if (p->rlimits[i].resource == RLIMIT_NOFILE)
      assert_int_equal(p->rlimits[i].hard, 4096);
  policy_result_free(&r);
  spec_process_free(p);

  /* Nothing recorded, --profile mcp on exec: hardened too. */
  p = exec_process();
  assert_int_equal(policy_apply_exec("mcp", NULL, p, &r, &err), 0);
  assert_int_equal(r.profile, POLICY_PROFILE_MCP);
  assert_true(p->no_new_privileges);
  policy_result_free(&r);
  spec_process_free(p);

  /* An unknown recorded profile fails closed. */
  p = exec_process();
  assert_int_equal(policy_apply_exec(NULL, "mcp-v9", p, &r, &err), -1);
  assert_non_null(strstr(err->msg, "mcp-v9"));
  cm_error_free(err);
  spec_process_free(p);
}

/* A privileged container's device rules (every device allowed) are refused, with the reason;
 * an allow-all that a later deny-all overrides is not privileged. */
static void test_mcp_refuses_privileged_devices(void **state) {
  char *json = config_json("1024", "1024", "\"devices\":[{\"allow\":true,\"access\":\"rwm\"}]", NULL, NULL);
  struct spec *s = load(json);
  char *msg = apply_fails(s, POLICY_PROFILE_MCP);
  assert_non_null(strstr(msg, "profile mcp"));
  assert_non_null(strstr(msg, "linux.resources.devices[0]"));
  assert_non_null(strstr(msg, "privileged"));
  free(msg);
  spec_free(s);
  free(json);

  json = config_json("1024", "1024",
                     "\"devices\":[{\"allow\":true,\"access\":\"rwm\"},{\"allow\":false,\"access\":\"rwm\"},"
                     "{\"allow\":true,\"type\":\"c\",\"major\":1,\"minor\":3,\"access\":\"rwm\"}]",
                     NULL, NULL);
  s = load(json);
  struct policy_result r;
  apply_ok(s, POLICY_PROFILE_MCP, &r);
  policy_result_free(&r);
  spec_free(s);
  free(json);
}

/* A network namespace joined by path (a Kubernetes pod's) is marked loopback-only, and the
 * report says so; the host's stays refused, with the Docker and Kubernetes words for it. */
static void test_mcp_pod_network_namespace_is_loopback_only(void **state) {
  char *json = config_json("1024", "1024", NULL,
                           "\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"mount\"},"
                           "{\"type\":\"network\",\"path\":\"/run/netns/cni-1234\"}]",
                           NULL);
  struct spec *s = load(json);
  struct policy_result r;
  apply_ok(s, POLICY_PROFILE_MCP, &r);
  assert_true(s->linux_.namespaces[SPEC_NS_NETWORK].loopback_only);
  assert_string_equal(s->linux_.namespaces[SPEC_NS_NETWORK].path, "/run/netns/cni-1234");
  assert_true(report_mentions(&r, "nothing but lo"));
  policy_result_free(&r);
  spec_free(s);
  free(json);
  /* A new namespace needs no such mark; nor does the default profile touch it. */
  json = config_json("1024", "1024", NULL, NULL, NULL);
  s = load(json);
  apply_ok(s, POLICY_PROFILE_MCP, &r);
  assert_false(s->linux_.namespaces[SPEC_NS_NETWORK].loopback_only);
  policy_result_free(&r);
  spec_free(s);
  free(json);
  expect_refused("\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"mount\"}]", NULL, "hostNetwork");
  expect_refused("\"namespaces\":[{\"type\":\"network\"},{\"type\":\"mount\"}]", NULL, "hostPID");
}

/* ci: the job gets a build's capabilities, a 16-slot user namespace, ci.json in place of the
 * config's filter, a writable /proc/sys, the unified cgroup view, writable binds idmapped to
 * their owner, build-sized limits; the host-facing masks, devices and sysctls as under mcp. */
static void test_ci_gives_a_build_inside_the_userns(void **state) {
  char dir[] = "/tmp/cm-unit-ci.XXXXXX";
  assert_non_null(mkdtemp(dir));
  char mounts[512];
  snprintf(mounts, sizeof(mounts),
           "{\"destination\":\"/sys/fs/cgroup\",\"type\":\"cgroup\",\"source\":\"cgroup\",\"options\":[\"ro\"]},"
           "{\"destination\":\"/ws\",\"type\":\"bind\",\"source\":\"%s\",\"options\":[\"rbind\",\"rw\"]},"
           "{\"destination\":\"/ro\",\"type\":\"bind\",\"source\":\"%s\",\"options\":[\"bind\",\"ro\"]}",
           dir, dir);
  char *json = config_json("1024", "1024", NULL, NULL, mounts);
  struct spec *s = load(json);
  s->linux_.seccomp.present = true; /* a caller's filter: replaced */
  struct policy_result r;
  apply_ok(s, POLICY_PROFILE_CI, &r);
  const struct spec_linux *l = &s->linux_;
  assert_true(l->namespaces[SPEC_NS_USER].present);
  assert_true(l->userns_auto);
  assert_int_equal(l->userns_auto_slots, 16);
  const struct spec_capabilities *c = &s->process->capabilities;
  assert_true(c->bounding >> CAP_SYS_ADMIN & 1);
  assert_true(c->effective >> CAP_SYS_ADMIN & 1);
  assert_true(c->bounding >> CAP_SYS_PTRACE & 1);
  assert_true(c->bounding >> CAP_SETUID & 1);
  assert_false(c->bounding >> CAP_SYS_MODULE & 1);
  assert_false(c->bounding >> CAP_SYS_RAWIO & 1);
  assert_false(c->bounding >> CAP_BPF & 1);
  assert_int_equal(c->inheritable | c->ambient, 0);
  assert_false(s->process->no_new_privileges);
  assert_int_equal(rlimit(s, RLIMIT_CORE)->hard, 0);
  assert_false(strv_has(&l->readonly_paths, "/proc/sys"));
  assert_true(strv_has(&l->readonly_paths, "/proc/sysrq-trigger"));
  assert_true(strv_has(&l->masked_paths, "/proc/kcore"));
  assert_true(l->seccomp.present);
  assert_true(report_mentions(&r, "ci.json replaces the config's filter"));
  assert_false(r.stacked_seccomp.present);
  assert_false(r.landlock.present);
  assert_string_equal(mount_at(s, "/sys/fs/cgroup")->type, "cgroup2");
  /* Read-write only where the runtime can delegate the job's cgroup: a cgroup v2 host, as root. */
  struct statfs cg_st;
  bool v2_host = statfs("/sys/fs/cgroup", &cg_st) == 0 && cg_st.f_type == CGROUP2_SUPER_MAGIC && geteuid() == 0;
  assert_int_equal(!!(mount_at(s, "/sys/fs/cgroup")->flags & MS_RDONLY), !v2_host);
  assert_true(report_mentions(&r, v2_host ? "cgroup v2 subtree is delegated" : "cgroup: not delegated"));
  assert_true(s->hardening.nested_containers);
  assert_true(mount_at(s, "/ws")->idmap_to_owner);
  assert_false(mount_at(s, "/ro")->idmap_to_owner);
  assert_non_null(mount_at(s, "/var/lib/containers"));
  assert_int_equal(l->resources.memory.limit.value, 4LL << 30);
  assert_int_equal(l->resources.pids_limit, 4096);
  assert_int_equal(s->hardening.root_upper_size, 4ULL << 30);
  assert_int_equal(l->sysctl.count, 0);
  assert_int_equal(l->n_devices, 1); /* /dev/null kept, tun removed */
  assert_true(s->hardening.check_mount_sources);
  policy_result_free(&r);
  spec_free(s);
  free(json);

  /* Explicit limits are the caller's; unlimited ones get the defaults. */
  json = config_json("1024", "1024", "\"memory\":{\"limit\":8589934592},\"pids\":{\"limit\":10000}", NULL, NULL);
  s = load(json);
  apply_ok(s, POLICY_PROFILE_CI, &r);
  assert_int_equal(s->linux_.resources.memory.limit.value, 8LL << 30);
  assert_int_equal(s->linux_.resources.pids_limit, 10000);
  policy_result_free(&r);
  spec_free(s);
  free(json);

  /* The host's network namespace is refused, naming the profile. */
  json = config_json("1024", "1024", NULL,
                     "\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"ipc\"},{\"type\":\"uts\"},{\"type\":\"mount\"}]", NULL);
  s = load(json);
  char *msg = apply_fails(s, POLICY_PROFILE_CI);
  assert_non_null(strstr(msg, "the ci profile"));
  free(msg);
  spec_free(s);
  free(json);
  rmdir(dir);
}

/* ci sits between default and mcp: an annotation may raise ci to mcp, a ci annotation raises
 * default to ci; exec and update of a ci container follow its rules. */
static void test_ci_order_exec_update(void **state) {
  struct cm_error *err = NULL;
  enum policy_profile p;
  static const char annotated[] =
      "{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"rootfs\"},"
      "\"process\":{\"user\":{\"uid\":0,\"gid\":0},\"args\":[\"sh\"],\"cwd\":\"/\"},"
      "\"annotations\":{\"run.codemode.profile\":\"%s\"}}";
  char buf[256];
  snprintf(buf, sizeof(buf), annotated, "mcp");
  struct spec *s = load(buf);
  assert_int_equal(policy_effective_profile(s, "ci", &p, &err), 0);
  assert_int_equal(p, POLICY_PROFILE_MCP);
  spec_free(s);
  snprintf(buf, sizeof(buf), annotated, "ci");
  s = load(buf);
  assert_int_equal(policy_effective_profile(s, "default", &p, &err), 0);
  assert_int_equal(p, POLICY_PROFILE_CI);
  assert_int_equal(policy_effective_profile(s, "mcp", &p, &err), 0);
  assert_int_equal(p, POLICY_PROFILE_MCP);
  spec_free(s);

  struct policy_result r;
  struct spec_process *proc = exec_process();
  assert_int_equal(policy_apply_exec(NULL, "ci", proc, &r, &err), 0);
  assert_int_equal(r.profile, POLICY_PROFILE_CI);
  assert_true(proc->capabilities.bounding >> CAP_SYS_ADMIN & 1);
  assert_int_equal(proc->capabilities.inheritable, 0);
  assert_true(r.stacked_seccomp.present);
  policy_result_free(&r);
  spec_process_free(proc);

  struct spec_resources res = {0};
  struct policy_report report = {0};
  res.memory.limit = (struct spec_opt_i64){true, -1};
  assert_int_equal(policy_apply_update(NULL, "ci", &res, &report, &err), -1);
  assert_non_null(strstr(err->msg, "never unlimited"));
  cm_error_free(err);
  err = NULL;
  res.memory.limit = (struct spec_opt_i64){true, 8LL << 30};
  assert_int_equal(policy_apply_update(NULL, "ci", &res, &report, &err), 0);
  assert_int_equal(res.memory.swap.value, 8LL << 30);
  policy_report_free(&report);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_default_changes_nothing),
      cmocka_unit_test(test_mcp_looser_limits_get_the_profiles),
      cmocka_unit_test(test_mcp_unset_limits_are_set),
      cmocka_unit_test(test_mcp_stricter_limits_are_kept),
      cmocka_unit_test(test_mcp_process_mounts_devices),
      cmocka_unit_test(test_mcp_is_idempotent),
      cmocka_unit_test(test_mcp_audit_enforces_mcp),
      cmocka_unit_test(test_mcp_refuses_host_namespaces),
      cmocka_unit_test(test_mcp_refuses_sensitive_binds),
      cmocka_unit_test(test_effective_profile_only_goes_up),
      cmocka_unit_test(test_apply_exec),
      cmocka_unit_test(test_mcp_refuses_privileged_devices),
      cmocka_unit_test(test_mcp_pod_network_namespace_is_loopback_only),
      cmocka_unit_test(test_ci_gives_a_build_inside_the_userns),
      cmocka_unit_test(test_ci_order_exec_update),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
