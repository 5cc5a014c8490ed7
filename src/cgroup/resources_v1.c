/* linux.resources → cgroup v1 files (legacy and hybrid hosts). In hybrid mode a controller that
 * lives in the cgroup2 hierarchy instead (hugetlb on this machine) is written there. Every error
 * names the config field and the file. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup/internal.h"
#include "util/cleanup.h"
#include "util/log.h"

#define F(x) "linux.resources." x

/* Where a section's controller lives: its v1 hierarchy (*v2 = false), else in hybrid mode the
 * cgroup2 directory when the controller is there (*v2 = true). NULL + error otherwise. */
static const char *controller_dir(const struct cgroup *cg, const char *v1_name, const char *v2_name,
                                  const char *field, bool *v2, struct cm_error **err) {
  struct cgroup_v1_hierarchy *h = cg_v1_find(cg, v1_name);
  *v2 = false;
  if (h != NULL)
    return h->dir;
  if (cg->v2_dir != NULL && v2_name != NULL && cg_v2_has_controller(cg->v2_dir, v2_name)) {
    *v2 = true;
    return cg->v2_dir;
  }
  cm_error_set(err, ENOTSUP, "%s: the %s controller is not mounted (cgroup v1%s)", field, v1_name,
               cg->v2_dir != NULL ? ", and not in the cgroup2 hierarchy either" : "");
  return NULL;
}

static void v1_limit(char buf[32], int64_t v) {
  snprintf(buf, 32, "%" PRId64, v < 0 ? (int64_t)-1 : v);
}

/* memory.limit_in_bytes must stay <= memory.memsw.limit_in_bytes at every step: write memsw first
 * when it grows, the limit first when memsw shrinks below the current limit. */
static int v1_memory_limits(const char *dir, const struct spec_memory *m, struct cm_error **err) {
  char limit[32], swap[32];
  bool swap_set = m->swap.set && m->swap.value != 0;
  bool has_memsw = cg_file_exists(dir, "memory.memsw.limit_in_bytes");
  if (m->limit.set)
    v1_limit(limit, m->limit.value);
  if (swap_set) {
    if (m->swap.value >= 0 && m->limit.set && m->limit.value >= 0 && m->swap.value < m->limit.value)
      return cm_error_set(err, EINVAL,
                          F("memory.swap") ": %" PRId64 " is memory+swap and must be >= memory.limit (%" PRId64 ")",
                          m->swap.value, m->limit.value);
    if (!has_memsw) {
      if (m->swap.value != -1)
        return cm_error_set(err, ENOTSUP,
                            F("memory.swap") ": %s/memory.memsw.limit_in_bytes does not exist (swap accounting off)",
                            dir);
      swap_set = false;
    }
    v1_limit(swap, m->swap.value);
  } else if (m->limit.set && m->limit.value < 0 && has_memsw) {
    /* An unlimited memory limit with no swap setting means both unlimited (as runc does). */
    swap_set = true;
    v1_limit(swap, -1);
  }
  if (!swap_set)
    return m->limit.set ? cg_write(dir, "memory.limit_in_bytes", limit, F("memory.limit"), err) : 0;
  struct cm_error *first = NULL;
  if (cg_write(dir, "memory.memsw.limit_in_bytes", swap, F("memory.swap"), &first) == 0) {
    return m->limit.set ? cg_write(dir, "memory.limit_in_bytes", limit, F("memory.limit"), err) : 0;
  }
  if (first->errnum != EINVAL || !m->limit.set) {
    return cg_pass_error(err, first);
  }
  cm_error_free(first);
  if (cg_write(dir, "memory.limit_in_bytes", limit, F("memory.limit"), err) < 0)
    return -1;
  return cg_write(dir, "memory.memsw.limit_in_bytes", swap, F("memory.swap"), err);
}

static bool memory_set(const struct spec_memory *m) {
  return m->limit.set || m->reservation.set || (m->swap.set && m->swap.value != 0) || m->swappiness.set ||
         m->has_disable_oom_killer || m->kernel_tcp.set;
}

