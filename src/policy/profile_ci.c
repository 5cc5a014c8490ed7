/* The ci profile: an untrusted CI job that installs packages, uses sudo and builds and runs
 * containers, with no privilege on the host. Unlike mcp it does not take power away inside the
 * container: the job's root has what a build needs, and all of it lives in a user namespace of
 * the job's own (container root is never host root). What faces the host is closed as under mcp,
 * by the parts both share (profile_isolation.c, mount_policy.c). man/codemode-profiles.5 lists
 * the rules and why. */
#include <errno.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/vfs.h>
#include <linux/magic.h>

#include "policy/profile_rules.h"
#include "policy/seccomp_profile.h"
#include "spec/json_util.h"
#include "util/cleanup.h"
#include "util/host_root.h"

#define CI_MEMORY_LIMIT (4LL * 1024 * 1024 * 1024)
#define CI_PIDS_LIMIT 4096
#define CI_NOFILE_HARD 1048576ULL
#define CI_OOM_SCORE_ADJ 1000
#define CI_TMPFS_SIZE "size=1g"
#define CI_STORAGE_SIZE "size=2g" /* /var/lib/containers */
/* The job's host range: 16 slots of 65536 ids = 1048576 ids. Ids 0-65535 hold the job's own
 * image (every id a Debian rootfs uses); the other 983040 are for the user namespaces the job
 * nests: a build user's /etc/subuid range (the usual "user:100000:65536" ends at 165535) for
 * rootless podman or buildah, or podman --userns=auto ranges, up to 15 of 65536 ids. The
 * default pool (runtime/idrange.h) then holds 256 jobs at a time. */
#define CI_RANGE_SLOTS 16

/* The capabilities of the job's root: Docker's default set, plus what nested containers and
 * debuggers need. Each is checked by the kernel against the namespace that owns the object, and
 * every namespace the job has or makes is owned by its user namespace:
 *   CHOWN DAC_OVERRIDE FOWNER FSETID  files the job's ids own (the rootfs is idmapped; a host
 *                                     file outside its mounts it cannot reach at all)
 *   SETUID SETGID SETPCAP SETFCAP     su/sudo and newuidmap within the job's range; file
 *                                     capabilities written are namespaced (v3, rooted at the job)
 *   KILL                              the job's processes only (its own pid namespace)
 *   MKNOD                             the kernel refuses device nodes in a user namespace; what
 *                                     remains is overlay's 0:0 whiteouts (podman, buildah)
 *   NET_RAW NET_BIND_SERVICE NET_ADMIN its own network namespace (lo, the nested containers'
 *                                     namespaces); NET_ADMIN is dropped when an egress allowlist
 *                                     puts the broker's capture rules there (policy_apply_egress)
 *   SYS_CHROOT AUDIT_WRITE            as in Docker's default (audit: refused outside the host's
 *                                     user namespace anyway)
 *   SYS_ADMIN                         mount, unshare, setns, sethostname: its own namespaces
 *   SYS_PTRACE                        gdb, strace, LeakSanitizer: its own processes
 * Never: SYS_MODULE, SYS_RAWIO, SYS_BOOT, SYS_TIME, SYSLOG, SYS_RESOURCE, DAC_READ_SEARCH,
 * MAC_*, BPF, PERFMON, IPC_LOCK, LEASE, WAKE_ALARM, BLOCK_SUSPEND, AUDIT_CONTROL,
 * CHECKPOINT_RESTORE, SYS_NICE, SYS_PACCT, SYS_TTY_CONFIG, LINUX_IMMUTABLE: host-wide or not
 * needed. */
#define CAP(x) (1ULL << (x))
#define CI_CAPS                                                                                           \
  (CAP(CAP_CHOWN) | CAP(CAP_DAC_OVERRIDE) | CAP(CAP_FOWNER) | CAP(CAP_FSETID) | CAP(CAP_SETUID) |        \
   CAP(CAP_SETGID) | CAP(CAP_SETPCAP) | CAP(CAP_SETFCAP) | CAP(CAP_KILL) | CAP(CAP_MKNOD) | CAP(CAP_NET_RAW) | \
   CAP(CAP_NET_BIND_SERVICE) | CAP(CAP_NET_ADMIN) | CAP(CAP_SYS_CHROOT) | CAP(CAP_AUDIT_WRITE) |          \
   CAP(CAP_SYS_ADMIN) | CAP(CAP_SYS_PTRACE))

