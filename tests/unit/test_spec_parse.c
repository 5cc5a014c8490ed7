/* spec/: valid config.json shapes parse into the expected structs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka.h needs the four above first. */
#include <cmocka.h>

#include <linux/capability.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/resource.h>

#include "spec/spec.h"

static struct spec *load_ok(const char *json) {
  struct cm_error *err = NULL;
  struct spec *s = spec_load_string(json, strlen(json), "config.json", &err);
  if (s == NULL) {
    print_error("unexpected error: %s\n", err->msg);
    cm_error_free(err);
    fail();
  }
  return s;
}

static const char minimal_json[] =
    "{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"rootfs\"},"
    "\"process\":{\"user\":{\"uid\":0,\"gid\":0},\"args\":[\"sh\"],\"cwd\":\"/\"}}";

/* As runc and crun: an unknown capability name (a typo, a lowercase spelling, a number, one newer
 * than libcap) is a warning and is left out; the known ones around it are kept. */
static void test_unknown_capability_ignored(void **state) {
  static const char json[] =
      "{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"rootfs\"},"
      "\"process\":{\"user\":{\"uid\":0,\"gid\":0},\"args\":[\"sh\"],\"cwd\":\"/\","
      "\"capabilities\":{\"bounding\":[\"CAP_KILL\",\"CAP_FOO\",\"CAP_CHOWN\"],"
      "\"effective\":[\"cap_chown\"],\"permitted\":[\"CAP_12\",\"CAP_KILL\"]}}}";
  struct spec *s = load_ok(json);
  assert_true(s->process->capabilities.present);
  assert_int_equal(s->process->capabilities.bounding, (1ULL << CAP_KILL) | (1ULL << CAP_CHOWN));
  assert_int_equal(s->process->capabilities.effective, 0);
  assert_int_equal(s->process->capabilities.permitted, 1ULL << CAP_KILL);
  spec_free(s);
}

static void test_minimal(void **state) {
  struct spec *s = load_ok(minimal_json);
  assert_string_equal(s->oci_version, "1.0.0");
  assert_string_equal(s->root_path, "rootfs");
  assert_false(s->root_readonly);
  assert_non_null(s->process);
  assert_int_equal(s->process->args.count, 1);
  assert_string_equal(s->process->args.items[0], "sh");
  assert_null(s->process->args.items[1]);
  assert_string_equal(s->process->cwd, "/");
  assert_int_equal(s->process->env.count, 0);
  assert_null(s->process->env.items);
  assert_false(s->process->capabilities.present);
  assert_false(s->has_linux);
  assert_int_equal(s->n_mounts, 0);
  assert_null(s->hostname);
  for (int k = 0; k < SPEC_HOOK_KIND_COUNT; k++)
    assert_int_equal(s->hooks[k].count, 0);
  spec_free(s);
}

