/* The one cgroup interface: detects unified / hybrid / legacy mode, resolves linux.cgroupsPath,
 * and dispatches to the v1 and v2 code. With the systemd driver the cgroup is a transient scope
 * (systemd.c) created when the first process enters; from then on it is handled like a
 * cgroupfs one, plus unit properties on update and StopUnit on destroy. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>
#include <linux/magic.h>

#include "cgroup/cgroup.h"
#include "cgroup/internal.h"
#include "util/cleanup.h"
#include "util/log.h"
#include "util/host_root.h"

#define CGROUP_FS_ROOT "/sys/fs/cgroup"
#define CGROUP_HYBRID_V2_MOUNT CGROUP_FS_ROOT "/unified"
#define DEFAULT_PARENT "/codemode"

static void sleep_ms(long ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
    ;
}

static const char *mode_tag(enum cgroup_mode mode) {
  switch (mode) {
  case CGROUP_MODE_UNIFIED:
    return "v2";
  case CGROUP_MODE_HYBRID:
    return "hybrid";
  case CGROUP_MODE_LEGACY:
    return "v1";
  case CGROUP_MODE_DISABLED:
    return "disabled";
  }
  return "?";
}

static int detect_mode(enum cgroup_mode *mode, struct cm_error **err) {
  struct statfs st;
  if (statfs(CGROUP_FS_ROOT, &st) < 0)
    return cm_error_set(err, errno, "cgroup: statfs %s", CGROUP_FS_ROOT);
  if (st.f_type == CGROUP2_SUPER_MAGIC) {
    *mode = CGROUP_MODE_UNIFIED;
    return 0;
  }
  if (statfs(CGROUP_HYBRID_V2_MOUNT, &st) == 0 && st.f_type == CGROUP2_SUPER_MAGIC)
    *mode = CGROUP_MODE_HYBRID;
  else
    *mode = CGROUP_MODE_LEGACY;
  return 0;
}

/* linux.cgroupsPath → a clean absolute path. Relative paths are taken from the hierarchy root
 * (as crun does), so one path names the same cgroup in every v1 hierarchy. */
static char *resolve_path(const char *id, const char *cgroups_path, struct cm_error **err) {
  cleanup_free char *raw = NULL;
  if (cgroups_path == NULL || cgroups_path[0] == '\0') {
    if (asprintf(&raw, DEFAULT_PARENT "/%s", id) < 0)
      abort();
  } else {
    if (cgroups_path[0] != '/' && strchr(cgroups_path, ':') != NULL) {
      cm_error_set(err, EINVAL,
                   "linux.cgroupsPath: \"%s\" is a systemd-style \"slice:prefix:name\" path; it needs the systemd "
                   "cgroup driver (--systemd-cgroup), or use a path like /codemode/%s",
                   cgroups_path, id);
      return NULL;
    }
    if (asprintf(&raw, "/%s", cgroups_path) < 0)
      abort();
  }
  char *out = malloc(strlen(raw) + 2);
  if (out == NULL)
    abort();
  out[0] = '\0';
  size_t len = 0;
  char *save = NULL;
  for (char *comp = strtok_r(raw, "/", &save); comp != NULL; comp = strtok_r(NULL, "/", &save)) {
    if (strcmp(comp, ".") == 0)
      continue;
    /* ".." would let a config create and later rmdir directories outside the cgroup tree. */
    if (strcmp(comp, "..") == 0) {
      free(out);
      cm_error_set(err, EINVAL, "linux.cgroupsPath: \"%s\" must not contain \"..\"", cgroups_path);
      return NULL;
    }
    len += (size_t)sprintf(out + len, "/%s", comp);
  }
  /* The root cgroup is shared by the whole host: destroying "the container's cgroup" would kill
   * everything. */
  if (len == 0) {
    free(out);
    cm_error_set(err, EINVAL, "linux.cgroupsPath: \"%s\" names the root cgroup", cgroups_path ? cgroups_path : "");
    return NULL;
  }
  return out;
}

static struct cgroup *cgroup_open(enum cgroup_mode mode, const char *path, struct cm_error **err) {
  struct cgroup *cg = calloc(1, sizeof(*cg));
  if (cg == NULL)
    abort();
  cg->mode = mode;
  cg->v2_existing_depth = -1;
  cg->path = strdup(path);
  if (cg->path == NULL)
    abort();
  if (mode == CGROUP_MODE_DISABLED)
    return cg;
  if (mode == CGROUP_MODE_UNIFIED || mode == CGROUP_MODE_HYBRID) {
    cg->v2_mount = strdup(mode == CGROUP_MODE_UNIFIED ? CGROUP_FS_ROOT : CGROUP_HYBRID_V2_MOUNT);
    if (cg->v2_mount == NULL || asprintf(&cg->v2_dir, "%s%s", cg->v2_mount, path) < 0)
      abort();
  }
  if (mode != CGROUP_MODE_UNIFIED && cg_v1_discover(cg, err) < 0) {
    cgroup_free(cg);
    return NULL;
  }
  return cg;
}

