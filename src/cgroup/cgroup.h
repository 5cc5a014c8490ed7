/* One interface over cgroup v2, v1/hybrid and the systemd driver.
 * runtime/ creates a cgroup before the container's first process exists, places that process in
 * it, and reopens it from the saved state for pause/resume/update/ps/kill --all/delete. */
#ifndef CM_CGROUP_CGROUP_H
#define CM_CGROUP_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "spec/spec.h"
#include "util/error.h"

enum cgroup_manager {
  CGROUP_MANAGER_CGROUPFS,
  CGROUP_MANAGER_SYSTEMD,
  CGROUP_MANAGER_DISABLED, /* crun's --cgroup-manager disabled: no cgroup at all */
};

struct cgroup;

/* Create (or reuse, when it already exists and is empty) the container's cgroup from
 * linux.cgroupsPath (absolute, relative or absent → a default under /codemode/<id>) and apply
 * linux.resources. Nothing is left behind on error. */
int cgroup_create(const char *id, const struct spec_linux *l, enum cgroup_manager mgr, struct cgroup **out,
                  struct cm_error **err);
/* The same in two steps, so create can apply the resources (file writes, the device filter's BPF
 * load) while the container's init sets up its mounts: they only have to be in place before the
 * user's process runs. On an error from cgroup_apply_resources the caller destroys the cgroup. */
int cgroup_create_without_resources(const char *id, const struct spec_linux *l, enum cgroup_manager mgr,
                                    struct cgroup **out, struct cm_error **err);
int cgroup_apply_resources(struct cgroup *cg, const struct spec_linux *l, struct cm_error **err);
/* Move pid (the container's first process) into the cgroup. */
int cgroup_enter(struct cgroup *cg, pid_t pid, struct cm_error **err);
/* Another process charged to the container (its egress broker), after cgroup_enter of init:
 * into every hierarchy the container has. */
int cgroup_add_process(struct cgroup *cg, pid_t pid, struct cm_error **err);
/* An fd of the cgroup2 directory to clone the first process straight into (clone_child), or -1
 * when there is none to use (v1 only, disabled, a systemd scope not created yet). */
int cgroup_open_for_clone(const struct cgroup *cg);
/* The kernel placed the process in the cgroup2 directory at clone: cgroup_enter then only adds it
 * to the v1 hierarchies (or does nothing on a pure v2 host). */
void cgroup_mark_cloned_into(struct cgroup *cg);
/* Self-attach to the v1 hierarchies (cgroupfs driver): fds of each hierarchy's `tasks` file,
 * opened here before the clone (at most `max`; 0 when there is nothing to join this way, -1 on
 * error), for the child to write "0" to as its first step (cgroup_self_attach_v1). A process
 * moved by another writing its pid to cgroup.procs waits for an RCU grace period (the kernel
 * takes cgroup_threadgroup_rwsem for writing: ~9 ms per create here); a single-threaded process
 * moving itself through `tasks` does not (0.03 ms). */
int cgroup_open_v1_tasks(const struct cgroup *cg, int *fds, size_t max, struct cm_error **err);
/* In the child: write "0" to each fd, close them all. */
int cgroup_self_attach_v1(const int *fds, size_t n, struct cm_error **err);
/* The child joined the v1 hierarchies itself: cgroup_enter skips them. */
void cgroup_mark_v1_self_attached(struct cgroup *cg);
/* A process cloned into cgroup_open_for_clone's directory is in every hierarchy it needs (a pure
 * v2 host, cgroupfs driver): nothing is left for cgroup_enter to do. */
bool cgroup_whole_at_clone(const struct cgroup *cg);
/* Refuse (with a clear error) a cgroup that is frozen, by itself or from above: a process put
 * in it would not run until someone thaws it. */
int cgroup_refuse_frozen(const struct cgroup *cg, struct cm_error **err);
/* exec --cgroup: a copy of the container's cgroup with some hierarchies pointed at an existing
 * sub-cgroup. Each spec is runc's "[controller[,controller…]:]path": a path alone (the only
 * spec then) moves every hierarchy; "cpu,memory:path" moves those v1 hierarchies only (not on
 * cgroup v2, where there is one). path is relative to the container's cgroup and may not leave
 * it (".."). Use it with cgroup_open_for_clone / cgroup_enter, then cgroup_free. */
int cgroup_open_sub(const struct cgroup *cg, char *const *specs, size_t n, struct cgroup **out,
                    struct cm_error **err);
/* Delegation (delegate.c, the ci profile): the container's cgroup given to its root uid:gid as
 * systemd delegates — the directory and its cgroup.procs, cgroup.threads and
 * cgroup.subtree_control, never its limit files — and a leaf CGROUP_DELEGATE_LEAF wholly the
 * container's. Call between cgroup_create* and the first
 * process, which enters the cgroup itself (cgroup_open_for_clone / cgroup_enter), makes its
 * cgroup namespace there and then moves into the leaf (cgroup_enter_leaf_self). 1 delegated, 0
 * not possible here (not a pure cgroup v2 host, the systemd driver), -1 on error. */
