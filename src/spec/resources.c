/* linux.resources: parsed and validated here, applied by cgroup/. Also `update --resources`. */
#include <stdlib.h>
#include <string.h>

#include "spec/json_util.h"
#include "util/cleanup.h"

/* Iterate a JSON array found at obj[key], with the path pointing at each element. */
#define FOR_EACH_ELEMENT(key, arr, i, elem, body)                                                            \
  do {                                                                                                       \
    yajl_val arr;                                                                                            \
    int r_ = jget_array(c, obj, key, &arr, err);                                                             \
    if (r_ < 0)                                                                                              \
      return -1;                                                                                             \
    if (r_ == 1) {                                                                                           \
      size_t mark_ = jpush_key(c, key);                                                                      \
      for (size_t i = 0; i < arr->u.array.len; i++) {                                                        \
        yajl_val elem = arr->u.array.values[i];                                                              \
        size_t m2_ = jpush_index(c, i);                                                                      \
        if (jval_object(c, elem, err) < 0)                                                                   \
          return -1;                                                                                         \
        body;                                                                                                \
        jpop(c, m2_);                                                                                        \
      }                                                                                                      \
      jpop(c, mark_);                                                                                        \
    }                                                                                                        \
  } while (0)

static size_t array_len(yajl_val obj, const char *key) {
  yajl_val v = jfind(obj, key);
  return YAJL_IS_ARRAY(v) ? v->u.array.len : 0;
}

static int parse_device_rule(struct jctx *c, yajl_val v, struct spec_device_rule *d, struct cm_error **err) {
  if (jrequire(c, v, "allow", err) < 0 || jget_bool(c, v, "allow", &d->allow, err) < 0)
    return -1;
  cleanup_free char *type = NULL;
  if (jget_string(c, v, "type", &type, err) < 0)
    return -1;
  d->type = 'a';
  if (type != NULL && type[0] != '\0') {
    if (strlen(type) != 1 || strchr("acb", type[0]) == NULL) {
      jpush_key(c, "type");
      return jerr(c, err, "unknown device type \"%s\" (expected a, c or b)", type);
    }
    d->type = type[0];
  }
  d->major = d->minor = -1;
  if (jget_i64(c, v, "major", -1, INT64_MAX, &d->major, err) < 0 ||
      jget_i64(c, v, "minor", -1, INT64_MAX, &d->minor, err) < 0)
    return -1;
  cleanup_free char *access = NULL;
  if (jget_string(c, v, "access", &access, err) < 0)
    return -1;
  /* Missing or empty access means all of "rwm", as in runc and crun. */
  if (access == NULL || access[0] == '\0') {
    strcpy(d->access, "rwm");
    return 0;
  }
  /* Letters other than r, w and m are ignored, as runc does (its tests and `update --resources`
   * callers send "rwa"); the kernel's rule format has only those three. */
  bool r = strchr(access, 'r') != NULL, w = strchr(access, 'w') != NULL, m = strchr(access, 'm') != NULL;
  if (!r && !w && !m) {
    /* A rule that names no access would allow or deny nothing (runc fails it at start). */
    jpush_key(c, "access");
    return jerr(c, err, "access \"%s\" names none of r, w and m (read, write, mknod)", access);
  }
  size_t n = 0;
  if (r)
    d->access[n++] = 'r';
  if (w)
    d->access[n++] = 'w';
  if (m)
    d->access[n++] = 'm';
  d->access[n] = '\0';
  return 0;
}

static int get_opt_i64(struct jctx *c, yajl_val obj, const char *key, int64_t min, struct spec_opt_i64 *o,
                       struct cm_error **err) {
  int r = jget_i64(c, obj, key, min, INT64_MAX, &o->value, err);
  o->set = r == 1;
  return r < 0 ? -1 : 0;
}

static int get_opt_u64(struct jctx *c, yajl_val obj, const char *key, uint64_t max, struct spec_opt_u64 *o,
                       struct cm_error **err) {
  int r = jget_u64(c, obj, key, max, &o->value, err);
  o->set = r == 1;
  return r < 0 ? -1 : 0;
}

static int get_flag(struct jctx *c, yajl_val obj, const char *key, bool *has, bool *value,
                    struct cm_error **err) {
  int r = jget_bool(c, obj, key, value, err);
  *has = r == 1;
  return r < 0 ? -1 : 0;
}