void cgroup_free(struct cgroup *cg) {
  if (cg == NULL)
    return;
  for (size_t i = 0; i < cg->n_v1; i++) {
    free(cg->v1[i].mountpoint);
    free(cg->v1[i].controllers);
    free(cg->v1[i].dir);
  }
  free(cg->v1);
  free(cg->v2_mount);
  free(cg->v2_dir);
  free(cg->path);
  free(cg->systemd_unit);
  free(cg->systemd_slice);
  free(cg);
}

/* Point cg at another path (the scope systemd actually made) in every hierarchy. */
static void cgroup_set_path(struct cgroup *cg, const char *path) {
  free(cg->path);
  if ((cg->path = strdup(path)) == NULL)
    abort();
  if (cg->v2_dir != NULL) {
    free(cg->v2_dir);
    if (asprintf(&cg->v2_dir, "%s%s", cg->v2_mount, path) < 0)
      abort();
  }
  for (size_t i = 0; i < cg->n_v1; i++) {
    free(cg->v1[i].dir);
    if (asprintf(&cg->v1[i].dir, "%s%s", cg->v1[i].mountpoint, path) < 0)
      abort();
  }
}

const char *cgroup_path(const struct cgroup *cg) {
  return cg->path;
}

/* The directory whose cgroup.procs lists every process of the container. */
static const char *primary_dir(const struct cgroup *cg) {
  if (cg->v2_dir != NULL)
    return cg->v2_dir;
  static const char *const order[] = {"freezer", "pids", "memory", "devices", NULL};
  for (size_t i = 0; order[i]; i++) {
    struct cgroup_v1_hierarchy *h = cg_v1_find(cg, order[i]);
    if (h != NULL)
      return h->dir;
  }
  return cg->n_v1 > 0 ? cg->v1[0].dir : NULL;
}

/* Undo a failed create: remove what this run made, nothing else. */
static void remove_created(struct cgroup *cg) {
  struct cm_error *ignored = NULL;
  for (size_t i = 0; i < cg->n_v1; i++) {
    if (cg->v1[i].existing_depth >= 0 && cg_rmdir_tree(cg->v1[i].mountpoint, cg->path, cg->v1[i].existing_depth, &ignored) < 0) {
      cm_debug("cgroup: cleanup: %s", ignored->msg);
      cm_error_freep(&ignored);
    }
  }
  if (cg->v2_dir != NULL && cg->v2_existing_depth >= 0 &&
      cg_rmdir_tree(cg->v2_mount, cg->path, cg->v2_existing_depth, &ignored) < 0) {
    cm_debug("cgroup: cleanup: %s", ignored->msg);
    cm_error_freep(&ignored);
  }
}

static int apply_resources(struct cgroup *cg, const struct spec_resources *r, const struct spec_device_rule *rules,
                           size_t n_rules, struct cm_error **err) {
  /* Not root (rootless, in a delegated subtree or a user scope): no device filter, which needs
   * CAP_BPF. Its container cannot make a device node (mknod is refused in a user namespace) and
   * reaches only the host's nodes bound in, as their modes allow. */
  if (!cm_host_root()) {
    rules = NULL;
    n_rules = 0;
  }
  if (cg->mode == CGROUP_MODE_UNIFIED)
    return cg_v2_apply_resources(cg->v2_dir, r, rules, n_rules, err);
  return cg_v1_apply_resources(cg, r, rules, n_rules, err);
}

/* On a unified host every available controller is enabled down to our cgroup. On a hybrid host
 * the cgroup2 tree is mostly there for process tracking: enable its controllers (hugetlb here)
 * only when the resources need one, so the host's tree is not changed for nothing. */
static int enable_v2_controllers(struct cgroup *cg, const struct spec_resources *r, struct cm_error **err) {
  if (cg->mode == CGROUP_MODE_HYBRID &&
      (r == NULL || (r->n_hugepage_limits == 0 && r->n_rdma == 0 && r->unified.count == 0)))
    return 0;
  return cg_v2_enable_controllers(cg->v2_mount, cg->path, err);
}

/* systemd creates the scope together with its first process: here only check that systemd runs
 * and the path names a scope; cgroup_enter starts it. */
static int systemd_create(const char *id, const struct spec_linux *l, struct cgroup **out, struct cm_error **err) {
  if (cg_systemd_check_running(err) < 0)
    return -1;
  cleanup_free char *slice = NULL, *unit = NULL, *path = NULL;
  if (cg_systemd_parse_path(id, l ? l->cgroups_path : NULL, &slice, &unit, &path, err) < 0)
    return -1;
  enum cgroup_mode mode;
  if (detect_mode(&mode, err) < 0)
    return -1;
  struct cgroup *cg = cgroup_open(mode, path, err);
  if (cg == NULL)
    return -1;
  cg->systemd_unit = cm_steal_ptr(&unit);
  cg->systemd_slice = cm_steal_ptr(&slice);
  cg->systemd_pending = true;
  cg->systemd_linux = l;
  *out = cg;
  return 0;
}

