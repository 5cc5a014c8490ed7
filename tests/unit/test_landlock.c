/* Landlock: the landlockconfig parser (groups by ABI, variables, completion of the handled sets,
 * JSON paths in errors), the ABI check of a requested ruleset at ABIs lower than this kernel's
 * (the right's name and the ABI it needs), best-effort masking, the kept form exec reads, the mcp
 * profile's rules derived from the mounts (and the egress hook), and the carving of a deny list
 * out of the allowed trees on a real directory tree, hard links and second mounts included. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka.h needs the four above first. */
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "linux/landlock.h"
#include "policy/profile.h"
#include "spec/landlock_config.h"

static void parse_ok(const char *json, struct spec_landlock *l) {
  struct cm_error *err = NULL;
  if (spec_landlock_parse(json, strlen(json), "ann", l, &err) < 0) {
    print_error("unexpected error: %s\n", err->msg);
    cm_error_free(err);
    fail();
  }
}

static void parse_fails(const char *json, const char *expected) {
  struct spec_landlock l;
  struct cm_error *err = NULL;
  assert_int_equal(spec_landlock_parse(json, strlen(json), "ann", &l, &err), -1);
  if (strstr(err->msg, expected) == NULL) {
    print_error("error \"%s\" lacks \"%s\"\n", err->msg, expected);
    fail();
  }
  cm_error_free(err);
}

static const struct spec_landlock_path_rule *rule(const struct spec_landlock *l, const char *path) {
  for (size_t i = 0; i < l->n_paths; i++)
    if (strcmp(l->paths[i].path, path) == 0)
      return &l->paths[i];
  return NULL;
}

static void test_groups_follow_the_abi(void **state) {
  (void)state;
  struct spec_landlock l;
  parse_ok("{\"abi\":1,\"pathBeneath\":[{\"allowedAccess\":[\"abi.read_execute\"],\"parent\":[\"/usr\"]}]}",
           &l);
  assert_int_equal(rule(&l, "/usr")->access, LL_FS_EXECUTE | LL_FS_READ_FILE | LL_FS_READ_DIR);
  /* The handled set is completed with every right a rule uses. */
  assert_int_equal(l.handled[SPEC_LANDLOCK_FS], LL_FS_EXECUTE | LL_FS_READ_FILE | LL_FS_READ_DIR);
  spec_landlock_clear(&l);
  parse_ok("{\"abi\":2,\"pathBeneath\":[{\"allowedAccess\":[\"abi.read_execute\"],\"parent\":[\"/usr\"]}]}",
           &l);
  assert_true(rule(&l, "/usr")->access & LL_FS_REFER);
  spec_landlock_clear(&l);
  parse_ok("{\"abi\":5,\"ruleset\":[{\"handledAccessFs\":[\"abi.all\"],\"handledAccessNet\":[\"abi.all\"],"
           "\"scoped\":[\"abi.all\"]}],"
           "\"pathBeneath\":[{\"allowedAccess\":[\"abi.read_write\"],\"parent\":[\"/tmp\"]}]}",
           &l);
  assert_int_equal(l.handled[SPEC_LANDLOCK_FS], (1ULL << 16) - 1);
  assert_int_equal(l.handled[SPEC_LANDLOCK_NET], LL_NET_BIND_TCP | LL_NET_CONNECT_TCP);
  assert_int_equal(l.handled[SPEC_LANDLOCK_SCOPE], 0); /* scopes came with ABI 6 */
  assert_false(rule(&l, "/tmp")->access & LL_FS_EXECUTE);
  assert_true(rule(&l, "/tmp")->access & LL_FS_IOCTL_DEV);
  spec_landlock_clear(&l);
  parse_ok("{\"abi\":7,\"ruleset\":[{\"scoped\":[\"abi.all\"]}]}", &l);
  assert_int_equal(l.handled[SPEC_LANDLOCK_SCOPE], LL_SCOPE_SIGNAL | LL_SCOPE_ABSTRACT_UNIX_SOCKET);
  spec_landlock_clear(&l);
}