/* `runc spec` output on this machine (runc 1.1.5), verbatim. */
static const char runc_default_json[] =
    "{\n\t\"ociVersion\": \"1.0.2-dev\",\n\t\"process\": {\n\t\t\"terminal\": true,\n\t\t\"user\": {\"uid\": "
    "0, \"gid\": 0},"
    "\"args\": [\"sh\"],\"env\": "
    "[\"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\",\"TERM=xterm\"],"
    "\"cwd\": \"/\",\"capabilities\": {"
    "\"bounding\": [\"CAP_AUDIT_WRITE\",\"CAP_KILL\",\"CAP_NET_BIND_SERVICE\"],"
    "\"effective\": [\"CAP_AUDIT_WRITE\",\"CAP_KILL\",\"CAP_NET_BIND_SERVICE\"],"
    "\"permitted\": [\"CAP_AUDIT_WRITE\",\"CAP_KILL\",\"CAP_NET_BIND_SERVICE\"],"
    "\"ambient\": [\"CAP_AUDIT_WRITE\",\"CAP_KILL\",\"CAP_NET_BIND_SERVICE\"]},"
    "\"rlimits\": [{\"type\": \"RLIMIT_NOFILE\",\"hard\": 1024,\"soft\": 1024}],\"noNewPrivileges\": true},"
    "\"root\": {\"path\": \"rootfs\",\"readonly\": true},\"hostname\": \"runc\","
    "\"mounts\": ["
    "{\"destination\": \"/proc\",\"type\": \"proc\",\"source\": \"proc\"},"
    "{\"destination\": \"/dev\",\"type\": \"tmpfs\",\"source\": \"tmpfs\",\"options\": "
    "[\"nosuid\",\"strictatime\",\"mode=755\",\"size=65536k\"]},"
    "{\"destination\": \"/dev/pts\",\"type\": \"devpts\",\"source\": \"devpts\",\"options\": "
    "[\"nosuid\",\"noexec\",\"newinstance\",\"ptmxmode=0666\",\"mode=0620\",\"gid=5\"]},"
    "{\"destination\": \"/dev/shm\",\"type\": \"tmpfs\",\"source\": \"shm\",\"options\": "
    "[\"nosuid\",\"noexec\",\"nodev\",\"mode=1777\",\"size=65536k\"]},"
    "{\"destination\": \"/dev/mqueue\",\"type\": \"mqueue\",\"source\": \"mqueue\",\"options\": "
    "[\"nosuid\",\"noexec\",\"nodev\"]},"
    "{\"destination\": \"/sys\",\"type\": \"sysfs\",\"source\": \"sysfs\",\"options\": "
    "[\"nosuid\",\"noexec\",\"nodev\",\"ro\"]},"
    "{\"destination\": \"/sys/fs/cgroup\",\"type\": \"cgroup\",\"source\": \"cgroup\",\"options\": "
    "[\"nosuid\",\"noexec\",\"nodev\",\"relatime\",\"ro\"]}],"
    "\"linux\": {\"resources\": {\"devices\": [{\"allow\": false,\"access\": \"rwm\"}]},"
    "\"namespaces\": [{\"type\": \"pid\"},{\"type\": \"network\"},{\"type\": \"ipc\"},{\"type\": "
    "\"uts\"},{\"type\": \"mount\"}],"
    "\"maskedPaths\": "
    "[\"/proc/acpi\",\"/proc/asound\",\"/proc/kcore\",\"/proc/keys\",\"/proc/latency_stats\",\"/proc/"
    "timer_list\","
    "\"/proc/timer_stats\",\"/proc/sched_debug\",\"/sys/firmware\",\"/proc/scsi\"],"
    "\"readonlyPaths\": [\"/proc/bus\",\"/proc/fs\",\"/proc/irq\",\"/proc/sys\",\"/proc/sysrq-trigger\"]}}";

static void test_runc_default(void **state) {
  struct spec *s = load_ok(runc_default_json);
  struct spec_process *p = s->process;
  assert_true(p->terminal);
  assert_true(p->no_new_privileges);
  assert_int_equal(p->env.count, 2);
  uint64_t caps = (1ULL << CAP_AUDIT_WRITE) | (1ULL << CAP_KILL) | (1ULL << CAP_NET_BIND_SERVICE);
  assert_true(p->capabilities.present);
  assert_int_equal(p->capabilities.bounding, caps);
  assert_int_equal(p->capabilities.effective, caps);
  assert_int_equal(p->capabilities.permitted, caps);
  assert_int_equal(p->capabilities.ambient, caps);
  assert_int_equal(p->capabilities.inheritable, 0);
  assert_int_equal(p->n_rlimits, 1);
  assert_int_equal(p->rlimits[0].resource, RLIMIT_NOFILE);
  assert_string_equal(p->rlimits[0].type, "RLIMIT_NOFILE");
  assert_int_equal(p->rlimits[0].soft, 1024);
  assert_int_equal(p->rlimits[0].hard, 1024);
  assert_true(s->root_readonly);
  assert_string_equal(s->hostname, "runc");

  assert_int_equal(s->n_mounts, 7);
  assert_string_equal(s->mounts[1].destination, "/dev");
  assert_int_equal(s->mounts[1].flags, MS_NOSUID | MS_STRICTATIME);
  assert_string_equal(s->mounts[1].data, "mode=755,size=65536k");
  assert_string_equal(s->mounts[2].data, "newinstance,ptmxmode=0666,mode=0620,gid=5");
  assert_null(s->mounts[0].data);
  assert_int_equal(s->mounts[5].flags, MS_NOSUID | MS_NOEXEC | MS_NODEV | MS_RDONLY);
  assert_int_equal(s->mounts[6].flags, MS_NOSUID | MS_NOEXEC | MS_NODEV | MS_RELATIME | MS_RDONLY);

  assert_true(s->has_linux);
  const struct spec_linux *l = &s->linux_;
  assert_true(l->resources.present);
  assert_int_equal(l->resources.n_devices, 1);
  assert_false(l->resources.devices[0].allow);
  assert_int_equal(l->resources.devices[0].type, 'a');
  assert_int_equal(l->resources.devices[0].major, -1);
  assert_int_equal(l->resources.devices[0].minor, -1);
  assert_string_equal(l->resources.devices[0].access, "rwm");
  assert_true(l->namespaces[SPEC_NS_PID].present);
  assert_true(l->namespaces[SPEC_NS_NETWORK].present);
  assert_true(l->namespaces[SPEC_NS_MOUNT].present);
  assert_false(l->namespaces[SPEC_NS_USER].present);
  assert_false(l->namespaces[SPEC_NS_CGROUP].present);
  assert_null(l->namespaces[SPEC_NS_PID].path);
  assert_int_equal(l->masked_paths.count, 10);
  assert_int_equal(l->readonly_paths.count, 5);
  assert_false(l->seccomp.present);
  spec_free(s);
}

