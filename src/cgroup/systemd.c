/* The systemd cgroup driver: the container's cgroup is a transient scope unit, created over
 * D-Bus (sd-bus) with the container's first process in it and Delegate=yes. Resources systemd
 * knows are passed as unit properties (so systemd keeps them when it re-applies its own view);
 * cgroup.c then writes every resource to the scope's files as the cgroupfs driver does. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cgroup/internal.h"
#include "util/cleanup.h"
#include "util/log.h"
#include "util/host_root.h"

#include <dlfcn.h>
#include <systemd/sd-bus.h>

/* libsystemd (and the five libraries it pulls in: gcrypt, lzma, zstd, lz4, gpg-error) is loaded
 * only when the systemd driver talks to the bus: linked at build time, the dynamic loader mapped
 * it on every start of every command, about 1.1 ms of CPU and 90 page faults each (issue 7). */
#define SD_BUS_FUNCTIONS                                                                                     \
  X(sd_bus_call)                                                                                             \
  X(sd_bus_call_method)                                                                                      \
  X(sd_bus_error_free)                                                                                       \
  X(sd_bus_error_get_errno)                                                                                  \
  X(sd_bus_error_has_name)                                                                                   \
  X(sd_bus_error_is_set)                                                                                     \
  X(sd_bus_flush_close_unref)                                                                                \
  X(sd_bus_match_signal)                                                                                     \
  X(sd_bus_message_append)                                                                                   \
  X(sd_bus_message_append_array)                                                                             \
  X(sd_bus_message_close_container)                                                                          \
  X(sd_bus_message_new_method_call)                                                                          \
  X(sd_bus_message_open_container)                                                                           \
  X(sd_bus_message_read)                                                                                     \
  X(sd_bus_message_unref)                                                                                    \
  X(sd_bus_new)                                                                                              \
  X(sd_bus_open_system)                                                                                      \
  X(sd_bus_open_user)                                                                                        \
  X(sd_bus_process)                                                                                          \
  X(sd_bus_set_address)                                                                                      \
  X(sd_bus_slot_unref)                                                                                       \
  X(sd_bus_start)                                                                                            \
  X(sd_bus_unref)                                                                                            \
  X(sd_bus_wait)

static struct {
#define X(name) typeof(name) *name;
  SD_BUS_FUNCTIONS
#undef X
} sd_api;

static int sd_api_load(struct cm_error **err) {
  static void *lib;
  if (lib != NULL)
    return 0;
  void *h = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL)
    return cm_error_set(err, 0, "systemd cgroup driver: load libsystemd.so.0: %s", dlerror());