static void set_caps(struct spec_process *p, struct policy_report *r) {
  struct spec_capabilities *c = &p->capabilities;
  uint64_t before = c->bounding | c->effective | c->permitted | c->inheritable | c->ambient;
  uint64_t dropped = before & ~CI_CAPS;
  if (dropped) {
    cleanup_free char *names = policy_cap_names(dropped);
    policy_report_add(r, "process.capabilities: dropped %s (host-wide, outside the job's namespaces)", names);
  }
  bool root = p->user.uid == 0;
  uint64_t added = CI_CAPS & ~c->bounding;
  c->present = true;
  c->bounding = CI_CAPS;
  /* The job's root gets the whole set in its namespace; another user keeps what it was given
   * (at most the set), and setuid helpers (sudo) reach the rest. */
  if (root) {
    c->effective = c->permitted = CI_CAPS;
  } else {
    c->effective &= CI_CAPS;
    c->permitted &= CI_CAPS;
  }
  /* Inheritable capabilities would survive an exec into an unprivileged program
   * (CVE-2022-29162/27650 class): never. */
  c->inheritable = 0;
  c->ambient &= c->permitted & c->inheritable;
  if (added) {
    cleanup_free char *names = policy_cap_names(added);
    policy_report_add(r, "process.capabilities: %s added (in the job's user namespace only)", names);
  }
}

void policy_ci_tighten_process(struct spec_process *p, struct policy_report *r) {
  set_caps(p, r);
  /* sudo, su, newuidmap and ping are setuid or file-capability programs: what they gain is the
   * job's own root at most, inside its user namespace. */
  if (p->no_new_privileges) {
    p->no_new_privileges = false;
    policy_report_add(r, "process.noNewPrivileges: true -> false (setuid helpers such as sudo and newuidmap gain "
                         "at most the job's root, in its user namespace)");
  }
  p->lock_loginuid = true;
  /* A runaway build, not the host, is what the OOM killer picks. */
  if (!p->has_oom_score_adj || p->oom_score_adj < CI_OOM_SCORE_ADJ) {
    policy_report_add(r, "process.oomScoreAdj: set to %d", CI_OOM_SCORE_ADJ);
    p->has_oom_score_adj = true;
    p->oom_score_adj = CI_OOM_SCORE_ADJ;
  }
  /* A config's open-file limit is clamped, never added: without one the job inherits the
   * engine's (raising it would need CAP_SYS_RESOURCE, which a runner may not have). */
  for (size_t i = 0; i < p->n_rlimits; i++)
    if (p->rlimits[i].resource == RLIMIT_NOFILE)
      policy_tighten_rlimit(p, RLIMIT_NOFILE, "RLIMIT_NOFILE", CI_NOFILE_HARD, CI_NOFILE_HARD, r);
  /* core_pattern is the host's: a core would go to the host's handler (systemd-coredump keeps
   * it on the host, with whatever secrets the job held). */
  policy_tighten_rlimit(p, RLIMIT_CORE, "RLIMIT_CORE", 0, 0, r);
}

/* Build-sized defaults, never unlimited; an explicit value (the config's, --memory, --pids,
 * --cpus) is the caller's to choose. */
static void set_resources(struct spec_resources *res, struct policy_report *r) {
  res->present = true;
  struct spec_memory *m = &res->memory;
  m->present = true;
  if (!m->limit.set || m->limit.value <= 0) {
    policy_report_add(r, "linux.resources.memory.limit: set to %lld (4 GiB; codemode-run --memory)", CI_MEMORY_LIMIT);
    m->limit = (struct spec_opt_i64){true, CI_MEMORY_LIMIT};
  }
  if (!m->swap.set || m->swap.value < 0 || m->swap.value > m->limit.value) {
    policy_report_add(r, "linux.resources.memory.swap: set to %" PRId64 " (no swap)", m->limit.value);
    m->swap = (struct spec_opt_i64){true, m->limit.value};
  }
  if (!res->has_pids || res->pids_limit <= 0) {
    policy_report_add(r, "linux.resources.pids.limit: set to %d (codemode-run --pids)", CI_PIDS_LIMIT);
    res->has_pids = true;
    res->pids_limit = CI_PIDS_LIMIT;
  }
}