static void test_variables_ports_raw_bits_and_merging(void **state) {
  (void)state;
  struct spec_landlock l;
  parse_ok(
      "{\"variable\":[{\"name\":\"top\",\"literal\":[\"/a\",\"/b\"]},{\"name\":\"sub\",\"literal\":[\"x\"]},"
      "{\"name\":\"top\",\"literal\":[\"/c\"]}],"
      "\"pathBeneath\":[{\"allowedAccess\":[\"read_file\"],\"parent\":[\"${top}/${sub}\",\"/cost$$1\"]},"
      "{\"allowedAccess\":[\"write_file\", 32768],\"parent\":[\"/a/x\"]}],"
      "\"netPort\":[{\"allowedAccess\":[\"connect_tcp\"],\"port\":[443,80]},"
      "{\"allowedAccess\":[\"bind_tcp\"],\"port\":[80]}]}",
      &l);
  assert_int_equal(l.n_paths, 4);
  assert_int_equal(rule(&l, "/a/x")->access, LL_FS_READ_FILE | LL_FS_WRITE_FILE | LL_FS_IOCTL_DEV);
  assert_non_null(rule(&l, "/b/x"));
  assert_non_null(rule(&l, "/c/x"));
  assert_non_null(rule(&l, "/cost$1"));
  assert_int_equal(l.n_ports, 2);
  for (size_t i = 0; i < l.n_ports; i++)
    assert_int_equal(l.ports[i].access,
                     l.ports[i].port == 80 ? LL_NET_BIND_TCP | LL_NET_CONNECT_TCP : LL_NET_CONNECT_TCP);
  assert_int_equal(l.handled[SPEC_LANDLOCK_NET], LL_NET_BIND_TCP | LL_NET_CONNECT_TCP);
  spec_landlock_clear(&l);
}

static void test_errors_name_the_path(void **state) {
  (void)state;
  parse_fails(
      "{\"ruleset\":[{\"handledAccessFs\":[\"read_file\",\"wirte_file\"]}]}",
      "ann: .ruleset[0].handledAccessFs[1]: unknown filesystem access right \"wirte_file\" (known: abi.all");
  parse_fails("{\"netPort\":[{\"allowedAccess\":[\"connect_tcp\"],\"port\":[70000]}]}",
              "ann: .netPort[0].port[0]: must be an integer between 0 and 65535");
  parse_fails("{\"netPort\":[{\"allowedAccess\":[\"read_file\"],\"port\":[1]}]}",
              ".netPort[0].allowedAccess[0]: unknown network access right \"read_file\"");
  parse_fails("{\"pathBeneath\":[{\"allowedAccess\":[],\"parent\":[\"/\"]}]}",
              ".pathBeneath[0].allowedAccess: must not be empty");
  parse_fails("{\"pathBeneath\":[{\"allowedAccess\":[\"read_file\"]}]}", ".pathBeneath[0].parent: missing");
  parse_fails("{\"pathBeneath\":[{\"allowedAccess\":[\"abi.all\"],\"parent\":[\"/\"]}]}",
              "\"abi.all\" needs the document's \"abi\"");
  parse_fails("{\"ruleset\":[{}]}", ".ruleset[0]: an empty ruleset");
  parse_fails("{\"abi\":0,\"ruleset\":[{\"scoped\":[\"signal\"]}]}",
              ".abi: must be an integer between 1 and");
  parse_fails("{\"Ruleset\":[]}",
              ".Ruleset: unknown field (known: abi, variable, ruleset, pathBeneath, netPort)");
  parse_fails("{\"pathBeneath\":[{\"allowedAccess\":[\"read_file\"],\"parent\":[\"${nope}\"]}]}",
              ".pathBeneath[0].parent[0]: \"${nope}\": unknown variable \"nope\"");
  parse_fails("{\"variable\":[{\"name\":\"1x\"}]}", ".variable[0].name: \"1x\": a name starts with a letter");
  parse_fails("{\"ruleset\":[{\"handledAccessFs\":[-1]}]}", "a raw access right must be a positive bit mask");
  parse_fails("[]", "ann: .: must be an object");
}

static void check_fails(const char *json, int abi, const char *expected) {
  struct spec_landlock l;
  parse_ok(json, &l);
  struct cm_error *err = NULL;
  assert_int_equal(spec_landlock_check_abi(&l, abi, &err), -1);
  if (strstr(err->msg, expected) == NULL) {
    print_error("error \"%s\" lacks \"%s\"\n", err->msg, expected);
    fail();
  }
  cm_error_free(err);
  spec_landlock_clear(&l);
}