static int parse_memory(struct jctx *c, yajl_val obj, struct spec_memory *m, struct cm_error **err) {
  m->present = true;
  /* -1 means "unlimited" for the limits. */
  if (get_opt_i64(c, obj, "limit", -1, &m->limit, err) < 0 ||
      get_opt_i64(c, obj, "reservation", -1, &m->reservation, err) < 0 ||
      get_opt_i64(c, obj, "swap", -1, &m->swap, err) < 0 ||
      get_opt_i64(c, obj, "kernel", -1, &m->kernel, err) < 0 ||
      get_opt_i64(c, obj, "kernelTCP", -1, &m->kernel_tcp, err) < 0 ||
      get_opt_u64(c, obj, "swappiness", UINT64_MAX, &m->swappiness, err) < 0 ||
      get_flag(c, obj, "disableOOMKiller", &m->has_disable_oom_killer, &m->disable_oom_killer, err) < 0 ||
      get_flag(c, obj, "useHierarchy", &m->has_use_hierarchy, &m->use_hierarchy, err) < 0 ||
      get_flag(c, obj, "checkBeforeUpdate", &m->has_check_before_update, &m->check_before_update, err) < 0)
    return -1;
  /* Some tools write uint64(-1) for "unset", as runc accepts. */
  if (m->swappiness.set && m->swappiness.value == UINT64_MAX)
    m->swappiness.set = false;
  if (m->swappiness.set && m->swappiness.value > 100) {
    jpush_key(c, "swappiness");
    return jerr(c, err, "must be between 0 and 100");
  }
  return 0;
}

static int parse_cpu(struct jctx *c, yajl_val obj, struct spec_cpu *cpu, struct cm_error **err) {
  cpu->present = true;
  if (get_opt_u64(c, obj, "shares", UINT64_MAX, &cpu->shares, err) < 0 ||
      get_opt_i64(c, obj, "quota", INT64_MIN, &cpu->quota, err) < 0 ||
      get_opt_u64(c, obj, "burst", UINT64_MAX, &cpu->burst, err) < 0 ||
      get_opt_u64(c, obj, "period", UINT64_MAX, &cpu->period, err) < 0 ||
      get_opt_i64(c, obj, "realtimeRuntime", INT64_MIN, &cpu->realtime_runtime, err) < 0 ||
      get_opt_u64(c, obj, "realtimePeriod", UINT64_MAX, &cpu->realtime_period, err) < 0 ||
      jget_string(c, obj, "cpus", &cpu->cpus, err) < 0 || jget_string(c, obj, "mems", &cpu->mems, err) < 0 ||
      get_opt_i64(c, obj, "idle", INT64_MIN, &cpu->idle, err) < 0)
    return -1;
  return 0;
}

static int get_u16(struct jctx *c, yajl_val obj, const char *key, bool *has, uint16_t *out,
                   struct cm_error **err) {
  uint64_t n = 0;
  int r = jget_u64(c, obj, key, UINT16_MAX, &n, err);
  if (r < 0)
    return -1;
  *has = r == 1;
  *out = (uint16_t)n;
  return 0;
}

static int get_major_minor(struct jctx *c, yajl_val obj, int64_t *major, int64_t *minor,
                           struct cm_error **err) {
  if (jrequire(c, obj, "major", err) < 0 || jget_i64(c, obj, "major", 0, INT64_MAX, major, err) < 0 ||
      jrequire(c, obj, "minor", err) < 0 || jget_i64(c, obj, "minor", 0, INT64_MAX, minor, err) < 0)
    return -1;
  return 0;
}

static int parse_throttle(struct jctx *c, yajl_val obj, const char *key, struct spec_throttle_device **out,
                          size_t *n, struct cm_error **err) {
  size_t len = array_len(obj, key);
  if (len > 0)
    *out = xcalloc(len, sizeof(**out));
  FOR_EACH_ELEMENT(key, arr, i, elem, {
    struct spec_throttle_device *t = &(*out)[i];
    *n = i + 1;
    if (get_major_minor(c, elem, &t->major, &t->minor, err) < 0 || jrequire(c, elem, "rate", err) < 0 ||
        jget_u64(c, elem, "rate", UINT64_MAX, &t->rate, err) < 0)
      return -1;
  });
  return 0;
}