static int v1_memory(const char *dir, const struct spec_memory *m, struct cm_error **err) {
  if (m->kernel.set)
    cm_debug("linux.resources.memory.kernel: deprecated, ignored");
  if (m->has_use_hierarchy)
    cm_debug("linux.resources.memory.useHierarchy: always on in current kernels, ignored");
  if (m->limit.set && m->has_check_before_update && m->check_before_update && m->limit.value >= 0) {
    cleanup_free char *usage = cg_read(dir, "memory.usage_in_bytes", NULL);
    if (usage != NULL && strtoll(usage, NULL, 10) > m->limit.value)
      return cm_error_set(err, EBUSY,
                          F("memory.limit") ": %" PRId64 " is below the current usage %lld (checkBeforeUpdate)",
                          m->limit.value, strtoll(usage, NULL, 10));
  }
  if (v1_memory_limits(dir, m, err) < 0)
    return -1;
  char buf[32];
  if (m->reservation.set) {
    v1_limit(buf, m->reservation.value);
    if (cg_write(dir, "memory.soft_limit_in_bytes", buf, F("memory.reservation"), err) < 0)
      return -1;
  }
  if (m->kernel_tcp.set) {
    v1_limit(buf, m->kernel_tcp.value);
    if (cg_write(dir, "memory.kmem.tcp.limit_in_bytes", buf, F("memory.kernelTCP"), err) < 0)
      return -1;
  }
  if (m->swappiness.set) {
    if (m->swappiness.value > 100)
      return cm_error_set(err, EINVAL, F("memory.swappiness") ": %" PRIu64 " is not in 0..100", m->swappiness.value);
    if (cg_writef(dir, "memory.swappiness", F("memory.swappiness"), err, "%" PRIu64, m->swappiness.value) < 0)
      return -1;
  }
  if (m->has_disable_oom_killer &&
      cg_write(dir, "memory.oom_control", m->disable_oom_killer ? "1" : "0", F("memory.disableOOMKiller"), err) < 0)
    return -1;
  return 0;
}

static bool cpu_set(const struct spec_cpu *c) {
  return (c->shares.set && c->shares.value != 0) || c->quota.set || c->period.set || c->burst.set || c->idle.set ||
         c->realtime_runtime.set || c->realtime_period.set;
}

static int v1_cpu(const char *dir, const struct spec_cpu *c, struct cm_error **err) {
  if (c->shares.set && c->shares.value != 0 &&
      cg_writef(dir, "cpu.shares", F("cpu.shares"), err, "%" PRIu64, c->shares.value) < 0)
    return -1;
  /* 0 means "leave it" (Docker's update sends every field, unset ones as 0), as with runc. */
  bool quota_set = c->quota.set && c->quota.value != 0;
  char quota[32];
  if (quota_set)
    v1_limit(quota, c->quota.value);
  if (c->period.set && c->period.value != 0) {
    struct cm_error *first = NULL;
    if (cg_writef(dir, "cpu.cfs_period_us", F("cpu.period"), &first, "%" PRIu64, c->period.value) < 0) {
      /* The old quota may not fit the new period: quota first, then the period again. */
      if (first->errnum != EINVAL || !quota_set) {
        return cg_pass_error(err, first);
      }
      cm_error_free(first);
      if (cg_write_cpu_quota(dir, "cpu.cfs_quota_us", quota, F("cpu.quota"), c, "cpu.cfs_burst_us", err) < 0 ||
          cg_writef(dir, "cpu.cfs_period_us", F("cpu.period"), err, "%" PRIu64, c->period.value) < 0)
        return -1;
    }
  }
  if (quota_set &&
      cg_write_cpu_quota(dir, "cpu.cfs_quota_us", quota, F("cpu.quota"), c, "cpu.cfs_burst_us", err) < 0)
    return -1;
  if (cg_write_cpu_burst(dir, c, "cpu.cfs_burst_us", err) < 0)
    return -1;
  if (c->realtime_period.set && c->realtime_period.value != 0 &&
      cg_writef(dir, "cpu.rt_period_us", F("cpu.realtimePeriod"), err, "%" PRIu64, c->realtime_period.value) < 0)
    return -1;
  if (c->realtime_runtime.set && c->realtime_runtime.value != 0 &&
      cg_writef(dir, "cpu.rt_runtime_us", F("cpu.realtimeRuntime"), err, "%" PRId64, c->realtime_runtime.value) < 0)
    return -1;
  if (c->idle.set) {
    if (!cg_file_exists(dir, "cpu.idle"))
      return cm_error_set(err, ENOTSUP, F("cpu.idle") ": %s/cpu.idle does not exist (needs cgroup v2 or a newer kernel)",
                          dir);
    if (cg_writef(dir, "cpu.idle", F("cpu.idle"), err, "%" PRId64, c->idle.value) < 0)
      return -1;
  }
  return 0;
}