static void check_ok(const char *json, int abi) {
  struct spec_landlock l;
  parse_ok(json, &l);
  struct cm_error *err = NULL;
  assert_int_equal(spec_landlock_check_abi(&l, abi, &err), 0);
  spec_landlock_clear(&l);
}

/* The kernels this one pretends to be: every right needs the ABI that introduced it. */
static void test_requested_rights_need_their_abi(void **state) {
  (void)state;
  const char *ioctl =
      "{\"pathBeneath\":[{\"allowedAccess\":[\"read_file\",\"ioctl_dev\"],\"parent\":[\"/dev\"]}]}";
  check_fails(ioctl, 4, "ann: handledAccessFs \"ioctl_dev\" needs Landlock ABI 5; this kernel has ABI 4");
  check_ok(ioctl, 5);
  check_fails("{\"ruleset\":[{\"handledAccessFs\":[\"truncate\"]}]}", 2, "\"truncate\" needs Landlock ABI 3");
  check_fails("{\"ruleset\":[{\"handledAccessFs\":[\"refer\"]}]}", 1, "\"refer\" needs Landlock ABI 2");
  check_fails("{\"netPort\":[{\"allowedAccess\":[\"connect_tcp\"],\"port\":[443]}]}", 3,
              "handledAccessNet \"connect_tcp\" needs Landlock ABI 4; this kernel has ABI 3");
  check_fails("{\"ruleset\":[{\"scoped\":[\"signal\"]}]}", 5, "scoped \"signal\" needs Landlock ABI 6");
  check_fails("{\"ruleset\":[{\"scoped\":[\"signal\"]}]}", 0, "Landlock is not available on this kernel");
  check_fails("{\"abi\":6,\"ruleset\":[{\"handledAccessFs\":[\"execute\"]}]}", 5,
              "\"abi\": 6 needs Landlock ABI 6; this kernel has ABI 5");
  /* A bit above the newest known right: refused on a kernel codemode knows all of... */
  check_fails("{\"ruleset\":[{\"handledAccessFs\":[65536]}]}", 7,
              "handledAccessFs 0x10000 is not a filesystem access right of Landlock ABI 7 or older");
  /* ...passed to a newer kernel, which knows better (and refuses it if it does not have it). */
  check_ok("{\"ruleset\":[{\"handledAccessFs\":[65536]}]}", 8);
  /* abi.* of an ABI newer than codemode knows would mean rights it cannot name. */
  check_fails("{\"abi\":8,\"ruleset\":[{\"handledAccessFs\":[\"abi.all\"]}]}", 8,
              "codemode knows the abi.* groups up to ABI 7 only");
}

static void test_best_effort_masks_to_the_abi(void **state) {
  (void)state;
  struct spec_landlock l;
  parse_ok("{\"abi\":7,\"ruleset\":[{\"handledAccessFs\":[\"abi.all\"],\"scoped\":[\"abi.all\"]}],"
           "\"pathBeneath\":[{\"allowedAccess\":[\"ioctl_dev\"],\"parent\":[\"/dev/pts\"]},"
           "{\"allowedAccess\":[\"abi.all\"],\"parent\":[\"/tmp\"]}],"
           "\"netPort\":[{\"allowedAccess\":[\"connect_tcp\"],\"port\":[443]}]}",
           &l);
  spec_landlock_mask_abi(&l, 3);
  assert_int_equal(l.handled[SPEC_LANDLOCK_FS], spec_landlock_supported(SPEC_LANDLOCK_FS, 3));
  assert_int_equal(l.handled[SPEC_LANDLOCK_NET], 0);
  assert_int_equal(l.handled[SPEC_LANDLOCK_SCOPE], 0);
  assert_null(rule(&l, "/dev/pts")); /* a rule left with no right goes */
  assert_int_equal(rule(&l, "/tmp")->access, spec_landlock_supported(SPEC_LANDLOCK_FS, 3));
  assert_int_equal(l.n_ports, 0);
  struct cm_error *err = NULL;
  assert_int_equal(spec_landlock_check_abi(&l, 3, &err), 0);
  spec_landlock_clear(&l);
}

