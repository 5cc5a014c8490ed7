/* config.json (OCI runtime-spec 1.2) as typed C structs.
 *
 * spec_load() parses with yajl's tree API and validates; every error names the JSON path, e.g.
 * "config.json: .process.args: must be a non-empty array of strings". Unknown fields are ignored,
 * as the spec says. Strings are owned by the struct; spec_free() releases everything.
 * A `has_X` flag says an optional scalar was present. */
#ifndef CM_SPEC_SPEC_H
#define CM_SPEC_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/error.h"

#define SPEC_OCI_VERSION "1.2.0"

struct spec_strv {
  char **items; /* NULL-terminated (items[count] == NULL), or NULL when count == 0 */
  size_t count;
};

struct spec_kv { /* annotations, sysctl, unified */
  char *key;
  char *value;
};
struct spec_kv_list {
  struct spec_kv *items;
  size_t count;
};

struct spec_id_mapping {
  uint32_t container_id, host_id, size;
};

struct spec_mount {
  char *destination; /* absolute, cleaned */
  bool relative_destination; /* written relative: taken relative to / (spec), with a warning */
  char *type;        /* may be NULL: then a bind if options say so */
  char *source;      /* may be NULL */
  struct spec_strv options;
  /* Options decoded by spec/mount_options.c: */
  unsigned long flags;             /* MS_* to set */
  unsigned long clear_flags;       /* MS_* the options explicitly clear (rw, suid, dev, exec, …) */
  unsigned long propagation;       /* MS_SHARED/MS_SLAVE/MS_PRIVATE/MS_UNBINDABLE (| MS_REC) or 0 */
  bool recursive_readonly;         /* "rro" */
  bool idmap;                      /* "idmap"/"ridmap": an idmapped mount (runtime/userns_setup.h) */
  bool idmap_recursive;            /* "ridmap": the submounts of an rbind idmapped too (runc) */
  bool tmpcopyup;                  /* "tmpcopyup": a tmpfs gets the content of the directory it covers */
  char *data;                      /* unknown options joined by ',' for mount(2) data, or NULL */
  struct spec_id_mapping *uid_mappings, *gid_mappings;
  size_t n_uid_mappings, n_gid_mappings;
  /* Never from JSON: a mount codemode-run made itself after the profile (--host's read-only
   * system directories), whose source the hardening checks (spec.hardening) do not judge. */
  bool trusted;
  /* Never from JSON: the read-only lower layer of a codemode-run --mount SRC:DST:cow (the
   * overlay's writes go to a throwaway upper layer, SRC is never mounted writable). The profile
   * then accepts a SRC inside the invoking user's own home even where that home is /root. */
  bool cow_lower;
  /* Never from JSON (policy/'s ci profile, as root): a writable bind idmapped so that the
   * container's root writes as the source directory's owner, never as host root (a setuid
   * program or file capability it plants there would otherwise be host root's); refused when
   * that owner is host root (runtime/userns_setup.c). */
  bool idmap_to_owner;
};

struct spec_rlimit {
  int resource; /* RLIMIT_* */
  char *type;   /* "RLIMIT_NOFILE" */
  uint64_t soft, hard;
};

/* Capability sets as bit masks over CAP_* numbers; names validated at parse time. */
struct spec_capabilities {
  bool present;
  uint64_t bounding, effective, inheritable, permitted, ambient;
};

struct spec_user {
  uint32_t uid, gid;
  bool has_umask;
  uint32_t umask;
  uint32_t *additional_gids;
  size_t n_additional_gids;
  char *username;
};

struct spec_scheduler {
  bool present;
  int policy; /* SCHED_* */
  int nice, priority;
  uint64_t flags; /* SCHED_FLAG_* */
  uint64_t runtime, deadline, period;
};

struct spec_process {
  bool terminal;
  bool has_console_size;
  unsigned console_height, console_width;
  struct spec_user user;
  struct spec_strv args; /* non-empty */
  char *command_line;    /* Windows only; ignored */
  struct spec_strv env;
  char *cwd; /* absolute */
  struct spec_capabilities capabilities;
  struct spec_rlimit *rlimits;
  size_t n_rlimits;
  bool no_new_privileges;
  bool has_oom_score_adj;
  int oom_score_adj;
  char *apparmor_profile;
  char *selinux_label;
  bool has_io_priority;
  int io_priority_class; /* IOPRIO_CLASS_* */
  int io_priority;
  struct spec_scheduler scheduler;
  /* Set by policy/ (a hardening profile), never from JSON: give the process an audit login uid
   * (/proc/self/loginuid) when it has none, so that it cannot pick one itself. */
  bool lock_loginuid;
};