#define CGROUP_DELEGATE_LEAF "job"
int cgroup_delegate(struct cgroup *cg, uid_t uid, gid_t gid, struct cm_error **err);
/* Once the first process is in the leaf: every controller the cgroup has handed down to the
 * job's sub-cgroups (cgroup.subtree_control). Nothing when not delegated. */
int cgroup_delegate_controllers(struct cgroup *cg, struct cm_error **err);
bool cgroup_is_delegated(const struct cgroup *cg);
/* An fd of the leaf's cgroup.procs, opened by the runtime (whose credentials and cgroup
 * namespace the kernel checks a write against): the first process writes "0" to it once it has
 * made its cgroup namespace. */
int cgroup_open_leaf_procs(const struct cgroup *cg, struct cm_error **err);
/* In the child: write "0" to the fd, close it. */
int cgroup_enter_leaf_self(int procs_fd, struct cm_error **err);
/* The leaf as a cgroup of its own, for exec to place its process in (cgroup_free it). */
int cgroup_open_leaf(const struct cgroup *cg, struct cgroup **out, struct cm_error **err);
/* A string to keep in the state file, and the way back from it. */
char *cgroup_serialize(const struct cgroup *cg);
struct cgroup *cgroup_deserialize(const char *saved, struct cm_error **err);
/* The path as the container sees it in /proc/self/cgroup (for the state and the docs). */
const char *cgroup_path(const struct cgroup *cg);

int cgroup_update(struct cgroup *cg, const struct spec_resources *r, struct cm_error **err);
int cgroup_freeze(struct cgroup *cg, bool frozen, struct cm_error **err);
/* 1 frozen, 0 not, -1 error. */
int cgroup_is_frozen(struct cgroup *cg, struct cm_error **err);
int cgroup_kill_all(struct cgroup *cg, int signo, struct cm_error **err);
int cgroup_pids(struct cgroup *cg, pid_t **pids, size_t *n, struct cm_error **err);
/* Kill what is left, wait, remove the cgroup(s) (retrying on EBUSY). */
int cgroup_destroy(struct cgroup *cg, struct cm_error **err);
void cgroup_free(struct cgroup *cg);

/* Usage counters as runc's `events --stats` reports them (its field names in the comments;
 * v2 values converted to v1 units the way runc does: ns for CPU, memory+swap for "swap"). */
struct cgroup_mem_entry {
  bool present;
  uint64_t limit, usage, max, failcnt;
};
struct cgroup_stat_kv {
  char *key;
  uint64_t value;
};
struct cgroup_blkio_entry {
  uint64_t major, minor;
  char op[16]; /* "Read", "Write", "Sync", "Async", "Discard", "Total" */
  uint64_t value;
};
struct cgroup_hugetlb_stat {
  char page_size[16]; /* "2MB" */
  uint64_t usage, max, failcnt;
};
struct cgroup_stats {
  struct {
    uint64_t total, kernel, user; /* usage.{total,kernel,user}, ns */
    uint64_t *percpu, *percpu_kernel, *percpu_user; /* v1 only */
    size_t n_percpu, n_percpu_kernel, n_percpu_user;
    uint64_t periods, throttled_periods, throttled_time; /* throttling.* */
  } cpu;
  struct {
    uint64_t cache;
    struct cgroup_mem_entry usage, swap, kernel, kernel_tcp;
    struct cgroup_stat_kv *raw; /* memory.stat */
    size_t n_raw;
  } memory;
  struct {
    uint64_t current, limit; /* limit 0: unlimited */
  } pids;
  struct {
    struct cgroup_blkio_entry *service_bytes, *serviced; /* io{ServiceBytes,Serviced}Recursive */
    size_t n_service_bytes, n_serviced;
  } blkio;
  struct cgroup_hugetlb_stat *hugetlb;
  size_t n_hugetlb;
};
/* Fill *out (zeroed first) from whichever hierarchy holds each controller; a controller that is
 * not there leaves its part zero. Free with cgroup_stats_free. */
int cgroup_stats(struct cgroup *cg, struct cgroup_stats *out, struct cm_error **err);
void cgroup_stats_free(struct cgroup_stats *s);

/* OOM notifications: memory.events through inotify (v2), memory.oom_control through an eventfd
 * (v1). Poll the fd for POLLIN, then call cgroup_oom_watch_read. */
struct cgroup_oom_watch;
int cgroup_oom_watch_open(struct cgroup *cg, struct cgroup_oom_watch **out, struct cm_error **err);
int cgroup_oom_watch_fd(const struct cgroup_oom_watch *w);
/* How many OOM kills happened since the last call (>= 0); *gone when the cgroup was emptied
 * (v2 populated 0) or removed. -1 on error. Never blocks. */
int cgroup_oom_watch_read(struct cgroup_oom_watch *w, bool *gone, struct cm_error **err);
void cgroup_oom_watch_free(struct cgroup_oom_watch *w);

#endif
