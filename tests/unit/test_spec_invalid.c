/* spec/: invalid config.json documents fail with "config.json: <json path>: <problem>".
 * Each case is a fragment appended to a minimal valid config; since a repeated key takes the
 * last value, a fragment like PROC("\"cwd\":\"x\"") replaces .process. Run under valgrind, this
 * also proves that every error path frees the partly built spec. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka.h needs the four above first. */
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec/spec.h"

#define HEAD "{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"rootfs\"},"
#define PROC_FIELDS "\"user\":{\"uid\":0,\"gid\":0},\"args\":[\"sh\"],\"cwd\":\"/\""
#define BASE HEAD "\"process\":{" PROC_FIELDS "}"
#define PROC(x) "\"process\":{" PROC_FIELDS "," x "}"
#define LINUX(x) "\"linux\":{" x "}"
#define RES(x) LINUX("\"resources\":{" x "}")
#define SECCOMP(x) LINUX("\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ALLOW\"," x "}")
#define MOUNT(x) "\"mounts\":[{\"destination\":\"/m\"," x "}]"

struct invalid_case {
  const char *fragment; /* appended to BASE, or the whole document when raw */
  const char *expect;   /* the exact message */
  bool raw;
  bool prefix; /* expect is a prefix only (yajl's wording) */
};

#define CASE(frag, msg)                                                                                      \
  { frag, "config.json: " msg, false, false }
#define RAW(doc, msg)                                                                                        \
  { doc, "config.json: " msg, true, false }

