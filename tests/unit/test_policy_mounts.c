/* policy/ (issue 21): the mcp mounts allow-list (types and places, what each keeps, the error's
 * wording: index, destination, type, what is wrong, the fix), the hardening flags it sets for the
 * child, the update clamp (stricter of recorded and --profile) and the process flags. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka.h needs the four above first. */
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pwd.h>
#include <unistd.h>

#include "policy/profile.h"

static char *config_with_mount(const char *mount) {
  char *json = NULL;
  if (asprintf(&json,
               "{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"rootfs\"},"
               "\"process\":{\"user\":{\"uid\":0,\"gid\":0},\"args\":[\"sh\"],\"cwd\":\"/\"},"
               "\"mounts\":[%s],\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"network\"},"
               "{\"type\":\"mount\"}]}}",
               mount ? mount : "") < 0)
    abort();
  return json;
}

static struct spec *load(const char *json) {
  struct cm_error *err = NULL;
  struct spec *s = spec_load_string(json, strlen(json), "config.json", &err);
  if (s == NULL) {
    print_error("unexpected error: %s\n", err->msg);
    fail();
  }
  return s;
}

/* Apply mcp to a config with `mount`; returns the error message (malloc'd) or NULL. */
static char *mcp_error(const char *mount, struct spec **kept) {
  char *json = config_with_mount(mount);
  struct spec *s = load(json);
  free(json);
  struct policy_result r;
  struct cm_error *err = NULL;
  char *msg = NULL;
  if (policy_apply(s, POLICY_PROFILE_MCP, "/nonexistent-bundle", &r, &err) < 0) {
    msg = strdup(err->msg);
    cm_error_free(err);
  } else {
    policy_result_free(&r);
  }
  if (kept)
    *kept = s;
  else
    spec_free(s);
  return msg;
}

static void assert_refused(const char *mount, const char *const *words) {
  char *msg = mcp_error(mount, NULL);
  if (msg == NULL) {
    print_error("not refused: %s\n", mount);
    fail();
  }
  for (; *words; words++)
    if (strstr(msg, *words) == NULL) {
      print_error("\"%s\" does not say \"%s\"\n", msg, *words);
      fail();
    }
  free(msg);
}

static const struct spec_mount *mount_at(const struct spec *s, const char *dest) {
  for (size_t i = 0; i < s->n_mounts; i++)
    if (strcmp(s->mounts[i].destination, dest) == 0)
      return &s->mounts[i];
  return NULL;
}

static bool has_opt(const struct spec_mount *m, const char *o) {
  for (size_t i = 0; i < m->options.count; i++)
    if (strcmp(m->options.items[i], o) == 0)
      return true;
  return false;
}

static void test_types_outside_the_allow_list_are_refused(void **state) {
  static const char *const types[] = {"ext4",     "xfs",      "tracefs", "debugfs", "securityfs", "bpf",
                                      "configfs", "devtmpfs", "ramfs",   "nfs",     "fuse",       "9p"};
  for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
    char *mount = NULL, want[64];
    if (asprintf(&mount, "{\"destination\":\"/mnt\",\"type\":\"%s\",\"source\":\"/dev/vda\"}", types[i]) < 0)
      abort();
    snprintf(want, sizeof(want), "(/mnt, type %s)", types[i]);
    assert_refused(
        mount, (const char *const[]){"mounts[0]", want, "only bind, tmpfs", "fix:", "block device", NULL});
    free(mount);
  }
}

static void test_pseudo_filesystems_only_at_their_place(void **state) {
  assert_refused("{\"destination\":\"/proc2\",\"type\":\"proc\",\"source\":\"proc\"}",
                 (const char *const[]){"(/proc2, type proc)", "only at /proc", "fix:", NULL});
  assert_refused("{\"destination\":\"/s\",\"type\":\"sysfs\",\"source\":\"sysfs\"}",
                 (const char *const[]){"(/s, type sysfs)", "only at /sys", NULL});
  assert_refused("{\"destination\":\"/pts\",\"type\":\"devpts\",\"source\":\"devpts\"}",
                 (const char *const[]){"(/pts, type devpts)", "only at /dev/pts", NULL});
  assert_null(mcp_error("{\"destination\":\"/proc\",\"type\":\"proc\",\"source\":\"proc\"}", NULL));
  assert_null(mcp_error("{\"destination\":\"/dev/mqueue\",\"type\":\"mqueue\",\"source\":\"mqueue\"}", NULL));
}

