/* Usage statistics for `events --stats`, read from whichever hierarchy holds each controller
 * (cgroup v1 files, or cgroup2 files converted to runc's v1-style units). */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup/internal.h"
#include "util/cleanup.h"

/* The directory of a controller: its v1 hierarchy, else the cgroup2 directory when cgroup2
 * has it (unified hosts; hugetlb on this hybrid host). NULL when neither. */
static const char *stat_dir(const struct cgroup *cg, const char *v1_name, const char *v2_name, bool *v2) {
  struct cgroup_v1_hierarchy *h = cg->mode == CGROUP_MODE_UNIFIED ? NULL : cg_v1_find(cg, v1_name);
  *v2 = false;
  if (h != NULL)
    return h->dir;
  if (cg->v2_dir != NULL && v2_name != NULL && cg_v2_has_controller(cg->v2_dir, v2_name)) {
    *v2 = true;
    return cg->v2_dir;
  }
  return NULL;
}

/* A single number; "max" → UINT64_MAX (runc's convention); missing or unreadable → 0. */
static uint64_t read_u64(const char *dir, const char *file) {
  cleanup_free char *s = cg_read(dir, file, NULL);
  if (s == NULL)
    return 0;
  if (strncmp(s, "max", 3) == 0)
    return UINT64_MAX;
  return strtoull(s, NULL, 10);
}

/* The value of "key N" in a flat-keyed file (cpu.stat, memory.events, …); 0 when absent. */
static uint64_t read_key(const char *dir, const char *file, const char *key) {
  cleanup_free char *s = cg_read(dir, file, NULL);
  size_t klen = strlen(key);
  for (char *line = s; line && *line;) {
    if (strncmp(line, key, klen) == 0 && line[klen] == ' ')
      return strtoull(line + klen + 1, NULL, 10);
    char *nl = strchr(line, '\n');
    line = nl ? nl + 1 : NULL;
  }
  return 0;
}

/* "N N N …" → array. */
static void read_list(const char *dir, const char *file, uint64_t **out, size_t *n) {
  cleanup_free char *s = cg_read(dir, file, NULL);
  *out = NULL;
  *n = 0;
  if (s == NULL)
    return;
  size_t cap = 0;
  char *p = s, *end;
  for (;;) {
    uint64_t v = strtoull(p, &end, 10);
    if (end == p)
      break;
    if (*n == cap) {
      cap = cap ? cap * 2 : 8;
      uint64_t *bigger = realloc(*out, cap * sizeof(uint64_t));
      if (bigger == NULL)
        abort();
      *out = bigger;
    }
    (*out)[(*n)++] = v;
    p = end;
  }
}

static void stats_cpu(const struct cgroup *cg, struct cgroup_stats *s) {
  bool v2;
  const char *dir = stat_dir(cg, "cpuacct", NULL, &v2);
  if (dir != NULL) {
    s->cpu.total = read_u64(dir, "cpuacct.usage");
    read_list(dir, "cpuacct.usage_percpu", &s->cpu.percpu, &s->cpu.n_percpu);
    read_list(dir, "cpuacct.usage_percpu_sys", &s->cpu.percpu_kernel, &s->cpu.n_percpu_kernel);
    read_list(dir, "cpuacct.usage_percpu_user", &s->cpu.percpu_user, &s->cpu.n_percpu_user);
    /* cpuacct.stat counts USER_HZ ticks. */
    long hz = sysconf(_SC_CLK_TCK);
    uint64_t ns_per_tick = 1000000000ULL / (uint64_t)(hz > 0 ? hz : 100);
    s->cpu.user = read_key(dir, "cpuacct.stat", "user") * ns_per_tick;
    s->cpu.kernel = read_key(dir, "cpuacct.stat", "system") * ns_per_tick;
  } else if (cg->v2_dir != NULL && cg->mode == CGROUP_MODE_UNIFIED) {
    /* cpu.stat's usage lines exist even without the cpu controller enabled. */
    s->cpu.total = read_key(cg->v2_dir, "cpu.stat", "usage_usec") * 1000;
    s->cpu.user = read_key(cg->v2_dir, "cpu.stat", "user_usec") * 1000;
    s->cpu.kernel = read_key(cg->v2_dir, "cpu.stat", "system_usec") * 1000;
  }
  dir = stat_dir(cg, "cpu", "cpu", &v2);
  if (dir != NULL) {
    s->cpu.periods = read_key(dir, "cpu.stat", "nr_periods");
    s->cpu.throttled_periods = read_key(dir, "cpu.stat", "nr_throttled");
    s->cpu.throttled_time = v2 ? read_key(dir, "cpu.stat", "throttled_usec") * 1000
                               : read_key(dir, "cpu.stat", "throttled_time");
  }
}

static void mem_entry_v1(const char *dir, const char *prefix, struct cgroup_mem_entry *e) {
  char file[96];
  snprintf(file, sizeof(file), "%s.usage_in_bytes", prefix);
  if (!cg_file_exists(dir, file))
    return;
  e->present = true;
  e->usage = read_u64(dir, file);
  snprintf(file, sizeof(file), "%s.max_usage_in_bytes", prefix);
  e->max = read_u64(dir, file);
  snprintf(file, sizeof(file), "%s.limit_in_bytes", prefix);
  e->limit = read_u64(dir, file);
  snprintf(file, sizeof(file), "%s.failcnt", prefix);
  e->failcnt = read_u64(dir, file);
}