/* Every field codemode knows, set to a non-default value. */
static const char full_json[] =
    "{"
    "\"ociVersion\":\"1.2.0\","
    "\"root\":{\"path\":\"/abs/rootfs\",\"readonly\":true},"
    "\"hostname\":\"h\",\"domainname\":\"d.example\","
    "\"unknownTopLevel\":{\"ignored\":[1,2,3]},"
    "\"process\":{"
    "  \"terminal\":true,\"consoleSize\":{\"height\":24,\"width\":80},"
    "  \"user\":{\"uid\":1000,\"gid\":1001,\"umask\":18,\"additionalGids\":[5,6,7],\"username\":\"me\"},"
    "  "
    "\"args\":[\"/bin/app\",\"--flag\"],\"commandLine\":\"ignored\",\"env\":[\"A=1\",\"B=2\"],\"cwd\":\"/"
    "work\","
    "  \"capabilities\":{\"bounding\":[\"CAP_CHOWN\",\"CAP_SYS_ADMIN\"],\"effective\":[\"CAP_CHOWN\"],"
    "    \"inheritable\":[\"CAP_KILL\"],\"permitted\":[\"CAP_CHOWN\",\"CAP_BPF\"],\"ambient\":[]},"
    "  \"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"soft\":10,\"hard\":20},"
    "    {\"type\":\"RLIMIT_CORE\",\"soft\":18446744073709551615,\"hard\":18446744073709551615}],"
    "  \"noNewPrivileges\":true,\"oomScoreAdj\":-1000,\"apparmorProfile\":\"prof\",\"selinuxLabel\":\"lbl\","
    "  \"ioPriority\":{\"class\":\"IOPRIO_CLASS_BE\",\"priority\":7},"
    "  \"scheduler\":{\"policy\":\"SCHED_DEADLINE\",\"nice\":-5,\"priority\":3,"
    "    "
    "\"flags\":[\"SCHED_FLAG_RESET_ON_FORK\",\"SCHED_FLAG_RECLAIM\"],\"runtime\":100,\"deadline\":200,"
    "\"period\":300}"
    "},"
    "\"mounts\":["
    "  {\"destination\":\"//data/./x//\",\"type\":\"none\",\"source\":\"/src\","
    "   "
    "\"options\":[\"rbind\",\"ro\",\"rw\",\"nosuid\",\"suid\",\"rprivate\",\"rro\",\"idmap\",\"nosymfollow\","
    "\"tmpcopyup\",\"x=y\"],"
    "   \"uidMappings\":[{\"containerID\":0,\"hostID\":1000,\"size\":10}],"
    "   \"gidMappings\":[{\"containerID\":0,\"hostID\":2000,\"size\":10}]},"
    "  "
    "{\"destination\":\"/"
    "m\",\"options\":[\"bind\",\"shared\",\"lazytime\",\"silent\",\"loud\",\"dirsync\",\"sync\",\"async\","
    "    "
    "\"mand\",\"nomand\",\"noatime\",\"atime\",\"nodiratime\",\"diratime\",\"relatime\",\"norelatime\","
    "\"strictatime\","
    "    \"nostrictatime\",\"remount\",\"nodev\",\"dev\",\"noexec\",\"exec\",\"defaults\",\"\"]}"
    "],"
    "\"hooks\":{"
    "  \"prestart\":[{\"path\":\"/bin/pre\",\"args\":[\"pre\",\"x\"],\"env\":[\"E=1\"],\"timeout\":5}],"
    "  \"createRuntime\":[{\"path\":\"/bin/cr\"},{\"path\":\"/bin/cr2\"}],"
    "  \"createContainer\":[{\"path\":\"/bin/cc\"}],\"startContainer\":[{\"path\":\"/bin/sc\"}],"
    "  \"poststart\":[{\"path\":\"/bin/ps\"}],\"poststop\":[{\"path\":\"/bin/pst\"}],"
    "  \"unknownHook\":[{\"path\":\"relative is fine here because ignored\"}]"
    "},"
    "\"annotations\":{\"a\":\"1\",\"b.c/d\":\"2\"},"
    "\"linux\":{"
    "  "
    "\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"network\",\"path\":\"/proc/1/ns/"
    "net\"},{\"type\":\"mount\",\"path\":\"\"},"
    "    "
    "{\"type\":\"ipc\"},{\"type\":\"uts\"},{\"type\":\"user\"},{\"type\":\"cgroup\"},{\"type\":\"time\"}],"
    "  "
    "\"uidMappings\":[{\"containerID\":0,\"hostID\":100000,\"size\":1000},{\"containerID\":1000,\"hostID\":"
    "1000,\"size\":1}],"
    "  \"gidMappings\":[{\"containerID\":0,\"hostID\":100000,\"size\":65536}],"
    "  \"timeOffsets\":{\"monotonic\":{\"secs\":-10,\"nanosecs\":5},\"boottime\":{\"secs\":86400}},"
    "  "
    "\"devices\":[{\"path\":\"/dev/"
    "fuse\",\"type\":\"c\",\"major\":10,\"minor\":229,\"fileMode\":438,\"uid\":0,\"gid\":0},"
    "    {\"path\":\"/dev/fifo\",\"type\":\"p\"}],"
    "  \"cgroupsPath\":\"/codemode/test\","
    "  \"resources\":{"
    "    "
    "\"devices\":[{\"allow\":false,\"access\":\"rwm\"},{\"allow\":true,\"type\":\"c\",\"major\":1,\"minor\":"
    "3,\"access\":\"mwr\"},"
    "      {\"allow\":true,\"type\":\"b\",\"major\":8},"
    "      {\"allow\":true,\"type\":\"c\",\"major\":1,\"minor\":1,\"access\":\"wax\"}],"
    "    "
    "\"memory\":{\"limit\":-1,\"reservation\":1048576,\"swap\":2097152,\"kernel\":1,\"kernelTCP\":2,"
    "\"swappiness\":60,"
    "      \"disableOOMKiller\":true,\"useHierarchy\":false,\"checkBeforeUpdate\":true},"
    "    "
    "\"cpu\":{\"shares\":1024,\"quota\":-1,\"burst\":5,\"period\":100000,\"realtimeRuntime\":950000,"
    "\"realtimePeriod\":1000000,"
    "      \"cpus\":\"0-1\",\"mems\":\"0\",\"idle\":1},"
    "    \"pids\":{\"limit\":100},"
    "    "
    "\"blockIO\":{\"weight\":500,\"leafWeight\":300,\"weightDevice\":[{\"major\":8,\"minor\":0,\"weight\":"
    "100}],"
    "      "
    "\"throttleReadBpsDevice\":[{\"major\":8,\"minor\":0,\"rate\":1000}],\"throttleWriteBpsDevice\":[{"
    "\"major\":8,\"minor\":1,\"rate\":2000}],"
    "      "
    "\"throttleReadIOPSDevice\":[{\"major\":8,\"minor\":2,\"rate\":30}],\"throttleWriteIOPSDevice\":[{"
    "\"major\":8,\"minor\":3,\"rate\":40}]},"
    "    \"hugepageLimits\":[{\"pageSize\":\"2MB\",\"limit\":4194304}],"
    "    \"network\":{\"classID\":1048577,\"priorities\":[{\"name\":\"eth0\",\"priority\":5}]},"
    "    \"rdma\":{\"mlx5_1\":{\"hcaHandles\":3,\"hcaObjects\":10000}},"
    "    \"unified\":{\"memory.high\":\"max\",\"io.weight\":\"default 100\"}"
    "  },"
    "  \"rootfsPropagation\":\"rslave\","
    "  \"seccomp\":{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"defaultErrnoRet\":38,"
    "    \"architectures\":[\"SCMP_ARCH_X86_64\",\"SCMP_ARCH_X86\"],\"flags\":[\"SECCOMP_FILTER_FLAG_LOG\"],"
    "    \"listenerPath\":\"/run/listener.sock\",\"listenerMetadata\":\"meta\","
    "    \"syscalls\":[{\"names\":[\"read\",\"write\"],\"action\":\"SCMP_ACT_ALLOW\"},"
    "      "
    "{\"names\":[\"personality\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":0,\"value\":8,\"op\":"
    "\"SCMP_CMP_EQ\"},"
    "        {\"index\":5,\"value\":255,\"valueTwo\":4,\"op\":\"SCMP_CMP_MASKED_EQ\"}]},"
    "      "
    "{\"names\":[\"mkdir\"],\"action\":\"SCMP_ACT_NOTIFY\"},{\"names\":[\"chmod\"],\"action\":\"SCMP_ACT_"
    "ERRNO\",\"errnoRet\":1}]},"
    "  \"sysctl\":{\"net.ipv4.ip_forward\":\"1\",\"kernel.shmmax\":\"4096\"},"
    "  \"maskedPaths\":[\"/proc/kcore\"],\"readonlyPaths\":[\"/proc/sys\"],\"mountLabel\":\"ml\","
    "  \"personality\":{\"domain\":\"LINUX32\",\"flags\":[\"x\"]},"
    "  \"intelRdt\":{\"closID\":\"ignored\"}"
    "}}";