static const struct invalid_case cases[] = {
    /* document and top level */
    {"{", "config.json: invalid JSON at line 1, column 2: ", true, true},
    {"{}x", "config.json: invalid JSON at line 1, column 3: ", true, true},
    {"{\"ociVersion\":\"1.0\\u0000\"}", "config.json: invalid JSON: NUL character in input", true, false},
    RAW("[]", ".: must be an object"),
    RAW("{}", ".ociVersion: missing"),
    RAW("{\"ociVersion\":\"1.0.0\",\"process\":{}}", ".root: missing"),
    RAW("{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"}}", ".process: missing"),
    CASE("\"ociVersion\":\"2.0.0\"", ".ociVersion: unsupported version \"2.0.0\" (major version must be 1)"),
    CASE("\"ociVersion\":\"abc\"", ".ociVersion: unsupported version \"abc\" (major version must be 1)"),
    CASE("\"ociVersion\":1", ".ociVersion: must be a string"),
    CASE("\"root\":{\"path\":\"\"}", ".root.path: must be a non-empty string"),
    CASE("\"root\":{}", ".root.path: missing"),
    CASE("\"root\":\"rootfs\"", ".root: must be an object"),
    CASE("\"root\":{\"path\":\"r\",\"readonly\":\"yes\"}", ".root.readonly: must be a boolean"),
    CASE("\"hostname\":5", ".hostname: must be a string"),

    /* process */
    CASE("\"process\":[]", ".process: must be an object"),
    CASE(PROC("\"args\":[]"), ".process.args: must be a non-empty array of strings"),
    CASE("\"process\":{\"user\":{\"uid\":0,\"gid\":0},\"cwd\":\"/\"}",
         ".process.args: must be a non-empty array of strings"),
    CASE(PROC("\"args\":[\"sh\",1]"), ".process.args[1]: must be a string"),
    CASE(PROC("\"args\":\"sh\""), ".process.args: must be an array of strings"),
    CASE(PROC("\"cwd\":\"rel\""), ".process.cwd: must be an absolute path"),
    CASE("\"process\":{\"user\":{\"uid\":0,\"gid\":0},\"args\":[\"sh\"]}", ".process.cwd: missing"),
    CASE("\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\"}", ".process.user: missing"),
    CASE(PROC("\"user\":{\"gid\":0}"), ".process.user.uid: missing"),
    CASE(PROC("\"user\":{\"uid\":-1,\"gid\":0}"), ".process.user.uid: must be a non-negative integer"),
    CASE(PROC("\"user\":{\"uid\":4294967296,\"gid\":0}"),
         ".process.user.uid: must be an integer between 0 and 4294967295"),
    CASE(PROC("\"user\":{\"uid\":0,\"gid\":1.5}"), ".process.user.gid: must be an integer"),
    CASE(PROC("\"user\":{\"uid\":0,\"gid\":0,\"umask\":\"022\"}"), ".process.user.umask: must be an integer"),
    CASE(PROC("\"user\":{\"uid\":0,\"gid\":0,\"umask\":512}"),
         ".process.user.umask: must be between 0 and 0777"),
    CASE(PROC("\"user\":{\"uid\":0,\"gid\":0,\"additionalGids\":[1,\"x\"]}"),
         ".process.user.additionalGids[1]: must be an integer"),
    CASE(PROC("\"terminal\":\"true\""), ".process.terminal: must be a boolean"),
    CASE(PROC("\"env\":[\"A=1\",2]"), ".process.env[1]: must be a string"),
    CASE(PROC("\"consoleSize\":{\"height\":1}"), ".process.consoleSize.width: missing"),
    CASE(PROC("\"capabilities\":{\"ambient\":\"CAP_KILL\"}"),
         ".process.capabilities.ambient: must be an array of strings"),
    CASE(PROC("\"capabilities\":[]"), ".process.capabilities: must be an object"),
    CASE(PROC("\"rlimits\":[{\"type\":\"RLIMIT_FOO\",\"soft\":1,\"hard\":1}]"),
         ".process.rlimits[0].type: unknown rlimit type \"RLIMIT_FOO\""),
    CASE(PROC("\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"soft\":1,\"hard\":1},{\"type\":\"RLIMIT_NOFILE\","
              "\"soft\":2,\"hard\":2}]"),
         ".process.rlimits[1].type: duplicate rlimit type \"RLIMIT_NOFILE\""),
    CASE(PROC("\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"soft\":20,\"hard\":10}]"),
         ".process.rlimits[0]: soft limit 20 exceeds hard limit 10"),
    CASE(PROC("\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"soft\":20}]"), ".process.rlimits[0].hard: missing"),
    CASE(PROC("\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"soft\":18446744073709551616,\"hard\":1}]"),
         ".process.rlimits[0].soft: must be an integer between 0 and 18446744073709551615"),
    CASE(PROC("\"oomScoreAdj\":1001"), ".process.oomScoreAdj: must be an integer between -1000 and 1000"),
    CASE(PROC("\"ioPriority\":{\"class\":\"IOPRIO_CLASS_X\"}"),
         ".process.ioPriority.class: unknown I/O priority class \"IOPRIO_CLASS_X\""),
    CASE(PROC("\"ioPriority\":{\"class\":\"IOPRIO_CLASS_RT\",\"priority\":8}"),
         ".process.ioPriority.priority: must be an integer between 0 and 7"),
    CASE(PROC("\"ioPriority\":{\"priority\":1}"), ".process.ioPriority.class: missing"),
    CASE(PROC("\"scheduler\":{\"policy\":\"SCHED_FOO\"}"),
         ".process.scheduler.policy: unknown scheduler policy \"SCHED_FOO\""),
    CASE(PROC("\"scheduler\":{\"policy\":\"SCHED_RR\",\"flags\":[\"SCHED_FLAG_X\"]}"),
         ".process.scheduler.flags[0]: unknown scheduler flag \"SCHED_FLAG_X\""),
    CASE(PROC("\"scheduler\":{\"policy\":\"SCHED_OTHER\",\"nice\":20}"),
         ".process.scheduler.nice: must be an integer between -20 and 19"),
    CASE(PROC("\"noNewPrivileges\":1"), ".process.noNewPrivileges: must be a boolean"),
    CASE(PROC("\"apparmorProfile\":[]"), ".process.apparmorProfile: must be a string"),

    /* mounts */
    CASE("\"mounts\":{}", ".mounts: must be an array"),
    CASE("\"mounts\":[{\"destination\":\"/a\"},{\"destination\":\"b/../..\"}]",
         ".mounts[1].destination: must not contain \"..\""),
    CASE("\"mounts\":[{\"destination\":\"/a/../b\"}]", ".mounts[0].destination: must not contain \"..\""),
    CASE("\"mounts\":[{\"type\":\"tmpfs\"}]", ".mounts[0].destination: missing"),
    CASE("\"mounts\":[\"/a\"]", ".mounts[0]: must be an object"),
    CASE(MOUNT("\"options\":\"ro\""), ".mounts[0].options: must be an array of strings"),
    CASE(MOUNT("\"type\":7"), ".mounts[0].type: must be a string"),
    CASE(MOUNT("\"uidMappings\":[{\"containerID\":0,\"hostID\":0,\"size\":0}]"),
         ".mounts[0].uidMappings[0].size: must be greater than 0"),

    /* hooks and annotations */
    CASE("\"hooks\":{\"prestart\":[{\"path\":\"hook\"}]}",
         ".hooks.prestart[0].path: must be an absolute path"),
    CASE("\"hooks\":{\"poststop\":[{\"path\":\"/h\"},{\"path\":\"/h\",\"timeout\":0}]}",
         ".hooks.poststop[1].timeout: must be greater than 0"),
    CASE("\"hooks\":{\"createRuntime\":{}}", ".hooks.createRuntime: must be an array"),
    CASE("\"hooks\":{\"startContainer\":[{\"args\":[]}]}", ".hooks.startContainer[0].path: missing"),
    CASE("\"hooks\":[]", ".hooks: must be an object"),
    CASE("\"annotations\":{\"foo\":1}", ".annotations.foo: must be a string"),
    CASE("\"annotations\":{\"a.b\":true}", ".annotations[\"a.b\"]: must be a string"),
    CASE("\"annotations\":[]", ".annotations: must be an object of strings"),

    /* linux */
    CASE("\"linux\":[]", ".linux: must be an object"),
    CASE(LINUX("\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"mount\"},{\"type\":\"foo\"}]"),
         ".linux.namespaces[2].type: unknown namespace type \"foo\""),
    CASE(LINUX("\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"pid\"}]"),
         ".linux.namespaces[1].type: duplicate namespace type \"pid\""),
    CASE(LINUX("\"namespaces\":[{\"type\":\"net\"}]"),
         ".linux.namespaces[0].type: unknown namespace type \"net\""),
    CASE(LINUX("\"namespaces\":[{\"type\":\"network\",\"path\":\"proc/1/ns/net\"}]"),
         ".linux.namespaces[0].path: must be an absolute path"),
    CASE(LINUX("\"namespaces\":[{}]"), ".linux.namespaces[0].type: missing"),
    CASE(LINUX("\"uidMappings\":[{\"containerID\":0,\"hostID\":1000,\"size\":0}]"),
         ".linux.uidMappings[0].size: must be greater than 0"),
    CASE(LINUX("\"uidMappings\":[{\"containerID\":0,\"hostID\":1000,\"size\":10},{\"containerID\":5,"
               "\"hostID\":5000,\"size\":1}]"),
         ".linux.uidMappings[1]: container ID range overlaps uidMappings[0]"),
    CASE(LINUX("\"gidMappings\":[{\"containerID\":0,\"hostID\":1000,\"size\":10},{\"containerID\":10,"
               "\"hostID\":1009,\"size\":1}]"),
         ".linux.gidMappings[1]: host ID range overlaps gidMappings[0]"),
    CASE(LINUX("\"uidMappings\":[{\"containerID\":4294967295,\"hostID\":0,\"size\":2}]"),
         ".linux.uidMappings[0]: range exceeds the 32-bit id space"),
    CASE(LINUX("\"uidMappings\":[{\"containerID\":0,\"size\":1}]"), ".linux.uidMappings[0].hostID: missing"),
    CASE(LINUX("\"timeOffsets\":{\"realtime\":{\"secs\":1}}"),
         ".linux.timeOffsets.realtime: unknown clock \"realtime\" (expected \"monotonic\" or \"boottime\")"),
    CASE(LINUX("\"timeOffsets\":{\"boottime\":{\"secs\":1,\"nanosecs\":1000000000}}"),
         ".linux.timeOffsets.boottime.nanosecs: must be less than 1000000000"),
    CASE(LINUX("\"devices\":[{\"path\":\"/dev/x\",\"type\":\"x\"}]"),
         ".linux.devices[0].type: unknown device type \"x\" (expected c, b, u or p)"),
    CASE(LINUX("\"devices\":[{\"path\":\"/dev/x\",\"type\":\"c\",\"minor\":1}]"),
         ".linux.devices[0].major: required for device type 'c'"),
    CASE(LINUX("\"devices\":[{\"path\":\"dev/x\",\"type\":\"c\",\"major\":1,\"minor\":1}]"),
         ".linux.devices[0].path: must be an absolute path"),
    CASE(LINUX("\"devices\":[{\"path\":\"/dev/../etc/x\",\"type\":\"c\",\"major\":1,\"minor\":1}]"),
         ".linux.devices[0].path: must not contain \"..\""),
    CASE(LINUX("\"rootfsPropagation\":\"bogus\""), ".linux.rootfsPropagation: unknown propagation \"bogus\" "
                                                   "(expected shared, slave, private or unbindable)"),
    CASE(LINUX("\"sysctl\":{\"net.ipv4.ip_forward\":1}"),
         ".linux.sysctl[\"net.ipv4.ip_forward\"]: must be a string"),
    CASE(LINUX("\"maskedPaths\":[\"/proc/kcore\",\"proc/keys\"]"),
         ".linux.maskedPaths[1]: must be an absolute path"),
    CASE(LINUX("\"readonlyPaths\":\"/proc/sys\""), ".linux.readonlyPaths: must be an array of strings"),
    CASE(LINUX("\"personality\":{\"domain\":\"LINUX64\"}"),
         ".linux.personality.domain: unknown personality domain \"LINUX64\" (expected LINUX or LINUX32)"),
    CASE(LINUX("\"cgroupsPath\":{}"), ".linux.cgroupsPath: must be a string"),

    /* linux.resources */
    CASE(RES("\"devices\":[{\"access\":\"rwm\"}]"), ".linux.resources.devices[0].allow: missing"),
    CASE(RES("\"devices\":[{\"allow\":true,\"type\":\"u\"}]"),
         ".linux.resources.devices[0].type: unknown device type \"u\" (expected a, c or b)"),
    CASE(RES("\"devices\":[{\"allow\":true,\"access\":\"a\"}]"),
         ".linux.resources.devices[0].access: access \"a\" names none of r, w and m (read, write, mknod)"),
    CASE(RES("\"memory\":{\"limit\":-2}"),
         ".linux.resources.memory.limit: must be an integer between -1 and 9223372036854775807"),
    CASE(RES("\"memory\":{\"limit\":\"1G\"}"), ".linux.resources.memory.limit: must be an integer"),
    CASE(RES("\"memory\":{\"swappiness\":101}"),
         ".linux.resources.memory.swappiness: must be between 0 and 100"),
    CASE(RES("\"memory\":{\"disableOOMKiller\":0}"),
         ".linux.resources.memory.disableOOMKiller: must be a boolean"),
    CASE(RES("\"cpu\":{\"cpus\":1}"), ".linux.resources.cpu.cpus: must be a string"),
    CASE(RES("\"cpu\":{\"shares\":-1}"), ".linux.resources.cpu.shares: must be a non-negative integer"),
    CASE(RES("\"pids\":{}"), ".linux.resources.pids.limit: missing"),
    CASE(RES("\"blockIO\":{\"weight\":70000}"),
         ".linux.resources.blockIO.weight: must be an integer between 0 and 65535"),
    CASE(RES("\"blockIO\":{\"throttleReadBpsDevice\":[{\"major\":8,\"minor\":0}]}"),
         ".linux.resources.blockIO.throttleReadBpsDevice[0].rate: missing"),
    CASE(RES("\"blockIO\":{\"weightDevice\":[{\"major\":8,\"weight\":10}]}"),
         ".linux.resources.blockIO.weightDevice[0].minor: missing"),
    CASE(RES("\"hugepageLimits\":[{\"pageSize\":\"../x\",\"limit\":1}]"),
         ".linux.resources.hugepageLimits[0].pageSize: invalid page size \"../x\""),
    CASE(RES("\"network\":{\"priorities\":[{\"priority\":1}]}"),
         ".linux.resources.network.priorities[0].name: missing"),
    CASE(RES("\"rdma\":{\"mlx5_0\":{\"hcaHandles\":\"3\"}}"),
         ".linux.resources.rdma.mlx5_0.hcaHandles: must be an integer"),
    CASE(RES("\"unified\":{\"../memory.max\":\"1\"}"),
         ".linux.resources.unified[\"../memory.max\"]: invalid cgroup file name \"../memory.max\""),
    CASE(RES("\"unified\":{\"a/b\":\"1\"}"),
         ".linux.resources.unified[\"a/b\"]: invalid cgroup file name \"a/b\""),
    CASE(RES("\"unified\":{\"memory.max\":1}"), ".linux.resources.unified[\"memory.max\"]: must be a string"),

    /* linux.seccomp */
    CASE(LINUX("\"seccomp\":{}"), ".linux.seccomp.defaultAction: missing"),
    CASE(LINUX("\"seccomp\":{\"defaultAction\":\"SCMP_ACT_FOO\"}"),
         ".linux.seccomp.defaultAction: unknown seccomp action \"SCMP_ACT_FOO\""),
    CASE(LINUX("\"seccomp\":{\"defaultAction\":\"SCMP_ACT_NOTIFY\",\"listenerPath\":\"/l\"}"),
         ".linux.seccomp.defaultAction: SCMP_ACT_NOTIFY cannot be the default action"),
    CASE(SECCOMP("\"syscalls\":[{\"names\":[\"read\"],\"action\":\"ALLOW\"}]"),
         ".linux.seccomp.syscalls[0].action: unknown seccomp action \"ALLOW\""),
    CASE(SECCOMP("\"syscalls\":[{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ERRNO\",\"args\":[{\"index\":0,"
                 "\"value\":1,\"op\":\"SCMP_CMP_FOO\"}]}]"),
         ".linux.seccomp.syscalls[0].args[0].op: unknown seccomp operator \"SCMP_CMP_FOO\""),
    CASE(SECCOMP("\"syscalls\":[{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ERRNO\",\"args\":[{\"index\":6,"
                 "\"value\":1,\"op\":\"SCMP_CMP_EQ\"}]}]"),
         ".linux.seccomp.syscalls[0].args[0].index: must be an integer between 0 and 5"),
    CASE(SECCOMP("\"syscalls\":[{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ERRNO\",\"args\":[{\"index\":1,"
                 "\"op\":\"SCMP_CMP_EQ\"}]}]"),
         ".linux.seccomp.syscalls[0].args[0].value: missing"),
    CASE(SECCOMP("\"syscalls\":[{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ALLOW\"},{\"names\":[\"mkdir\"],"
                 "\"action\":\"SCMP_ACT_NOTIFY\"}]"),
         ".linux.seccomp.syscalls[1].action: SCMP_ACT_NOTIFY requires .linux.seccomp.listenerPath"),
    CASE(SECCOMP("\"syscalls\":[{\"names\":[],\"action\":\"SCMP_ACT_ALLOW\"}]"),
         ".linux.seccomp.syscalls[0].names: must be a non-empty array of strings"),
    CASE(SECCOMP("\"syscalls\":[{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":-1}]"),
         ".linux.seccomp.syscalls[0].errnoRet: must be a non-negative integer"),
    CASE(SECCOMP("\"architectures\":[\"SCMP_ARCH_X86_64\",\"SCMP_ARCH_FOO\"]"),
         ".linux.seccomp.architectures[1]: unknown seccomp architecture \"SCMP_ARCH_FOO\""),
    CASE(SECCOMP("\"flags\":[\"SECCOMP_FILTER_FLAG_NEW_LISTENER\"]"),
         ".linux.seccomp.flags[0]: unknown seccomp flag \"SECCOMP_FILTER_FLAG_NEW_LISTENER\""),
    CASE(SECCOMP("\"syscalls\":{}"), ".linux.seccomp.syscalls: must be an array"),
};