#define X(name)                                                                                              \
  if ((sd_api.name = (typeof(name) *)dlsym(h, #name)) == NULL) {                                             \
    dlclose(h);                                                                                              \
    return cm_error_set(err, 0, "systemd cgroup driver: libsystemd.so.0 has no %s", #name);                  \
  }
  SD_BUS_FUNCTIONS
#undef X
  lib = h;
  return 0;
}

#define sd_bus_call (*sd_api.sd_bus_call)
#define sd_bus_call_method (*sd_api.sd_bus_call_method)
#define sd_bus_error_free (*sd_api.sd_bus_error_free)
#define sd_bus_error_get_errno (*sd_api.sd_bus_error_get_errno)
#define sd_bus_error_has_name (*sd_api.sd_bus_error_has_name)
#define sd_bus_error_is_set (*sd_api.sd_bus_error_is_set)
#define sd_bus_flush_close_unref (*sd_api.sd_bus_flush_close_unref)
#define sd_bus_match_signal (*sd_api.sd_bus_match_signal)
#define sd_bus_message_append (*sd_api.sd_bus_message_append)
#define sd_bus_message_append_array (*sd_api.sd_bus_message_append_array)
#define sd_bus_message_close_container (*sd_api.sd_bus_message_close_container)
#define sd_bus_message_new_method_call (*sd_api.sd_bus_message_new_method_call)
#define sd_bus_message_open_container (*sd_api.sd_bus_message_open_container)
#define sd_bus_message_read (*sd_api.sd_bus_message_read)
#define sd_bus_message_unref (*sd_api.sd_bus_message_unref)
#define sd_bus_new (*sd_api.sd_bus_new)
#define sd_bus_open_system (*sd_api.sd_bus_open_system)
#define sd_bus_open_user (*sd_api.sd_bus_open_user)
#define sd_bus_process (*sd_api.sd_bus_process)
#define sd_bus_set_address (*sd_api.sd_bus_set_address)
#define sd_bus_slot_unref (*sd_api.sd_bus_slot_unref)
#define sd_bus_start (*sd_api.sd_bus_start)
#define sd_bus_unref (*sd_api.sd_bus_unref)
#define sd_bus_wait (*sd_api.sd_bus_wait)

#define SD_DEST "org.freedesktop.systemd1"
#define SD_PATH "/org/freedesktop/systemd1"
#define SD_MANAGER "org.freedesktop.systemd1.Manager"
#define SD_INFINITY UINT64_MAX
/* How long to wait for systemd to finish a start/stop job. */
#define JOB_TIMEOUT_USEC (30ULL * 1000000ULL)

/* Not root: the user's own manager (systemd --user), at $XDG_RUNTIME_DIR (runtime/rootless.h). */
static bool user_manager(void) {
  return !cm_host_root();
}

int cg_systemd_check_running(struct cm_error **err) {
  struct stat st;
  if (user_manager()) {
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    char path[4096];
    snprintf(path, sizeof(path), "%s/systemd/private", xdg ? xdg : "");
    if (xdg == NULL || stat(path, &st) < 0)
      return cm_error_set(err, 0, "systemd cgroup driver: no systemd user manager for uid %u (no %s)", cm_host_uid(),
                          xdg ? path : "XDG_RUNTIME_DIR");
    return 0;
  }
  /* sd_booted()'s test: this directory exists only when systemd is PID 1. Falling back to
   * cgroupfs silently would put the container where the caller (Docker, kubelet) does not look. */
  if (stat("/run/systemd/system", &st) < 0 || !S_ISDIR(st.st_mode))
    return cm_error_set(err, 0, "systemd cgroup driver: systemd is not running (no /run/systemd/system)");
  return 0;
}

/* A unit name component: systemd's allowed characters, so a config cannot smuggle a '/' or a
 * different unit type into the name. */
static bool valid_unit_chars(const char *s) {
  if (*s == '\0')
    return false;
  for (; *s; s++) {
    char c = *s;
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr(":-_.\\@", c)))
      return false;
  }
  return true;
}

static bool ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* "a-b-c.slice" → "/a.slice/a-b.slice/a-b-c.slice"; "-.slice" → "". */
static char *slice_path(const char *slice) {
  if (strcmp(slice, "-.slice") == 0) {
    char *root = strdup("");
    if (root == NULL)
      abort();
    return root;
  }
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  if (f == NULL)
    abort();
  size_t stem = strlen(slice) - strlen(".slice");
  for (size_t i = 0; i <= stem; i++) {
    if (i == stem || slice[i] == '-')
      fprintf(f, "/%.*s.slice", (int)i, slice);
  }
  fclose(f);
  return out;
}