static int parse_block_io(struct jctx *c, yajl_val obj, struct spec_blockio *b, struct cm_error **err) {
  b->present = true;
  if (get_u16(c, obj, "weight", &b->has_weight, &b->weight, err) < 0 ||
      get_u16(c, obj, "leafWeight", &b->has_leaf_weight, &b->leaf_weight, err) < 0)
    return -1;
  size_t len = array_len(obj, "weightDevice");
  if (len > 0)
    b->weight_devices = xcalloc(len, sizeof(*b->weight_devices));
  FOR_EACH_ELEMENT("weightDevice", arr, i, elem, {
    struct spec_weight_device *w = &b->weight_devices[i];
    b->n_weight_devices = i + 1;
    if (get_major_minor(c, elem, &w->major, &w->minor, err) < 0 ||
        get_u16(c, elem, "weight", &w->has_weight, &w->weight, err) < 0 ||
        get_u16(c, elem, "leafWeight", &w->has_leaf_weight, &w->leaf_weight, err) < 0)
      return -1;
  });
  if (parse_throttle(c, obj, "throttleReadBpsDevice", &b->throttle_read_bps, &b->n_throttle_read_bps, err) <
          0 ||
      parse_throttle(c, obj, "throttleWriteBpsDevice", &b->throttle_write_bps, &b->n_throttle_write_bps,
                     err) < 0 ||
      parse_throttle(c, obj, "throttleReadIOPSDevice", &b->throttle_read_iops, &b->n_throttle_read_iops,
                     err) < 0 ||
      parse_throttle(c, obj, "throttleWriteIOPSDevice", &b->throttle_write_iops, &b->n_throttle_write_iops,
                     err) < 0)
    return -1;
  return 0;
}

static int parse_network(struct jctx *c, yajl_val obj, struct spec_resources *r, struct cm_error **err) {
  r->has_network = true;
  int got = jget_u32(c, obj, "classID", &r->class_id, err);
  if (got < 0)
    return -1;
  r->has_class_id = got == 1;
  size_t len = array_len(obj, "priorities");
  if (len > 0)
    r->net_priorities = xcalloc(len, sizeof(*r->net_priorities));
  FOR_EACH_ELEMENT("priorities", arr, i, elem, {
    struct spec_net_priority *p = &r->net_priorities[i];
    r->n_net_priorities = i + 1;
    if (jrequire(c, elem, "name", err) < 0 || jget_string(c, elem, "name", &p->name, err) < 0 ||
        jrequire(c, elem, "priority", err) < 0 || jget_u32(c, elem, "priority", &p->priority, err) < 0)
      return -1;
  });
  return 0;
}

static int parse_rdma(struct jctx *c, yajl_val obj, struct spec_resources *r, struct cm_error **err) {
  size_t n = obj->u.object.len;
  if (n == 0)
    return 0;
  r->rdma = xcalloc(n, sizeof(*r->rdma));
  for (size_t i = 0; i < n; i++) {
    yajl_val v = obj->u.object.values[i];
    struct spec_rdma *d = &r->rdma[i];
    r->n_rdma = i + 1;
    d->device = xstrdup(obj->u.object.keys[i]);
    size_t mark = jpush_key(c, d->device);
    if (jval_object(c, v, err) < 0 || get_opt_u64(c, v, "hcaHandles", UINT32_MAX, &d->hca_handles, err) < 0 ||
        get_opt_u64(c, v, "hcaObjects", UINT32_MAX, &d->hca_objects, err) < 0)
      return -1;
    jpop(c, mark);
  }
  return 0;
}

static int check_unified(struct jctx *c, const struct spec_kv_list *u, struct cm_error **err) {
  for (size_t i = 0; i < u->count; i++) {
    const char *key = u->items[i].key;
    /* Keys are file names inside the container's cgroup directory: a "/" or ".." would write
     * to another cgroup's files (a cgroup escape). */
    if (key[0] == '\0' || strchr(key, '/') != NULL || strstr(key, "..") != NULL) {
      jpush_key(c, "unified");
      jpush_key(c, key);
      return jerr(c, err, "invalid cgroup file name \"%s\"", key);
    }
  }
  return 0;
}

