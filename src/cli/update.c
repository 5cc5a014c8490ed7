#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "policy/profile.h"
#include "util/log.h"

/* The policy/ side of update's hook: the recorded profile (or a stricter --profile) clamps the new
 * limits, and says what it changed. */
static int update_harden(void *arg, const char *recorded, struct spec_resources *r, struct cm_error **err) {
  const char *requested = arg;
  struct policy_report report;
  if (policy_apply_update(requested, recorded, r, &report, err) < 0)
    return -1;
  for (size_t i = 0; i < report.count; i++)
    cm_warn("update: clamped to the profile: %s", report.lines[i]);
  policy_report_free(&report);
  return 0;
}

static const char help[] =
    "usage: codemode update [options] ID\n"
    "\n"
    "Change the resource limits of a running container.\n"
    "  -r, --resources FILE        linux.resources JSON (\"-\": stdin); the flags below are then ignored\n"
    "  --memory SIZE               memory limit (bytes, or with k/m/g)\n"
    "  --memory-reservation SIZE   memory soft limit\n"
    "  --memory-swap SIZE          memory+swap limit (-1: unlimited)\n"
    "  --cpu-period N              CPU CFS period (us)\n"
    "  --cpu-quota N               CPU CFS quota (us, -1: unlimited)\n"
    "  --cpu-share N               CPU shares (relative weight)\n"
    "  --cpu-rt-period N           realtime period (us)\n"
    "  --cpu-rt-runtime N          realtime runtime (us)\n"
    "  --cpuset-cpus LIST          CPUs allowed (0-3, 0,1)\n"
    "  --cpuset-mems LIST          memory nodes allowed\n"
    "  --pids-limit N              maximum number of tasks (-1 or 0: unlimited)\n"
    "  --blkio-weight N            block IO weight (10-1000)\n"
    "  -h, --help                  this help\n";

static char *read_all(int fd, size_t *len) {
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  for (;;) {
    if (n == cap && (buf = realloc(buf, cap *= 2)) == NULL)
      abort();
    ssize_t r = read(fd, buf + n, cap - n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      free(buf);
      return NULL;
    }
    if (r == 0)
      break;
    n += (size_t)r;
  }
  *len = n;
  return buf;
}

/* "512m", "1g", "1024", "-1": as runc (and Docker) read sizes, binary units. */
static int parse_size(const char *flag, const char *s, int64_t *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || errno)
    return cli_usage_error("update", "%s: invalid size \"%s\"", flag, s), -1;
  int64_t mult = 1;
  switch (tolower((unsigned char)*end)) {
  case '\0': break;
  case 'k': mult = 1LL << 10; end++; break;
  case 'm': mult = 1LL << 20; end++; break;
  case 'g': mult = 1LL << 30; end++; break;
  case 't': mult = 1LL << 40; end++; break;
  case 'b': break;
  default: return cli_usage_error("update", "%s: invalid size \"%s\"", flag, s), -1;
  }
  if (tolower((unsigned char)*end) == 'b')
    end++;
  if (*end != '\0')
    return cli_usage_error("update", "%s: invalid size \"%s\"", flag, s), -1;
  *out = v < 0 ? -1 : (int64_t)(v * (double)mult);
  return 0;
}

static int parse_int(const char *flag, const char *s, int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (*s == '\0' || *end != '\0' || errno)
    return cli_usage_error("update", "%s: \"%s\" is not an integer", flag, s), -1;
  *out = v;
  return 0;
}

/* A JSON string literal for a cpuset list: only digits, commas and dashes are accepted. */
static int check_cpuset(const char *flag, const char *s) {
  for (const char *p = s; *p; p++)
    if (!isdigit((unsigned char)*p) && *p != ',' && *p != '-')
      return cli_usage_error("update", "%s: invalid list \"%s\"", flag, s), -1;
  return 0;
}

struct json_buf {
  char *memory, *cpu, *other;
};

static void append(char **dst, const char *key, long long v) {
  char *old = *dst, *next;
  if (asprintf(&next, "%s%s\"%s\":%lld", old ? old : "", old ? "," : "", key, v) < 0)
    abort();
  free(old);
  *dst = next;
}

static void append_str(char **dst, const char *key, const char *v) {
  char *old = *dst, *next;
  if (asprintf(&next, "%s%s\"%s\":\"%s\"", old ? old : "", old ? "," : "", key, v) < 0)
    abort();
  free(old);
  *dst = next;
}