int cg_systemd_parse_path(const char *id, const char *cgroups_path, char **slice, char **unit, char **path,
                          struct cm_error **err) {
  cleanup_free char *copy = NULL;
  if (cgroups_path == NULL || cgroups_path[0] == '\0') {
    if (asprintf(&copy, "system.slice:codemode:%s", id) < 0)
      abort();
  } else {
    copy = strdup(cgroups_path);
    if (copy == NULL)
      abort();
  }
  char *first = strchr(copy, ':');
  char *second = first ? strchr(first + 1, ':') : NULL;
  if (first == NULL || second == NULL || strchr(second + 1, ':') != NULL)
    return cm_error_set(err, EINVAL,
                        "linux.cgroupsPath: \"%s\": the systemd cgroup driver expects \"slice:prefix:name\" "
                        "(e.g. system.slice:codemode:%s)",
                        cgroups_path, id);
  *first = *second = '\0';
  const char *s = copy[0] ? copy : "system.slice", *prefix = first + 1, *name = second + 1;
  /* Slice names nest by '-' ("a-b.slice" is in "a.slice"): no empty part, except the root "-.slice". */
  bool root_slice = strcmp(s, "-.slice") == 0;
  if (!valid_unit_chars(s) || !ends_with(s, ".slice") || strlen(s) == strlen(".slice") ||
      (!root_slice && (strstr(s, "--") != NULL || s[0] == '-' || s[strlen(s) - strlen(".slice") - 1] == '-')))
    return cm_error_set(err, EINVAL, "linux.cgroupsPath: \"%s\": \"%s\" is not a valid slice name",
                        cgroups_path, s);
  if (ends_with(name, ".slice"))
    return cm_error_set(err, ENOTSUP,
                        "linux.cgroupsPath: \"%s\": a slice as the container's unit is not supported",
                        cgroups_path);
  char *u = NULL;
  if (ends_with(name, ".scope"))
    u = strdup(name);
  else if (asprintf(&u, "%s%s%s.scope", prefix, prefix[0] ? "-" : "", name) < 0)
    abort();
  if (u == NULL)
    abort();
  if (!valid_unit_chars(u) || strcmp(u, ".scope") == 0 || u[0] == '.') {
    cm_error_set(err, EINVAL, "linux.cgroupsPath: \"%s\": \"%s\" is not a valid unit name", cgroups_path, u);
    free(u);
    return -1;
  }
  cleanup_free char *parent = slice_path(s);
  if (asprintf(path, "%s/%s", parent, u) < 0)
    abort();
  *slice = strdup(s);
  if (*slice == NULL)
    abort();
  *unit = u;
  return 0;
}

/* The system bus, or systemd's private socket when no dbus-daemon runs (systemd as PID 1
 * without dbus still answers there). */
static int bus_open(sd_bus **out, struct cm_error **err) {
  if (sd_api_load(err) < 0)
    return -1;
  bool user = user_manager();
  int r = user ? sd_bus_open_user(out) : sd_bus_open_system(out);
  if (r >= 0)
    return 0;
  int first = -r;
  char address[4200] = "unix:path=/run/systemd/private";
  if (user) {
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    snprintf(address, sizeof(address), "unix:path=%s/systemd/private", xdg ? xdg : "/nonexistent");
  }
  sd_bus *bus = NULL;
  if (sd_bus_new(&bus) >= 0 && sd_bus_set_address(bus, address) >= 0 && sd_bus_start(bus) >= 0) {
    *out = bus;
    return 0;
  }
  sd_bus_unref(bus);
  return cm_error_set(err, first, "systemd cgroup driver: connect to the %s bus", user ? "user's" : "system");
}

static int bus_fail(struct cm_error **err, int r, const sd_bus_error *e, const char *what, const char *unit) {
  if (e != NULL && sd_bus_error_is_set(e))
    return cm_error_set(err, sd_bus_error_get_errno(e), "systemd: %s %s: %s", what, unit,
                        e->message ? e->message : e->name);
  return cm_error_set(err, r < 0 ? -r : EIO, "systemd: %s %s", what, unit);
}

/* --- unit properties ------------------------------------------------------------------------ */

static int append_u64(sd_bus_message *m, const char *name, uint64_t v) {
  return sd_bus_message_append(m, "(sv)", name, "t", v);
}

