/* linux.resources → cgroup v2 interface files. Every error names the config field and the file. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup/internal.h"
#include "util/cleanup.h"
#include "util/log.h"

#define F(x) "linux.resources." x

/* A clear error when the controller a field needs is not enabled for dir, instead of ENOENT on
 * the interface file. */
static int require(const char *dir, const char *controller, const char *field, struct cm_error **err) {
  if (cg_v2_has_controller(dir, controller))
    return 0;
  return cm_error_set(err, ENOTSUP, "%s: the %s controller is not available in %s (see cgroup.controllers)", field,
                      controller, dir);
}

/* -1 → "max", else the number. */
static void limit_str(char buf[32], int64_t v) {
  if (v < 0)
    snprintf(buf, 32, "max");
  else
    snprintf(buf, 32, "%" PRId64, v);
}

/* OCI swap is memory+swap; cgroup2's memory.swap.max is swap alone. */
static int swap_v2_value(const struct spec_memory *m, int64_t *out, struct cm_error **err) {
  int64_t swap = m->swap.value;
  int64_t limit = m->limit.set ? m->limit.value : 0;
  if (swap == -1) {
    *out = -1;
    return 0;
  }
  if (limit <= 0)
    return cm_error_set(err, EINVAL, F("memory.swap") ": %" PRId64 " needs a memory limit (memory.limit)", swap);
  if (swap < limit)
    return cm_error_set(err, EINVAL,
                        F("memory.swap") ": %" PRId64 " is memory+swap and must be >= memory.limit (%" PRId64 ")",
                        swap, limit);
  *out = swap - limit;
  return 0;
}

int cg_v2_apply_memory(const char *dir, const struct spec_memory *m, struct cm_error **err) {
  char buf[32];
  bool swap_set = m->swap.set && m->swap.value != 0; /* 0 means "not set", as runc reads it */
  bool limit_unlimited_no_swap = m->limit.set && m->limit.value == -1 && !swap_set;
  if (!m->limit.set && !m->reservation.set && !swap_set && !(m->has_disable_oom_killer && m->disable_oom_killer) &&
      !m->swappiness.set && !m->kernel.set && !m->kernel_tcp.set)
    return 0;
  if (require(dir, "memory", F("memory"), err) < 0)
    return -1;
  if (m->has_disable_oom_killer && m->disable_oom_killer)
    return cm_error_set(err, ENOTSUP, F("memory.disableOOMKiller") ": not supported on cgroup v2");
  if (m->swappiness.set)
    cm_warn("linux.resources.memory.swappiness: cgroup v2 has no per-cgroup swappiness; ignored");
  if (m->kernel.set || m->kernel_tcp.set)
    cm_debug("linux.resources.memory.kernel/kernelTCP: deprecated and not in cgroup v2; ignored");

  if (m->limit.set) {
    if (m->has_check_before_update && m->check_before_update && m->limit.value >= 0) {
      cleanup_free char *current = cg_read(dir, "memory.current", NULL);
      if (current != NULL && strtoll(current, NULL, 10) > m->limit.value)
        return cm_error_set(err, EBUSY,
                            F("memory.limit") ": %" PRId64 " is below the current usage %lld (checkBeforeUpdate)",
                            m->limit.value, strtoll(current, NULL, 10));
    }
    limit_str(buf, m->limit.value);
    if (cg_write(dir, "memory.max", buf, F("memory.limit"), err) < 0)
      return -1;
  }
  if (m->reservation.set) {
    limit_str(buf, m->reservation.value);
    if (cg_write(dir, "memory.low", buf, F("memory.reservation"), err) < 0)
      return -1;
  }
  if (swap_set || limit_unlimited_no_swap) {
    int64_t swap = -1;
    if (swap_set && swap_v2_value(m, &swap, err) < 0)
      return -1;
    limit_str(buf, swap);
    if (!cg_file_exists(dir, "memory.swap.max")) {
      if (swap_set && swap != -1)
        return cm_error_set(err, ENOTSUP, F("memory.swap") ": %s/memory.swap.max does not exist (swap accounting off)",
                            dir);
    } else if (cg_write(dir, "memory.swap.max", buf, F("memory.swap"), err) < 0) {
      return -1;
    }
  }
  return 0;
}

