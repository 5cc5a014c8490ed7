/* `events [--stats] [--interval D] ID`: runc's events command. One JSON object per line:
 * {"type":"stats","id":…,"data":{…}} (runc's stats layout) or {"type":"oom","id":…}. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_gen.h>

#include "cli/cli.h"
#include "cli/simple_flags.h"
#include "runtime/events.h"

static const char help[] =
    "usage: codemode events [--stats] [--interval DURATION] ID\n"
    "\n"
    "Without --stats: print OOM notifications ({\"type\":\"oom\"}) as they happen and resource\n"
    "statistics every interval, until the container stops. With --stats: print the statistics\n"
    "once and exit.\n"
    "  --stats               one statistics object, then exit\n"
    "  --interval DURATION   time between statistics, like 5s, 500ms, 1m (default 5s)\n";

struct events_flags {
  bool stats;
  long interval_ms;
  const char *bad_interval;
};

/* A Go-style duration ("5s", "250ms", "1m30s" is not needed: one number and one unit). */
static long parse_duration_ms(const char *s) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || errno != 0 || v < 0 || !isfinite(v))
    return -1;
  double scale;
  if (*end == '\0' || strcmp(end, "s") == 0)
    scale = 1000;
  else if (strcmp(end, "ms") == 0)
    scale = 1;
  else if (strcmp(end, "us") == 0 || strcmp(end, "µs") == 0)
    scale = 0.001;
  else if (strcmp(end, "ns") == 0)
    scale = 0.000001;
  else if (strcmp(end, "m") == 0)
    scale = 60000;
  else if (strcmp(end, "h") == 0)
    scale = 3600000;
  else
    return -1;
  double ms = v * scale;
  if (ms > 1e12)
    return -1;
  return ms < 1 && v > 0 ? 1 : (long)ms;
}

enum { OPT_STATS = 256, OPT_INTERVAL };

static int on_opt(int c, const char *arg, void *data) {
  struct events_flags *f = data;
  if (c == OPT_STATS) {
    f->stats = true;
    return 0;
  }
  if (c == OPT_INTERVAL) {
    f->interval_ms = parse_duration_ms(arg);
    if (f->interval_ms <= 0)
      f->bad_interval = arg;
    return 0;
  }
  return -1;
}

/* --- JSON in runc's layout (Go's omitempty where runc has it) ------------------------------- */

static void key(yajl_gen g, const char *k) {
  yajl_gen_string(g, (const unsigned char *)k, strlen(k));
}

static void u64(yajl_gen g, uint64_t v) {
  char buf[32];
  int n = snprintf(buf, sizeof(buf), "%" PRIu64, v);
  yajl_gen_number(g, buf, (size_t)n);
}

static void kv_u64(yajl_gen g, const char *k, uint64_t v) {
  key(g, k);
  u64(g, v);
}

static void kv_u64_nonzero(yajl_gen g, const char *k, uint64_t v) {
  if (v != 0)
    kv_u64(g, k, v);
}

static void kv_array(yajl_gen g, const char *k, const uint64_t *v, size_t n) {
  if (n == 0)
    return;
  key(g, k);
  yajl_gen_array_open(g);
  for (size_t i = 0; i < n; i++)
    u64(g, v[i]);
  yajl_gen_array_close(g);
}

static void mem_entry(yajl_gen g, const char *k, const struct cgroup_mem_entry *e) {
  key(g, k);
  yajl_gen_map_open(g);
  kv_u64(g, "limit", e->limit);
  kv_u64_nonzero(g, "usage", e->usage);
  kv_u64_nonzero(g, "max", e->max);
  kv_u64(g, "failcnt", e->failcnt);
  yajl_gen_map_close(g);
}

static void blkio_list(yajl_gen g, const char *k, const struct cgroup_blkio_entry *e, size_t n) {
  if (n == 0)
    return;
  key(g, k);
  yajl_gen_array_open(g);
  for (size_t i = 0; i < n; i++) {
    yajl_gen_map_open(g);
    kv_u64(g, "major", e[i].major);
    kv_u64(g, "minor", e[i].minor);
    key(g, "op");
    key(g, e[i].op);
    kv_u64(g, "value", e[i].value);
    yajl_gen_map_close(g);
  }
  yajl_gen_array_close(g);
}