struct spec_hook {
  char *path; /* absolute */
  struct spec_strv args;
  struct spec_strv env;
  bool has_timeout;
  int timeout; /* seconds, > 0 */
};
enum spec_hook_kind {
  SPEC_HOOK_PRESTART,
  SPEC_HOOK_CREATE_RUNTIME,
  SPEC_HOOK_CREATE_CONTAINER,
  SPEC_HOOK_START_CONTAINER,
  SPEC_HOOK_POSTSTART,
  SPEC_HOOK_POSTSTOP,
  SPEC_HOOK_KIND_COUNT
};
struct spec_hook_list {
  struct spec_hook *items;
  size_t count;
};

enum spec_ns_type {
  SPEC_NS_PID,
  SPEC_NS_NETWORK,
  SPEC_NS_MOUNT,
  SPEC_NS_IPC,
  SPEC_NS_UTS,
  SPEC_NS_USER,
  SPEC_NS_CGROUP,
  SPEC_NS_TIME,
  SPEC_NS_COUNT
};
struct spec_namespace {
  bool present; /* listed in linux.namespaces */
  char *path;   /* join this one; NULL: create a new one */
  /* Not from the config: set by a profile for the network namespace. `path` is joined only
   * while it holds nothing but lo, else a new one is made (linux/net.c). */
  bool loopback_only;
};

struct spec_device { /* linux.devices */
  char *path;
  char type; /* 'c', 'b', 'u', 'p' */
  int64_t major, minor;
  bool has_file_mode, has_uid, has_gid;
  uint32_t file_mode, uid, gid;
};

struct spec_time_offset {
  bool present;
  int64_t secs;
  uint32_t nanosecs;
};

/* --- linux.resources: parsed and validated here, applied by cgroup/ --- */
struct spec_device_rule {
  bool allow;
  char type; /* 'a', 'c', 'b' */
  int64_t major, minor; /* -1 = wildcard */
  char access[4];       /* subset of "rwm" */
};
struct spec_opt_u64 {
  bool set;
  uint64_t value;
};
struct spec_opt_i64 {
  bool set;
  int64_t value;
};
struct spec_memory {
  bool present;
  struct spec_opt_i64 limit, reservation, swap, kernel, kernel_tcp;
  struct spec_opt_u64 swappiness;
  bool has_disable_oom_killer, disable_oom_killer;
  bool has_use_hierarchy, use_hierarchy;
  bool has_check_before_update, check_before_update;
};
struct spec_cpu {
  bool present;
  struct spec_opt_u64 shares, period, realtime_period, burst;
  /* burst is a profile's own (not the config's): skipped on a kernel without the file
   * (cpu.cfs_burst_us, cpu.max.burst: Linux 5.14), where the config's would be an error. */
  bool burst_optional;
  struct spec_opt_i64 quota, realtime_runtime, idle;
  char *cpus, *mems;
};
struct spec_weight_device {
  int64_t major, minor;
  bool has_weight, has_leaf_weight;
  uint16_t weight, leaf_weight;
};
struct spec_throttle_device {
  int64_t major, minor;
  uint64_t rate;
};
struct spec_blockio {
  bool present;
  bool has_weight, has_leaf_weight;
  uint16_t weight, leaf_weight;
  struct spec_weight_device *weight_devices;
  size_t n_weight_devices;
  struct spec_throttle_device *throttle_read_bps, *throttle_write_bps, *throttle_read_iops,
      *throttle_write_iops;
  size_t n_throttle_read_bps, n_throttle_write_bps, n_throttle_read_iops, n_throttle_write_iops;
};
struct spec_hugepage_limit {
  char *page_size; /* "2MB" */
  uint64_t limit;
};
struct spec_net_priority {
  char *name;
  uint32_t priority;
};
struct spec_rdma {
  char *device;
  struct spec_opt_u64 hca_handles, hca_objects;
};
struct spec_resources {
  bool present;
  struct spec_device_rule *devices;
  size_t n_devices;
  struct spec_memory memory;
  struct spec_cpu cpu;
  bool has_pids;
  int64_t pids_limit; /* < 0: unlimited; 0: not set (as runc and crun read it) */
  struct spec_blockio block_io;
  struct spec_hugepage_limit *hugepage_limits;
  size_t n_hugepage_limits;
  bool has_network;
  bool has_class_id;
  uint32_t class_id;
  struct spec_net_priority *net_priorities;
  size_t n_net_priorities;
  struct spec_rdma *rdma;
  size_t n_rdma;
  struct spec_kv_list unified;
};