static void test_kept_mounts_are_tightened(void **state) {
  struct spec *s;
  assert_null(mcp_error(
      "{\"destination\":\"/dev/pts\",\"type\":\"devpts\",\"source\":\"devpts\",\"options\":[\"max=4096\"]},"
      "{\"destination\":\"/sys\",\"type\":\"sysfs\",\"source\":\"sysfs\",\"options\":[\"rw\"]},"
      "{\"destination\":\"/sys/fs/cgroup\",\"type\":\"cgroup2\",\"source\":\"cgroup\"},"
      "{\"destination\":\"/big\",\"type\":\"tmpfs\",\"source\":\"tmpfs\",\"options\":[\"size=0\"]},"
      "{\"destination\":\"/data\",\"type\":\"bind\",\"source\":\"/usr/share\","
      "\"options\":[\"rbind\",\"rshared\",\"suid\",\"dev\"]}",
      &s));
  const struct spec_mount *pts = mount_at(s, "/dev/pts");
  assert_true(has_opt(pts, "max=64"));
  assert_false(has_opt(pts, "max=4096"));
  assert_true(has_opt(pts, "newinstance"));
  assert_true(has_opt(mount_at(s, "/sys"), "ro"));
  assert_false(has_opt(mount_at(s, "/sys"), "rw"));
  assert_true(has_opt(mount_at(s, "/sys/fs/cgroup"), "ro"));
  assert_true(has_opt(mount_at(s, "/big"), "size=64m"));
  assert_false(has_opt(mount_at(s, "/big"), "size=0"));
  const struct spec_mount *data = mount_at(s, "/data");
  assert_true(has_opt(data, "bind"));
  assert_false(has_opt(data, "rbind"));
  assert_true(has_opt(data, "rprivate"));
  assert_false(has_opt(data, "rshared"));
  assert_true(has_opt(data, "nosuid") && has_opt(data, "nodev"));
  assert_false(has_opt(data, "suid") || has_opt(data, "dev"));
  /* The child judges every source on its fd; the processes lock their audit login uid. */
  assert_true(s->hardening.check_mount_sources);
  assert_true(s->process->lock_loginuid);
  spec_free(s);
}

static void test_bind_and_overlay_sources_by_name(void **state) {
  assert_refused("{\"destination\":\"/x\",\"type\":\"bind\",\"source\":\"/tmp\"}",
                 (const char *const[]){"(/x, type bind)", "/tmp", NULL});
  assert_refused("{\"destination\":\"/x\",\"type\":\"bind\",\"source\":\"/var/tmp\"}",
                 (const char *const[]){"/var/tmp", NULL});
  assert_refused("{\"destination\":\"/x\",\"type\":\"bind\",\"source\":\"/run\"}",
                 (const char *const[]){"/run", NULL});
  assert_refused("{\"destination\":\"/x\",\"type\":\"bind\",\"source\":\"/dev/shm\"}",
                 (const char *const[]){"/dev/shm", NULL});
  assert_refused("{\"destination\":\"/x\",\"type\":\"bind\",\"source\":\"/srv/.config/gh\"}",
                 (const char *const[]){".config", NULL});
  assert_refused(
      "{\"destination\":\"/o\",\"type\":\"overlay\",\"source\":\"overlay\",\"options\":[\"lowerdir=/usr/"
      "share:/etc\"]}",
      (const char *const[]){"(/o, type overlay)", "lowerdir", "/etc", NULL});
  assert_refused("{\"destination\":\"/"
                 "o\",\"type\":\"overlay\",\"source\":\"overlay\",\"options\":[\"lowerdir=/usr/share\","
                 "\"upperdir=/root/up\",\"workdir=/root/work\"]}",
                 (const char *const[]){"upperdir", "/root", NULL});
  assert_refused("{\"destination\":\"/o\",\"type\":\"overlay\",\"source\":\"overlay\",\"options\":[\"ro\"]}",
                 (const char *const[]){"without lowerdir", NULL});
  /* A subdirectory of a per-container area is fine. */
  assert_null(
      mcp_error("{\"destination\":\"/x\",\"type\":\"bind\",\"source\":\"/dev/shm/cm-test-subdir\"}", NULL));
  assert_null(
      mcp_error("{\"destination\":\"/x\",\"type\":\"bind\",\"source\":\"/tmp/cm-test-subdir\"}", NULL));
}

/* The profile's /tmp tmpfs goes before a caller's mount beneath /tmp, which would otherwise be
 * hidden under it (issue 29: server-filesystem found an empty directory). */