static void gen_stats_data(yajl_gen g, const struct cgroup_stats *s) {
  yajl_gen_map_open(g);
  key(g, "cpu");
  yajl_gen_map_open(g);
  key(g, "usage");
  yajl_gen_map_open(g);
  kv_u64_nonzero(g, "total", s->cpu.total);
  kv_array(g, "percpu", s->cpu.percpu, s->cpu.n_percpu);
  kv_array(g, "percpu_kernel", s->cpu.percpu_kernel, s->cpu.n_percpu_kernel);
  kv_array(g, "percpu_user", s->cpu.percpu_user, s->cpu.n_percpu_user);
  kv_u64(g, "kernel", s->cpu.kernel);
  kv_u64(g, "user", s->cpu.user);
  yajl_gen_map_close(g);
  key(g, "throttling");
  yajl_gen_map_open(g);
  kv_u64_nonzero(g, "periods", s->cpu.periods);
  kv_u64_nonzero(g, "throttled_periods", s->cpu.throttled_periods);
  kv_u64_nonzero(g, "throttled_time", s->cpu.throttled_time);
  yajl_gen_map_close(g);
  yajl_gen_map_close(g);

  key(g, "memory");
  yajl_gen_map_open(g);
  kv_u64_nonzero(g, "cache", s->memory.cache);
  mem_entry(g, "usage", &s->memory.usage);
  mem_entry(g, "swap", &s->memory.swap);
  mem_entry(g, "kernel", &s->memory.kernel);
  mem_entry(g, "kernelTCP", &s->memory.kernel_tcp);
  if (s->memory.n_raw > 0) {
    key(g, "raw");
    yajl_gen_map_open(g);
    for (size_t i = 0; i < s->memory.n_raw; i++)
      kv_u64(g, s->memory.raw[i].key, s->memory.raw[i].value);
    yajl_gen_map_close(g);
  }
  yajl_gen_map_close(g);

  key(g, "pids");
  yajl_gen_map_open(g);
  kv_u64_nonzero(g, "current", s->pids.current);
  kv_u64_nonzero(g, "limit", s->pids.limit);
  yajl_gen_map_close(g);

  key(g, "blkio");
  yajl_gen_map_open(g);
  blkio_list(g, "ioServiceBytesRecursive", s->blkio.service_bytes, s->blkio.n_service_bytes);
  blkio_list(g, "ioServicedRecursive", s->blkio.serviced, s->blkio.n_serviced);
  yajl_gen_map_close(g);

  key(g, "hugetlb");
  yajl_gen_map_open(g);
  for (size_t i = 0; i < s->n_hugetlb; i++) {
    key(g, s->hugetlb[i].page_size);
    yajl_gen_map_open(g);
    kv_u64_nonzero(g, "usage", s->hugetlb[i].usage);
    kv_u64_nonzero(g, "max", s->hugetlb[i].max);
    kv_u64(g, "failcnt", s->hugetlb[i].failcnt);
    yajl_gen_map_close(g);
  }
  yajl_gen_map_close(g);
  key(g, "intel_rdt");
  yajl_gen_map_open(g);
  yajl_gen_map_close(g);
  key(g, "network_interfaces");
  yajl_gen_null(g);
  yajl_gen_map_close(g);
}

/* One event line on stdout, flushed (a reader like containerd acts on each line). */
static int print_event(const char *type, const char *id, const struct cgroup_stats *s) {
  yajl_gen g = yajl_gen_alloc(NULL);
  if (g == NULL)
    abort();
  yajl_gen_map_open(g);
  key(g, "type");
  key(g, type);
  key(g, "id");
  key(g, id);
  if (s != NULL) {
    key(g, "data");
    gen_stats_data(g, s);
  }
  yajl_gen_map_close(g);
  const unsigned char *buf;
  size_t len;
  yajl_gen_get_buf(g, &buf, &len);
  int rc = fwrite(buf, 1, len, stdout) == len && fputc('\n', stdout) != EOF && fflush(stdout) == 0 ? 0 : -1;
  yajl_gen_free(g);
  return rc;
}

static int on_stats(const struct cgroup_stats *s, void *data) {
  return print_event("stats", data, s);
}

static int on_oom(void *data) {
  return print_event("oom", data, NULL);
}

int cmd_events(struct cli_globals *g, int argc, char **argv) {
  static const struct option opts[] = {
      {"stats", no_argument, NULL, OPT_STATS},
      {"interval", required_argument, NULL, OPT_INTERVAL},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  struct events_flags f = {.interval_ms = 5000};
  int r = simple_flags_parse("events", help, argc, argv, "h", opts, on_opt, &f);
  if (r != 0)
    return r < 0 ? 1 : 0;
  if (f.bad_interval != NULL)
    return cli_usage_error("events", "--interval: \"%s\" is not a positive duration like 5s or 500ms",
                           f.bad_interval);
  if (argc - optind != 1)
    return cli_usage_error("events", "expects exactly one container ID");
  const char *id = argv[optind];
  struct cm_error *err = NULL;
  if (f.stats) {
    struct cgroup_stats s;
    if (runtime_stats(&g->ctx, id, &s, &err) < 0)
      return cli_fail(err);
    int rc = print_event("stats", id, &s);
    cgroup_stats_free(&s);
    return rc < 0 ? 1 : 0;
  }
  struct runtime_events_handler h = {.on_stats = on_stats, .on_oom = on_oom, .data = (void *)id};
  if (runtime_events(&g->ctx, id, f.interval_ms, &h, &err) < 0)
    return cli_fail(err);
  return 0;
}