/* "0-3,6" → systemd's CPU/NUMA mask (bit i of byte i/8). */
static int list_to_mask(const char *list, uint8_t **mask, size_t *len) {
  *mask = NULL;
  *len = 0;
  const char *p = list;
  while (*p) {
    while (*p == ',' || *p == ' ' || *p == '\n')
      p++;
    if (*p == '\0')
      break;
    char *end;
    unsigned long lo = strtoul(p, &end, 10), hi = lo;
    if (end == p)
      return -1;
    p = end;
    if (*p == '-') {
      hi = strtoul(p + 1, &end, 10);
      if (end == p + 1 || hi < lo)
        return -1;
      p = end;
    }
    if (hi >= 8192)
      return -1;
    if (hi / 8 + 1 > *len) {
      uint8_t *bigger = realloc(*mask, hi / 8 + 1);
      if (bigger == NULL)
        abort();
      memset(bigger + *len, 0, hi / 8 + 1 - *len);
      *mask = bigger;
      *len = hi / 8 + 1;
    }
    for (unsigned long i = lo; i <= hi; i++)
      (*mask)[i / 8] |= (uint8_t)(1u << (i % 8));
    if (*p != '\0' && *p != ',' && *p != '\n')
      return -1;
  }
  return 0;
}

static int append_mask(sd_bus_message *m, const char *name, const char *list) {
  uint8_t *mask = NULL;
  size_t len = 0;
  if (list_to_mask(list, &mask, &len) < 0) {
    free(mask);
    return -EINVAL;
  }
  int r = sd_bus_message_open_container(m, 'r', "sv");
  if (r >= 0)
    r = sd_bus_message_append(m, "s", name);
  if (r >= 0)
    r = sd_bus_message_open_container(m, 'v', "ay");
  if (r >= 0)
    r = sd_bus_message_append_array(m, 'y', mask, len);
  if (r >= 0)
    r = sd_bus_message_close_container(m);
  if (r >= 0)
    r = sd_bus_message_close_container(m);
  free(mask);
  return r;
}

/* The resources systemd has properties for, on the unified hierarchy (where its property names
 * mean the cgroup2 files). Values it would reject are left out here: writing the files afterwards
 * reports them with the config field's name. */
static int append_resources(sd_bus_message *m, const struct spec_resources *r) {
  int rc = 0;
  const struct spec_memory *mem = &r->memory;
  if (mem->limit.set && mem->limit.value != 0)
    rc = append_u64(m, "MemoryMax", mem->limit.value < 0 ? SD_INFINITY : (uint64_t)mem->limit.value);
  if (rc >= 0 && mem->reservation.set)
    rc = append_u64(m, "MemoryLow",
                    mem->reservation.value < 0 ? SD_INFINITY : (uint64_t)mem->reservation.value);
  if (rc >= 0 && mem->swap.set && mem->swap.value != 0) {
    /* OCI swap is memory+swap; MemorySwapMax is swap alone. */
    if (mem->swap.value < 0)
      rc = append_u64(m, "MemorySwapMax", SD_INFINITY);
    else if (mem->limit.set && mem->limit.value > 0 && mem->swap.value >= mem->limit.value)
      rc = append_u64(m, "MemorySwapMax", (uint64_t)(mem->swap.value - mem->limit.value));
  }
  const struct spec_cpu *c = &r->cpu;
  if (rc >= 0 && c->shares.set && c->shares.value != 0)
    rc = append_u64(m, "CPUWeight", cg_cpu_shares_to_weight(c->shares.value));
  if (rc >= 0 && c->quota.set) {
    uint64_t period = c->period.set && c->period.value ? c->period.value : 100000;
    uint64_t per_sec = SD_INFINITY;
    if (c->quota.value > 0) {
      /* systemd keeps CPU quota in 10 ms per second steps: round up, never below the asked
       * share. The exact "quota period" is written to cpu.max afterwards. */
      per_sec = (uint64_t)c->quota.value * 1000000ULL / period;
      per_sec = (per_sec + 9999) / 10000 * 10000;
    }
    rc = append_u64(m, "CPUQuotaPerSecUSec", per_sec);
    if (rc >= 0 && c->period.set && c->period.value)
      rc = append_u64(m, "CPUQuotaPeriodUSec", c->period.value);
  }
  if (rc >= 0 && c->cpus && c->cpus[0] && append_mask(m, "AllowedCPUs", c->cpus) == -EINVAL)
    cm_debug("systemd: AllowedCPUs: cannot parse \"%s\"; only written to cpuset.cpus", c->cpus);
  if (rc >= 0 && c->mems && c->mems[0] && append_mask(m, "AllowedMemoryNodes", c->mems) == -EINVAL)
    cm_debug("systemd: AllowedMemoryNodes: cannot parse \"%s\"; only written to cpuset.mems", c->mems);
  if (rc >= 0 && cg_pids_set(r))
    rc = append_u64(m, "TasksMax", r->pids_limit > 0 ? (uint64_t)r->pids_limit : SD_INFINITY);
  if (rc >= 0 && r->block_io.has_weight && r->block_io.weight != 0)
    rc = append_u64(m, "IOWeight", cg_blkio_to_io_weight(r->block_io.weight));
  return rc;
}