/* The scope's cgroup as the kernel reports it for pid: the cgroup2 line ("0::/…"), else v1's
 * name=systemd line. */
static char *pid_cgroup_path(pid_t pid, struct cm_error **err) {
  char file[64];
  snprintf(file, sizeof(file), "/proc/%d/cgroup", (int)pid);
  cleanup_fclose FILE *f = fopen(file, "re");
  if (f == NULL) {
    cm_error_set(err, errno, "open %s", file);
    return NULL;
  }
  cleanup_free char *line = NULL, *named = NULL;
  size_t cap = 0;
  ssize_t n;
  while ((n = getline(&line, &cap, f)) > 0) {
    line[strcspn(line, "\n")] = '\0';
    if (strncmp(line, "0::/", 4) == 0)
      return strdup(line + 3);
    char *p = strstr(line, ":name=systemd:/");
    if (p != NULL && named == NULL)
      named = strdup(p + strlen(":name=systemd:"));
  }
  if (named == NULL)
    cm_error_set(err, ENOENT, "%s: no systemd cgroup line", file);
  return cm_steal_ptr(&named);
}

static int enable_v2_controllers(struct cgroup *cg, const struct spec_resources *r, struct cm_error **err);
static int apply_resources(struct cgroup *cg, const struct spec_resources *r, const struct spec_device_rule *rules,
                           size_t n_rules, struct cm_error **err);

/* Start the scope with pid in it, then do what the cgroupfs driver does on the scope's cgroup:
 * join pid to the v1 hierarchies systemd left out and write every resource. cgroup_destroy
 * undoes all of it. */
static int systemd_enter(struct cgroup *cg, pid_t pid, struct cm_error **err) {
  const struct spec_linux *l = cg->systemd_linux;
  cleanup_free char *description = NULL;
  if (asprintf(&description, "codemode container %s", cg->systemd_unit) < 0)
    abort();
  if (cg_systemd_start_scope(cg->systemd_slice, cg->systemd_unit, description, pid, l ? &l->resources : NULL,
                             cg->mode == CGROUP_MODE_UNIFIED, err) < 0)
    return -1;
  cg->systemd_pending = false;
  cg->systemd_linux = NULL;
  cleanup_free char *actual = pid_cgroup_path(pid, err);
  if (actual == NULL)
    return cm_error_prefix(err, "systemd cgroup driver: find the cgroup of scope %s", cg->systemd_unit);
  if (strcmp(actual, cg->path) != 0) {
    cm_debug("cgroup: scope %s is at %s (expected %s)", cg->systemd_unit, actual, cg->path);
    cgroup_set_path(cg, actual);
  }
  char value[32];
  snprintf(value, sizeof(value), "%d", (int)pid);
  if (cg->n_v1 > 0) {
    if (cg_v1_create_dirs(cg, err) < 0)
      return -1;
    for (size_t i = 0; i < cg->n_v1; i++)
      if (cg_write(cg->v1[i].dir, "cgroup.procs", value, NULL, err) < 0)
        return cm_error_prefix(err, "cgroup: add process %d", (int)pid);
  }
  if (cg->v2_dir != NULL && enable_v2_controllers(cg, l ? &l->resources : NULL, err) < 0)
    return cm_error_prefix(err, "cgroup");
  if (l != NULL) {
    size_t n_rules = 0;
    cleanup_free struct spec_device_rule *rules = cg_device_rules(&l->resources, l->devices, l->n_devices, &n_rules);
    if (apply_resources(cg, &l->resources, rules, n_rules, err) < 0)
      return -1;
  }
  return 0;
}

/* A process put in a frozen cgroup does not run until someone thaws it: create would wait for
 * init forever. The leaf reports a freeze of any cgroup above it
 * too (v1 freezer.state FROZEN or FREEZING, v2 cgroup.events "frozen 1"), so one read per
 * hierarchy that can freeze tells. */
int cgroup_refuse_frozen(const struct cgroup *cg, struct cm_error **err) {
  const char *frozen_at = NULL;
  struct cgroup_v1_hierarchy *h = cg_v1_find(cg, "freezer");
  cleanup_free char *state = h != NULL ? cg_read(h->dir, "freezer.state", NULL) : NULL;
  if (state != NULL && strncmp(state, "THAWED", 6) != 0)
    frozen_at = h->dir;
  else if (cg->v2_dir != NULL && cg_v2_frozen_effective(cg->v2_dir) == 1)
    frozen_at = cg->v2_dir;
  if (frozen_at == NULL)
    return 0;
  return cm_error_set(err, 0,
                      "cgroup %s is frozen (%s: it, or a cgroup above it, is paused): a process put in it could not "
                      "run; thaw it first",
                      cg->path, frozen_at);
}