int cmd_update(struct cli_globals *g, int argc, char **argv) {
  enum {
    OPT_MEMORY = 256,
    OPT_MEM_RES,
    OPT_MEM_SWAP,
    OPT_KMEM,
    OPT_KMEM_TCP,
    OPT_CPU_PERIOD,
    OPT_CPU_QUOTA,
    OPT_CPU_SHARE,
    OPT_RT_PERIOD,
    OPT_RT_RUNTIME,
    OPT_CPUS,
    OPT_MEMS,
    OPT_PIDS,
    OPT_BLKIO,
  };
  static const struct option opts[] = {
      {"resources", required_argument, NULL, 'r'},
      {"memory", required_argument, NULL, OPT_MEMORY},
      {"memory-reservation", required_argument, NULL, OPT_MEM_RES},
      {"memory-swap", required_argument, NULL, OPT_MEM_SWAP},
      {"kernel-memory", required_argument, NULL, OPT_KMEM},         /* runc's; ignored (deprecated) */
      {"kernel-memory-tcp", required_argument, NULL, OPT_KMEM_TCP}, /* runc's; ignored (deprecated) */
      {"cpu-period", required_argument, NULL, OPT_CPU_PERIOD},
      {"cpu-quota", required_argument, NULL, OPT_CPU_QUOTA},
      {"cpu-share", required_argument, NULL, OPT_CPU_SHARE},
      {"cpu-rt-period", required_argument, NULL, OPT_RT_PERIOD},
      {"cpu-rt-runtime", required_argument, NULL, OPT_RT_RUNTIME},
      {"cpuset-cpus", required_argument, NULL, OPT_CPUS},
      {"cpuset-mems", required_argument, NULL, OPT_MEMS},
      {"pids-limit", required_argument, NULL, OPT_PIDS},
      {"blkio-weight", required_argument, NULL, OPT_BLKIO},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  const char *resources = NULL;
  struct json_buf j = {0};
  int rc = 1;
  int c;
  int64_t v;
  while ((c = getopt_long(argc, argv, "r:h", opts, NULL)) != -1) {
    const char *name = NULL;
    for (const struct option *o = opts; o->name; o++)
      if (o->val == c)
        name = o->name;
    switch (c) {
    case 'r': resources = optarg; break;
    case OPT_MEMORY:
    case OPT_MEM_RES:
    case OPT_MEM_SWAP:
      if (parse_size(name, optarg, &v) < 0)
        goto out;
      append(&j.memory, c == OPT_MEMORY ? "limit" : c == OPT_MEM_RES ? "reservation" : "swap", v);
      break;
    case OPT_KMEM:
    case OPT_KMEM_TCP: break;
    case OPT_CPU_PERIOD:
    case OPT_CPU_QUOTA:
    case OPT_CPU_SHARE:
    case OPT_RT_PERIOD:
    case OPT_RT_RUNTIME:
      if (parse_int(name, optarg, &v) < 0)
        goto out;
      append(&j.cpu,
             c == OPT_CPU_PERIOD  ? "period"
             : c == OPT_CPU_QUOTA ? "quota"
             : c == OPT_CPU_SHARE ? "shares"
             : c == OPT_RT_PERIOD ? "realtimePeriod"
                                  : "realtimeRuntime",
             v);
      break;
    case OPT_CPUS:
    case OPT_MEMS:
      if (check_cpuset(name, optarg) < 0)
        goto out;
      append_str(&j.cpu, c == OPT_CPUS ? "cpus" : "mems", optarg);
      break;
    case OPT_PIDS:
      if (parse_int(name, optarg, &v) < 0)
        goto out;
      {
        char *pids;
        if (asprintf(&pids, "\"pids\":{\"limit\":%lld}", (long long)v) < 0)
          abort();
        free(j.other);
        j.other = pids;
      }
      break;
    case OPT_BLKIO:
      if (parse_int(name, optarg, &v) < 0)
        goto out;
      {
        char *blkio;
        if (asprintf(&blkio, "%s%s\"blockIO\":{\"weight\":%lld}", j.other ? j.other : "", j.other ? "," : "",
                     (long long)v) < 0)
          abort();
        free(j.other);
        j.other = blkio;
      }
      break;
    case 'h':
      fputs(help, stdout);
      rc = 0;
      goto out;
    default: cli_usage_error("update", "unknown or incomplete option \"%s\"", argv[optind - 1]); goto out;
    }
  }
  if (argc - optind != 1) {
    cli_usage_error("update", "expects exactly one container ID");
    goto out;
  }
  char *json = NULL;
  size_t len = 0;
  const char *label = "resources";
  if (resources) {
    int fd = strcmp(resources, "-") == 0 ? STDIN_FILENO : open(resources, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      fprintf(stderr, "codemode: update: --resources %s: %m\n", resources);
      goto out;
    }
    json = read_all(fd, &len);
    if (fd != STDIN_FILENO)
      close(fd);
    if (json == NULL) {
      fprintf(stderr, "codemode: update: read --resources %s: %m\n", resources);
      goto out;
    }
  } else {
    /* The flags become the same JSON --resources takes, so both go through one validation. */
    if (asprintf(&json, "{\"memory\":{%s},\"cpu\":{%s}%s%s}", j.memory ? j.memory : "", j.cpu ? j.cpu : "",
                 j.other ? "," : "", j.other ? j.other : "") < 0)
      abort();
    len = strlen(json);
  }
  struct spec_resources r;
  struct cm_error *err = NULL;
  if (spec_resources_load_string(json, len, label, &r, &err) < 0) {
    free(json);
    rc = cli_fail(err);
    goto out;
  }
  free(json);
  rc = runtime_update(&g->ctx, argv[optind], &r, update_harden, (void *)g->profile, &err) < 0 ? cli_fail(err)
                                                                                              : 0;
  spec_resources_free(&r);
out:
  free(j.memory);
  free(j.cpu);
  free(j.other);
  return rc;
}