static void test_full_process(void **state) {
  struct spec *s = load_ok(full_json);
  const struct spec_process *p = s->process;
  assert_string_equal(s->root_path, "/abs/rootfs");
  assert_string_equal(s->domainname, "d.example");
  assert_true(p->has_console_size);
  assert_int_equal(p->console_height, 24);
  assert_int_equal(p->console_width, 80);
  assert_int_equal(p->user.uid, 1000);
  assert_int_equal(p->user.gid, 1001);
  assert_true(p->user.has_umask);
  assert_int_equal(p->user.umask, 18);
  assert_int_equal(p->user.n_additional_gids, 3);
  assert_int_equal(p->user.additional_gids[2], 7);
  assert_string_equal(p->user.username, "me");
  assert_int_equal(p->args.count, 2);
  assert_string_equal(p->command_line, "ignored");
  assert_string_equal(p->env.items[1], "B=2");
  assert_string_equal(p->cwd, "/work");
  assert_int_equal(p->capabilities.bounding, (1ULL << CAP_CHOWN) | (1ULL << CAP_SYS_ADMIN));
  assert_int_equal(p->capabilities.inheritable, 1ULL << CAP_KILL);
  assert_int_equal(p->capabilities.permitted, (1ULL << CAP_CHOWN) | (1ULL << 39 /* CAP_BPF */));
  assert_int_equal(p->capabilities.ambient, 0);
  assert_int_equal(p->n_rlimits, 2);
  assert_int_equal(p->rlimits[1].resource, RLIMIT_CORE);
  assert_true(p->rlimits[1].hard == UINT64_MAX);
  assert_true(p->has_oom_score_adj);
  assert_int_equal(p->oom_score_adj, -1000);
  assert_string_equal(p->apparmor_profile, "prof");
  assert_string_equal(p->selinux_label, "lbl");
  assert_true(p->has_io_priority);
  assert_int_equal(p->io_priority_class, 2);
  assert_int_equal(p->io_priority, 7);
  assert_true(p->scheduler.present);
  assert_int_equal(p->scheduler.policy, SCHED_DEADLINE);
  assert_int_equal(p->scheduler.nice, -5);
  assert_int_equal(p->scheduler.priority, 3);
  assert_int_equal(p->scheduler.flags, 0x3);
  assert_int_equal(p->scheduler.runtime, 100);
  assert_int_equal(p->scheduler.deadline, 200);
  assert_int_equal(p->scheduler.period, 300);
  spec_free(s);
}