static int create(const char *id, const struct spec_linux *l, enum cgroup_manager mgr, bool with_resources,
                  struct cgroup **out, struct cm_error **err) {
  *out = NULL;
  if (mgr == CGROUP_MANAGER_SYSTEMD)
    return systemd_create(id, l, out, err);
  cleanup_free char *path = resolve_path(id, l ? l->cgroups_path : NULL, err);
  if (path == NULL)
    return -1;
  enum cgroup_mode mode = CGROUP_MODE_DISABLED;
  if (mgr != CGROUP_MANAGER_DISABLED && detect_mode(&mode, err) < 0)
    return -1;
  struct cgroup *cg = cgroup_open(mode, path, err);
  if (cg == NULL)
    return -1;
  if (mode == CGROUP_MODE_DISABLED) {
    *out = cg;
    return 0;
  }

  int made = cg_v1_create_dirs(cg, err);
  if (made < 0)
    goto fail;
  if (cg->v2_dir != NULL) {
    int made_v2 = cg_mkdir_p(cg->v2_mount, cg->path, &cg->v2_existing_depth, err);
    if (made_v2 < 0 || enable_v2_controllers(cg, l ? &l->resources : NULL, err) < 0) {
      cm_error_prefix(err, "cgroup");
      goto fail;
    }
    made &= made_v2;
  }
  if (cgroup_refuse_frozen(cg, err) < 0)
    goto fail;
  /* Reusing a cgroup is fine only when it is empty: otherwise update/kill/delete would act on
   * processes that are not the container's. A directory we just made is. */
  if (!made) {
    pid_t *pids = NULL;
    size_t n = 0;
    if (cgroup_pids(cg, &pids, &n, err) < 0)
      goto fail;
    free(pids);
    if (n > 0) {
      cm_error_set(err, EBUSY, "cgroup %s already exists and has processes in it", cg->path);
      goto fail;
    }
  }
  if (with_resources && l != NULL && cgroup_apply_resources(cg, l, err) < 0)
    goto fail;
  *out = cg;
  return 0;

fail:
  remove_created(cg);
  cgroup_free(cg);
  return -1;
}

int cgroup_create(const char *id, const struct spec_linux *l, enum cgroup_manager mgr, struct cgroup **out,
                  struct cm_error **err) {
  return create(id, l, mgr, true, out, err);
}

int cgroup_create_without_resources(const char *id, const struct spec_linux *l, enum cgroup_manager mgr,
                                    struct cgroup **out, struct cm_error **err) {
  return create(id, l, mgr, false, out, err);
}

int cgroup_apply_resources(struct cgroup *cg, const struct spec_linux *l, struct cm_error **err) {
  /* The systemd driver applies them when it starts the scope (cgroup_enter). */
  if (cg->mode == CGROUP_MODE_DISABLED || cg->systemd_unit != NULL)
    return 0;
  size_t n_rules = 0;
  cleanup_free struct spec_device_rule *rules = cg_device_rules(&l->resources, l->devices, l->n_devices, &n_rules);
  return apply_resources(cg, &l->resources, rules, n_rules, err);
}

int cgroup_enter(struct cgroup *cg, pid_t pid, struct cm_error **err) {
  if (cg->mode == CGROUP_MODE_DISABLED)
    return 0;
  if (cg->systemd_pending)
    return systemd_enter(cg, pid, err);
  char value[32];
  snprintf(value, sizeof(value), "%d", (int)pid);
  for (size_t i = 0; i < cg->n_v1 && !cg->v1_self_attached; i++)
    if (cg_write(cg->v1[i].dir, "cgroup.procs", value, NULL, err) < 0)
      return cm_error_prefix(err, "cgroup: add process %d", (int)pid);
  if (cg->v2_dir != NULL && !cg->v2_cloned_into && cg_write(cg->v2_dir, "cgroup.procs", value, NULL, err) < 0)
    return cm_error_prefix(err, "cgroup: add process %d", (int)pid);
  return 0;
}

int cgroup_add_process(struct cgroup *cg, pid_t pid, struct cm_error **err) {
  if (cg->mode == CGROUP_MODE_DISABLED)
    return 0;
  if (cg->systemd_pending)
    return cm_error_set(err, EINVAL, "cgroup: add process %d before the container's own", (int)pid);
  char value[32];
  snprintf(value, sizeof(value), "%d", (int)pid);
  for (size_t i = 0; i < cg->n_v1; i++)
    if (cg_write(cg->v1[i].dir, "cgroup.procs", value, NULL, err) < 0)
      return cm_error_prefix(err, "cgroup: add process %d", (int)pid);
  /* A delegated cgroup holds no process of its own (delegate.c): its leaf does. */
  cleanup_free char *leaf = NULL;
  if (cg->delegated && asprintf(&leaf, "%s/%s", cg->v2_dir, CGROUP_DELEGATE_LEAF) < 0)
    abort();
  if (cg->v2_dir != NULL && cg_write(leaf ? leaf : cg->v2_dir, "cgroup.procs", value, NULL, err) < 0)
    return cm_error_prefix(err, "cgroup: add process %d", (int)pid);
  return 0;
}

