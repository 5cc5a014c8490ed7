/* spec/: files (config.json, process.json), `update --resources` input, and the documents we
 * write (default config, features). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka.h needs the four above first. */
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "spec/spec.h"

struct tmpdir {
  char path[64];
};

static int setup_tmpdir(void **state) {
  struct tmpdir *t = calloc(1, sizeof(*t));
  strcpy(t->path, "/tmp/codemode-spec-test-XXXXXX");
  if (mkdtemp(t->path) == NULL)
    return -1;
  *state = t;
  return 0;
}

static int teardown_tmpdir(void **state) {
  struct tmpdir *t = *state;
  char cmd[128];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->path);
  int r = system(cmd);
  free(t);
  return r == 0 ? 0 : -1;
}

static char *write_file(struct tmpdir *t, const char *name, const char *content) {
  char *path = NULL;
  assert_true(asprintf(&path, "%s/%s", t->path, name) > 0);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(content, f);
  fclose(f);
  return path;
}

static void test_default_roundtrip(void **state) {
  for (int rootless = 0; rootless <= 1; rootless++) {
    char *json = spec_default_json(rootless);
    assert_non_null(json);
    struct cm_error *err = NULL;
    struct spec *s = spec_load_string(json, strlen(json), "config.json", &err);
    if (s == NULL)
      fail_msg("default (rootless=%d) does not parse: %s", rootless, err->msg);
    assert_string_equal(s->oci_version, SPEC_OCI_VERSION);
    assert_string_equal(s->root_path, "rootfs");
    assert_true(s->root_readonly);
    assert_string_equal(s->process->args.items[0], "sh");
    assert_true(s->process->terminal);
    assert_true(s->process->no_new_privileges);
    assert_int_equal(s->n_mounts, 7);
    assert_true(s->linux_.namespaces[SPEC_NS_MOUNT].present);
    assert_true(s->linux_.masked_paths.count >= 10);
    if (rootless) {
      assert_true(s->linux_.namespaces[SPEC_NS_USER].present);
      assert_false(s->linux_.namespaces[SPEC_NS_NETWORK].present);
      assert_int_equal(s->linux_.n_uid_mappings, 1);
      assert_int_equal(s->linux_.uid_mappings[0].host_id, geteuid());
      assert_int_equal(s->linux_.gid_mappings[0].host_id, getegid());
      assert_false(s->linux_.resources.present);
      assert_string_equal(s->mounts[5].type, "none");
      assert_int_equal(s->mounts[5].flags & (MS_BIND | MS_REC), MS_BIND | MS_REC);
      assert_null(strstr(s->mounts[2].data, "gid=5"));
    } else {
      assert_false(s->linux_.namespaces[SPEC_NS_USER].present);
      assert_true(s->linux_.namespaces[SPEC_NS_NETWORK].present);
      assert_int_equal(s->linux_.resources.n_devices, 1);
      assert_false(s->linux_.resources.devices[0].allow);
      assert_string_equal(s->mounts[5].type, "sysfs");
      assert_non_null(strstr(s->mounts[2].data, "gid=5"));
    }
    /* runc's formatting: tab indentation, no trailing newline. */
    assert_int_equal(strncmp(json, "{\n\t\"ociVersion\": ", 17), 0);
    assert_int_equal(json[strlen(json) - 1], '}');
    spec_free(s);
    free(json);
  }
}

static bool json_array_has(yajl_val arr, const char *s) {
  for (size_t i = 0; i < arr->u.array.len; i++)
    if (YAJL_IS_STRING(arr->u.array.values[i]) && strcmp(arr->u.array.values[i]->u.string, s) == 0)
      return true;
  return false;
}