static void test_full_mounts_hooks(void **state) {
  struct spec *s = load_ok(full_json);
  assert_int_equal(s->n_mounts, 2);
  const struct spec_mount *m = &s->mounts[0];
  assert_string_equal(m->destination, "/data/x");
  assert_string_equal(m->type, "none");
  assert_string_equal(m->source, "/src");
  assert_int_equal(m->flags, MS_BIND | MS_REC | MS_NOSYMFOLLOW);
  assert_int_equal(m->clear_flags, MS_RDONLY | MS_NOSUID);
  assert_int_equal(m->propagation, MS_PRIVATE | MS_REC);
  assert_true(m->recursive_readonly);
  assert_true(m->idmap);
  assert_string_equal(m->data, "x=y");
  assert_int_equal(m->n_uid_mappings, 1);
  assert_int_equal(m->uid_mappings[0].host_id, 1000);
  assert_int_equal(m->gid_mappings[0].host_id, 2000);

  m = &s->mounts[1];
  assert_null(m->type);
  assert_null(m->source);
  assert_null(m->data);
  assert_int_equal(m->flags, MS_BIND | MS_LAZYTIME | MS_DIRSYNC | MS_REMOUNT);
  assert_int_equal(m->clear_flags, MS_SILENT | MS_SYNCHRONOUS | MS_MANDLOCK | MS_NOATIME | MS_NODIRATIME |
                                       MS_RELATIME | MS_STRICTATIME | MS_NODEV | MS_NOEXEC);
  assert_int_equal(m->propagation, MS_SHARED);
  assert_false(m->recursive_readonly);
  assert_false(m->idmap);

  assert_int_equal(s->hooks[SPEC_HOOK_PRESTART].count, 1);
  const struct spec_hook *h = &s->hooks[SPEC_HOOK_PRESTART].items[0];
  assert_string_equal(h->path, "/bin/pre");
  assert_int_equal(h->args.count, 2);
  assert_string_equal(h->env.items[0], "E=1");
  assert_true(h->has_timeout);
  assert_int_equal(h->timeout, 5);
  assert_int_equal(s->hooks[SPEC_HOOK_CREATE_RUNTIME].count, 2);
  assert_false(s->hooks[SPEC_HOOK_CREATE_RUNTIME].items[1].has_timeout);
  for (int k = 0; k < SPEC_HOOK_KIND_COUNT; k++)
    assert_true(s->hooks[k].count >= 1);
  assert_int_equal(s->annotations.count, 2);
  assert_string_equal(spec_kv_get(&s->annotations, "b.c/d"), "2");
  assert_null(spec_kv_get(&s->annotations, "zz"));
  spec_free(s);
}