/* cpu.shares (2..262144, default 1024) → cpu.weight (1..10000, default 100). */
uint64_t cg_cpu_shares_to_weight(uint64_t shares) {
  if (shares < 2)
    shares = 2;
  if (shares > 262144)
    shares = 262144;
  return 1 + ((shares - 2) * 9999) / 262142;
}

int cg_v2_apply_cpu(const char *dir, const struct spec_cpu *c, struct cm_error **err) {
  bool rt_runtime = c->realtime_runtime.set && c->realtime_runtime.value != 0;
  if (rt_runtime || (c->realtime_period.set && c->realtime_period.value != 0))
    return cm_error_set(err, ENOTSUP, F("cpu.%s") ": realtime scheduling limits are not supported on cgroup v2",
                        rt_runtime ? "realtimeRuntime" : "realtimePeriod");
  bool any = (c->shares.set && c->shares.value != 0) || c->quota.set || c->period.set || c->burst.set || c->idle.set;
  if (!any)
    return 0;
  if (require(dir, "cpu", F("cpu"), err) < 0)
    return -1;
  if (c->shares.set && c->shares.value != 0 &&
      cg_writef(dir, "cpu.weight", F("cpu.shares"), err, "%" PRIu64, cg_cpu_shares_to_weight(c->shares.value)) < 0)
    return -1;
  /* 0 means "leave it" (Docker's update sends every field, unset ones as 0), as with runc. */
  bool quota_set = c->quota.set && c->quota.value != 0;
  bool period_set = c->period.set && c->period.value != 0;
  if (quota_set || period_set) {
    /* Keep the half of "quota period" the config leaves out. */
    cleanup_free char *current = cg_read(dir, "cpu.max", err);
    if (current == NULL)
      return cm_error_prefix(err, F("cpu.quota"));
    char old_quota[32] = "max";
    unsigned long long old_period = 100000;
    sscanf(current, "%31s %llu", old_quota, &old_period);
    char quota[32];
    if (quota_set)
      limit_str(quota, c->quota.value);
    else
      snprintf(quota, sizeof(quota), "%s", old_quota);
    unsigned long long period = c->period.set && c->period.value != 0 ? (unsigned long long)c->period.value : old_period;
    char max[64];
    snprintf(max, sizeof(max), "%s %llu", quota, period);
    if (cg_write_cpu_quota(dir, "cpu.max", max, quota_set ? F("cpu.quota") : F("cpu.period"), c, "cpu.max.burst",
                           err) < 0)
      return -1;
  }
  if (cg_write_cpu_burst(dir, c, "cpu.max.burst", err) < 0)
    return -1;
  if (c->idle.set && cg_writef(dir, "cpu.idle", F("cpu.idle"), err, "%" PRId64, c->idle.value) < 0)
    return -1;
  return 0;
}

int cg_v2_apply_cpuset(const char *dir, const struct spec_cpu *c, struct cm_error **err) {
  bool cpus = c->cpus != NULL && c->cpus[0] != '\0', mems = c->mems != NULL && c->mems[0] != '\0';
  if (!cpus && !mems)
    return 0;
  if (require(dir, "cpuset", cpus ? F("cpu.cpus") : F("cpu.mems"), err) < 0)
    return -1;
  if (cpus && cg_write(dir, "cpuset.cpus", c->cpus, F("cpu.cpus"), err) < 0)
    return -1;
  if (mems && cg_write(dir, "cpuset.mems", c->mems, F("cpu.mems"), err) < 0)
    return -1;
  return 0;
}

int cg_v2_apply_pids(const char *dir, int64_t limit, struct cm_error **err) {
  if (require(dir, "pids", F("pids.limit"), err) < 0)
    return -1;
  char buf[32];
  limit_str(buf, limit < 0 ? -1 : limit);
  return cg_write(dir, "pids.max", buf, F("pids.limit"), err);
}

/* blkio weight (10..1000) → io.weight (1..10000). */
uint64_t cg_blkio_to_io_weight(uint64_t w) {
  if (w < 10)
    w = 10;
  if (w > 1000)
    w = 1000;
  return 1 + ((w - 10) * 9999) / 990;
}