static int v1_cpuset(const char *dir, const struct spec_cpu *c, struct cm_error **err) {
  if (c->cpus != NULL && c->cpus[0] != '\0' && cg_write(dir, "cpuset.cpus", c->cpus, F("cpu.cpus"), err) < 0)
    return -1;
  if (c->mems != NULL && c->mems[0] != '\0' && cg_write(dir, "cpuset.mems", c->mems, F("cpu.mems"), err) < 0)
    return -1;
  return 0;
}

static bool blkio_set(const struct spec_blockio *b) {
  return b->has_weight || b->has_leaf_weight || b->n_weight_devices || b->n_throttle_read_bps ||
         b->n_throttle_write_bps || b->n_throttle_read_iops || b->n_throttle_write_iops;
}

static int v1_throttle(const char *dir, const char *file, const struct spec_throttle_device *t, size_t n,
                       const char *field, struct cm_error **err) {
  for (size_t i = 0; i < n; i++)
    if (cg_writef(dir, file, field, err, "%" PRId64 ":%" PRId64 " %" PRIu64, t[i].major, t[i].minor, t[i].rate) < 0)
      return -1;
  return 0;
}

static int v1_blkio(const char *dir, const struct spec_blockio *b, struct cm_error **err) {
  /* Without CFQ (gone since 5.0) only BFQ's files exist. */
  bool bfq = !cg_file_exists(dir, "blkio.weight") && cg_file_exists(dir, "blkio.bfq.weight");
  const char *weight_file = bfq ? "blkio.bfq.weight" : "blkio.weight";
  const char *weight_device_file = bfq ? "blkio.bfq.weight_device" : "blkio.weight_device";
  if (b->has_weight && b->weight != 0 && cg_writef(dir, weight_file, F("blockIO.weight"), err, "%u", b->weight) < 0)
    return -1;
  if (b->has_leaf_weight) {
    if (!cg_file_exists(dir, "blkio.leaf_weight"))
      cm_warn("linux.resources.blockIO.leafWeight: %s/blkio.leaf_weight does not exist; ignored", dir);
    else if (cg_writef(dir, "blkio.leaf_weight", F("blockIO.leafWeight"), err, "%u", b->leaf_weight) < 0)
      return -1;
  }
  for (size_t i = 0; i < b->n_weight_devices; i++) {
    const struct spec_weight_device *d = &b->weight_devices[i];
    if (d->has_weight && cg_writef(dir, weight_device_file, F("blockIO.weightDevice"), err,
                                   "%" PRId64 ":%" PRId64 " %u", d->major, d->minor, d->weight) < 0)
      return -1;
    if (d->has_leaf_weight) {
      if (!cg_file_exists(dir, "blkio.leaf_weight_device"))
        cm_warn("linux.resources.blockIO.weightDevice[%zu].leafWeight: no blkio.leaf_weight_device; ignored", i);
      else if (cg_writef(dir, "blkio.leaf_weight_device", F("blockIO.weightDevice"), err,
                         "%" PRId64 ":%" PRId64 " %u", d->major, d->minor, d->leaf_weight) < 0)
        return -1;
    }
  }
  if (v1_throttle(dir, "blkio.throttle.read_bps_device", b->throttle_read_bps, b->n_throttle_read_bps,
                  F("blockIO.throttleReadBpsDevice"), err) < 0 ||
      v1_throttle(dir, "blkio.throttle.write_bps_device", b->throttle_write_bps, b->n_throttle_write_bps,
                  F("blockIO.throttleWriteBpsDevice"), err) < 0 ||
      v1_throttle(dir, "blkio.throttle.read_iops_device", b->throttle_read_iops, b->n_throttle_read_iops,
                  F("blockIO.throttleReadIOPSDevice"), err) < 0 ||
      v1_throttle(dir, "blkio.throttle.write_iops_device", b->throttle_write_iops, b->n_throttle_write_iops,
                  F("blockIO.throttleWriteIOPSDevice"), err) < 0)
    return -1;
  return 0;
}