static void test_full_linux(void **state) {
  struct spec *s = load_ok(full_json);
  const struct spec_linux *l = &s->linux_;
  for (int t = 0; t < SPEC_NS_COUNT; t++)
    assert_true(l->namespaces[t].present);
  assert_string_equal(l->namespaces[SPEC_NS_NETWORK].path, "/proc/1/ns/net");
  assert_null(l->namespaces[SPEC_NS_MOUNT].path);
  assert_int_equal(l->n_uid_mappings, 2);
  assert_int_equal(l->uid_mappings[1].container_id, 1000);
  assert_int_equal(l->gid_mappings[0].size, 65536);
  assert_true(l->time_monotonic.present);
  assert_int_equal(l->time_monotonic.secs, -10);
  assert_int_equal(l->time_monotonic.nanosecs, 5);
  assert_true(l->time_boottime.present);
  assert_int_equal(l->time_boottime.secs, 86400);
  assert_int_equal(l->n_devices, 2);
  assert_int_equal(l->devices[0].type, 'c');
  assert_int_equal(l->devices[0].major, 10);
  assert_int_equal(l->devices[0].minor, 229);
  assert_true(l->devices[0].has_file_mode);
  assert_int_equal(l->devices[0].file_mode, 0666);
  assert_true(l->devices[0].has_uid);
  assert_int_equal(l->devices[1].type, 'p');
  assert_false(l->devices[1].has_file_mode);
  assert_string_equal(l->cgroups_path, "/codemode/test");
  assert_string_equal(l->rootfs_propagation, "rslave");
  assert_int_equal(l->rootfs_propagation_flags, MS_SLAVE | MS_REC);
  assert_int_equal(l->sysctl.count, 2);
  assert_string_equal(spec_kv_get(&l->sysctl, "net.ipv4.ip_forward"), "1");
  assert_string_equal(l->masked_paths.items[0], "/proc/kcore");
  assert_string_equal(l->readonly_paths.items[0], "/proc/sys");
  assert_string_equal(l->mount_label, "ml");
  assert_true(l->personality.present);
  assert_int_equal(l->personality.domain, PER_LINUX32);
  assert_int_equal(l->personality.flags.count, 1);
  spec_free(s);
}