int policy_ci_tighten_update(struct spec_resources *res, struct policy_report *r, struct cm_error **err) {
  if (res->unified.count)
    return cm_error_set(err, EPERM,
                        "unified.\"%s\": raw cgroup files cannot be set on a hardened container (fix: use the "
                        "memory, cpu and pids fields)",
                        res->unified.items[0].key);
  if (res->n_devices)
    return cm_error_set(err, EPERM, "devices: the device rules of a hardened container were fixed at create");
  if (res->memory.limit.set && res->memory.limit.value <= 0)
    return cm_error_set(err, EPERM, "memory.limit: %" PRId64 ": a ci job is never unlimited (give a size)",
                        res->memory.limit.value);
  if (res->has_pids && res->pids_limit <= 0)
    return cm_error_set(err, EPERM, "pids.limit: %" PRId64 ": a ci job is never unlimited (give a number)",
                        res->pids_limit);
  if (res->memory.limit.set && (!res->memory.swap.set || res->memory.swap.value != res->memory.limit.value)) {
    res->memory.swap = (struct spec_opt_i64){true, res->memory.limit.value};
    policy_report_add(r, "memory.swap: %" PRId64 " (no swap)", res->memory.limit.value);
  }
  return 0;
}

int policy_ci_load_seccomp(uint64_t bounding, struct spec_seccomp *out, struct cm_error **err) {
  struct seccomp_profile_target target = {.capabilities = bounding};
  return seccomp_profile_load("ci", &target, out, err);
}

/* The runtime can give the job its cgroup subtree (cgroup/delegate.c): cgroup2 at
 * /sys/fs/cgroup (a v1 or hybrid host keeps its controllers in v1, which has no safe delegation)
 * and a root runtime (only it can give a directory to the job's range). */
static bool ci_cgroup_delegation_possible(void) {
  struct statfs st;
  return cm_host_root() && statfs("/sys/fs/cgroup", &st) == 0 && st.f_type == CGROUP2_SUPER_MAGIC;
}

/* Mounts: the shared allow-list, and what a build and a nested runtime need. */
static int ci_mounts(struct spec *s, const char *bundle, bool delegation, struct policy_report *r,
                     struct cm_error **err) {
  if (policy_tighten_mounts(s, bundle, CI_TMPFS_SIZE, r, err) < 0)
    return -1;
  for (size_t i = 0; i < s->n_mounts; i++) {
    struct spec_mount *m = &s->mounts[i];
    bool bind = (m->type && strcmp(m->type, "bind") == 0) || (m->flags & MS_BIND);
    /* A writable host directory: the job writes as its owner, never as host root (a setuid
     * program or file capability left there would be a real one on the host). */
    if (bind && !(m->flags & MS_RDONLY) && !m->trusted) {
      m->idmap_to_owner = true;
      policy_report_add(r, "mounts[%zu] %s: writable: the job's root writes there as its owner (a directory of host "
                           "root's is refused, a file of host root's bound read-only)",
                        i, m->destination);
    }
    /* crun refuses a hybrid v1+v2 tree at /sys/fs/cgroup: the job sees the unified hierarchy
     * alone (on a v2 host the same thing), a view every nested runtime accepts. */
    bool cgroupfs = m->type && (strcmp(m->type, "cgroup") == 0 || strcmp(m->type, "cgroup2") == 0);
    if (cgroupfs && strcmp(m->type, "cgroup") == 0 && strcmp(m->destination, "/sys/fs/cgroup") == 0) {
      free(m->type);
      m->type = xstrdup("cgroup2");
      policy_report_add(r, "mounts[%zu] /sys/fs/cgroup: cgroup2 only (never the hybrid tree, which nested crun "
                           "refuses)",
                        i);
    }
    /* Where the job's cgroup is delegated to it, nested runtimes write there: read-write. The
     * mount is rooted at the job's cgroup (its own cgroup namespace), and what it may write is
     * what the kernel lets the job's root write, which cgroup/delegate.c decides by ownership:
     * the delegated files, never the limits. Should the runtime not delegate after all (the
     * systemd driver, --cgroup-manager disabled), every file there is host root's, at an id the
     * job does not map: rw then reaches nothing. */
    if (cgroupfs && strcmp(m->destination, "/sys/fs/cgroup") == 0 && delegation) {
      policy_mount_force_option(m, "rw", "ro");
      policy_report_add(r, "mounts[%zu] /sys/fs/cgroup: read-write (the job's cgroup is delegated to its root: "
                           "sub-cgroups of its own, never its own limits)",
                        i);
    }
  }
  if (!policy_has_mount_at(s, "/dev/shm") && policy_has_mount_at(s, "/dev"))
    policy_add_tmpfs(s, "/dev/shm", (const char *const[]){"nosuid", "nodev", "mode=1777", CI_TMPFS_SIZE, NULL}, r);
  /* Nested containers' storage: overlay needs an upper layer that is not itself an overlay (the
   * job's root is one), and the kernel allows native overlay on tmpfs in a user namespace. Its
   * pages are charged to the job's memory limit. */
  if (!policy_has_mount_at(s, "/var/lib/containers"))
    policy_add_tmpfs(s, "/var/lib/containers", (const char *const[]){"nodev", "mode=0700", CI_STORAGE_SIZE, NULL}, r);
  /* A read-only root (codemode's own CLI on a plain bundle) still gets a writable /tmp, under
   * any bind below /tmp (a workspace, a runner's step files: policy_add_tmpfs). */
  if (s->root_readonly && !policy_has_mount_at(s, "/tmp"))
    policy_add_tmpfs(s, "/tmp", (const char *const[]){"nosuid", "nodev", "mode=1777", CI_TMPFS_SIZE, NULL}, r);
  return 0;
}