static void test_features(void **state) {
  char *json = spec_features_json(5);
  char errbuf[256];
  yajl_val tree = yajl_tree_parse(json, errbuf, sizeof(errbuf));
  if (tree == NULL)
    fail_msg("features is not valid JSON: %s", errbuf);
  /* The kernel's Landlock ABI, as given. */
  const char *abi_path[] = {"annotations", "run.codemode.landlock.abi", NULL};
  assert_string_equal(YAJL_GET_STRING(yajl_tree_get(tree, abi_path, yajl_t_string)), "5");
  const char *max_path[] = {"ociVersionMax", NULL};
  assert_string_equal(YAJL_GET_STRING(yajl_tree_get(tree, max_path, yajl_t_string)), SPEC_OCI_VERSION);
  const char *hooks_path[] = {"hooks", NULL};
  yajl_val hooks = yajl_tree_get(tree, hooks_path, yajl_t_array);
  assert_non_null(hooks);
  assert_int_equal(hooks->u.array.len, SPEC_HOOK_KIND_COUNT);
  const char *opts_path[] = {"mountOptions", NULL};
  yajl_val opts = yajl_tree_get(tree, opts_path, yajl_t_array);
  assert_non_null(opts);
  /* "rro" is applied (mount_setattr AT_RECURSIVE), "tmpcopyup" too (linux/tmpfs_copyup.c). */
  assert_true(json_array_has(opts, "rro"));
  assert_true(json_array_has(opts, "tmpcopyup"));
  assert_true(json_array_has(opts, "rbind"));
  assert_true(json_array_has(opts, "nosymfollow"));
  const char *ns_path[] = {"linux", "namespaces", NULL};
  yajl_val ns = yajl_tree_get(tree, ns_path, yajl_t_array);
  assert_non_null(ns);
  assert_int_equal(ns->u.array.len, SPEC_NS_COUNT);
  assert_true(json_array_has(ns, "time"));
  const char *caps_path[] = {"linux", "capabilities", NULL};
  yajl_val caps = yajl_tree_get(tree, caps_path, yajl_t_array);
  assert_non_null(caps);
  assert_true(json_array_has(caps, "CAP_CHOWN"));
  assert_true(json_array_has(caps, "CAP_SYS_ADMIN"));
  const char *act_path[] = {"linux", "seccomp", "actions", NULL};
  yajl_val actions = yajl_tree_get(tree, act_path, yajl_t_array);
  assert_non_null(actions);
  assert_true(json_array_has(actions, "SCMP_ACT_NOTIFY"));
  const char *arch_path[] = {"linux", "seccomp", "archs", NULL};
  yajl_val archs = yajl_tree_get(tree, arch_path, yajl_t_array);
  assert_non_null(archs);
  assert_true(json_array_has(archs, "SCMP_ARCH_X86_64"));
  const char *ver_path[] = {"annotations", "io.github.seccomp.libseccomp.version", NULL};
  assert_non_null(yajl_tree_get(tree, ver_path, yajl_t_string));
  yajl_tree_free(tree);
  free(json);
}

static void test_load_file(void **state) {
  struct tmpdir *t = *state;
  char *json = spec_default_json(false);
  char *path = write_file(t, "config.json", json);
  struct cm_error *err = NULL;
  struct spec *s = spec_load_file(path, "config.json", &err);
  assert_non_null(s);
  spec_free(s);
  free(path);
  free(json);
}

static void test_load_file_missing(void **state) {
  struct tmpdir *t = *state;
  char *path = NULL;
  assert_true(asprintf(&path, "%s/nope/config.json", t->path) > 0);
  struct cm_error *err = NULL;
  assert_null(spec_load_file(path, "config.json", &err));
  assert_int_equal(err->errnum, ENOENT);
  char *expect = NULL;
  assert_true(asprintf(&expect, "open %s", path) > 0);
  assert_string_equal(err->msg, expect);
  free(expect);
  cm_error_free(err);

  err = NULL;
  assert_null(spec_process_load_file(path, &err));
  assert_int_equal(err->errnum, ENOENT);
  cm_error_free(err);
  free(path);
}

static void test_load_file_invalid(void **state) {
  struct tmpdir *t = *state;
  char *path = write_file(
      t, "bad.json",
      "{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"},\"process\":{\"user\":{\"uid\":0,\"gid\":0},"
      "\"args\":[\"sh\"],\"cwd\":\"/\"},\"mounts\":[{\"destination\":\"/a\"},{\"destination\":\"x/../..\"}]}");
  struct cm_error *err = NULL;
  assert_null(spec_load_file(path, "config.json", &err));
  assert_string_equal(err->msg, "config.json: .mounts[1].destination: must not contain \"..\"");
  assert_int_equal(err->errnum, 0);
  cm_error_free(err);
  free(path);
}