/* --- jobs ----------------------------------------------------------------------------------- */

struct job_wait {
  char *job;    /* the job we wait for, once known */
  char *result; /* its result, once removed */
  /* JobRemoved signals seen before the job's path was known (a fast job). */
  char **seen_jobs, **seen_results;
  size_t n_seen;
};

static int on_job_removed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
  (void)ret_error;
  struct job_wait *w = userdata;
  uint32_t id;
  const char *job, *unit, *result;
  if (sd_bus_message_read(m, "uoss", &id, &job, &unit, &result) < 0)
    return 0;
  if (w->job != NULL) {
    if (strcmp(job, w->job) == 0 && w->result == NULL && (w->result = strdup(result)) == NULL)
      abort();
    return 0;
  }
  char **j = realloc(w->seen_jobs, (w->n_seen + 1) * sizeof(char *));
  char **r = j ? realloc(w->seen_results, (w->n_seen + 1) * sizeof(char *)) : NULL;
  if (j == NULL || r == NULL)
    abort();
  w->seen_jobs = j;
  w->seen_results = r;
  w->seen_jobs[w->n_seen] = strdup(job);
  w->seen_results[w->n_seen] = strdup(result);
  w->n_seen++;
  return 0;
}

static void job_wait_free(struct job_wait *w) {
  for (size_t i = 0; i < w->n_seen; i++) {
    free(w->seen_jobs[i]);
    free(w->seen_results[i]);
  }
  free(w->seen_jobs);
  free(w->seen_results);
  free(w->job);
  free(w->result);
}

static uint64_t now_usec(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000ULL + (uint64_t)ts.tv_nsec / 1000ULL;
}

/* Wait until systemd reports the job removed; its result ("done" is success) in w->result. */
static int job_wait_finish(sd_bus *bus, struct job_wait *w, const char *job, const char *what,
                           const char *unit, struct cm_error **err) {
  if ((w->job = strdup(job)) == NULL)
    abort();
  for (size_t i = 0; i < w->n_seen && w->result == NULL; i++)
    if (strcmp(w->seen_jobs[i], job) == 0 && (w->result = strdup(w->seen_results[i])) == NULL)
      abort();
  uint64_t deadline = now_usec() + JOB_TIMEOUT_USEC;
  while (w->result == NULL) {
    int r = sd_bus_process(bus, NULL);
    if (r < 0)
      return cm_error_set(err, -r, "systemd: %s %s: waiting for job %s", what, unit, job);
    if (r > 0)
      continue;
    uint64_t now = now_usec();
    if (now >= deadline)
      return cm_error_set(err, ETIMEDOUT, "systemd: %s %s: job %s did not finish in %llu s", what, unit, job,
                          (unsigned long long)(JOB_TIMEOUT_USEC / 1000000ULL));
    r = sd_bus_wait(bus, deadline - now);
    if (r < 0 && r != -EINTR)
      return cm_error_set(err, -r, "systemd: %s %s: waiting for job %s", what, unit, job);
  }
  return 0;
}

