/* policy/seccomp_profile.c: Docker's JSON seccomp format → spec_seccomp, resolved for one target
 * (archMap, includes/excludes on caps, arches and minKernel, errnoRet, args, the old `name`),
 * errors naming the JSON path, and the built-in profiles. */
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
#include <unistd.h>

#include "linux/seccomp.h"
#include "policy/seccomp_profile.h"

#define CAP(c) (1ULL << (c))

/* A fixed target, so the tests do not depend on this machine's kernel or architecture. */
static const struct seccomp_profile_target x86_k510 = {
    .capabilities = 0, .arch = "SCMP_ARCH_X86_64", .kernel_major = 5, .kernel_minor = 10};

static void load_ok(const char *json, const struct seccomp_profile_target *t, struct spec_seccomp *out) {
  struct cm_error *err = NULL;
  if (seccomp_profile_load_string(json, strlen(json), "test.json", t, out, &err) < 0) {
    print_error("unexpected error: %s\n", err->msg);
    cm_error_free(err);
    fail();
  }
}

/* The error message, for a profile that must be refused (caller frees). */
static char *load_fails(const char *json, const struct seccomp_profile_target *t) {
  struct cm_error *err = NULL;
  struct spec_seccomp out;
  int rc = seccomp_profile_load_string(json, strlen(json), "test.json", t, &out, &err);
  assert_int_equal(rc, -1);
  assert_non_null(err);
  char *msg = strdup(err->msg);
  cm_error_free(err);
  return msg;
}

static bool has_name(const struct spec_seccomp *s, const char *name) {
  for (size_t i = 0; i < s->n_syscalls; i++)
    for (size_t k = 0; k < s->syscalls[i].names.count; k++)
      if (strcmp(s->syscalls[i].names.items[k], name) == 0)
        return true;
  return false;
}

static const struct spec_seccomp_syscall *rule_for(const struct spec_seccomp *s, const char *name) {
  for (size_t i = 0; i < s->n_syscalls; i++)
    for (size_t k = 0; k < s->syscalls[i].names.count; k++)
      if (strcmp(s->syscalls[i].names.items[k], name) == 0)
        return &s->syscalls[i];
  return NULL;
}

static bool has_arch(const struct spec_seccomp *s, const char *arch) {
  for (size_t i = 0; i < s->architectures.count; i++)
    if (strcmp(s->architectures.items[i], arch) == 0)
      return true;
  return false;
}

static void test_minimal(void **state) {
  struct spec_seccomp s;
  load_ok("{\"defaultAction\":\"SCMP_ACT_ERRNO\"}", &x86_k510, &s);
  assert_true(s.present);
  assert_int_equal(s.default_action, SPEC_SECCOMP_ERRNO);
  assert_false(s.has_default_errno_ret);
  assert_int_equal(s.n_syscalls, 0);
  seccomp_profile_free(&s);
}

static const char arch_map_json[] =
    "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"archMap\":["
    "{\"architecture\":\"SCMP_ARCH_X86_64\",\"subArchitectures\":[\"SCMP_ARCH_X86\",\"SCMP_ARCH_X32\"]},"
    "{\"architecture\":\"SCMP_ARCH_AARCH64\",\"subArchitectures\":[\"SCMP_ARCH_ARM\"]}]}";

static void test_arch_map_native_entry_only(void **state) {
  struct spec_seccomp s;
  load_ok(arch_map_json, &x86_k510, &s);
  assert_int_equal(s.architectures.count, 3);
  assert_string_equal(s.architectures.items[0], "SCMP_ARCH_X86_64");
  assert_true(has_arch(&s, "SCMP_ARCH_X86"));
  assert_true(has_arch(&s, "SCMP_ARCH_X32"));
  assert_false(has_arch(&s, "SCMP_ARCH_AARCH64"));
  assert_false(has_arch(&s, "SCMP_ARCH_ARM"));
  seccomp_profile_free(&s);

  struct seccomp_profile_target arm = x86_k510;
  arm.arch = "SCMP_ARCH_AARCH64";
  load_ok(arch_map_json, &arm, &s);
  assert_int_equal(s.architectures.count, 2);
  assert_true(has_arch(&s, "SCMP_ARCH_AARCH64"));
  assert_true(has_arch(&s, "SCMP_ARCH_ARM"));
  assert_false(has_arch(&s, "SCMP_ARCH_X86_64"));
  seccomp_profile_free(&s);
}