static void test_full_resources(void **state) {
  struct spec *s = load_ok(full_json);
  const struct spec_resources *r = &s->linux_.resources;
  assert_true(r->present);
  assert_int_equal(r->n_devices, 4);
  assert_true(r->devices[1].allow);
  assert_int_equal(r->devices[1].type, 'c');
  assert_string_equal(r->devices[1].access, "rwm"); /* normalized from "mwr" */
  assert_int_equal(r->devices[2].major, 8);
  assert_int_equal(r->devices[2].minor, -1);
  assert_string_equal(r->devices[2].access, "rwm");
  assert_string_equal(r->devices[3].access, "w"); /* letters beyond r, w, m ignored, as runc (issue 28) */
  assert_true(r->memory.present);
  assert_true(r->memory.limit.set);
  assert_int_equal(r->memory.limit.value, -1);
  assert_int_equal(r->memory.reservation.value, 1048576);
  assert_int_equal(r->memory.swap.value, 2097152);
  assert_int_equal(r->memory.kernel_tcp.value, 2);
  assert_true(r->memory.swappiness.set);
  assert_int_equal(r->memory.swappiness.value, 60);
  assert_true(r->memory.has_disable_oom_killer && r->memory.disable_oom_killer);
  assert_true(r->memory.has_use_hierarchy && !r->memory.use_hierarchy);
  assert_true(r->memory.has_check_before_update && r->memory.check_before_update);
  assert_true(r->cpu.present);
  assert_int_equal(r->cpu.shares.value, 1024);
  assert_int_equal(r->cpu.quota.value, -1);
  assert_int_equal(r->cpu.burst.value, 5);
  assert_int_equal(r->cpu.period.value, 100000);
  assert_int_equal(r->cpu.realtime_runtime.value, 950000);
  assert_int_equal(r->cpu.realtime_period.value, 1000000);
  assert_string_equal(r->cpu.cpus, "0-1");
  assert_string_equal(r->cpu.mems, "0");
  assert_true(r->cpu.idle.set);
  assert_true(r->has_pids);
  assert_int_equal(r->pids_limit, 100);
  assert_true(r->block_io.present);
  assert_int_equal(r->block_io.weight, 500);
  assert_int_equal(r->block_io.leaf_weight, 300);
  assert_int_equal(r->block_io.n_weight_devices, 1);
  assert_true(r->block_io.weight_devices[0].has_weight);
  assert_false(r->block_io.weight_devices[0].has_leaf_weight);
  assert_int_equal(r->block_io.throttle_read_bps[0].rate, 1000);
  assert_int_equal(r->block_io.throttle_write_bps[0].minor, 1);
  assert_int_equal(r->block_io.throttle_read_iops[0].rate, 30);
  assert_int_equal(r->block_io.n_throttle_write_iops, 1);
  assert_int_equal(r->n_hugepage_limits, 1);
  assert_string_equal(r->hugepage_limits[0].page_size, "2MB");
  assert_true(r->has_network && r->has_class_id);
  assert_int_equal(r->class_id, 1048577);
  assert_string_equal(r->net_priorities[0].name, "eth0");
  assert_int_equal(r->n_rdma, 1);
  assert_string_equal(r->rdma[0].device, "mlx5_1");
  assert_int_equal(r->rdma[0].hca_objects.value, 10000);
  assert_string_equal(spec_kv_get(&r->unified, "io.weight"), "default 100");
  spec_free(s);
}

static void test_full_seccomp(void **state) {
  struct spec *s = load_ok(full_json);
  const struct spec_seccomp *sc = &s->linux_.seccomp;
  assert_true(sc->present);
  assert_int_equal(sc->default_action, SPEC_SECCOMP_ERRNO);
  assert_true(sc->has_default_errno_ret);
  assert_int_equal(sc->default_errno_ret, 38);
  assert_int_equal(sc->architectures.count, 2);
  assert_string_equal(sc->flags.items[0], "SECCOMP_FILTER_FLAG_LOG");
  assert_string_equal(sc->listener_path, "/run/listener.sock");
  assert_string_equal(sc->listener_metadata, "meta");
  assert_int_equal(sc->n_syscalls, 4);
  assert_int_equal(sc->syscalls[0].names.count, 2);
  assert_int_equal(sc->syscalls[1].n_args, 2);
  assert_int_equal(sc->syscalls[1].args[1].index, 5);
  assert_int_equal(sc->syscalls[1].args[1].value, 255);
  assert_int_equal(sc->syscalls[1].args[1].value_two, 4);
  assert_int_equal(sc->syscalls[1].args[1].op, SPEC_SECCOMP_OP_MASKED_EQ);
  assert_int_equal(sc->syscalls[2].action, SPEC_SECCOMP_NOTIFY);
  assert_true(sc->syscalls[3].has_errno_ret);
  assert_int_equal(sc->syscalls[3].errno_ret, 1);
  assert_false(sc->syscalls[0].has_errno_ret);
  spec_free(s);
}