/* Subscribe and watch JobRemoved before calling, so a job that finishes at once is not missed. */
static int watch_jobs(sd_bus *bus, sd_bus_slot **slot, struct job_wait *w, struct cm_error **err) {
  int r = sd_bus_match_signal(bus, slot, NULL, SD_PATH, SD_MANAGER, "JobRemoved", on_job_removed, w);
  if (r < 0)
    return cm_error_set(err, -r, "systemd: watch JobRemoved");
  sd_bus_error e = SD_BUS_ERROR_NULL;
  /* systemd only sends job signals to subscribed clients (and on its private socket, only then). */
  r = sd_bus_call_method(bus, SD_DEST, SD_PATH, SD_MANAGER, "Subscribe", &e, NULL, "");
  if (r < 0)
    cm_debug("systemd: Subscribe: %s", e.message ? e.message : strerror(-r));
  sd_bus_error_free(&e);
  return 0;
}

/* --- the driver's operations ---------------------------------------------------------------- */

int cg_systemd_start_scope(const char *slice, const char *unit, const char *description, pid_t pid,
                           const struct spec_resources *r, bool unified, struct cm_error **err) {
  sd_bus *bus = NULL;
  if (bus_open(&bus, err) < 0)
    return -1;
  sd_bus_slot *slot = NULL;
  struct job_wait w = {0};
  sd_bus_message *m = NULL, *reply = NULL;
  sd_bus_error e = SD_BUS_ERROR_NULL;
  int rc = -1, q;
  if (watch_jobs(bus, &slot, &w, err) < 0)
    goto out;
  q = sd_bus_message_new_method_call(bus, &m, SD_DEST, SD_PATH, SD_MANAGER, "StartTransientUnit");
  if (q >= 0)
    q = sd_bus_message_append(m, "ss", unit, "fail");
  if (q >= 0)
    q = sd_bus_message_open_container(m, 'a', "(sv)");
  if (q >= 0)
    q = sd_bus_message_append(m, "(sv)(sv)(sv)(sv)", "Description", "s", description, "Slice", "s", slice,
                              "PIDs", "au", 1, (uint32_t)pid, "Delegate", "b", 1);
  /* Like runc: no implicit ordering against shutdown.target etc.; the runtime decides when the
   * container stops. */
  if (q >= 0)
    q = sd_bus_message_append(m, "(sv)", "DefaultDependencies", "b", 0);
  if (q >= 0 && unified)
    q = sd_bus_message_append(m, "(sv)(sv)(sv)(sv)", "MemoryAccounting", "b", 1, "CPUAccounting", "b", 1,
                              "IOAccounting", "b", 1, "TasksAccounting", "b", 1);
  if (q >= 0 && unified && r != NULL)
    q = append_resources(m, r);
  if (q >= 0)
    q = sd_bus_message_close_container(m);
  if (q >= 0)
    q = sd_bus_message_append(m, "a(sa(sv))", 0);
  if (q < 0) {
    cm_error_set(err, -q, "systemd: StartTransientUnit %s: build the request", unit);
    goto out;
  }
  q = sd_bus_call(bus, m, 0, &e, &reply);
  if (q < 0) {
    bus_fail(err, q, &e, "StartTransientUnit", unit);
    goto out;
  }
  const char *job = NULL;
  if ((q = sd_bus_message_read(reply, "o", &job)) < 0) {
    bus_fail(err, q, NULL, "StartTransientUnit (reply)", unit);
    goto out;
  }
  if (job_wait_finish(bus, &w, job, "start", unit, err) < 0)
    goto out;
  if (strcmp(w.result, "done") != 0) {
    cm_error_set(err, 0, "systemd: start %s: job %s (see journalctl -u %s)", unit, w.result, unit);
    goto out;
  }
  rc = 0;
out:
  sd_bus_error_free(&e);
  sd_bus_message_unref(reply);
  sd_bus_message_unref(m);
  sd_bus_slot_unref(slot);
  job_wait_free(&w);
  sd_bus_flush_close_unref(bus);
  return rc;
}