/* The spec: a relative destination is relative to / (deprecated); create warns about it. */
static void test_relative_mount_destination(void **state) {
  struct tmpdir *t = *state;
  char *path = write_file(
      t, "rel.json",
      "{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"},\"process\":{\"user\":{\"uid\":0,\"gid\":0},"
      "\"args\":[\"sh\"],\"cwd\":\"/\"},\"mounts\":[{\"destination\":\"/a\"},{\"destination\":\"x//y/.\"}]}");
  struct cm_error *err = NULL;
  struct spec *s = spec_load_file(path, "config.json", &err);
  if (s == NULL)
    fail_msg("%s", err->msg);
  assert_false(s->mounts[0].relative_destination);
  assert_string_equal(s->mounts[1].destination, "/x/y");
  assert_true(s->mounts[1].relative_destination);
  spec_free(s);
  free(path);
}

/* exec --process without .user runs as uid 0, gid 0 (runc); config.json's process needs it. */
static void test_process_file_without_user(void **state) {
  struct tmpdir *t = *state;
  char *path = write_file(t, "process.json", "{\"args\":[\"id\"],\"cwd\":\"/\"}");
  struct cm_error *err = NULL;
  struct spec_process *p = spec_process_load_file(path, &err);
  if (p == NULL)
    fail_msg("%s", err->msg);
  assert_int_equal(p->user.uid, 0);
  assert_int_equal(p->user.gid, 0);
  assert_int_equal(p->user.n_additional_gids, 0);
  spec_process_free(p);
  free(path);
  path = write_file(t, "config.json",
                    "{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\"}}");
  assert_null(spec_load_file(path, "config.json", &err));
  assert_string_equal(err->msg, "config.json: .process.user: missing");
  cm_error_free(err);
  free(path);
}

static void test_process_file(void **state) {
  struct tmpdir *t = *state;
  char *path = write_file(
      t, "process.json",
      "{\"terminal\":false,\"user\":{\"uid\":1,\"gid\":2,\"additionalGids\":[3]},\"args\":[\"ls\",\"-l\"],"
      "\"env\":[\"PATH=/bin\"],\"cwd\":\"/tmp\",\"capabilities\":{\"bounding\":[\"CAP_KILL\"]},"
      "\"rlimits\":[{\"type\":\"RLIMIT_NPROC\",\"soft\":5,\"hard\":6}],\"noNewPrivileges\":true}");
  struct cm_error *err = NULL;
  struct spec_process *p = spec_process_load_file(path, &err);
  if (p == NULL)
    fail_msg("%s", err->msg);
  assert_int_equal(p->user.uid, 1);
  assert_int_equal(p->user.gid, 2);
  assert_int_equal(p->user.n_additional_gids, 1);
  assert_int_equal(p->args.count, 2);
  assert_string_equal(p->cwd, "/tmp");
  assert_true(p->capabilities.present);
  assert_int_equal(p->n_rlimits, 1);
  assert_true(p->no_new_privileges);
  spec_process_free(p);
  free(path);
}