/* JSON null means "absent", as with Go runtimes; a repeated key takes the last value. */
static void test_nulls_and_duplicates(void **state) {
  static const char json[] =
      "{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"a\"},\"root\":{\"path\":\"b\"},\"hostname\":null,"
      "\"mounts\":null,\"linux\":{\"namespaces\":null,\"seccomp\":null,\"resources\":{\"memory\":{\"limit\":"
      "null}}},"
      "\"process\":{\"user\":{\"uid\":0,\"gid\":0,\"umask\":null},\"args\":[\"sh\"],\"cwd\":\"/"
      "\",\"env\":null,"
      "\"capabilities\":null,\"oomScoreAdj\":null},\"annotations\":{\"k\":\"1\",\"k\":\"2\"}}";
  struct spec *s = load_ok(json);
  assert_string_equal(s->root_path, "b");
  assert_null(s->hostname);
  assert_false(s->process->user.has_umask);
  assert_false(s->process->capabilities.present);
  assert_false(s->process->has_oom_score_adj);
  assert_true(s->linux_.resources.memory.present);
  assert_false(s->linux_.resources.memory.limit.set);
  assert_int_equal(s->annotations.count, 1);
  assert_string_equal(spec_kv_get(&s->annotations, "k"), "2");
  spec_free(s);
}

static void test_rootfs_propagation_values(void **state) {
  static const struct {
    const char *name;
    unsigned long flags;
  } cases[] = {
      {"shared", MS_SHARED},
      {"rshared", MS_SHARED | MS_REC},
      {"slave", MS_SLAVE},
      {"rslave", MS_SLAVE | MS_REC},
      {"private", MS_PRIVATE},
      {"rprivate", MS_PRIVATE | MS_REC},
      {"unbindable", MS_UNBINDABLE},
      {"runbindable", MS_UNBINDABLE | MS_REC},
      {"", 0},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char json[512];
    snprintf(
        json, sizeof(json),
        "{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"},\"process\":{\"user\":{\"uid\":0,\"gid\":0},"
        "\"args\":[\"sh\"],\"cwd\":\"/\"},\"linux\":{\"rootfsPropagation\":\"%s\"}}",
        cases[i].name);
    struct spec *s = load_ok(json);
    assert_int_equal(s->linux_.rootfs_propagation_flags, cases[i].flags);
    spec_free(s);
  }
}

static void test_names(void **state) {
  assert_string_equal(spec_ns_name(SPEC_NS_NETWORK), "network");
  assert_string_equal(spec_ns_proc_name(SPEC_NS_NETWORK), "net");
  assert_string_equal(spec_ns_proc_name(SPEC_NS_MOUNT), "mnt");
  assert_int_equal(spec_ns_clone_flag(SPEC_NS_MOUNT), CLONE_NEWNS);
  assert_int_equal(spec_ns_clone_flag(SPEC_NS_USER), CLONE_NEWUSER);
  assert_int_equal(spec_ns_clone_flag(SPEC_NS_TIME), 0x80);
  assert_null(spec_ns_name(SPEC_NS_COUNT));
  assert_string_equal(spec_hook_kind_name(SPEC_HOOK_CREATE_RUNTIME), "createRuntime");
  assert_string_equal(spec_hook_kind_name(SPEC_HOOK_POSTSTOP), "poststop");
  assert_null(spec_hook_kind_name(SPEC_HOOK_KIND_COUNT));
  assert_null(spec_kv_get(NULL, "x"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_minimal),
      cmocka_unit_test(test_unknown_capability_ignored),
      cmocka_unit_test(test_runc_default),
      cmocka_unit_test(test_full_process),
      cmocka_unit_test(test_full_mounts_hooks),
      cmocka_unit_test(test_full_linux),
      cmocka_unit_test(test_full_resources),
      cmocka_unit_test(test_full_seccomp),
      cmocka_unit_test(test_nulls_and_duplicates),
      cmocka_unit_test(test_rootfs_propagation_values),
      cmocka_unit_test(test_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