static int write_throttle(const char *dir, const struct spec_throttle_device *t, size_t n, const char *key,
                          const char *field, struct cm_error **err) {
  for (size_t i = 0; i < n; i++) {
    if (cg_writef(dir, "io.max", field, err, "%" PRId64 ":%" PRId64 " %s=%" PRIu64, t[i].major, t[i].minor, key,
                  t[i].rate) < 0)
      return -1;
  }
  return 0;
}

int cg_v2_apply_io(const char *dir, const struct spec_blockio *b, struct cm_error **err) {
  bool any = b->has_weight || b->n_weight_devices || b->n_throttle_read_bps || b->n_throttle_write_bps ||
             b->n_throttle_read_iops || b->n_throttle_write_iops;
  if (b->has_leaf_weight)
    cm_warn("linux.resources.blockIO.leafWeight: not supported on cgroup v2; ignored");
  if (!any)
    return 0;
  if (require(dir, "io", F("blockIO"), err) < 0)
    return -1;
  /* BFQ takes the v1 scale directly; io.weight (other schedulers) needs conversion. */
  bool bfq = cg_file_exists(dir, "io.bfq.weight");
  if (b->has_weight && b->weight != 0) {
    int r = bfq ? cg_writef(dir, "io.bfq.weight", F("blockIO.weight"), err, "%u", b->weight)
                : cg_writef(dir, "io.weight", F("blockIO.weight"), err, "default %" PRIu64, cg_blkio_to_io_weight(b->weight));
    if (r < 0)
      return -1;
  }
  for (size_t i = 0; i < b->n_weight_devices; i++) {
    const struct spec_weight_device *d = &b->weight_devices[i];
    if (d->has_leaf_weight)
      cm_warn("linux.resources.blockIO.weightDevice[%zu].leafWeight: not supported on cgroup v2; ignored", i);
    if (!d->has_weight)
      continue;
    int r = bfq ? cg_writef(dir, "io.bfq.weight", F("blockIO.weightDevice"), err, "%" PRId64 ":%" PRId64 " %u",
                            d->major, d->minor, d->weight)
                : cg_writef(dir, "io.weight", F("blockIO.weightDevice"), err, "%" PRId64 ":%" PRId64 " %" PRIu64,
                            d->major, d->minor, cg_blkio_to_io_weight(d->weight));
    if (r < 0)
      return -1;
  }
  if (write_throttle(dir, b->throttle_read_bps, b->n_throttle_read_bps, "rbps", F("blockIO.throttleReadBpsDevice"),
                     err) < 0 ||
      write_throttle(dir, b->throttle_write_bps, b->n_throttle_write_bps, "wbps", F("blockIO.throttleWriteBpsDevice"),
                     err) < 0 ||
      write_throttle(dir, b->throttle_read_iops, b->n_throttle_read_iops, "riops",
                     F("blockIO.throttleReadIOPSDevice"), err) < 0 ||
      write_throttle(dir, b->throttle_write_iops, b->n_throttle_write_iops, "wiops",
                     F("blockIO.throttleWriteIOPSDevice"), err) < 0)
    return -1;
  return 0;
}

int cg_v2_apply_hugetlb(const char *dir, const struct spec_resources *r, struct cm_error **err) {
  if (r->n_hugepage_limits == 0)
    return 0;
  if (require(dir, "hugetlb", F("hugepageLimits"), err) < 0)
    return -1;
  for (size_t i = 0; i < r->n_hugepage_limits; i++) {
    const struct spec_hugepage_limit *h = &r->hugepage_limits[i];
    cleanup_free char *file = NULL, *rsvd = NULL;
    if (asprintf(&file, "hugetlb.%s.max", h->page_size) < 0 || asprintf(&rsvd, "hugetlb.%s.rsvd.max", h->page_size) < 0)
      abort();
    if (!cg_file_exists(dir, file))
      return cm_error_set(err, EINVAL, F("hugepageLimits[%zu].pageSize") ": no %s in %s (unknown page size \"%s\")",
                          i, file, dir, h->page_size);
    cleanup_free char *field = NULL;
    if (asprintf(&field, F("hugepageLimits[%zu].limit"), i) < 0)
      abort();
    if (cg_writef(dir, file, field, err, "%" PRIu64, h->limit) < 0)
      return -1;
    /* Reservations count too; limit them the same so a reservation cannot dodge the limit. */
    if (cg_file_exists(dir, rsvd) && cg_writef(dir, rsvd, field, err, "%" PRIu64, h->limit) < 0)
      return -1;
  }
  return 0;
}