static int v1_hugetlb(const char *dir, const struct spec_resources *r, struct cm_error **err) {
  for (size_t i = 0; i < r->n_hugepage_limits; i++) {
    const struct spec_hugepage_limit *h = &r->hugepage_limits[i];
    cleanup_free char *file = NULL, *field = NULL;
    if (asprintf(&file, "hugetlb.%s.limit_in_bytes", h->page_size) < 0 ||
        asprintf(&field, F("hugepageLimits[%zu].limit"), i) < 0)
      abort();
    if (!cg_file_exists(dir, file))
      return cm_error_set(err, EINVAL, F("hugepageLimits[%zu].pageSize") ": no %s in %s (unknown page size \"%s\")",
                          i, file, dir, h->page_size);
    if (cg_writef(dir, file, field, err, "%" PRIu64, h->limit) < 0)
      return -1;
  }
  return 0;
}

int cg_v1_apply_devices(const char *dir, const struct spec_device_rule *rules, size_t n, struct cm_error **err) {
  /* Start from deny-all so only what the rules allow is reachable (no host disks, no /dev/mem). */
  if (cg_write(dir, "devices.deny", "a", F("devices"), err) < 0)
    return -1;
  for (size_t i = 0; i < n; i++) {
    const struct spec_device_rule *d = &rules[i];
    char rule[64], major[24], minor[24];
    const char *access = d->access[0] ? d->access : "rwm";
    if (d->type == 'a') {
      snprintf(rule, sizeof(rule), "a");
    } else {
      if (d->major < 0)
        snprintf(major, sizeof(major), "*");
      else
        snprintf(major, sizeof(major), "%" PRId64, d->major);
      if (d->minor < 0)
        snprintf(minor, sizeof(minor), "*");
      else
        snprintf(minor, sizeof(minor), "%" PRId64, d->minor);
      snprintf(rule, sizeof(rule), "%c %s:%s %s", d->type, major, minor, access);
    }
    if (cg_write(dir, d->allow ? "devices.allow" : "devices.deny", rule, F("devices"), err) < 0)
      return cm_error_prefix(err, "rule %zu", i);
  }
  return 0;
}