/* --- linux.seccomp: parsed and validated here, compiled by linux/seccomp.c --- */
enum spec_seccomp_action {
  SPEC_SECCOMP_KILL, /* = KILL_THREAD */
  SPEC_SECCOMP_KILL_PROCESS,
  SPEC_SECCOMP_KILL_THREAD,
  SPEC_SECCOMP_TRAP,
  SPEC_SECCOMP_ERRNO,
  SPEC_SECCOMP_TRACE,
  SPEC_SECCOMP_ALLOW,
  SPEC_SECCOMP_LOG,
  SPEC_SECCOMP_NOTIFY,
};
enum spec_seccomp_op {
  SPEC_SECCOMP_OP_NE,
  SPEC_SECCOMP_OP_LT,
  SPEC_SECCOMP_OP_LE,
  SPEC_SECCOMP_OP_EQ,
  SPEC_SECCOMP_OP_GE,
  SPEC_SECCOMP_OP_GT,
  SPEC_SECCOMP_OP_MASKED_EQ,
};
struct spec_seccomp_arg {
  unsigned index;
  uint64_t value, value_two;
  enum spec_seccomp_op op;
};
struct spec_seccomp_syscall {
  struct spec_strv names;
  enum spec_seccomp_action action;
  bool has_errno_ret;
  uint32_t errno_ret;
  struct spec_seccomp_arg *args;
  size_t n_args;
};
struct spec_seccomp {
  bool present;
  enum spec_seccomp_action default_action;
  bool has_default_errno_ret;
  uint32_t default_errno_ret;
  struct spec_strv architectures; /* "SCMP_ARCH_X86_64" … */
  struct spec_strv flags;         /* "SECCOMP_FILTER_FLAG_TSYNC" … */
  char *listener_path;
  char *listener_metadata;
  struct spec_seccomp_syscall *syscalls;
  size_t n_syscalls;
};

struct spec_personality {
  bool present;
  unsigned long domain; /* PER_LINUX or PER_LINUX32 */
  struct spec_strv flags;
};

struct spec_linux {
  struct spec_namespace namespaces[SPEC_NS_COUNT];
  struct spec_id_mapping *uid_mappings, *gid_mappings;
  size_t n_uid_mappings, n_gid_mappings;
  struct spec_time_offset time_monotonic, time_boottime;
  struct spec_device *devices;
  size_t n_devices;
  char *cgroups_path;
  struct spec_resources resources;
  char *rootfs_propagation; /* "shared" "slave" "private" "unbindable" (r-prefixed too) or NULL */
  unsigned long rootfs_propagation_flags; /* decoded MS_* or 0 */
  struct spec_seccomp seccomp;
  struct spec_kv_list sysctl;
  struct spec_strv masked_paths;
  struct spec_strv readonly_paths;
  char *mount_label;
  struct spec_personality personality;
  /* Not from JSON: the user namespace's mappings are the runtime's to choose (set by policy/'s
   * mcp profiles, and by the runtime for a non-root caller): a host range allocated per
   * container when root (runtime/idrange.h), the caller's own ids otherwise. */
  bool userns_auto;
  /* Not from JSON (policy/'s ci profile): with userns_auto as root, how many consecutive
   * IDRANGE_SIZE slots the container's range spans (0: one). More than one leaves room for the
   * user namespaces a CI job nests inside its own (a build user's /etc/subuid range). */
  uint32_t userns_auto_slots;
  /* Not from JSON (policy/): a root runtime creates the config's own user namespace from the
   * host uid its container root maps to, not as root (per-uid budgets, linux/userns.h). */
  bool userns_create_as_mapped_root;
  /* Not from JSON (policy/): the user namespace is the one that owns the namespaces the config
   * joins (a pod's, made by the profile for its sandbox): joined, never created, and the
   * rootfs and binds are idmapped to it as to a range of the container's own. */
  bool userns_join_owner;
};

/* Set by policy/ (a hardening profile), never from JSON: checks the runtime makes where only the
 * opened fd can tell what a path is. */