int cg_systemd_set_properties(const char *unit, const struct spec_resources *r, struct cm_error **err) {
  sd_bus *bus = NULL;
  if (bus_open(&bus, err) < 0)
    return -1;
  sd_bus_message *m = NULL;
  sd_bus_error e = SD_BUS_ERROR_NULL;
  int rc = 0;
  int q = sd_bus_message_new_method_call(bus, &m, SD_DEST, SD_PATH, SD_MANAGER, "SetUnitProperties");
  /* runtime=true: for this boot only, like the transient unit itself. */
  if (q >= 0)
    q = sd_bus_message_append(m, "sb", unit, 1);
  if (q >= 0)
    q = sd_bus_message_open_container(m, 'a', "(sv)");
  if (q >= 0)
    q = append_resources(m, r);
  if (q >= 0)
    q = sd_bus_message_close_container(m);
  if (q < 0)
    rc = cm_error_set(err, -q, "systemd: SetUnitProperties %s: build the request", unit);
  else if ((q = sd_bus_call(bus, m, 0, &e, NULL)) < 0)
    rc = bus_fail(err, q, &e, "SetUnitProperties", unit);
  sd_bus_error_free(&e);
  sd_bus_message_unref(m);
  sd_bus_flush_close_unref(bus);
  return rc;
}

int cg_systemd_stop_scope(const char *unit, struct cm_error **err) {
  sd_bus *bus = NULL;
  if (bus_open(&bus, err) < 0)
    return -1;
  sd_bus_slot *slot = NULL;
  struct job_wait w = {0};
  sd_bus_message *reply = NULL;
  sd_bus_error e = SD_BUS_ERROR_NULL;
  int rc = -1;
  if (watch_jobs(bus, &slot, &w, err) < 0)
    goto out;
  int q =
      sd_bus_call_method(bus, SD_DEST, SD_PATH, SD_MANAGER, "StopUnit", &e, &reply, "ss", unit, "replace");
  if (q < 0) {
    /* A scope whose processes all exited is gone already: nothing to stop. */
    if (sd_bus_error_has_name(&e, "org.freedesktop.systemd1.NoSuchUnit"))
      rc = 0;
    else
      bus_fail(err, q, &e, "StopUnit", unit);
    goto reset;
  }
  const char *job = NULL;
  if ((q = sd_bus_message_read(reply, "o", &job)) < 0) {
    bus_fail(err, q, NULL, "StopUnit (reply)", unit);
    goto out;
  }
  if (job_wait_finish(bus, &w, job, "stop", unit, err) < 0)
    goto out;
  if (strcmp(w.result, "done") != 0)
    cm_debug("systemd: stop %s: job %s", unit, w.result);
  rc = 0;
reset:
  sd_bus_error_free(&e);
  /* A failed scope stays listed (and its name taken) until its failed state is reset. */
  q = sd_bus_call_method(bus, SD_DEST, SD_PATH, SD_MANAGER, "ResetFailedUnit", &e, NULL, "s", unit);
  if (q < 0 && !sd_bus_error_has_name(&e, "org.freedesktop.systemd1.NoSuchUnit"))
    cm_debug("systemd: ResetFailedUnit %s: %s", unit, e.message ? e.message : strerror(-q));
out:
  sd_bus_error_free(&e);
  sd_bus_message_unref(reply);
  sd_bus_slot_unref(slot);
  job_wait_free(&w);
  sd_bus_flush_close_unref(bus);
  return rc;
}