static void test_kept_form_round_trips(void **state) {
  (void)state;
  struct spec_landlock in[2];
  parse_ok("{\"ruleset\":[{\"handledAccessFs\":[\"execute\",65536],\"scoped\":[\"signal\"]}],"
           "\"pathBeneath\":[{\"allowedAccess\":[\"read_file\"],\"parent\":[\"/a\",\"rel\"]}],"
           "\"netPort\":[{\"allowedAccess\":[\"bind_tcp\"],\"port\":[8080]}]}",
           &in[0]);
  parse_ok("{\"ruleset\":[{\"handledAccessFs\":[\"read_file\"]}]}", &in[1]);
  in[1].best_effort = true;
  assert_true(spec_landlock_add_deny(&in[1], "/data//x/./.env/"));
  assert_false(spec_landlock_add_deny(&in[1], "/data/../etc"));
  assert_false(spec_landlock_add_deny(&in[1], "relative"));
  char *json = spec_landlock_kept_json(in, 2, 7);
  struct spec_landlock *out;
  size_t n;
  int abi;
  struct cm_error *err = NULL;
  assert_int_equal(spec_landlock_kept_parse(json, strlen(json), "landlock.json", &out, &n, &abi, &err), 0);
  assert_int_equal(n, 2);
  assert_int_equal(abi, 7);
  for (size_t i = 0; i < 2; i++) {
    assert_memory_equal(out[i].handled, in[i].handled, sizeof(in[i].handled));
    assert_int_equal(out[i].n_paths, in[i].n_paths);
    assert_int_equal(out[i].n_ports, in[i].n_ports);
    assert_int_equal(out[i].best_effort, in[i].best_effort);
    assert_string_equal(out[i].source, in[i].source);
    spec_landlock_clear(&out[i]);
    spec_landlock_clear(&in[i]);
  }
  assert_int_equal(in[1].deny.count, 0);
  free(out);
  free(json);
}

/* --- the profile's rules ------------------------------------------------------------------------ */

static struct spec *load(const char *json) {
  struct cm_error *err = NULL;
  struct spec *s = spec_load_string(json, strlen(json), "config.json", &err);
  if (s == NULL) {
    print_error("unexpected error: %s\n", err->msg);
    fail();
  }
  return s;
}

#define CONFIG(mounts, annotations)                                                                          \
  "{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"rootfs\",\"readonly\":false},"                             \
  "\"process\":{\"user\":{\"uid\":0,\"gid\":0},\"args\":[\"sh\"],\"cwd\":\"/\"},\"mounts\":[" mounts "],"    \
  "\"annotations\":{" annotations "},"                                                                       \
  "\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"network\"},{\"type\":\"mount\"}]}}"