static void read_raw(const char *dir, struct cgroup_stats *s) {
  cleanup_free char *text = cg_read(dir, "memory.stat", NULL);
  size_t cap = 0;
  char *save = NULL;
  for (char *line = text ? strtok_r(text, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save)) {
    char *sp = strchr(line, ' ');
    if (sp == NULL)
      continue;
    *sp = '\0';
    if (s->memory.n_raw == cap) {
      cap = cap ? cap * 2 : 64;
      struct cgroup_stat_kv *bigger = realloc(s->memory.raw, cap * sizeof(*bigger));
      if (bigger == NULL)
        abort();
      s->memory.raw = bigger;
    }
    struct cgroup_stat_kv *kv = &s->memory.raw[s->memory.n_raw++];
    if ((kv->key = strdup(line)) == NULL)
      abort();
    kv->value = strtoull(sp + 1, NULL, 10);
  }
}

static uint64_t raw_value(const struct cgroup_stats *s, const char *key) {
  for (size_t i = 0; i < s->memory.n_raw; i++)
    if (strcmp(s->memory.raw[i].key, key) == 0)
      return s->memory.raw[i].value;
  return 0;
}

static void stats_memory(const struct cgroup *cg, struct cgroup_stats *s) {
  bool v2;
  const char *dir = stat_dir(cg, "memory", "memory", &v2);
  if (dir == NULL)
    return;
  read_raw(dir, s);
  if (!v2) {
    mem_entry_v1(dir, "memory", &s->memory.usage);
    mem_entry_v1(dir, "memory.memsw", &s->memory.swap);
    mem_entry_v1(dir, "memory.kmem", &s->memory.kernel);
    mem_entry_v1(dir, "memory.kmem.tcp", &s->memory.kernel_tcp);
    s->memory.cache = raw_value(s, "cache");
    return;
  }
  struct cgroup_mem_entry *u = &s->memory.usage, *sw = &s->memory.swap;
  u->present = true;
  u->usage = read_u64(dir, "memory.current");
  u->limit = read_u64(dir, "memory.max");
  u->max = read_u64(dir, "memory.peak"); /* kernels >= 5.19 */
  u->failcnt = read_key(dir, "memory.events", "max");
  s->memory.cache = raw_value(s, "file");
  if (cg_file_exists(dir, "memory.swap.current")) {
    /* v1 reported memory+swap: add memory to keep "swap" meaning the same. */
    sw->present = true;
    sw->usage = read_u64(dir, "memory.swap.current") + u->usage;
    sw->limit = read_u64(dir, "memory.swap.max");
    if (sw->limit != UINT64_MAX && u->limit != UINT64_MAX)
      sw->limit += u->limit;
    sw->failcnt = read_key(dir, "memory.swap.events", "max");
  }
}

static void stats_pids(const struct cgroup *cg, struct cgroup_stats *s) {
  bool v2;
  const char *dir = stat_dir(cg, "pids", "pids", &v2);
  if (dir == NULL)
    return;
  s->pids.current = read_u64(dir, "pids.current");
  uint64_t limit = read_u64(dir, "pids.max");
  s->pids.limit = limit == UINT64_MAX ? 0 : limit;
}

static void add_blkio(struct cgroup_blkio_entry **arr, size_t *n, uint64_t major, uint64_t minor, const char *op,
                      uint64_t value) {
  struct cgroup_blkio_entry *bigger = realloc(*arr, (*n + 1) * sizeof(*bigger));
  if (bigger == NULL)
    abort();
  *arr = bigger;
  struct cgroup_blkio_entry *e = &bigger[(*n)++];
  e->major = major;
  e->minor = minor;
  snprintf(e->op, sizeof(e->op), "%s", op);
  e->value = value;
}

/* v1: "MAJ:MIN Op N" lines, and a final "Total N". */
static void blkio_v1_file(const char *dir, const char *file, struct cgroup_blkio_entry **arr, size_t *n) {
  cleanup_free char *text = cg_read(dir, file, NULL);
  char *save = NULL;
  for (char *line = text ? strtok_r(text, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save)) {
    unsigned long long major, minor, value;
    char op[16];
    if (sscanf(line, "%llu:%llu %15s %llu", &major, &minor, op, &value) == 4)
      add_blkio(arr, n, major, minor, op, value);
  }
}