#define PARSE_OBJ(key, parser) JSON_PARSE_SUB(obj, key, jget_object, parser)

int spec_parse_resources(struct jctx *c, yajl_val obj, struct spec_resources *r, struct cm_error **err) {
  if (jval_object(c, obj, err) < 0)
    return -1;
  r->present = true;
  size_t len = array_len(obj, "devices");
  if (len > 0)
    r->devices = xcalloc(len, sizeof(*r->devices));
  FOR_EACH_ELEMENT("devices", arr, i, elem, {
    r->n_devices = i + 1;
    if (parse_device_rule(c, elem, &r->devices[i], err) < 0)
      return -1;
  });
  PARSE_OBJ("memory", parse_memory(c, sub_, &r->memory, err));
  PARSE_OBJ("cpu", parse_cpu(c, sub_, &r->cpu, err));

  yajl_val pids;
  int got = jget_object(c, obj, "pids", &pids, err);
  if (got < 0)
    return -1;
  if (got == 1) {
    size_t mark = jpush_key(c, "pids");
    if (jrequire(c, pids, "limit", err) < 0 ||
        jget_i64(c, pids, "limit", INT64_MIN, INT64_MAX, &r->pids_limit, err) < 0)
      return -1;
    jpop(c, mark);
    r->has_pids = true;
  }

  PARSE_OBJ("blockIO", parse_block_io(c, sub_, &r->block_io, err));

  len = array_len(obj, "hugepageLimits");
  if (len > 0)
    r->hugepage_limits = xcalloc(len, sizeof(*r->hugepage_limits));
  FOR_EACH_ELEMENT("hugepageLimits", arr, i, elem, {
    struct spec_hugepage_limit *h = &r->hugepage_limits[i];
    r->n_hugepage_limits = i + 1;
    if (jrequire(c, elem, "pageSize", err) < 0 || jget_string(c, elem, "pageSize", &h->page_size, err) < 0 ||
        jrequire(c, elem, "limit", err) < 0 || jget_u64(c, elem, "limit", UINT64_MAX, &h->limit, err) < 0)
      return -1;
    /* The page size becomes part of a cgroup file name (hugetlb.<size>.limit_in_bytes). */
    if (h->page_size[0] == '\0' || strchr(h->page_size, '/') != NULL || strstr(h->page_size, "..") != NULL) {
      jpush_key(c, "pageSize");
      return jerr(c, err, "invalid page size \"%s\"", h->page_size);
    }
  });

  PARSE_OBJ("network", parse_network(c, sub_, r, err));
  PARSE_OBJ("rdma", parse_rdma(c, sub_, r, err));
  if (jget_kv(c, obj, "unified", &r->unified, err) < 0 || check_unified(c, &r->unified, err) < 0)
    return -1;
  return 0;
}

void spec_resources_free(struct spec_resources *r) {
  if (r == NULL)
    return;
  free(r->devices);
  free(r->cpu.cpus);
  free(r->cpu.mems);
  free(r->block_io.weight_devices);
  free(r->block_io.throttle_read_bps);
  free(r->block_io.throttle_write_bps);
  free(r->block_io.throttle_read_iops);
  free(r->block_io.throttle_write_iops);
  for (size_t i = 0; i < r->n_hugepage_limits; i++)
    free(r->hugepage_limits[i].page_size);
  free(r->hugepage_limits);
  for (size_t i = 0; i < r->n_net_priorities; i++)
    free(r->net_priorities[i].name);
  free(r->net_priorities);
  for (size_t i = 0; i < r->n_rdma; i++)
    free(r->rdma[i].device);
  free(r->rdma);
  spec_kv_list_free(&r->unified);
  memset(r, 0, sizeof(*r));
}

int spec_resources_load_string(const char *json, size_t len, const char *label, struct spec_resources *out,
                               struct cm_error **err) {
  memset(out, 0, sizeof(*out));
  yajl_val tree = json_parse(json, len, label, err);
  if (tree == NULL)
    return -1;
  struct jctx c;
  jctx_init(&c, label);
  int r = spec_parse_resources(&c, tree, out, err);
  yajl_tree_free(tree);
  if (r < 0) {
    spec_resources_free(out);
    return -1;
  }
  return 0;
}
