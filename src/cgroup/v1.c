/* cgroup v1 mechanics: finding the hierarchies, creating our directory in each, the freezer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cgroup/internal.h"
#include "spec/json_util.h"
#include "util/cleanup.h"
#include "util/log.h"

static void sleep_ms(long ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
    ;
}

static const char *const known_controllers[] = {
    "cpu",   "cpuacct",    "cpuset",  "memory", "devices", "freezer", "net_cls", "net_prio",
    "blkio", "perf_event", "hugetlb", "pids",   "rdma",    "misc",    "debug",   NULL,
};

static bool is_controller_option(const char *opt, size_t len) {
  if (len > 5 && strncmp(opt, "name=", 5) == 0)
    return true;
  for (size_t i = 0; known_controllers[i]; i++)
    if (strlen(known_controllers[i]) == len && strncmp(known_controllers[i], opt, len) == 0)
      return true;
  return false;
}

/* "rw,nosuid,cpu,cpuacct" → "cpu,cpuacct" (controllers and name= only). */
static char *controllers_from_superopts(const char *opts) {
  char *out = NULL;
  size_t out_len = 0;
  FILE *f = open_memstream(&out, &out_len);
  if (f == NULL)
    abort();
  const char *p = opts;
  bool first = true;
  while (*p) {
    size_t len = strcspn(p, ",");
    if (is_controller_option(p, len)) {
      fprintf(f, "%s%.*s", first ? "" : ",", (int)len, p);
      first = false;
    }
    p += len;
    if (*p == ',')
      p++;
  }
  fclose(f);
  if (out_len == 0) {
    free(out);
    return NULL;
  }
  return out;
}

/* The v1 hierarchies of one mount namespace, as mountinfo listed them: read once per process
 * and namespace. codemode-run looked them up twice in its own namespace (the create, and the
 * delete that ends the run), and the kernel formats all of mountinfo each time: under --host,
 * some 60 mounts. Keyed by the namespace's inode, so a process that has since unshared its
 * mounts reads its own, and a fork (same namespace, same mounts) inherits a valid copy. One
 * thread: nothing in codemode calls the cgroup code from two at once. */
struct v1_seen {
  char *mountpoint;
  char *controllers;
};
static struct {
  dev_t ns_dev;
  ino_t ns_ino;
  bool valid;
  struct v1_seen *list;
  size_t n;
} v1_cache;

static void v1_cache_drop(void) {
  for (size_t i = 0; i < v1_cache.n; i++) {
    free(v1_cache.list[i].mountpoint);
    free(v1_cache.list[i].controllers);
  }
  free(v1_cache.list);
  v1_cache.list = NULL;
  v1_cache.n = 0;
  v1_cache.valid = false;
}

static int v1_scan_mountinfo(struct cm_error **err) {
  v1_cache_drop();
  cleanup_fclose FILE *f = fopen("/proc/self/mountinfo", "re");
  if (f == NULL)
    return cm_error_set(err, errno, "open /proc/self/mountinfo");
  cleanup_free char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, f) > 0) {
    /* "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [optional…] - FSTYPE SOURCE SUPEROPTS" */
    char *sep = strstr(line, " - ");
    if (sep == NULL || strncmp(sep + 3, "cgroup ", 7) != 0)
      continue;
    char fstype[32], source[256], superopts[1024];
    if (sscanf(sep + 3, "%31s %255s %1023s", fstype, source, superopts) != 3)
      continue;
    char root[4096], mountpoint[4096];
    if (sscanf(line, "%*s %*s %*s %4095s %4095s", root, mountpoint) != 2)
      continue;
    cleanup_free char *controllers = controllers_from_superopts(superopts);
    if (controllers == NULL)
      continue;
    bool seen = false;
    for (size_t i = 0; i < v1_cache.n && !seen; i++)
      seen = strcmp(v1_cache.list[i].controllers, controllers) == 0;
    if (seen)
      continue; /* the same hierarchy bind-mounted twice */
    struct v1_seen *bigger = realloc(v1_cache.list, (v1_cache.n + 1) * sizeof(*bigger));
    if (bigger == NULL)
      abort();
    v1_cache.list = bigger;
    v1_cache.list[v1_cache.n++] =
        (struct v1_seen){.mountpoint = xstrdup(mountpoint), .controllers = cm_steal_ptr(&controllers)};
  }
  return 0;
}