static void test_process_file_errors(void **state) {
  struct tmpdir *t = *state;
  static const struct {
    const char *json, *expect;
  } cases[] = {
      {"{\"user\":{\"uid\":0,\"gid\":0},\"args\":[],\"cwd\":\"/\"}",
       "process.json: .args: must be a non-empty array of strings"},
      {"{\"user\":{\"uid\":0,\"gid\":0},\"args\":[\"sh\"],\"cwd\":\"tmp\"}",
       "process.json: .cwd: must be an absolute path"},
      {"{\"user\":{\"gid\":0},\"args\":[\"sh\"],\"cwd\":\"/\"}", "process.json: .user.uid: missing"},
      {"[1]", "process.json: .: must be an object"},
      {"{", "process.json: invalid JSON at line 1, column 2: parse error: premature EOF"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char *path = write_file(t, "process.json", cases[i].json);
    struct cm_error *err = NULL;
    struct spec_process *p = spec_process_load_file(path, &err);
    if (p != NULL)
      fail_msg("case %zu accepted", i);
    if (strcmp(err->msg, cases[i].expect) != 0)
      fail_msg("case %zu: got \"%s\", expected \"%s\"", i, err->msg, cases[i].expect);
    cm_error_free(err);
    free(path);
  }
}

static void test_resources_update(void **state) {
  const char ok[] =
      "{\"memory\":{\"limit\":1048576},\"pids\":{\"limit\":-1},\"cpu\":{\"quota\":50000,\"period\":100000},"
      "\"unified\":{\"memory.high\":\"2M\"}}";
  struct spec_resources r;
  struct cm_error *err = NULL;
  assert_int_equal(spec_resources_load_string(ok, strlen(ok), "resources", &r, &err), 0);
  assert_true(r.present);
  assert_int_equal(r.memory.limit.value, 1048576);
  assert_true(r.has_pids);
  assert_int_equal(r.pids_limit, -1);
  assert_int_equal(r.cpu.quota.value, 50000);
  assert_string_equal(spec_kv_get(&r.unified, "memory.high"), "2M");
  spec_resources_free(&r);

  const char bad[] = "{\"memory\":{\"limit\":1},\"unified\":{\"..\":\"1\"}}";
  assert_int_equal(spec_resources_load_string(bad, strlen(bad), "resources", &r, &err), -1);
  assert_string_equal(err->msg, "resources: .unified[\"..\"]: invalid cgroup file name \"..\"");
  cm_error_free(err);
  assert_false(r.present);
}

/* Later options override earlier ones; data keeps the order written. */
static void test_mount_option_order(void **state) {
  const char doc[] =
      "{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"},\"process\":{\"user\":{\"uid\":0,\"gid\":0},"
      "\"args\":[\"sh\"],\"cwd\":\"/\"},\"mounts\":["
      "{\"destination\":\"/a\",\"options\":[\"rw\",\"ro\",\"size=1\",\"nr_inodes=2\"]},"
      "{\"destination\":\"/b\",\"options\":[\"ro\",\"rw\",\"private\",\"rshared\"]},"
      "{\"destination\":\"/\",\"options\":[\"ridmap\"]},"
      "{\"destination\":\"/c/.\"}]}";
  struct cm_error *err = NULL;
  struct spec *s = spec_load_string(doc, strlen(doc), "config.json", &err);
  assert_non_null(s);
  assert_int_equal(s->mounts[0].flags, MS_RDONLY);
  assert_int_equal(s->mounts[0].clear_flags, 0);
  assert_string_equal(s->mounts[0].data, "size=1,nr_inodes=2");
  assert_int_equal(s->mounts[1].flags, 0);
  assert_int_equal(s->mounts[1].clear_flags, MS_RDONLY);
  assert_int_equal(s->mounts[1].propagation, MS_SHARED | MS_REC);
  assert_string_equal(s->mounts[2].destination, "/");
  assert_true(s->mounts[2].idmap);
  assert_string_equal(s->mounts[3].destination, "/c");
  spec_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_default_roundtrip),
      cmocka_unit_test(test_features),
      cmocka_unit_test_setup_teardown(test_load_file, setup_tmpdir, teardown_tmpdir),
      cmocka_unit_test_setup_teardown(test_load_file_missing, setup_tmpdir, teardown_tmpdir),
      cmocka_unit_test_setup_teardown(test_load_file_invalid, setup_tmpdir, teardown_tmpdir),
      cmocka_unit_test_setup_teardown(test_process_file, setup_tmpdir, teardown_tmpdir),
      cmocka_unit_test_setup_teardown(test_process_file_errors, setup_tmpdir, teardown_tmpdir),
      cmocka_unit_test_setup_teardown(test_relative_mount_destination, setup_tmpdir, teardown_tmpdir),
      cmocka_unit_test_setup_teardown(test_process_file_without_user, setup_tmpdir, teardown_tmpdir),
      cmocka_unit_test(test_resources_update),
      cmocka_unit_test(test_mount_option_order),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
