/* Private to src/cgroup: the cgroup object and the helpers the v1/v2/resource files share.
 * Nothing outside src/cgroup includes this. */
#ifndef CM_CGROUP_INTERNAL_H
#define CM_CGROUP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup/cgroup.h"
#include "spec/spec.h"
#include "util/error.h"

enum cgroup_mode {
  CGROUP_MODE_UNIFIED, /* cgroup2 at /sys/fs/cgroup */
  CGROUP_MODE_HYBRID,  /* v1 controllers + cgroup2 at /sys/fs/cgroup/unified */
  CGROUP_MODE_LEGACY,  /* v1 only */
  CGROUP_MODE_DISABLED,
};

/* One mounted v1 hierarchy (possibly several co-mounted controllers, or name=systemd). */
struct cgroup_v1_hierarchy {
  char *mountpoint;  /* /sys/fs/cgroup/memory */
  char *controllers; /* "memory", "cpu,cpuacct", "name=systemd" */
  char *dir;         /* mountpoint + cgroup path */
  /* Number of leading path components that already existed before we created the rest;
   * -1 when we created nothing (reused). Lets a failed create remove only what it made. */
  int existing_depth;
};

struct cgroup {
  enum cgroup_mode mode;
  char *path; /* "/codemode/<id>", cleaned, always absolute */
  /* cgroup2: the mount and our directory in it (NULL in legacy mode / when absent). */
  char *v2_mount;
  char *v2_dir;
  int v2_existing_depth;
  struct cgroup_v1_hierarchy *v1;
  size_t n_v1;
  /* systemd driver: the scope unit holding the cgroup (NULL with cgroupfs). */
  char *systemd_unit;
  char *systemd_slice;
  /* Between cgroup_create and cgroup_enter: the scope does not exist yet (systemd creates it
   * with its first process), and these resources are applied once it does. Points into the
   * caller's spec, which outlives the create. */
  bool systemd_pending;
  /* The first process was cloned into v2_dir (CLONE_INTO_CGROUP): no cgroup.procs write there. */
  bool v2_cloned_into;
  /* The first process wrote itself into every v1 hierarchy's `tasks` (cgroup_self_attach_v1). */
  bool v1_self_attached;
  /* cgroup_delegate: the directory belongs to the container's root (delegate.c); processes
   * added after the first go to its leaf. Saved in the state ("delegated-v2:/path"). */
  bool delegated;
  const struct spec_linux *systemd_linux;
};

/* --- files (cgroup.c) --- */
/* Write value to dir/file. On error: "<field>: write <value> to <dir>/<file>" + errno.
 * field may be NULL. */