static void test_invalid_table(void **state) {
  size_t failures = 0;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const struct invalid_case *tc = &cases[i];
    char *doc = NULL;
    if (tc->raw)
      doc = strdup(tc->fragment);
    else if (asprintf(&doc, "%s,%s}", BASE, tc->fragment) < 0)
      doc = NULL;
    assert_non_null(doc);
    struct cm_error *err = NULL;
    struct spec *s = spec_load_string(doc, strlen(doc), "config.json", &err);
    if (s != NULL) {
      print_error("case %zu: accepted, expected \"%s\"\n  doc: %s\n", i, tc->expect, doc);
      spec_free(s);
      failures++;
    } else {
      bool match = tc->prefix ? strncmp(err->msg, tc->expect, strlen(tc->expect)) == 0
                              : strcmp(err->msg, tc->expect) == 0;
      if (!match || err->errnum != 0) {
        print_error("case %zu:\n  got      \"%s\" (errnum %d)\n  expected \"%s\"\n", i, err->msg, err->errnum,
                    tc->expect);
        failures++;
      }
      cm_error_free(err);
    }
    free(doc);
  }
  print_message("%zu invalid cases checked\n", sizeof(cases) / sizeof(cases[0]));
  assert_int_equal(failures, 0);
}

/* A label other than config.json shows up in the message. */
static void test_label(void **state) {
  struct cm_error *err = NULL;
  const char doc[] = "{\"ociVersion\":\"1.0.0\"}";
  assert_null(spec_load_string(doc, strlen(doc), "bundle/config.json", &err));
  assert_string_equal(err->msg, "bundle/config.json: .root: missing");
  cm_error_free(err);
}

/* The length argument is honoured: text after len is not parsed. */
static void test_length_respected(void **state) {
  struct cm_error *err = NULL;
  const char doc[] = "{\"ociVersion\":\"1.0.0\"} garbage";
  assert_null(spec_load_string(doc, strlen("{\"ociVersion\":\"1.0.0\"}"), "config.json", &err));
  assert_string_equal(err->msg, "config.json: .root: missing");
  cm_error_free(err);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_invalid_table),
      cmocka_unit_test(test_label),
      cmocka_unit_test(test_length_respected),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