int cgroup_open_for_clone(const struct cgroup *cg) {
  if (cg->mode == CGROUP_MODE_DISABLED || cg->systemd_pending || cg->v2_dir == NULL)
    return -1;
  return open(cg->v2_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

bool cgroup_whole_at_clone(const struct cgroup *cg) {
  return cg->mode == CGROUP_MODE_UNIFIED && !cg->systemd_pending && cg->n_v1 == 0 && cg->v2_dir != NULL;
}

void cgroup_mark_cloned_into(struct cgroup *cg) {
  cg->v2_cloned_into = true;
}

int cgroup_open_v1_tasks(const struct cgroup *cg, int *fds, size_t max, struct cm_error **err) {
  if (cg->mode == CGROUP_MODE_DISABLED || cg->systemd_pending || cg->n_v1 == 0 || cg->n_v1 > max)
    return 0;
  for (size_t i = 0; i < cg->n_v1; i++) {
    cleanup_free char *path = NULL;
    if (asprintf(&path, "%s/tasks", cg->v1[i].dir) < 0)
      abort();
    fds[i] = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fds[i] < 0) {
      int e = errno;
      for (size_t k = 0; k < i; k++)
        close(fds[k]);
      return cm_error_set(err, e, "cgroup: open %s", path);
    }
  }
  return (int)cg->n_v1;
}

int cgroup_self_attach_v1(const int *fds, size_t n, struct cm_error **err) {
  int rc = 0;
  for (size_t i = 0; i < n; i++) {
    if (rc == 0 && write(fds[i], "0", 1) != 1)
      rc = cm_error_set(err, errno, "cgroup: join a v1 hierarchy (write 0 to its tasks file)");
    close(fds[i]);
  }
  return rc;
}

void cgroup_mark_v1_self_attached(struct cgroup *cg) {
  cg->v1_self_attached = true;
}

/* One path of exec --cgroup, cleaned: components joined with '/', "" and "." dropped. ".."
 * is refused: the process must stay inside the container's cgroup (runc checks the same). */
static char *sub_path(const char *spec, const char *path, struct cm_error **err) {
  cleanup_free char *copy = strdup(path);
  char *out = calloc(1, strlen(path) + 2);
  if (copy == NULL || out == NULL)
    abort();
  char *save = NULL;
  for (char *comp = strtok_r(copy, "/", &save); comp != NULL; comp = strtok_r(NULL, "/", &save)) {
    if (strcmp(comp, ".") == 0)
      continue;
    if (strcmp(comp, "..") == 0) {
      free(out);
      cm_error_set(err, 0, "--cgroup %s: \"..\" would leave the container's cgroup", spec);
      return NULL;
    }
    strcat(out, "/");
    strcat(out, comp);
  }
  return out;
}

/* Point *dir (the container's directory in one hierarchy) at its sub-cgroup sub ("" = itself),
 * which must exist: exec joins a cgroup, it never makes one. */
static int point_at_sub(char **dir, const char *sub, const char *spec, struct cm_error **err) {
  if (sub[0] == '\0')
    return 0;
  char *joined = NULL;
  if (asprintf(&joined, "%s%s", *dir, sub) < 0)
    abort();
  struct stat st;
  int e = stat(joined, &st) < 0 ? errno : S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
  if (e != 0) {
    cm_error_set(err, e, "--cgroup %s: no cgroup %s (it must exist already)", spec, joined);
    free(joined);
    return -1;
  }
  free(*dir);
  *dir = joined;
  return 0;
}

int cgroup_open_sub(const struct cgroup *cg, char *const *specs, size_t n, struct cgroup **out,
                    struct cm_error **err) {
  *out = NULL;
  if (cg->mode == CGROUP_MODE_DISABLED)
    return cm_error_set(err, 0, "--cgroup: the container runs without a cgroup (--cgroup-manager disabled)");
  struct cgroup *sub = calloc(1, sizeof(*sub));
  if (sub == NULL)
    abort();
  sub->mode = cg->mode;
  sub->v2_existing_depth = -1;
  if ((sub->path = strdup(cg->path)) == NULL)
    abort();
  if (cg->v2_dir != NULL && ((sub->v2_mount = strdup(cg->v2_mount)) == NULL || (sub->v2_dir = strdup(cg->v2_dir)) == NULL))
    abort();
  sub->v1 = calloc(cg->n_v1 ? cg->n_v1 : 1, sizeof(*sub->v1));
  if (sub->v1 == NULL)
    abort();
  for (size_t i = 0; i < cg->n_v1; i++, sub->n_v1++) {
    sub->v1[i].existing_depth = -1;
    if ((sub->v1[i].mountpoint = strdup(cg->v1[i].mountpoint)) == NULL ||
        (sub->v1[i].controllers = strdup(cg->v1[i].controllers)) == NULL || (sub->v1[i].dir = strdup(cg->v1[i].dir)) == NULL)
      abort();
  }
  bool *named = calloc(cg->n_v1 ? cg->n_v1 : 1, sizeof(bool));
  if (named == NULL)
    abort();
  int rc = -1;
  for (size_t k = 0; k < n; k++) {
    const char *spec = specs[k];
    const char *colon = strchr(spec, ':');
    cleanup_free char *path = sub_path(spec, colon ? colon + 1 : spec, err);
    if (path == NULL)
      goto out;
    if (colon == NULL) {
      /* A path alone: every hierarchy (cgroup v2's only one), as runc and crun take it. */
      if (n != 1) {
        cm_error_set(err, 0, "--cgroup %s: a path without \"controller:\" must be the only --cgroup", spec);
        goto out;
      }
      for (size_t i = 0; i < sub->n_v1; i++)
        if (point_at_sub(&sub->v1[i].dir, path, spec, err) < 0)
          goto out;
      if (sub->v2_dir != NULL && point_at_sub(&sub->v2_dir, path, spec, err) < 0)
        goto out;
      continue;
    }
    if (cg->n_v1 == 0) {
      cm_error_set(err, 0, "--cgroup %s: cgroup v2 has one hierarchy for every controller: give the path alone", spec);
      goto out;
    }
    /* "cpu,memory:path": those v1 hierarchies only; the others stay in the container's cgroup. */
    cleanup_free char *ctrls = strndup(spec, (size_t)(colon - spec));
    if (ctrls == NULL)
      abort();
    char *save = NULL;
    char *c = strtok_r(ctrls, ",", &save);
    if (c == NULL || ctrls[0] == ',' || ctrls[strlen(ctrls) - 1] == ',' || strstr(ctrls, ",,") != NULL) {
      cm_error_set(err, 0, "--cgroup %s: an empty controller name", spec);
      goto out;
    }
    for (; c != NULL; c = strtok_r(NULL, ",", &save)) {
      struct cgroup_v1_hierarchy *h = cg_v1_find(sub, c);
      if (h == NULL) {
        cm_error_set(err, 0, "--cgroup %s: no cgroup v1 hierarchy has controller \"%s\"", spec, c);
        goto out;
      }
      size_t i = (size_t)(h - sub->v1);
      if (named[i]) {
        cm_error_set(err, 0, "--cgroup %s: the %s hierarchy is named twice", spec, h->controllers);
        goto out;
      }
      named[i] = true;
      if (point_at_sub(&h->dir, path, spec, err) < 0)
        goto out;
    }
  }
  /* A cpuset sub-cgroup someone made and left empty would refuse the process. */
  for (size_t i = 0; i < sub->n_v1; i++)
    if (strcmp(sub->v1[i].dir, cg->v1[i].dir) != 0 && cg_v1_is_cpuset(&sub->v1[i]) &&
        cg_v1_cpuset_ensure(sub->v1[i].mountpoint, sub->v1[i].dir, err) < 0)
      goto out;
  *out = sub;
  sub = NULL;
  rc = 0;
out:
  free(named);
  cgroup_free(sub);
  return rc;
}

#define SYSTEMD_TAG "systemd-"
#define DELEGATED_TAG "delegated-"

char *cgroup_serialize(const struct cgroup *cg) {
  char *out = NULL;
  if (asprintf(&out, "%s%s:%s", cg->systemd_unit ? SYSTEMD_TAG : cg->delegated ? DELEGATED_TAG : "",
               mode_tag(cg->mode), cg->path) < 0)
    abort();
  return out;
}

struct cgroup *cgroup_deserialize(const char *saved, struct cm_error **err) {
  const char *colon = saved ? strchr(saved, ':') : NULL;
  if (colon == NULL || colon[1] != '/') {
    cm_error_set(err, EINVAL, "cgroup: bad saved state \"%s\"", saved ? saved : "");
    return NULL;
  }
  enum cgroup_mode mode;
  bool systemd = strncmp(saved, SYSTEMD_TAG, strlen(SYSTEMD_TAG)) == 0;
  if (systemd)
    saved += strlen(SYSTEMD_TAG);
  bool delegated = !systemd && strncmp(saved, DELEGATED_TAG, strlen(DELEGATED_TAG)) == 0;
  if (delegated)
    saved += strlen(DELEGATED_TAG);
  size_t tag_len = (size_t)(colon - saved);
  if (tag_len == 2 && strncmp(saved, "v2", 2) == 0)
    mode = CGROUP_MODE_UNIFIED;
  else if (tag_len == 6 && strncmp(saved, "hybrid", 6) == 0)
    mode = CGROUP_MODE_HYBRID;
  else if (tag_len == 2 && strncmp(saved, "v1", 2) == 0)
    mode = CGROUP_MODE_LEGACY;
  else if (tag_len == 8 && strncmp(saved, "disabled", 8) == 0)
    mode = CGROUP_MODE_DISABLED;
  else {
    cm_error_set(err, EINVAL, "cgroup: bad saved state \"%s\"", saved);
    return NULL;
  }
  /* The saved path came from our own state file, but check it as strictly as a config's. */
  cleanup_free char *path = resolve_path("", colon + 1, err);
  if (path == NULL)
    return NULL;
  if (mode != CGROUP_MODE_DISABLED) {
    enum cgroup_mode now;
    if (detect_mode(&now, err) < 0)
      return NULL;
    if (now != mode) {
      cm_error_set(err, 0, "cgroup: the container was created in %s mode but the host is now %s", mode_tag(mode),
                   mode_tag(now));
      return NULL;
    }
  }
  struct cgroup *cg = cgroup_open(mode, path, err);
  if (cg != NULL && delegated) {
    if (mode != CGROUP_MODE_UNIFIED) {
      cgroup_free(cg);
      cm_error_set(err, EINVAL, "cgroup: bad saved state \"%s\"", saved);
      return NULL;
    }
    cg->delegated = true;
  }
  if (cg != NULL && systemd) {
    /* The scope is the last component of its cgroup path. */
    const char *unit = strrchr(path, '/') + 1;
    if (mode == CGROUP_MODE_DISABLED || strlen(unit) <= strlen(".scope") ||
        strcmp(unit + strlen(unit) - strlen(".scope"), ".scope") != 0) {
      cgroup_free(cg);
      cm_error_set(err, EINVAL, "cgroup: bad saved state \"%s\"", saved);
      return NULL;
    }
    if ((cg->systemd_unit = strdup(unit)) == NULL)
      abort();
  }
  return cg;
}

static int disabled_error(const char *what, struct cm_error **err) {
  return cm_error_set(err, ENOTSUP, "%s: the container runs without a cgroup (--cgroup-manager disabled)", what);
}

int cgroup_update(struct cgroup *cg, const struct spec_resources *r, struct cm_error **err) {
  if (cg->mode == CGROUP_MODE_DISABLED)
    return disabled_error("update", err);
  /* linux.devices are not known here; only replace the device policy when asked to. */
  size_t n_rules = 0;
  cleanup_free struct spec_device_rule *rules = r->n_devices > 0 ? cg_device_rules(r, NULL, 0, &n_rules) : NULL;
  if (cg->mode == CGROUP_MODE_HYBRID && enable_v2_controllers(cg, r, err) < 0)
    return cm_error_prefix(err, "cgroup");
  /* systemd first: were only the files changed, systemd would put its older values back the
   * next time it applies the unit's settings (daemon-reload). */
  if (cg->systemd_unit != NULL && cg->mode == CGROUP_MODE_UNIFIED &&
      cg_systemd_set_properties(cg->systemd_unit, r, err) < 0)
    return -1;
  return apply_resources(cg, r, rules, n_rules, err);
}

/* v1 freezer if mounted, else cgroup2's cgroup.freeze (also in hybrid mode). */
static const char *freezer_dir(const struct cgroup *cg, bool *v1) {
  struct cgroup_v1_hierarchy *h = cg->mode == CGROUP_MODE_UNIFIED ? NULL : cg_v1_find(cg, "freezer");
  *v1 = h != NULL;
  if (h != NULL)
    return h->dir;
  if (cg->v2_dir != NULL && strcmp(cg->v2_dir, cg->v2_mount) != 0)
    return cg->v2_dir;
  return NULL;
}

int cgroup_freeze(struct cgroup *cg, bool frozen, struct cm_error **err) {
  if (cg->mode == CGROUP_MODE_DISABLED)
    return disabled_error(frozen ? "pause" : "resume", err);
  bool v1;
  const char *dir = freezer_dir(cg, &v1);
  if (dir == NULL)
    return cm_error_set(err, ENOTSUP, "cgroup %s: no freezer available", cg->path);
  int r = v1 ? cg_v1_freeze(dir, frozen, err) : cg_v2_freeze(dir, frozen, err);
  if (r < 0)
    return cm_error_prefix(err, "cgroup %s", frozen ? "freeze" : "thaw");
  return 0;
}

int cgroup_is_frozen(struct cgroup *cg, struct cm_error **err) {
  if (cg->mode == CGROUP_MODE_DISABLED)
    return 0;
  bool v1;
  const char *dir = freezer_dir(cg, &v1);
  if (dir == NULL)
    return 0;
  return v1 ? cg_v1_is_frozen(dir, err) : cg_v2_is_frozen(dir, err);
}

int cgroup_pids(struct cgroup *cg, pid_t **pids, size_t *n, struct cm_error **err) {
  *pids = NULL;
  *n = 0;
  if (cg->mode == CGROUP_MODE_DISABLED)
    return disabled_error("list processes", err);
  const char *dir = primary_dir(cg);
  if (dir == NULL)
    return cm_error_set(err, ENOENT, "cgroup %s: no hierarchy to read processes from", cg->path);
  return cg_read_pids_recursive(dir, pids, n, err);
}

int cgroup_kill_all(struct cgroup *cg, int signo, struct cm_error **err) {
  if (cg->mode == CGROUP_MODE_DISABLED)
    return disabled_error("kill --all", err);
  /* A paused container stays paused for catchable signals (they are delivered on resume);
   * SIGKILL thaws it so the processes actually die. */
  bool was_frozen = cgroup_is_frozen(cg, NULL) == 1;
  if (signo == SIGKILL && cg->v2_dir != NULL) {
    int r = cg_v2_kill(cg->v2_dir, err);
    if (r < 0)
      return -1;
    /* cgroup.kill reaches v2-frozen tasks, but a v1 freezer (hybrid) holds them until thawed. */
    if (r == 1)
      return was_frozen && cg->mode != CGROUP_MODE_UNIFIED ? cgroup_freeze(cg, false, err) : 0;
  }
  /* Freeze first so nothing forks between reading the list and signalling it. */
  bool v1;
  bool frozen = false;
  if (freezer_dir(cg, &v1) != NULL) {
    struct cm_error *ferr = NULL;
    if (cgroup_freeze(cg, true, &ferr) == 0)
      frozen = true;
    else {
      cm_debug("cgroup: kill without freezing: %s", ferr->msg);
      cm_error_free(ferr);
    }
  }
  pid_t *pids = NULL;
  size_t n = 0;
  int rc = cgroup_pids(cg, &pids, &n, err);
  for (size_t i = 0; rc == 0 && i < n; i++) {
    if (kill(pids[i], signo) < 0 && errno != ESRCH)
      rc = cm_error_set(err, errno, "kill process %d", (int)pids[i]);
  }
  free(pids);
  if (frozen && (!was_frozen || signo == SIGKILL)) {
    struct cm_error *terr = NULL;
    if (cgroup_freeze(cg, false, rc == 0 ? err : &terr) < 0)
      rc = -1;
    cm_error_free(terr);
  }
  return rc;
}

/* How a container's cgroup usually ends: its processes are gone and it has no sub-cgroups, so
 * one rmdir per hierarchy removes it, without listing anything (issue 7). The primary hierarchy
 * goes first: the kernel refuses to remove a cgroup with a process or a child in it, so success
 * there means nothing is left to kill. Returns true when every hierarchy's directory is gone;
 * false leaves the rest (and any error) to the full way. */
static bool remove_if_empty(struct cgroup *cg) {
  const char *primary = primary_dir(cg);
  if (cg->systemd_unit != NULL || primary == NULL)
    return false;
  /* A delegated cgroup (delegate.c) always has its leaf. */
  cleanup_free char *leaf = NULL;
  if (cg->delegated && asprintf(&leaf, "%s/%s", cg->v2_dir, CGROUP_DELEGATE_LEAF) < 0)
    abort();
  if ((leaf != NULL && rmdir(leaf) < 0 && errno != ENOENT) || rmdir(primary) < 0)
    return false;
  bool all = true;
  for (size_t i = 0; i < cg->n_v1; i++)
    if (cg->v1[i].dir != primary && rmdir(cg->v1[i].dir) < 0 && errno != ENOENT)
      all = false;
  return all;
}

int cgroup_destroy(struct cgroup *cg, struct cm_error **err) {
  /* A scope that was never started left nothing to remove. */
  if (cg->mode == CGROUP_MODE_DISABLED || cg->systemd_pending)
    return 0;
  if (remove_if_empty(cg))
    return 0;
  pid_t *pids = NULL;
  size_t n = 0;
  struct cm_error *ignored = NULL;
  if (cgroup_pids(cg, &pids, &n, &ignored) == 0 && n > 0) {
    free(pids);
    if (cgroup_kill_all(cg, SIGKILL, err) < 0)
      return cm_error_prefix(err, "cgroup %s", cg->path);
    /* Wait (about 5 s) for the kernel to empty it; rmdir below retries EBUSY too. */
    for (int i = 0; i < 500; i++) {
      if (cgroup_pids(cg, &pids, &n, &ignored) < 0 || n == 0)
        break;
      free(pids);
      sleep_ms(10);
    }
    free(pids);
  } else {
    free(pids);
  }
  cm_error_freep(&ignored);
  /* Try every hierarchy even when one fails; report the first failure. */
  int rc = 0;
  if (cg->systemd_unit != NULL && cg_systemd_stop_scope(cg->systemd_unit, err) < 0)
    rc = -1;
  for (size_t i = 0; i < cg->n_v1; i++)
    if (cg_rmdir_tree(cg->v1[i].mountpoint, cg->path, -1, rc == 0 ? err : &ignored) < 0) {
      rc = -1;
      cm_error_freep(&ignored);
    }
  if (cg->v2_dir != NULL && cg_rmdir_tree(cg->v2_mount, cg->path, -1, rc == 0 ? err : &ignored) < 0) {
    rc = -1;
    cm_error_freep(&ignored);
  }
  if (rc < 0)
    return cm_error_prefix(err, "cgroup: remove %s", cg->systemd_unit ? cg->systemd_unit : cg->path);
  return 0;
}