int cg_v2_apply_rdma(const char *dir, const struct spec_resources *r, struct cm_error **err) {
  if (r->n_rdma == 0)
    return 0;
  if (require(dir, "rdma", F("rdma"), err) < 0)
    return -1;
  return cg_write_rdma_max(dir, r, err);
}

/* rdma.max has the same lines in v1 and v2: "DEVICE hca_handle=N hca_object=N". */
int cg_write_rdma_max(const char *dir, const struct spec_resources *r, struct cm_error **err) {
  for (size_t i = 0; i < r->n_rdma; i++) {
    const struct spec_rdma *d = &r->rdma[i];
    if (!d->hca_handles.set && !d->hca_objects.set)
      continue;
    char handles[48] = "", objects[48] = "";
    if (d->hca_handles.set)
      snprintf(handles, sizeof(handles), " hca_handle=%" PRIu64, d->hca_handles.value);
    if (d->hca_objects.set)
      snprintf(objects, sizeof(objects), " hca_object=%" PRIu64, d->hca_objects.value);
    if (cg_writef(dir, "rdma.max", F("rdma"), err, "%s%s%s", d->device, handles, objects) < 0)
      return -1;
  }
  return 0;
}

int cg_v2_apply_unified(const char *dir, const struct spec_kv_list *u, struct cm_error **err) {
  for (size_t i = 0; i < u->count; i++) {
    const char *key = u->items[i].key;
    /* The key is a file name in our cgroup directory: no '/' (escaping it), no leading '.'
     * ("..", hidden names), and it must look like "<controller>.<knob>". */
    const char *dot = strchr(key, '.');
    if (key[0] == '\0' || key[0] == '.' || strchr(key, '/') != NULL || dot == NULL || dot[1] == '\0')
      return cm_error_set(err, EINVAL, F("unified") ".\"%s\": not a cgroup interface file name", key);
    cleanup_free char *controller = strndup(key, (size_t)(dot - key));
    if (controller == NULL)
      abort();
    if (strcmp(controller, "cgroup") != 0 && !cg_v2_has_controller(dir, controller))
      return cm_error_set(err, ENOTSUP, F("unified") ".\"%s\": the %s controller is not available in %s", key,
                          controller, dir);
    cleanup_free char *field = NULL;
    if (asprintf(&field, F("unified") ".\"%s\"", key) < 0)
      abort();
    if (cg_write(dir, key, u->items[i].value, field, err) < 0)
      return -1;
  }
  return 0;
}

int cg_v2_apply_resources(const char *dir, const struct spec_resources *r, const struct spec_device_rule *dev_rules,
                          size_t n_dev_rules, struct cm_error **err) {
  if (dev_rules != NULL && cg_bpf_devices_apply(dir, dev_rules, n_dev_rules, err) < 0)
    return cm_error_prefix(err, F("devices"));
  if (r->has_network && (r->has_class_id || r->n_net_priorities > 0))
    return cm_error_set(err, ENOTSUP, F("network") ": net_cls/net_prio are cgroup v1 controllers, not on cgroup v2");
  if (cg_v2_apply_memory(dir, &r->memory, err) < 0 || cg_v2_apply_cpu(dir, &r->cpu, err) < 0 ||
      cg_v2_apply_cpuset(dir, &r->cpu, err) < 0 || (cg_pids_set(r) && cg_v2_apply_pids(dir, r->pids_limit, err) < 0) ||
      cg_v2_apply_io(dir, &r->block_io, err) < 0 || cg_v2_apply_hugetlb(dir, r, err) < 0 ||
      cg_v2_apply_rdma(dir, r, err) < 0 || cg_v2_apply_unified(dir, &r->unified, err) < 0)
    return -1;
  return 0;
}