static void test_arch_map_merges_with_architectures(void **state) {
  struct spec_seccomp s;
  load_ok("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"architectures\":[\"SCMP_ARCH_X86_64\"],"
          "\"archMap\":[{\"architecture\":\"SCMP_ARCH_X86_64\",\"subArchitectures\":[\"SCMP_ARCH_X86\"]}]}",
          &x86_k510, &s);
  /* No duplicate for the native architecture named twice. */
  assert_int_equal(s.architectures.count, 2);
  seccomp_profile_free(&s);
  char *msg =
      load_fails("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"architectures\":[\"SCMP_ARCH_VAX\"]}", &x86_k510);
  assert_non_null(strstr(msg, "SCMP_ARCH_VAX"));
  assert_non_null(strstr(msg, "architectures"));
  free(msg);
}

static const char caps_json[] =
    "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":["
    "{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ALLOW\"},"
    "{\"names\":[\"mount\"],\"action\":\"SCMP_ACT_ALLOW\",\"includes\":{\"caps\":[\"CAP_SYS_ADMIN\"]}},"
    "{\"names\":[\"both\"],\"action\":\"SCMP_ACT_ALLOW\","
    " \"includes\":{\"caps\":[\"CAP_SYS_ADMIN\",\"CAP_NET_ADMIN\"]}},"
    "{\"names\":[\"unshare\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":1,"
    " \"excludes\":{\"caps\":[\"CAP_SYS_ADMIN\"]}}]}";

static void test_includes_excludes_caps(void **state) {
  struct spec_seccomp s;
  /* No capabilities: the CAP_SYS_ADMIN rules are out, the excludes rule is in. */
  load_ok(caps_json, &x86_k510, &s);
  assert_true(has_name(&s, "read"));
  assert_false(has_name(&s, "mount"));
  assert_false(has_name(&s, "both"));
  assert_true(has_name(&s, "unshare"));
  seccomp_profile_free(&s);

  struct seccomp_profile_target admin = x86_k510;
  admin.capabilities = CAP(CAP_SYS_ADMIN);
  load_ok(caps_json, &admin, &s);
  assert_true(has_name(&s, "mount"));
  /* includes: every listed capability must be held. */
  assert_false(has_name(&s, "both"));
  assert_false(has_name(&s, "unshare"));
  seccomp_profile_free(&s);

  admin.capabilities |= CAP(CAP_NET_ADMIN);
  load_ok(caps_json, &admin, &s);
  assert_true(has_name(&s, "both"));
  seccomp_profile_free(&s);
}

static const char arches_json[] = "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":["
                                  "{\"names\":[\"arch_prctl\"],\"action\":\"SCMP_ACT_ALLOW\",\"includes\":{"
                                  "\"arches\":[\"amd64\",\"x32\"]}},"
                                  "{\"names\":[\"arm_fadvise64_64\"],\"action\":\"SCMP_ACT_ALLOW\","
                                  "\"includes\":{\"arches\":[\"arm\",\"arm64\"]}},"
                                  "{\"names\":[\"not_on_x86\"],\"action\":\"SCMP_ACT_ALLOW\",\"excludes\":{"
                                  "\"arches\":[\"SCMP_ARCH_X86_64\"]}}]}";

static void test_includes_excludes_arches(void **state) {
  struct spec_seccomp s;
  load_ok(arches_json, &x86_k510, &s);
  /* Go's names (Docker's spelling) and libseccomp's both match. */
  assert_true(has_name(&s, "arch_prctl"));
  assert_false(has_name(&s, "arm_fadvise64_64"));
  assert_false(has_name(&s, "not_on_x86"));
  seccomp_profile_free(&s);

  struct seccomp_profile_target arm = x86_k510;
  arm.arch = "SCMP_ARCH_AARCH64";
  load_ok(arches_json, &arm, &s);
  assert_false(has_name(&s, "arch_prctl"));
  assert_true(has_name(&s, "arm_fadvise64_64"));
  assert_true(has_name(&s, "not_on_x86"));
  seccomp_profile_free(&s);
}

static const char kernel_json[] =
    "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":["
    "{\"names\":[\"new_in_5_6\"],\"action\":\"SCMP_ACT_ALLOW\",\"includes\":{\"minKernel\":\"5.6\"}},"
    "{\"names\":[\"new_in_5_10\"],\"action\":\"SCMP_ACT_ALLOW\",\"includes\":{\"minKernel\":\"5.10\"}},"
    "{\"names\":[\"new_in_5_11\"],\"action\":\"SCMP_ACT_ALLOW\",\"includes\":{\"minKernel\":\"5.11\"}},"
    "{\"names\":[\"new_in_6_0\"],\"action\":\"SCMP_ACT_ALLOW\",\"includes\":{\"minKernel\":\"6.0\"}},"
    "{\"names\":[\"old_only\"],\"action\":\"SCMP_ACT_ALLOW\",\"excludes\":{\"minKernel\":\"4.8\"}}]}";

static void test_min_kernel(void **state) {
  struct spec_seccomp s;
  load_ok(kernel_json, &x86_k510, &s);
  assert_true(has_name(&s, "new_in_5_6"));
  assert_true(has_name(&s, "new_in_5_10")); /* equal counts: numeric, not "5.10" < "5.6" */
  assert_false(has_name(&s, "new_in_5_11"));
  assert_false(has_name(&s, "new_in_6_0"));
  assert_false(has_name(&s, "old_only"));
  seccomp_profile_free(&s);

  struct seccomp_profile_target old = x86_k510;
  old.kernel_major = 4;
  old.kernel_minor = 19;
  load_ok(kernel_json, &old, &s);
  assert_false(has_name(&s, "new_in_5_6"));
  assert_false(has_name(&s, "old_only")); /* 4.19 >= 4.8 */
  seccomp_profile_free(&s);

  char *msg = load_fails("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"names\":[\"x\"],"
                         "\"action\":\"SCMP_ACT_ALLOW\",\"includes\":{\"minKernel\":\"five\"}}]}",
                         &x86_k510);
  assert_non_null(strstr(msg, "minKernel"));
  assert_non_null(strstr(msg, "five"));
  free(msg);
}

static void test_includes_combined(void **state) {
  /* includes: every condition (caps AND arch AND kernel); excludes: any one of them. */
  const char *json = "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":["
                     "{\"names\":[\"all3\"],\"action\":\"SCMP_ACT_ALLOW\",\"includes\":"
                     " {\"caps\":[\"CAP_SYS_PTRACE\"],\"arches\":[\"amd64\"],\"minKernel\":\"4.8\"}},"
                     "{\"names\":[\"any\"],\"action\":\"SCMP_ACT_ALLOW\",\"excludes\":"
                     " {\"caps\":[\"CAP_SYS_PTRACE\"],\"arches\":[\"arm64\"]}}]}";
  struct spec_seccomp s;
  load_ok(json, &x86_k510, &s);
  assert_false(has_name(&s, "all3"));
  assert_true(has_name(&s, "any"));
  seccomp_profile_free(&s);
  struct seccomp_profile_target ptrace = x86_k510;
  ptrace.capabilities = CAP(CAP_SYS_PTRACE);
  load_ok(json, &ptrace, &s);
  assert_true(has_name(&s, "all3"));
  assert_false(has_name(&s, "any"));
  seccomp_profile_free(&s);
}

static void test_errno_ret_and_args(void **state) {
  const char *json = "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"defaultErrnoRet\":38,\"syscalls\":["
                     "{\"names\":[\"personality\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":["
                     " {\"index\":0,\"value\":8,\"op\":\"SCMP_CMP_EQ\"}]},"
                     "{\"names\":[\"clone\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":1,\"args\":["
                     " {\"index\":0,\"value\":2114060288,\"valueTwo\":0,\"op\":\"SCMP_CMP_MASKED_EQ\"}]},"
                     "{\"name\":\"old_spelling\",\"action\":\"SCMP_ACT_LOG\"}]}";
  struct spec_seccomp s;
  load_ok(json, &x86_k510, &s);
  assert_true(s.has_default_errno_ret);
  assert_int_equal(s.default_errno_ret, 38);
  const struct spec_seccomp_syscall *p = rule_for(&s, "personality");
  assert_non_null(p);
  assert_false(p->has_errno_ret);
  assert_int_equal(p->n_args, 1);
  assert_int_equal(p->args[0].index, 0);
  assert_int_equal(p->args[0].value, 8);
  assert_int_equal(p->args[0].op, SPEC_SECCOMP_OP_EQ);
  const struct spec_seccomp_syscall *c = rule_for(&s, "clone");
  assert_non_null(c);
  assert_true(c->has_errno_ret);
  assert_int_equal(c->errno_ret, EPERM);
  assert_int_equal(c->action, SPEC_SECCOMP_ERRNO);
  assert_int_equal(c->args[0].value, 2114060288);
  assert_int_equal(c->args[0].op, SPEC_SECCOMP_OP_MASKED_EQ);
  const struct spec_seccomp_syscall *o = rule_for(&s, "old_spelling");
  assert_non_null(o);
  assert_int_equal(o->action, SPEC_SECCOMP_LOG);
  seccomp_profile_free(&s);
}

static void test_errors_name_the_path(void **state) {
  static const struct {
    const char *json, *want1, *want2;
  } cases[] = {
      {"{\"syscalls\":[]}", "defaultAction", NULL},
      {"{\"defaultAction\":\"SCMP_ACT_MAYBE\"}", "SCMP_ACT_MAYBE", NULL},
      {"{\"defaultAction\":\"SCMP_ACT_NOTIFY\"}", "NOTIFY", NULL},
      {"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"action\":\"SCMP_ACT_ALLOW\"}]}", "syscalls[0]",
       "names"},
      {"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"names\":[\"a\"],\"action\":\"SCMP_ACT_ALLOW\","
       "\"args\":[{\"index\":6,\"value\":0,\"op\":\"SCMP_CMP_EQ\"}]}]}",
       "index", NULL},
      {"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"names\":[\"a\"],\"action\":\"SCMP_ACT_ALLOW\","
       "\"args\":[{\"index\":0,\"value\":0,\"op\":\"SCMP_CMP_SOMETIMES\"}]}]}",
       "SCMP_CMP_SOMETIMES", NULL},
      {"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"names\":[\"a\"],\"action\":\"SCMP_ACT_ALLOW\","
       "\"includes\":{\"caps\":[\"CAP_FLY\"]}}]}",
       "CAP_FLY", "caps"},
      {"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"names\":[\"a\"],\"action\":\"SCMP_ACT_"
       "NOTIFY\"}]}",
       "listenerPath", NULL},
      {"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"flags\":[\"SECCOMP_FILTER_FLAG_FAST\"]}",
       "SECCOMP_FILTER_FLAG_FAST", NULL},
      {"[1,2]", "test.json", NULL},
      {"{\"defaultAction\":", "test.json", NULL},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char *msg = load_fails(cases[i].json, &x86_k510);
    if (strstr(msg, cases[i].want1) == NULL || (cases[i].want2 && strstr(msg, cases[i].want2) == NULL)) {
      print_error("case %zu: \"%s\" does not mention %s/%s\n", i, msg, cases[i].want1,
                  cases[i].want2 ? cases[i].want2 : "");
      free(msg);
      fail();
    }
    free(msg);
  }
}

static void test_excluded_rules_are_still_validated(void **state) {
  /* A rule that does not apply here is still checked: a typo must not wait for another machine. */
  char *msg = load_fails("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"names\":[\"a\"],"
                         "\"action\":\"SCMP_ACT_BOGUS\",\"includes\":{\"arches\":[\"s390x\"]}}]}",
                         &x86_k510);
  assert_non_null(strstr(msg, "SCMP_ACT_BOGUS"));
  free(msg);
}

static void test_builtins(void **state) {
  size_t len = 0;
  assert_non_null(seccomp_profile_builtin("default", &len));
  assert_true(len > 100);
  assert_non_null(seccomp_profile_builtin("mcp", &len));
  /* mcp-audit.json (SCMP_ACT_LOG) is retired: mcp-audit is learn mode on top of mcp.json. */
  assert_null(seccomp_profile_builtin("mcp-audit", &len));
  assert_null(seccomp_profile_builtin("nope", &len));

  struct spec_seccomp dflt, mcp;
  struct cm_error *err = NULL;
  assert_int_equal(seccomp_profile_load("default", &x86_k510, &dflt, &err), 0);
  assert_int_equal(seccomp_profile_load("mcp", &x86_k510, &mcp, &err), 0);
  /* The default profile allows ordinary work; mcp denies what the issue lists. */
  assert_true(has_name(&dflt, "read"));
  static const char *const denied[] = {
      "ptrace",         "process_vm_readv", "bpf",        "perf_event_open", "keyctl",
      "io_uring_setup", "userfaultfd",      "unshare",    "setns",           "mount",
      "fsopen",         "execveat",         "modify_ldt", "vmsplice"};
  for (size_t i = 0; i < sizeof(denied) / sizeof(denied[0]); i++) {
    const struct spec_seccomp_syscall *r = rule_for(&mcp, denied[i]);
    if (r == NULL && mcp.default_action != SPEC_SECCOMP_ALLOW)
      continue; /* denied by the default action */
    if (r == NULL || r->action == SPEC_SECCOMP_ALLOW) {
      print_error("mcp.json does not deny %s\n", denied[i]);
      fail();
    }
  }
  /* clone3 answers ENOSYS so libc falls back to clone (whose flags a filter can see). */
  const struct spec_seccomp_syscall *c3 = rule_for(&mcp, "clone3");
  assert_non_null(c3);
  assert_int_equal(c3->action, SPEC_SECCOMP_ERRNO);
  assert_int_equal(c3->errno_ret, ENOSYS);
  seccomp_profile_free(&dflt);
  seccomp_profile_free(&mcp);

  /* A path (it has a '/') is a file, never a built-in name. */
  assert_int_equal(seccomp_profile_load("./mcp", &x86_k510, &dflt, &err), -1);
  assert_non_null(err);
  cm_error_free(err);
}

/* The built-in profiles are embedded without their comments and whitespace (scripts/json-strip.c,
 * issue 27): each must compile to exactly the program its file in seccomp-profiles/ does, for
 * the capabilities and architectures its includes/excludes look at. */
static void test_builtins_are_the_files(void **state) {
  static const char *const names[] = {"default", "mcp"};
  static const uint64_t caps[] = {0, (1ULL << CAP_SYS_ADMIN) | (1ULL << CAP_SYS_PTRACE) | (1ULL << CAP_SYS_BOOT)};
  static const char *const arches[] = {"SCMP_ARCH_X86_64", "SCMP_ARCH_AARCH64"};
  for (size_t i = 0; i < 2; i++)
    for (size_t k = 0; k < 2; k++)
      for (size_t a = 0; a < 2; a++) {
        struct seccomp_profile_target t = {.capabilities = caps[k], .arch = arches[a], .kernel_major = 6, .kernel_minor = 1};
        char path[64];
        snprintf(path, sizeof(path), "seccomp-profiles/%s.json", names[i]);
        struct spec_seccomp built, file;
        struct cm_error *err = NULL;
        assert_int_equal(seccomp_profile_load(names[i], &t, &built, &err), 0);
        if (seccomp_profile_load_file(path, &t, &file, &err) < 0) {
          print_error("%s\n", err->msg);
          fail();
        }
        assert_int_equal(built.n_syscalls, file.n_syscalls);
        struct seccomp_program pb = {0}, pf = {0};
        assert_int_equal(seccomp_compile(&built, &pb, &err), 0);
        assert_int_equal(seccomp_compile(&file, &pf, &err), 0);
        assert_true(pb.n_insns > 10);
        assert_int_equal(pb.n_insns, pf.n_insns);
        assert_int_equal(pb.flags, pf.flags);
        assert_memory_equal(pb.bpf, pf.bpf, pb.n_insns * 8);
        seccomp_program_free(&pb);
        seccomp_program_free(&pf);
        seccomp_profile_free(&built);
        seccomp_profile_free(&file);
      }
}

static void test_load_file(void **state) {
  char path[] = "/tmp/cm-test-seccomp-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  const char *json = "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"chmod\"],"
                     "\"action\":\"SCMP_ACT_ERRNO\"}]}";
  assert_int_equal(write(fd, json, strlen(json)), (ssize_t)strlen(json));
  close(fd);
  struct spec_seccomp s;
  struct cm_error *err = NULL;
  assert_int_equal(seccomp_profile_load(path, NULL, &s, &err), 0);
  assert_true(has_name(&s, "chmod"));
  /* target NULL: this machine's architecture. */
  seccomp_profile_free(&s);
  unlink(path);
  assert_int_equal(seccomp_profile_load_file(path, NULL, &s, &err), -1);
  assert_non_null(strstr(err->msg, "seccomp profile"));
  cm_error_free(err);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_minimal),
      cmocka_unit_test(test_arch_map_native_entry_only),
      cmocka_unit_test(test_arch_map_merges_with_architectures),
      cmocka_unit_test(test_includes_excludes_caps),
      cmocka_unit_test(test_includes_excludes_arches),
      cmocka_unit_test(test_min_kernel),
      cmocka_unit_test(test_includes_combined),
      cmocka_unit_test(test_errno_ret_and_args),
      cmocka_unit_test(test_errors_name_the_path),
      cmocka_unit_test(test_excluded_rules_are_still_validated),
      cmocka_unit_test(test_builtins),
      cmocka_unit_test(test_builtins_are_the_files),
      cmocka_unit_test(test_load_file),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