int cg_write(const char *dir, const char *file, const char *value, const char *field, struct cm_error **err);
int cg_write_rdma_max(const char *dir, const struct spec_resources *r, struct cm_error **err);
int cg_writef(const char *dir, const char *file, const char *field, struct cm_error **err, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Read dir/file into a malloc'd NUL-terminated string (trailing newline kept). NULL + err. */
char *cg_read(const char *dir, const char *file, struct cm_error **err);
bool cg_file_exists(const char *dir, const char *file);
/* Hand an error kept aside to the caller (who may have passed err == NULL); returns -1. */
int cg_pass_error(struct cm_error **err, struct cm_error *e);
/* The quota of cpu (v1 cpu.cfs_quota_us, v2 cpu.max) and its burst_file (cpu.cfs_burst_us,
 * cpu.max.burst): a quota below the current burst is written after zeroing the burst. */
int cg_write_cpu_quota(const char *dir, const char *file, const char *value, const char *field,
                       const struct spec_cpu *c, const char *burst_file, struct cm_error **err);
/* c->burst to burst_file when set; a profile's optional burst skipped where the kernel has none. */
int cg_write_cpu_burst(const char *dir, const struct spec_cpu *c, const char *burst_file,
                       struct cm_error **err);
/* mkdir -p base + path; *existing_depth receives how many components of path already existed.
 * Returns 1 when this call made the leaf, 0 when it was there already. */
int cg_mkdir_p(const char *base, const char *path, int *existing_depth, struct cm_error **err);
/* Remove base+path, its sub-cgroups first, then the ancestors down to existing_depth components
 * (existing_depth < 0: only the leaf and its sub-cgroups). Retries EBUSY for about a second. */
int cg_rmdir_tree(const char *base, const char *path, int existing_depth, struct cm_error **err);
/* Collect pids from dir/cgroup.procs and every sub-cgroup's. */
int cg_read_pids_recursive(const char *dir, pid_t **pids, size_t *n, struct cm_error **err);
/* The first v1 hierarchy holding controller (exact match in its comma list), or NULL. */
struct cgroup_v1_hierarchy *cg_v1_find(const struct cgroup *cg, const char *controller);

/* --- v2 (v2.c) --- */
/* Enable every available controller in cgroup.subtree_control of each ancestor of path. */
int cg_v2_enable_controllers(const char *mount, const char *path, struct cm_error **err);
/* Enable in dir's cgroup.subtree_control every controller dir has (those the kernel refuses
 * left out, with a debug line). */
int cg_v2_enable_subtree(const char *dir, struct cm_error **err);
int cg_v2_freeze(const char *dir, bool frozen, struct cm_error **err);
int cg_v2_is_frozen(const char *dir, struct cm_error **err);
/* cgroup.events "frozen": 1 when dir is frozen by itself or by an ancestor (a new child of a
 * frozen cgroup is born frozen), 0, or -1 when unknown. */
int cg_v2_frozen_effective(const char *dir);
/* SIGKILL via cgroup.kill when the kernel has it; 1 done, 0 not available, -1 error. */
int cg_v2_kill(const char *dir, struct cm_error **err);
/* cgroup.events "populated": 1, 0, or -1 when unknown. */
int cg_v2_populated(const char *dir);
/* Is controller enabled for dir (listed in dir's cgroup.controllers)? */
bool cg_v2_has_controller(const char *dir, const char *controller);

/* linux.resources.pids.limit asks for something: 0 means "not set" (runc and crun write nothing
 * for it, on create and on update, and need no pids controller then); < 0 is unlimited. */
static inline bool cg_pids_set(const struct spec_resources *r) {
  return r->has_pids && r->pids_limit != 0;
}

/* v1 scales → v2 scales (as runc and crun convert). */
uint64_t cg_cpu_shares_to_weight(uint64_t shares);
uint64_t cg_blkio_to_io_weight(uint64_t weight);

/* --- systemd driver (systemd.c) --- */
/* 0 when systemd is PID 1, else a clear error (never a silent fallback to cgroupfs). */
int cg_systemd_check_running(struct cm_error **err);
/* "slice:prefix:name" (absent: system.slice:codemode:<id>) → the slice, the scope unit
 * "prefix-name.scope" and its expected cgroup path ("/system.slice/prefix-name.scope"). */
int cg_systemd_parse_path(const char *id, const char *cgroups_path, char **slice, char **unit, char **path,
                          struct cm_error **err);
/* StartTransientUnit with PIDs=[pid], Delegate=yes and (unified) the resources systemd has
 * properties for; waits for the job (JobRemoved). */
int cg_systemd_start_scope(const char *slice, const char *unit, const char *description, pid_t pid,
                           const struct spec_resources *r, bool unified, struct cm_error **err);
/* SetUnitProperties (runtime) with the resources systemd has properties for (unified). */
int cg_systemd_set_properties(const char *unit, const struct spec_resources *r, struct cm_error **err);
/* StopUnit + wait, then ResetFailedUnit. A unit already gone is fine. */
int cg_systemd_stop_scope(const char *unit, struct cm_error **err);

/* --- v1 (v1.c) --- */
/* Fill cg->v1 from /proc/self/mountinfo (every mounted "cgroup" hierarchy). */
int cg_v1_discover(struct cgroup *cg, struct cm_error **err);
/* 1: every leaf directory was made by this call; 0: one was there already. */
int cg_v1_create_dirs(struct cgroup *cg, struct cm_error **err);
int cg_v1_freeze(const char *dir, bool frozen, struct cm_error **err);
/* cpuset.cpus and cpuset.mems of dir (in the cpuset hierarchy mounted at mount) non-empty, each
 * empty level from dir up filled from its parent: without them a cgroup takes no task. */
int cg_v1_cpuset_ensure(const char *mount, const char *dir, struct cm_error **err);
bool cg_v1_is_cpuset(const struct cgroup_v1_hierarchy *h);
int cg_v1_is_frozen(const char *dir, struct cm_error **err);

/* --- resources --- */
/* dev_rules == NULL: leave the device policy as it is. */
int cg_v2_apply_resources(const char *dir, const struct spec_resources *r, const struct spec_device_rule *dev_rules,
                          size_t n_dev_rules, struct cm_error **err);
int cg_v1_apply_resources(struct cgroup *cg, const struct spec_resources *r, const struct spec_device_rule *dev_rules,
                          size_t n_dev_rules, struct cm_error **err);
/* One controller's part of the resources on cgroup2; resources_v1 uses these in hybrid mode for
 * controllers bound to cgroup2 (hugetlb on this machine). */
int cg_v2_apply_memory(const char *dir, const struct spec_memory *m, struct cm_error **err);
int cg_v2_apply_cpu(const char *dir, const struct spec_cpu *c, struct cm_error **err);
int cg_v2_apply_cpuset(const char *dir, const struct spec_cpu *c, struct cm_error **err);
int cg_v2_apply_pids(const char *dir, int64_t limit, struct cm_error **err);
int cg_v2_apply_io(const char *dir, const struct spec_blockio *b, struct cm_error **err);
int cg_v2_apply_hugetlb(const char *dir, const struct spec_resources *r, struct cm_error **err);
int cg_v2_apply_rdma(const char *dir, const struct spec_resources *r, struct cm_error **err);
/* linux.resources.unified: keys checked (no '/', no leading '.', controller enabled). */
int cg_v2_apply_unified(const char *dir, const struct spec_kv_list *u, struct cm_error **err);
/* Device rules as the container gets them: linux.resources.devices, then the devices every
 * container needs (/dev/null, …) except those whose path linux.devices lists (as runc does).
 * linux.devices adds no rule of its own. Caller frees. */
struct spec_device_rule *cg_device_rules(const struct spec_resources *r, const struct spec_device *devs,
                                         size_t n_devs, size_t *n_out);
/* Install a BPF_PROG_TYPE_CGROUP_DEVICE program on the v2 directory, replacing ours from before. */
int cg_bpf_devices_apply(const char *dir, const struct spec_device_rule *rules, size_t n, struct cm_error **err);
int cg_v1_apply_devices(const char *dir, const struct spec_device_rule *rules, size_t n, struct cm_error **err);

#endif