static void test_tmp_tmpfs_goes_under_the_callers_mounts(void **state) {
  struct spec *s = NULL;
  assert_null(mcp_error("{\"destination\":\"/tmp/work\",\"type\":\"bind\",\"source\":\"/tmp/cm-test-subdir\","
                        "\"options\":[\"ro\"]}",
                        &s));
  size_t tmp = s->n_mounts, work = s->n_mounts;
  for (size_t i = 0; i < s->n_mounts; i++) {
    if (strcmp(s->mounts[i].destination, "/tmp") == 0)
      tmp = i;
    if (strcmp(s->mounts[i].destination, "/tmp/work") == 0)
      work = i;
  }
  assert_true(tmp < s->n_mounts && work < s->n_mounts);
  assert_true(tmp < work);
  spec_free(s);
}

/* A bind of SRC as the lower layer of codemode-run's --mount SRC:DST:cow (cow_lower, never from
 * JSON); NULL when the profile accepts it, else its error. */
static char *cow_error(const char *source) {
  char *mount = NULL;
  if (asprintf(&mount, "{\"destination\":\"/root/.npm\",\"type\":\"bind\",\"source\":\"%s\",\"options\":[\"ro\"]}",
               source) < 0)
    abort();
  char *json = config_with_mount(mount);
  free(mount);
  struct spec *s = load(json);
  free(json);
  s->mounts[0].cow_lower = true;
  struct policy_result r;
  struct cm_error *err = NULL;
  char *msg = NULL;
  if (policy_apply(s, POLICY_PROFILE_MCP, "/nonexistent-bundle", &r, &err) < 0) {
    msg = strdup(err->msg);
    cm_error_free(err);
  } else {
    policy_result_free(&r);
  }
  spec_free(s);
  return msg;
}

/* Run by root, ~/.npm is /root/.npm: usable as a :cow lower layer (read only, never written),
 * still refused as a plain bind, as /root itself, as credentials, and never by way of $HOME. */
static void test_cow_source_in_roots_own_home(void **state) {
  if (geteuid() != 0)
    skip();
  struct passwd *pw = getpwuid(0);
  if (pw == NULL || strcmp(pw->pw_dir, "/root") != 0)
    skip();
  char *msg = cow_error("/root/.npm");
  if (msg)
    print_error("refused: %s\n", msg);
  assert_null(msg);
  assert_refused("{\"destination\":\"/x\",\"type\":\"bind\",\"source\":\"/root/.npm\"}",
                 (const char *const[]){"/root/.npm", "host system tree", NULL});
  const char *refused[] = {"/root", "/root/.ssh", "/root/.config/gh", "/root/.npmrc", "/etc/ssl", "/proc/1", NULL};
  for (const char **p = refused; *p; p++) {
    msg = cow_error(*p);
    if (msg == NULL)
      print_error("cow source %s accepted\n", *p);
    assert_non_null(msg);
    free(msg);
  }
  /* $HOME is the caller's to set: it makes no tree "home". */
  char *old = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
  setenv("HOME", "/etc", 1);
  msg = cow_error("/etc/ssl");
  assert_non_null(msg);
  free(msg);
  if (old)
    setenv("HOME", old, 1);
  free(old);
}

/* --- update ----------------------------------------------------------------------------------- */

static int update(const char *requested, const char *recorded, const char *json, struct spec_resources *r,
                  char **msg) {
  struct cm_error *err = NULL;
  if (spec_resources_load_string(json, strlen(json), "resources", r, &err) < 0) {
    print_error("bad test JSON: %s\n", err->msg);
    fail();
  }
  struct policy_report report;
  int rc = policy_apply_update(requested, recorded, r, &report, &err);
  *msg = NULL;
  if (rc < 0) {
    *msg = strdup(err->msg);
    cm_error_free(err);
  } else {
    policy_report_free(&report);
  }
  return rc;
}