int cg_v1_discover(struct cgroup *cg, struct cm_error **err) {
  struct stat ns = {0};
  bool ns_known = stat("/proc/self/ns/mnt", &ns) == 0;
  if (!ns_known || !v1_cache.valid || ns.st_dev != v1_cache.ns_dev || ns.st_ino != v1_cache.ns_ino) {
    if (v1_scan_mountinfo(err) < 0)
      return -1;
    /* No namespace to key on (no procfs): read again next time. */
    v1_cache.valid = ns_known;
    v1_cache.ns_dev = ns.st_dev;
    v1_cache.ns_ino = ns.st_ino;
  }
  for (size_t k = 0; k < v1_cache.n; k++) {
    struct cgroup_v1_hierarchy *bigger = realloc(cg->v1, (cg->n_v1 + 1) * sizeof(*bigger));
    if (bigger == NULL)
      abort();
    cg->v1 = bigger;
    struct cgroup_v1_hierarchy *h = &cg->v1[cg->n_v1++];
    memset(h, 0, sizeof(*h));
    h->existing_depth = -1;
    h->mountpoint = xstrdup(v1_cache.list[k].mountpoint);
    h->controllers = xstrdup(v1_cache.list[k].controllers);
    if (asprintf(&h->dir, "%s%s", h->mountpoint, cg->path) < 0)
      abort();
  }
  return 0;
}

/* The value of a cpuset file of dir, filled in from the nearest ancestor that has one when it is
 * empty. A cpuset cgroup starts with empty cpus and mems and refuses tasks (cgroup.procs:
 * ENOSPC) until both are set, and so does every cgroup below an empty one: a parent someone else
 * made and never used (a pod cgroup made by hand or by a tool) must be filled too, as runc
 * does, not only the directories this run made. Walks up only while a level is empty. */
static char *cpuset_value(const char *mount, const char *dir, const char *file, struct cm_error **err) {
  char *mine = cg_read(dir, file, err);
  if (mine == NULL || (mine[0] != '\0' && mine[0] != '\n'))
    return mine;
  free(mine);
  const char *slash = strrchr(dir, '/');
  /* The hierarchy's root always has every cpu and node; above it is not ours to read. */
  if (strcmp(dir, mount) == 0 || slash == NULL || slash < dir + strlen(mount)) {
    cm_error_set(err, ENOSPC, "%s/%s is empty and there is no parent cgroup to take it from", dir, file);
    return NULL;
  }
  cleanup_free char *parent = strndup(dir, (size_t)(slash - dir));
  if (parent == NULL)
    abort();
  char *theirs = cpuset_value(mount, parent, file, err);
  if (theirs == NULL)
    return NULL;
  if (cg_write(dir, file, theirs, NULL, err) < 0) {
    free(theirs);
    return NULL;
  }
  return theirs;
}

int cg_v1_cpuset_ensure(const char *mount, const char *dir, struct cm_error **err) {
  static const char *const files[] = {"cpuset.cpus", "cpuset.mems"};
  for (size_t i = 0; i < 2; i++) {
    char *value = cpuset_value(mount, dir, files[i], err);
    if (value == NULL)
      return cm_error_prefix(err, "cgroup cpuset");
    free(value);
  }
  return 0;
}

bool cg_v1_is_cpuset(const struct cgroup_v1_hierarchy *h) {
  const char *p = h->controllers;
  while (*p) {
    size_t len = strcspn(p, ",");
    if (len == 6 && strncmp(p, "cpuset", 6) == 0)
      return true;
    p += len;
    if (*p == ',')
      p++;
  }
  return false;
}

int cg_v1_create_dirs(struct cgroup *cg, struct cm_error **err) {
  int all_made = 1;
  for (size_t i = 0; i < cg->n_v1; i++) {
    struct cgroup_v1_hierarchy *h = &cg->v1[i];
    int made = cg_mkdir_p(h->mountpoint, cg->path, &h->existing_depth, err);
    if (made < 0)
      return cm_error_prefix(err, "cgroup %s", h->controllers);
    if (cg_v1_is_cpuset(h) && cg_v1_cpuset_ensure(h->mountpoint, h->dir, err) < 0)
      return -1;
    all_made &= made;
  }
  return all_made;
}

int cg_v1_is_frozen(const char *dir, struct cm_error **err) {
  cleanup_free char *state = cg_read(dir, "freezer.state", err);
  if (state == NULL)
    return -1;
  return strncmp(state, "FROZEN", 6) == 0;
}

int cg_v1_freeze(const char *dir, bool frozen, struct cm_error **err) {
  const char *want = frozen ? "FROZEN" : "THAWED";
  /* A freeze can stay in FREEZING while a task is in an uninterruptible sleep; writing the state
   * again retries it. Give up after about 5 s and thaw, so nothing stays half-frozen. */
  for (int i = 0; i < 500; i++) {
    if (i % 10 == 0 && cg_write(dir, "freezer.state", want, NULL, err) < 0)
      return -1;
    cleanup_free char *state = cg_read(dir, "freezer.state", err);
    if (state == NULL)
      return -1;
    if (strncmp(state, want, strlen(want)) == 0)
      return 0;
    sleep_ms(10);
  }
  if (frozen) {
    struct cm_error *ignored = NULL;
    cg_write(dir, "freezer.state", "THAWED", NULL, &ignored);
    cm_error_free(ignored);
  }
  return cm_error_set(err, ETIMEDOUT, "%s/freezer.state never reached %s", dir, want);
}