static void test_mcp_rules_follow_the_mounts(void **state) {
  (void)state;
  char ro_src[] = "/tmp/cm-ll-ro.XXXXXX", rw_src[] = "/tmp/cm-ll-rw.XXXXXX";
  assert_non_null(mkdtemp(ro_src));
  assert_non_null(mkdtemp(rw_src));
  char *json = NULL;
  assert_true(
      asprintf(
          &json,
          CONFIG("{\"destination\":\"/proc\",\"type\":\"proc\",\"source\":\"proc\"},"
                 "{\"destination\":\"/dev\",\"type\":\"tmpfs\",\"source\":\"tmpfs\"},"
                 "{\"destination\":\"/sys\",\"type\":\"sysfs\",\"source\":\"sysfs\",\"options\":[\"ro\"]},"
                 "{\"destination\":\"/"
                 "code\",\"type\":\"bind\",\"source\":\"%s\",\"options\":[\"rbind\",\"ro\"]},"
                 "{\"destination\":\"/"
                 "out\",\"type\":\"bind\",\"source\":\"%s\",\"options\":[\"rbind\",\"rw\",\"noexec\"]}",
                 "\"run.codemode.landlock.deny\":\"[\\\"/out/.env\\\"]\""),
          ro_src, rw_src) > 0);
  struct spec *s = load(json);
  struct policy_result r;
  struct cm_error *err = NULL;
  assert_int_equal(policy_apply(s, POLICY_PROFILE_MCP, "/tmp", &r, &err), 0);
  const struct spec_landlock *l = &r.landlock;
  assert_true(l->present && l->best_effort);
  uint64_t all = spec_landlock_supported(SPEC_LANDLOCK_FS, SPEC_LANDLOCK_ABI_KNOWN);
  assert_int_equal(l->handled[SPEC_LANDLOCK_FS], all);
  assert_int_equal(l->handled[SPEC_LANDLOCK_SCOPE], LL_SCOPE_SIGNAL | LL_SCOPE_ABSTRACT_UNIX_SOCKET);
  assert_int_equal(l->handled[SPEC_LANDLOCK_NET], 0); /* no egress allowlist: lo only, TCP not handled */
  /* The profile made the root read-only: read+execute only, whatever the config said. */
  assert_int_equal(rule(l, "/")->access, spec_landlock_read_execute(SPEC_LANDLOCK_ABI_KNOWN));
  assert_int_equal(rule(l, "/code")->access, spec_landlock_read_execute(SPEC_LANDLOCK_ABI_KNOWN));
  /* Writable, but noexec and (forced by the profile) nodev. */
  uint64_t out = rule(l, "/out")->access;
  assert_true(out & LL_FS_WRITE_FILE && out & LL_FS_MAKE_REG && out & LL_FS_REMOVE_FILE &&
              out & LL_FS_TRUNCATE);
  assert_false(out & (LL_FS_EXECUTE | LL_FS_IOCTL_DEV | LL_FS_MAKE_CHAR | LL_FS_MAKE_BLOCK));
  assert_int_equal(rule(l, "/proc")->access, LL_FS_READ_FILE | LL_FS_READ_DIR | LL_FS_WRITE_FILE);
  assert_int_equal(rule(l, "/sys")->access, LL_FS_READ_FILE | LL_FS_READ_DIR);
  assert_false(rule(l, "/dev")->access & (LL_FS_IOCTL_DEV | LL_FS_EXECUTE | LL_FS_MAKE_CHAR));
  assert_true(rule(l, "/dev/pts")->access & LL_FS_IOCTL_DEV);
  assert_true(rule(l, "/tmp")->access & LL_FS_WRITE_FILE); /* the profile's own /tmp */
  assert_int_equal(l->deny.count, 1);
  assert_string_equal(l->deny.items[0], "/out/.env");

  /* --ephemeral: the root is writable, and so are the rules for it. */
  policy_root_made_writable(s, &r, "--ephemeral");
  assert_false(s->root_readonly);
  assert_int_equal(rule(l, "/")->access, all);

  /* The egress broker's ports: connect and bind only there. */
  uint16_t connect[] = {3128, 1080}, bind[] = {8080};
  struct policy_landlock_tcp tcp = {connect, 2, bind, 1};
  assert_int_equal(policy_landlock_restrict_tcp(&r, &tcp, &err), 0);
  assert_int_equal(l->handled[SPEC_LANDLOCK_NET], LL_NET_CONNECT_TCP | LL_NET_BIND_TCP);
  assert_int_equal(l->n_ports, 3);
  /* Without a bind list (the egress allowlist's case), bind stays unrestricted. */
  r.landlock.handled[SPEC_LANDLOCK_NET] = 0;
  struct policy_landlock_tcp connect_only = {connect, 2, NULL, 0};
  assert_int_equal(policy_landlock_restrict_tcp(&r, &connect_only, &err), 0);
  assert_int_equal(l->handled[SPEC_LANDLOCK_NET], LL_NET_CONNECT_TCP);

  struct policy_report desc = {0};
  policy_landlock_describe(s, &r, 7, &desc);
  bool saw_root = false, saw_deny = false, saw_port = false;
  for (size_t i = 0; i < desc.count; i++) {
    saw_root |= strstr(desc.lines[i], "  /: execute write_file") != NULL;
    saw_deny |= strcmp(desc.lines[i], "  /out/.env: denied (nothing at or beneath it)") == 0;
    saw_port |= strcmp(desc.lines[i], "  tcp port 3128: connect_tcp") == 0;
  }
  assert_true(saw_root && saw_deny && saw_port);
  policy_report_free(&desc);
  policy_result_free(&r);
  spec_free(s);
  free(json);
  rmdir(ro_src);
  rmdir(rw_src);
}