static void stats_blkio(const struct cgroup *cg, struct cgroup_stats *s) {
  bool v2;
  const char *dir = stat_dir(cg, "blkio", "io", &v2);
  if (dir == NULL)
    return;
  if (!v2) {
    /* CFQ/BFQ's files when there, else the throttle layer's (always there). */
    bool cfq = cg_file_exists(dir, "blkio.io_service_bytes_recursive");
    blkio_v1_file(dir, cfq ? "blkio.io_service_bytes_recursive" : "blkio.throttle.io_service_bytes_recursive",
                  &s->blkio.service_bytes, &s->blkio.n_service_bytes);
    blkio_v1_file(dir, cfq ? "blkio.io_serviced_recursive" : "blkio.throttle.io_serviced_recursive",
                  &s->blkio.serviced, &s->blkio.n_serviced);
    return;
  }
  /* io.stat: "MAJ:MIN rbytes=N wbytes=N rios=N wios=N dbytes=N dios=N". */
  cleanup_free char *text = cg_read(dir, "io.stat", NULL);
  char *save = NULL;
  for (char *line = text ? strtok_r(text, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save)) {
    unsigned long long major, minor;
    int used = 0;
    if (sscanf(line, "%llu:%llu%n", &major, &minor, &used) != 2)
      continue;
    char *save2 = NULL;
    for (char *kv = strtok_r(line + used, " ", &save2); kv; kv = strtok_r(NULL, " ", &save2)) {
      char *eq = strchr(kv, '=');
      if (eq == NULL)
        continue;
      *eq = '\0';
      uint64_t v = strtoull(eq + 1, NULL, 10);
      if (strcmp(kv, "rbytes") == 0)
        add_blkio(&s->blkio.service_bytes, &s->blkio.n_service_bytes, major, minor, "Read", v);
      else if (strcmp(kv, "wbytes") == 0)
        add_blkio(&s->blkio.service_bytes, &s->blkio.n_service_bytes, major, minor, "Write", v);
      else if (strcmp(kv, "rios") == 0)
        add_blkio(&s->blkio.serviced, &s->blkio.n_serviced, major, minor, "Read", v);
      else if (strcmp(kv, "wios") == 0)
        add_blkio(&s->blkio.serviced, &s->blkio.n_serviced, major, minor, "Write", v);
    }
  }
}

static void stats_hugetlb(const struct cgroup *cg, struct cgroup_stats *s) {
  bool v2;
  const char *dir = stat_dir(cg, "hugetlb", "hugetlb", &v2);
  if (dir == NULL)
    return;
  DIR *d = opendir(dir);
  if (d == NULL)
    return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    /* One file per page size names the sizes: hugetlb.2MB.max (v2), hugetlb.2MB.limit_in_bytes (v1). */
    const char *suffix = v2 ? ".max" : ".limit_in_bytes";
    size_t len = strlen(e->d_name), slen = strlen(suffix);
    if (strncmp(e->d_name, "hugetlb.", 8) != 0 || len <= 8 + slen || strcmp(e->d_name + len - slen, suffix) != 0)
      continue;
    size_t size_len = len - 8 - slen;
    if (size_len >= sizeof(s->hugetlb[0].page_size) || memchr(e->d_name + 8, '.', size_len) != NULL)
      continue; /* hugetlb.2MB.rsvd.max */
    struct cgroup_hugetlb_stat *bigger = realloc(s->hugetlb, (s->n_hugetlb + 1) * sizeof(*bigger));
    if (bigger == NULL)
      abort();
    s->hugetlb = bigger;
    struct cgroup_hugetlb_stat *h = &bigger[s->n_hugetlb++];
    memset(h, 0, sizeof(*h));
    memcpy(h->page_size, e->d_name + 8, size_len);
    char file[96];
    if (v2) {
      snprintf(file, sizeof(file), "hugetlb.%s.current", h->page_size);
      h->usage = read_u64(dir, file);
      /* "max" is peak usage in v1; cgroup2 does not keep one (hugetlb.*.max is the limit). */
      snprintf(file, sizeof(file), "hugetlb.%s.events", h->page_size);
      h->failcnt = read_key(dir, file, "max");
    } else {
      snprintf(file, sizeof(file), "hugetlb.%s.usage_in_bytes", h->page_size);
      h->usage = read_u64(dir, file);
      snprintf(file, sizeof(file), "hugetlb.%s.max_usage_in_bytes", h->page_size);
      h->max = read_u64(dir, file);
      snprintf(file, sizeof(file), "hugetlb.%s.failcnt", h->page_size);
      h->failcnt = read_u64(dir, file);
    }
  }
  closedir(d);
}

int cgroup_stats(struct cgroup *cg, struct cgroup_stats *out, struct cm_error **err) {
  memset(out, 0, sizeof(*out));
  if (cg->mode == CGROUP_MODE_DISABLED)
    return cm_error_set(err, ENOTSUP, "stats: the container runs without a cgroup (--cgroup-manager disabled)");
  stats_cpu(cg, out);
  stats_memory(cg, out);
  stats_pids(cg, out);
  stats_blkio(cg, out);
  stats_hugetlb(cg, out);
  return 0;
}

void cgroup_stats_free(struct cgroup_stats *s) {
  free(s->cpu.percpu);
  free(s->cpu.percpu_kernel);
  free(s->cpu.percpu_user);
  for (size_t i = 0; i < s->memory.n_raw; i++)
    free(s->memory.raw[i].key);
  free(s->memory.raw);
  free(s->blkio.service_bytes);
  free(s->blkio.serviced);
  free(s->hugetlb);
  memset(s, 0, sizeof(*s));
}