int cg_v1_apply_resources(struct cgroup *cg, const struct spec_resources *r, const struct spec_device_rule *dev_rules,
                          size_t n_dev_rules, struct cm_error **err) {
  const char *dir;
  bool v2;
  if (dev_rules != NULL) {
    struct cgroup_v1_hierarchy *h = cg_v1_find(cg, "devices");
    if (h != NULL) {
      if (cg_v1_apply_devices(h->dir, dev_rules, n_dev_rules, err) < 0)
        return -1;
    } else if (cg->v2_dir != NULL) {
      /* Hybrid without a v1 devices controller: the cgroup2 BPF filter applies all the same. */
      if (cg_bpf_devices_apply(cg->v2_dir, dev_rules, n_dev_rules, err) < 0)
        return cm_error_prefix(err, F("devices"));
    } else if (r->n_devices > 0) {
      return cm_error_set(err, ENOTSUP, F("devices") ": the devices controller is not mounted");
    }
  }
  if (memory_set(&r->memory)) {
    if ((dir = controller_dir(cg, "memory", "memory", F("memory"), &v2, err)) == NULL)
      return -1;
    if ((v2 ? cg_v2_apply_memory(dir, &r->memory, err) : v1_memory(dir, &r->memory, err)) < 0)
      return -1;
  }
  if (cpu_set(&r->cpu)) {
    if ((dir = controller_dir(cg, "cpu", "cpu", F("cpu"), &v2, err)) == NULL)
      return -1;
    if ((v2 ? cg_v2_apply_cpu(dir, &r->cpu, err) : v1_cpu(dir, &r->cpu, err)) < 0)
      return -1;
  }
  if ((r->cpu.cpus && r->cpu.cpus[0]) || (r->cpu.mems && r->cpu.mems[0])) {
    if ((dir = controller_dir(cg, "cpuset", "cpuset", F("cpu.cpus/mems"), &v2, err)) == NULL)
      return -1;
    if ((v2 ? cg_v2_apply_cpuset(dir, &r->cpu, err) : v1_cpuset(dir, &r->cpu, err)) < 0)
      return -1;
  }
  if (cg_pids_set(r)) {
    if ((dir = controller_dir(cg, "pids", "pids", F("pids"), &v2, err)) == NULL)
      return -1;
    char limit[32];
    if (r->pids_limit > 0)
      snprintf(limit, sizeof(limit), "%" PRId64, r->pids_limit);
    else
      snprintf(limit, sizeof(limit), "max");
    if ((v2 ? cg_v2_apply_pids(dir, r->pids_limit, err) : cg_write(dir, "pids.max", limit, F("pids.limit"), err)) < 0)
      return -1;
  }
  if (blkio_set(&r->block_io)) {
    if ((dir = controller_dir(cg, "blkio", "io", F("blockIO"), &v2, err)) == NULL)
      return -1;
    if ((v2 ? cg_v2_apply_io(dir, &r->block_io, err) : v1_blkio(dir, &r->block_io, err)) < 0)
      return -1;
  }
  if (r->n_hugepage_limits > 0) {
    if ((dir = controller_dir(cg, "hugetlb", "hugetlb", F("hugepageLimits"), &v2, err)) == NULL)
      return -1;
    if ((v2 ? cg_v2_apply_hugetlb(dir, r, err) : v1_hugetlb(dir, r, err)) < 0)
      return -1;
  }
  if (r->n_rdma > 0) {
    if ((dir = controller_dir(cg, "rdma", "rdma", F("rdma"), &v2, err)) == NULL)
      return -1;
    if ((v2 ? cg_v2_apply_rdma(dir, r, err) : cg_write_rdma_max(dir, r, err)) < 0)
      return -1;
  }
  if (r->has_network && r->has_class_id) {
    if ((dir = controller_dir(cg, "net_cls", NULL, F("network.classID"), &v2, err)) == NULL ||
        cg_writef(dir, "net_cls.classid", F("network.classID"), err, "%u", r->class_id) < 0)
      return -1;
  }
  if (r->has_network && r->n_net_priorities > 0) {
    if ((dir = controller_dir(cg, "net_prio", NULL, F("network.priorities"), &v2, err)) == NULL)
      return -1;
    for (size_t i = 0; i < r->n_net_priorities; i++)
      if (cg_writef(dir, "net_prio.ifpriomap", F("network.priorities"), err, "%s %u", r->net_priorities[i].name,
                    r->net_priorities[i].priority) < 0)
        return -1;
  }
  if (r->unified.count > 0) {
    /* The unified map is cgroup2's file names; a v1 host can only take the keys of controllers
     * that live in its cgroup2 hierarchy. */
    if (cg->v2_dir == NULL)
      return cm_error_set(err, ENOTSUP, F("unified") ".\"%s\": cgroup v2 settings are not supported on a cgroup v1 host",
                          r->unified.items[0].key);
    if (cg_v2_apply_unified(cg->v2_dir, &r->unified, err) < 0)
      return cm_error_prefix(err, "hybrid cgroup host");
  }
  return 0;
}