static void test_default_profile_layers(void **state) {
  (void)state;
  struct policy_result r;
  struct cm_error *err = NULL;
  /* Nothing asked: no layer at all, nothing on the start path. */
  struct spec *s = load(CONFIG("", ""));
  assert_int_equal(policy_apply(s, POLICY_PROFILE_DEFAULT, "/tmp", &r, &err), 0);
  assert_false(r.landlock.present);
  assert_null(s->landlock);
  uint16_t port = 1;
  struct policy_landlock_tcp tcp = {&port, 1, NULL, 0};
  assert_int_equal(policy_landlock_restrict_tcp(&r, &tcp, &err), -1);
  cm_error_free(err);
  err = NULL;
  policy_result_free(&r);
  spec_free(s);
  /* A deny list alone: everything as the mounts allow, but the denied paths. */
  s = load(CONFIG("", "\"run.codemode.landlock.deny\":\"[\\\"/srv/key\\\"]\","
                      "\"run.codemode.landlock\":\"{\\\"ruleset\\\":[{\\\"scoped\\\":[\\\"signal\\\"]}]}\""));
  assert_int_equal(policy_apply(s, POLICY_PROFILE_DEFAULT, "/tmp", &r, &err), 0);
  assert_true(r.landlock.present);
  assert_int_equal(rule(&r.landlock, "/")->access, spec_landlock_supported(SPEC_LANDLOCK_FS, 7));
  assert_string_equal(r.landlock.deny.items[0], "/srv/key");
  assert_non_null(s->landlock);
  assert_int_equal(s->landlock->handled[SPEC_LANDLOCK_SCOPE], LL_SCOPE_SIGNAL);
  assert_false(s->landlock->best_effort);
  policy_result_free(&r);
  spec_free(s);
}

/* --- carving a deny list out of the trees ------------------------------------------------------- */

static char tree[64];

static void mk(const char *rel, bool dir) {
  char p[256];
  snprintf(p, sizeof(p), "%s/%s", tree, rel);
  if (dir) {
    assert_int_equal(mkdir(p, 0755), 0);
  } else {
    int fd = open(p, O_CREAT | O_WRONLY, 0644);
    assert_true(fd >= 0);
    close(fd);
  }
}

/* The rights the kernel ends up with on a path: the rules on one object add up. 0: no rule. */
static uint64_t rule_at(const struct landlock_rule *r, size_t n, const char *rel) {
  char p[256];
  snprintf(p, sizeof(p), "%s%s%s", tree, rel[0] ? "/" : "", rel);
  uint64_t access = 0;
  for (size_t i = 0; i < n; i++)
    if (strcmp(r[i].path, p) == 0)
      access |= r[i].access;
  return access;
}

static int setup_tree(void **state) {
  (void)state;
  snprintf(tree, sizeof(tree), "/tmp/cm-ll-tree.XXXXXX");
  assert_non_null(mkdtemp(tree));
  mk("a", true);
  mk("a/f", false);
  mk("b", true);
  mk("b/secret", false);
  mk("b/other", false);
  mk("b/deep", true);
  mk("b/deep/k", false);
  mk("e", false);
  char from[256], to[256];
  snprintf(from, sizeof(from), "%s/b/secret", tree);
  snprintf(to, sizeof(to), "%s/hardlink", tree);
  assert_int_equal(link(from, to), 0); /* the secret under another name, next to it */
  snprintf(to, sizeof(to), "%s/symlink", tree);
  assert_int_equal(symlink(from, to), 0);
  return 0;
}

static int teardown_tree(void **state) {
  (void)state;
  char cmd[128];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tree);
  return system(cmd) == 0 ? 0 : -1;
}