static void test_update_clamps_to_the_profile(void **state) {
  struct spec_resources r;
  char *msg;
  /* Recorded mcp, no --profile: clamped. */
  assert_int_equal(update(NULL, "mcp",
                          "{\"memory\":{\"limit\":4294967296,\"swap\":-1},\"pids\":{\"limit\":-1},"
                          "\"cpu\":{\"quota\":-1,\"burst\":100000}}",
                          &r, &msg),
                   0);
  assert_int_equal(r.memory.limit.value, 512LL << 20);
  assert_int_equal(r.memory.swap.value, 512LL << 20);
  assert_int_equal(r.pids_limit, 256);
  assert_int_equal(r.cpu.quota.value, 100000);
  assert_int_equal(r.cpu.period.value, 100000);
  /* A burst at most one quota: kept. */
  assert_int_equal(r.cpu.burst.value, 100000);
  assert_false(r.cpu.burst_optional);
  spec_resources_free(&r);
  /* A shorter period alone keeps at most one CPU; its burst follows the quota. */
  assert_int_equal(update("mcp", NULL, "{\"cpu\":{\"period\":10000}}", &r, &msg), 0);
  assert_int_equal(r.cpu.period.value, 10000);
  assert_int_equal(r.cpu.quota.value, 10000);
  assert_true(r.cpu.burst.set);
  assert_int_equal(r.cpu.burst.value, 10000);
  assert_true(r.cpu.burst_optional);
  spec_resources_free(&r);
  /* A burst above its quota is lowered to it; alone, to one period's quota at most. */
  assert_int_equal(update("mcp", NULL, "{\"cpu\":{\"quota\":5000,\"burst\":90000}}", &r, &msg), 0);
  assert_int_equal(r.cpu.quota.value, 5000);
  assert_int_equal(r.cpu.burst.value, 5000);
  spec_resources_free(&r);
  assert_int_equal(update("mcp", NULL, "{\"cpu\":{\"burst\":900000}}", &r, &msg), 0);
  assert_false(r.cpu.quota.set);
  assert_int_equal(r.cpu.burst.value, 100000);
  spec_resources_free(&r);
  /* Stricter values are kept. */
  assert_int_equal(update("mcp", NULL, "{\"memory\":{\"limit\":1048576},\"pids\":{\"limit\":5}}", &r, &msg),
                   0);
  assert_int_equal(r.memory.limit.value, 1048576);
  assert_int_equal(r.memory.swap.value, 1048576);
  assert_int_equal(r.pids_limit, 5);
  spec_resources_free(&r);
  /* Without a profile anywhere nothing changes. */
  assert_int_equal(update(NULL, NULL, "{\"pids\":{\"limit\":-1}}", &r, &msg), 0);
  assert_int_equal(r.pids_limit, -1);
  spec_resources_free(&r);
  /* The stricter of the two: --profile default cannot lower a recorded mcp. */
  assert_int_equal(update("default", "mcp", "{\"pids\":{\"limit\":-1}}", &r, &msg), 0);
  assert_int_equal(r.pids_limit, 256);
  spec_resources_free(&r);
}

static void test_update_refuses_what_has_no_clamp(void **state) {
  struct spec_resources r;
  char *msg;
  assert_int_equal(update(NULL, "mcp", "{\"unified\":{\"memory.max\":\"max\"}}", &r, &msg), -1);
  assert_non_null(strstr(msg, "profile mcp"));
  assert_non_null(strstr(msg, "unified.\"memory.max\""));
  assert_non_null(strstr(msg, "fix:"));
  free(msg);
  spec_resources_free(&r);
  assert_int_equal(update(NULL, "mcp", "{\"devices\":[{\"allow\":true,\"access\":\"rwm\"}]}", &r, &msg), -1);
  assert_non_null(strstr(msg, "devices"));
  free(msg);
  spec_resources_free(&r);
  assert_int_equal(update(NULL, "mcp", "{\"memory\":{\"swap\":-1}}", &r, &msg), -1);
  assert_non_null(strstr(msg, "memory.swap"));
  free(msg);
  spec_resources_free(&r);
  /* An unknown recorded profile is refused, never read as "default". */
  assert_int_equal(update(NULL, "mcp-typo", "{\"pids\":{\"limit\":-1}}", &r, &msg), -1);
  assert_non_null(strstr(msg, "state"));
  free(msg);
  spec_resources_free(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_types_outside_the_allow_list_are_refused),
      cmocka_unit_test(test_pseudo_filesystems_only_at_their_place),
      cmocka_unit_test(test_kept_mounts_are_tightened),
      cmocka_unit_test(test_bind_and_overlay_sources_by_name),
      cmocka_unit_test(test_tmp_tmpfs_goes_under_the_callers_mounts),
      cmocka_unit_test(test_cow_source_in_roots_own_home),
      cmocka_unit_test(test_update_clamps_to_the_profile),
      cmocka_unit_test(test_update_refuses_what_has_no_clamp),
  };
  return cmocka_run_group_tests_name("policy_mounts", tests, NULL, NULL);
}