struct spec_hardening {
  /* Every bind source, overlay layer and the root are judged on the fd that is mounted
   * (linux/mount_source.h); binds are never recursive. */
  bool check_mount_sources;
  /* The size of the throwaway upper layer of an overlay root re-assembled over idmapped layers
   * (runtime/userns_setup.c), in bytes; 0: 256 MiB. Its pages are charged to the container's
   * memory cgroup. */
  uint64_t root_upper_size;
  /* The ci profile: the container runs containers of its own. The runtime delegates its cgroup
   * v2 subtree to the container's root where it can (cgroup/delegate.c), and init writes the
   * containers.conf drop-in that tells podman what it can (runtime/containers_dropin.c). */
  bool nested_containers;
};

struct spec {
  char *oci_version;
  char *root_path; /* as written (may be relative to the bundle) */
  bool root_readonly;
  /* Never from JSON: every mount under the root is one codemode-run made itself in its own
   * scratch mount namespace (--host's read-only system directories and /etc allow-list), so the
   * root is cloned with them (recursively, idmapped as one tree) though hardened. */
  bool root_tree_trusted;
  /* Never from JSON: where those mounts are (destinations, as s->mounts would name them), and
   * the small /etc files copied into the root in place of a bind, for what reads the mounts as
   * a list (learn mode's collapse, which stops at each as it did at their binds). */
  struct spec_strv root_tree_mounts;
  struct spec_process *process; /* NULL when absent (allowed for create only by spec; we require it) */
  char *hostname;
  char *domainname;
  struct spec_mount *mounts;
  size_t n_mounts;
  struct spec_hook_list hooks[SPEC_HOOK_KIND_COUNT];
  struct spec_kv_list annotations;
  /* annotations["run.codemode.landlock"] parsed (spec/landlock_config.h); NULL: none. */
  struct spec_landlock *landlock;
  /* annotations["run.codemode.landlock.deny"] and codemode-run --deny: absolute, cleaned. */
  struct spec_strv landlock_deny;
  bool has_linux;
  struct spec_linux linux_;
  struct spec_hardening hardening;
};

/* Parse and validate a config.json. `label` prefixes errors ("config.json"). */
struct spec *spec_load_file(const char *path, const char *label, struct cm_error **err);
struct spec *spec_load_string(const char *json, size_t len, const char *label, struct cm_error **err);
void spec_free(struct spec *s);

/* process.json (for exec): a bare process object. */
struct spec_process *spec_process_load_file(const char *path, struct cm_error **err);
void spec_process_free(struct spec_process *p);

/* `update --resources FILE`: a bare linux.resources object, validated like config.json's
 * .linux.resources (paths start at "."). Fills *out (zeroed first); free with
 * spec_resources_free, which releases the contents, not the struct itself. */
int spec_resources_load_string(const char *json, size_t len, const char *label, struct spec_resources *out,
                               struct cm_error **err);
void spec_resources_free(struct spec_resources *r);

/* Names ↔ values used across layers. */
const char *spec_ns_name(enum spec_ns_type t);           /* "pid", "network", … */
int spec_ns_clone_flag(enum spec_ns_type t);             /* CLONE_NEW* */
const char *spec_ns_proc_name(enum spec_ns_type t);      /* "pid", "net", "mnt", … as in /proc/PID/ns */
const char *spec_hook_kind_name(enum spec_hook_kind k);  /* "prestart", "createRuntime", … */
const char *spec_kv_get(const struct spec_kv_list *l, const char *key);
/* The config asks for a new namespace of type t (listed without a path to join). */
static inline bool spec_ns_is_new(const struct spec *s, enum spec_ns_type t) {
  return s->linux_.namespaces[t].present && s->linux_.namespaces[t].path == NULL;
}

/* The default config.json `codemode spec` writes (runc-compatible); rootless variant too.
 * Returns a malloc'd JSON string. */
char *spec_default_json(bool rootless);
/* The default config's linux.maskedPaths and linux.readonlyPaths (Docker's sets; NULL-ended):
 * kernel interfaces that leak host data or accept writes acting on the whole machine. The mcp
 * profile enforces them on any config. */
extern const char *const spec_default_masked_paths[];
extern const char *const spec_default_readonly_paths[];
/* The OCI features document (`codemode features`); landlock_abi: the kernel's (0: none). */
char *spec_features_json(int landlock_abi);
/* The same with extra annotations (the CLI's: whether CRIU works here); extra may be NULL. */
char *spec_features_json_with(int landlock_abi, const struct spec_kv_list *extra);

#endif