static void test_deny_is_carved_out_of_the_tree(void **state) {
  (void)state;
  struct spec_landlock l = {0};
  uint64_t all = spec_landlock_supported(SPEC_LANDLOCK_FS, 7);
  char p[256];
  spec_landlock_add_path(&l, tree, all);
  snprintf(p, sizeof(p), "%s/b", tree);
  spec_landlock_add_path(&l, p, LL_FS_READ_FILE | LL_FS_READ_DIR); /* a rule on the way */
  snprintf(p, sizeof(p), "%s/b/deep", tree);
  spec_landlock_add_path(&l, p, all); /* unaffected: beside the denied file */
  snprintf(p, sizeof(p), "%s/b/secret", tree);
  spec_landlock_add_deny(&l, p);
  snprintf(p, sizeof(p), "%s/missing", tree);
  spec_landlock_add_deny(&l, p); /* denies nothing: not there */

  struct landlock_rule *r;
  size_t n;
  struct cm_error *err = NULL;
  assert_int_equal(landlock_rules_resolve(&l, "/", &r, &n, &err), 0);
  /* The directories on the way: listing only. */
  assert_int_equal(rule_at(r, n, ""), LL_FS_READ_DIR);
  assert_int_equal(rule_at(r, n, "b"), LL_FS_READ_DIR);
  /* Their other entries: the rights of the trees they are in (a file keeps only the rights a
   * file can hold). */
  assert_int_equal(rule_at(r, n, "a"), all);
  assert_int_equal(rule_at(r, n, "e"), all & LL_FS_FILE_RIGHTS);
  assert_int_equal(rule_at(r, n, "b/other"), all & LL_FS_FILE_RIGHTS);
  assert_int_equal(rule_at(r, n, "b/deep"), all);
  /* The denied file, by name or through a hard link: no rule; a symlink: none needed. */
  assert_int_equal(rule_at(r, n, "b/secret"), 0);
  assert_int_equal(rule_at(r, n, "hardlink"), 0);
  assert_int_equal(rule_at(r, n, "symlink"), 0);
  landlock_rules_free(r, n);
  spec_landlock_clear(&l);

  /* A rule at or beneath a denied directory goes; without a deny, rules are taken as they are. */
  snprintf(p, sizeof(p), "%s/b", tree);
  spec_landlock_add_path(&l, p, all);
  snprintf(p, sizeof(p), "%s/b/deep", tree);
  spec_landlock_add_path(&l, p, all);
  spec_landlock_add_path(&l, "e", all); /* relative: against cwd */
  snprintf(p, sizeof(p), "%s/b", tree);
  spec_landlock_add_deny(&l, p);
  assert_int_equal(landlock_rules_resolve(&l, tree, &r, &n, &err), 0);
  assert_int_equal(n, 1);
  assert_int_equal(rule_at(r, n, "e"), all & LL_FS_FILE_RIGHTS);
  landlock_rules_free(r, n);
  spec_landlock_clear(&l);
}

static int prctl_no_new_privs_for_test(void) {
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

/* The rules really hold: a child enforces a carved layer and tries. */
static void test_enforced_in_a_child(void **state) {
  (void)state;
  if (landlock_abi() < 1)
    skip();
  struct spec_landlock l = {0};
  char p[256];
  spec_landlock_add_path(&l, tree, LL_FS_READ_FILE | LL_FS_READ_DIR);
  snprintf(p, sizeof(p), "%s/b/secret", tree);
  spec_landlock_add_deny(&l, p);
  l.handled[SPEC_LANDLOCK_FS] = spec_landlock_supported(SPEC_LANDLOCK_FS, landlock_abi());
  pid_t pid = fork();
  if (pid == 0) {
    struct landlock_prepared prep;
    struct cm_error *err = NULL;
    if (prctl_no_new_privs_for_test() < 0 || landlock_prepare(&l, 1, "/", &prep, &err) < 0 ||
        landlock_enforce(&prep, &err) < 0)
      _exit(10);
    char q[256];
    snprintf(q, sizeof(q), "%s/b/other", tree);
    if (open(q, O_RDONLY) < 0)
      _exit(11);
    snprintf(q, sizeof(q), "%s/b/secret", tree);
    if (open(q, O_RDONLY) >= 0 || errno != EACCES)
      _exit(12);
    snprintf(q, sizeof(q), "%s/hardlink", tree);
    if (open(q, O_RDONLY) >= 0 || errno != EACCES)
      _exit(13);
    snprintf(q, sizeof(q), "%s/a/new", tree);
    if (open(q, O_CREAT | O_WRONLY, 0644) >= 0 || errno != EACCES)
      _exit(14);
    _exit(0);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  spec_landlock_clear(&l);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_groups_follow_the_abi),
      cmocka_unit_test(test_variables_ports_raw_bits_and_merging),
      cmocka_unit_test(test_errors_name_the_path),
      cmocka_unit_test(test_requested_rights_need_their_abi),
      cmocka_unit_test(test_best_effort_masks_to_the_abi),
      cmocka_unit_test(test_kept_form_round_trips),
      cmocka_unit_test(test_mcp_rules_follow_the_mounts),
      cmocka_unit_test(test_default_profile_layers),
      cmocka_unit_test_setup_teardown(test_deny_is_carved_out_of_the_tree, setup_tree, teardown_tree),
      cmocka_unit_test_setup_teardown(test_enforced_in_a_child, setup_tree, teardown_tree),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