/* /proc/sys writable: every host-wide setting there (kernel.core_pattern, vm.*, kernel.*) is
 * owned by host root, whom the job is not, so the kernel refuses its writes; what the job's
 * root may write is its own namespaces' (net.* of its network namespace, the IPC limits of its
 * IPC namespace, user.max_* of its user namespace). Nested runtimes need that: crun writes the
 * nested container's net.ipv4.ping_group_range through it. /proc/sysrq-trigger and the rest of
 * the read-only and masked sets stay. */
static void proc_sys_writable(struct spec_strv *ro, struct policy_report *r) {
  for (size_t i = 0; i < ro->count;) {
    if (strcmp(ro->items[i], "/proc/sys") == 0) {
      free(ro->items[i]);
      memmove(&ro->items[i], &ro->items[i + 1], (ro->count - i) * sizeof(char *));
      ro->count--;
      policy_report_add(r, "linux.readonlyPaths: /proc/sys removed (its host-wide files are host root's; the job "
                           "writes only its own namespaces' settings)");
    } else {
      i++;
    }
  }
}

int policy_ci_apply(struct spec *s, const char *bundle, struct policy_result *out, struct cm_error **err) {
  struct policy_report *r = &out->report;
  if (s->process == NULL)
    return cm_error_set(err, 0, "config.json: .process: missing");
  policy_sys_bind_to_sysfs(s, r);
  bool delegation = ci_cgroup_delegation_possible();
  if (policy_tighten_namespaces(s, "ci", r, err) < 0 || policy_tighten_userns(s, CI_RANGE_SLOTS, r, err) < 0 ||
      policy_check_joined_mount_ns(s, err) < 0 ||
      ci_mounts(s, bundle, delegation, r, err) < 0)
    return -1;
  /* Nested podman and buildah: the runtime delegates the job's cgroup where it can and tells
   * them what they got (containers.conf drop-in). */
  s->hardening.nested_containers = true;
  policy_report_add(r, delegation ? "cgroup: the job's cgroup v2 subtree is delegated to its root (nested containers "
                                    "get cgroups and limits of their own inside the job's)"
                                  : "cgroup: not delegated (no cgroup v2 host, or not root): nested containers run "
                                    "with cgroups disabled, inside the job's");
  s->has_linux = true;
  policy_ci_tighten_process(s->process, r);
  policy_add_paths(&s->linux_.masked_paths, spec_default_masked_paths, "maskedPaths", r);
  policy_add_paths(&s->linux_.readonly_paths, spec_default_readonly_paths, "readonlyPaths", r);
  proc_sys_writable(&s->linux_.readonly_paths, r);
  if (policy_tighten_devices(&s->linux_, r, err) < 0)
    return -1;
  /* Docker's default net.ipv4.ping_group_range "0 2147483647" names ids the job's namespace
   * does not map (EINVAL): the config's sysctls go; the job sets its own namespaces' itself. */
  policy_drop_sysctls(&s->linux_, r);
  set_resources(&s->linux_.resources, r);
  policy_drop_unified(&s->linux_.resources, r);
  /* The root's throwaway upper layer may hold a build: as large as the memory limit that pays
   * for its pages. */
  s->hardening.root_upper_size = (uint64_t)s->linux_.resources.memory.limit.value;
  /* In place of the config's filter, not stacked on it: Docker's and the generated configs'
   * filters are resolved for capabilities without CAP_SYS_ADMIN, and would refuse the job the
   * unshare and mount calls the profile gives it. */
  bool had = s->linux_.seccomp.present;
  spec_seccomp_clear(&s->linux_.seccomp);
  if (policy_ci_load_seccomp(s->process->capabilities.bounding, &s->linux_.seccomp, err) < 0)
    return -1;
  policy_report_add(r, "seccomp: ci.json %s (%zu rules)", had ? "replaces the config's filter" : "set",
                    s->linux_.seccomp.n_syscalls);
  return 0;
}
