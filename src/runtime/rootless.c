/* A non-root caller's state root and cgroups (rootless.h). */
#include "runtime/rootless.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/host_root.h"
#include "util/log.h"

/* policy/'s POLICY_PROFILE_ANNOTATION (runtime/ does not include policy/). */
#define ROOTLESS_PROFILE_ANNOTATION "run.codemode.profile"

static bool owned_dir(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 022);
}

char *rootless_state_root(struct cm_error **err) {
  char *out = NULL;
  const char *xdg = getenv("XDG_RUNTIME_DIR");
  if (xdg && xdg[0] == '/' && owned_dir(xdg)) {
    if (asprintf(&out, "%s/codemode", xdg) < 0)
      abort();
    return out;
  }
  char run_user[64];
  snprintf(run_user, sizeof(run_user), "/run/user/%u", cm_host_uid());
  if (owned_dir(run_user)) {
    if (asprintf(&out, "%s/codemode", run_user) < 0)
      abort();
    return out;
  }
  /* No runtime dir (no login session): a directory of the user's own, 0700 from its first
   * component we make; never a shared /tmp, where another user could plant it first. */
  const char *home = getenv("HOME");
  if (home && home[0] == '/' && owned_dir(home)) {
    if (asprintf(&out, "%s/.local/state/codemode/run", home) < 0)
      abort();
    return out;
  }
  cm_error_set(err, 0,
               "no state directory for uid %u: XDG_RUNTIME_DIR is not set (or not yours), /run/user/%u does "
               "not exist and HOME is not a directory of yours; give one with --root DIR",
               cm_host_uid(), cm_host_uid());
  return NULL;
}

static bool cgroup2_unified(void) {
  struct statfs st;
  return statfs("/sys/fs/cgroup", &st) == 0 && st.f_type == CGROUP2_SUPER_MAGIC;
}

/* The user's systemd manager: its private socket (the bus may be absent without dbus-user-session). */
static bool user_manager_running(void) {
  const char *xdg = getenv("XDG_RUNTIME_DIR");
  char path[PATH_MAX];
  if (xdg == NULL || !owned_dir(xdg))
    return false;
  snprintf(path, sizeof(path), "%s/systemd/private", xdg);
  struct stat st;
  return stat(path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_uid == geteuid();
}

/* Our own cgroup on the unified hierarchy ("/a/b"), from /proc/self/cgroup's "0::" line. */
static int own_cgroup(char *buf, size_t size) {
  cleanup_fclose FILE *f = fopen("/proc/self/cgroup", "re");
  char line[PATH_MAX + 8];
  while (f && fgets(line, sizeof(line), f)) {
    if (strncmp(line, "0::/", 4) == 0) {
      line[strcspn(line, "\n")] = '\0';
      return snprintf(buf, size, "%s", line + 3) < (int)size ? 0 : -1;
    }
  }
  return -1;
}

/* A cgroup directory we may create children in and move processes into. */
static bool delegated_to_us(const char *rel) {
  char dir[PATH_MAX + 32], file[PATH_MAX + 64];
  snprintf(dir, sizeof(dir), "/sys/fs/cgroup%s", rel);
  if (access(dir, W_OK | X_OK) < 0)
    return false;
  static const char *const files[] = {"cgroup.procs", "cgroup.subtree_control"};
  for (size_t i = 0; i < 2; i++) {
    snprintf(file, sizeof(file), "%s/%s", dir, files[i]);
    if (access(file, W_OK) < 0)
      return false;
  }
  return true;
}

static bool wants_limits(const struct spec *s);

/* Can the delegated cgroup give its children every controller the config's limits need (in its
 * cgroup.controllers)? When not, the missing ones ("memory, pids") are in buf. */
static bool controllers_delegated(const char *rel, const struct spec *s, char *buf, size_t size) {
  if (!wants_limits(s))
    return true;
  char path[PATH_MAX + 48];
  snprintf(path, sizeof(path), "/sys/fs/cgroup%s/cgroup.controllers", rel);
  char have[512] = "";
  cleanup_fclose FILE *f = fopen(path, "re");
  if (f == NULL || fgets(have, sizeof(have), f) == NULL)
    have[0] = '\0';
  const struct spec_resources *r = &s->linux_.resources;
  const struct {
    bool wanted;
    const char *name;
  } need[] = {{r->memory.limit.set && r->memory.limit.value > 0, "memory"},
              {r->has_pids && r->pids_limit > 0, "pids"},
              {r->cpu.quota.set && r->cpu.quota.value > 0, "cpu"}};
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
    if (!need[i].wanted)
      continue;
    bool found = false;
    char copy[512];
    snprintf(copy, sizeof(copy), "%s", have);
    char *save = NULL;
    for (char *w = strtok_r(copy, " \n", &save); w && !found; w = strtok_r(NULL, " \n", &save))
      found = strcmp(w, need[i].name) == 0;
    if (!found && used < size)
      used += (size_t)snprintf(buf + used, size - used, "%s%s", used ? ", " : "", need[i].name);
  }
  return used == 0;
}

static bool wants_limits(const struct spec *s) {
  const struct spec_resources *r = &s->linux_.resources;
  return r->present && ((r->memory.limit.set && r->memory.limit.value > 0) || (r->has_pids && r->pids_limit > 0) ||
                        (r->cpu.quota.set && r->cpu.quota.value > 0));
}

int rootless_cgroup_choose(const struct runtime_context *ctx, const struct spec *s, const char *id,
                           struct rootless_cgroup *out, struct cm_error **err) {
  memset(out, 0, sizeof(*out));
  out->kind = ROOTLESS_CGROUP_NONE;
  if (ctx->cgroup_manager == CGROUP_MANAGER_DISABLED) {
    snprintf(out->reason, sizeof(out->reason), "--cgroup-manager disabled");
    return 0;
  }
  bool unified = cgroup2_unified();
  bool want_systemd = ctx->cgroup_manager == CGROUP_MANAGER_SYSTEMD;
  if (want_systemd || !ctx->cgroup_manager_explicit) {
    if (unified && user_manager_running()) {
      out->kind = ROOTLESS_CGROUP_SYSTEMD;
      snprintf(out->reason, sizeof(out->reason), "a transient scope of your systemd user manager (Delegate=yes)");
      return 0;
    }
    if (want_systemd)
      return cm_error_set(err, 0,
                          "--systemd-cgroup as uid %u: %s (log in through a session, or `loginctl enable-linger "
                          "$USER` and set XDG_RUNTIME_DIR=/run/user/%u)",
                          cm_host_uid(), unified ? "no systemd user manager in $XDG_RUNTIME_DIR" : "this host is not on cgroup v2",
                          cm_host_uid());
  }
  if (!unified) {
    snprintf(out->reason, sizeof(out->reason),
             "this host's cgroups are v1 or hybrid, which cannot be delegated to uid %u", cm_host_uid());
    return 0;
  }
  const char *asked = s->linux_.cgroups_path;
  if (asked && asked[0]) {
    /* The config names its cgroup: it must be in a subtree delegated to us. */
    char parent[PATH_MAX];
    if (snprintf(parent, sizeof(parent), "%s%s", asked[0] == '/' ? "" : "/", asked) >= (int)sizeof(parent))
      return cm_error_set(err, ENAMETOOLONG, "linux.cgroupsPath");
    char *slash = strrchr(parent, '/');
    if (slash)
      *slash = '\0';
    if (!delegated_to_us(parent[0] ? parent : "/"))
      return cm_error_set(err, EACCES, "linux.cgroupsPath: \"%s\": its parent is not delegated to uid %u", asked,
                          cm_host_uid());
    out->kind = ROOTLESS_CGROUP_DELEGATED;
    if (snprintf(out->path, sizeof(out->path), "%s%s", asked[0] == '/' ? "" : "/", asked) >= (int)sizeof(out->path))
      return cm_error_set(err, ENAMETOOLONG, "linux.cgroupsPath");
    if (snprintf(out->reason, sizeof(out->reason), "%s, in a cgroup v2 subtree delegated to uid %u", out->path,
                 cm_host_uid()) >= (int)sizeof(out->reason))
      out->reason[sizeof(out->reason) - 1] = '\0';
    return 0;
  }
  char own[PATH_MAX];
  if (own_cgroup(own, sizeof(own)) == 0) {
    char *slash = strrchr(own, '/');
    if (slash && slash != own) {
      *slash = '\0';
      char missing[128];
      if (delegated_to_us(own) && !controllers_delegated(own, s, missing, sizeof(missing))) {
        if (snprintf(out->reason, sizeof(out->reason),
                     "the cgroup v2 subtree /sys/fs/cgroup%s delegated to uid %u has no %s controller", own,
                     cm_host_uid(), missing) >= (int)sizeof(out->reason))
          out->reason[sizeof(out->reason) - 1] = '\0';
        return 0;
      }
      if (delegated_to_us(own)) {
        out->kind = ROOTLESS_CGROUP_DELEGATED;
        if (snprintf(out->path, sizeof(out->path), "%s/codemode-%s", own, id) >= (int)sizeof(out->path))
          return cm_error_set(err, ENAMETOOLONG, "cgroup path for %s", id);
        if (snprintf(out->reason, sizeof(out->reason), "%s, in a cgroup v2 subtree delegated to uid %u", out->path,
                     cm_host_uid()) >= (int)sizeof(out->reason))
          out->reason[sizeof(out->reason) - 1] = '\0';
        return 0;
      }
    }
  }
  snprintf(out->reason, sizeof(out->reason),
           "no systemd user session and no cgroup v2 subtree delegated to uid %u above our own cgroup", cm_host_uid());
  return 0;
}

/* The rlimits standing in for the cgroup limits of a hardened container without a cgroup. */
struct fallback {
  int resource;
  const char *type;
  uint64_t value;
};

static size_t fallbacks(const struct spec *s, struct fallback out[3]) {
  const struct spec_resources *r = &s->linux_.resources;
  size_t n = 0;
  if (r->has_pids && r->pids_limit > 0)
    out[n++] = (struct fallback){RLIMIT_NPROC, "RLIMIT_NPROC", (uint64_t)r->pids_limit};
  if (r->memory.limit.set && r->memory.limit.value > 0) {
    /* Address space is not memory: runtimes like node reserve far more than they touch (a
     * bare node 20 maps ~0.7 GiB), so four times the memory limit, and a file may be at most
     * as big as the memory limit. */
    uint64_t m = (uint64_t)r->memory.limit.value;
    out[n++] = (struct fallback){RLIMIT_AS, "RLIMIT_AS", m * 4 < (1ULL << 30) ? (1ULL << 30) : m * 4};
    out[n++] = (struct fallback){RLIMIT_FSIZE, "RLIMIT_FSIZE", m};
  }
  return n;
}

static bool hardened(const struct spec *s) {
  const char *p = spec_kv_get(&s->annotations, ROOTLESS_PROFILE_ANNOTATION);
  return p && (strcmp(p, "mcp") == 0 || strcmp(p, "mcp-audit") == 0 || strcmp(p, "ci") == 0);
}

void rootless_cgroup_describe(const struct rootless_cgroup *c, const struct spec *s, char *buf, size_t size) {
  if (c->kind != ROOTLESS_CGROUP_NONE) {
    snprintf(buf, size, "cgroups: %s", c->reason);
    return;
  }
  size_t used = (size_t)snprintf(buf, size, "cgroups: none (%s): memory, pids and cpu limits are not enforced", c->reason);
  struct fallback f[3];
  size_t n = hardened(s) ? fallbacks(s, f) : 0;
  for (size_t i = 0; i < n && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%s %" PRIu64, i ? ", " : "; rlimits instead: ", f[i].type,
                             f[i].value);
  if (used < size)
    snprintf(buf + used, size - used,
             "; for real limits run in a systemd user session (loginctl enable-linger) or delegate a cgroup v2 "
             "subtree to uid %u",
             cm_host_uid());
}

int rootless_cgroup_explain(const struct runtime_context *ctx, const struct spec *s, const char *id, char *buf,
                            size_t size, struct cm_error **err) {
  struct rootless_cgroup c;
  if (rootless_cgroup_choose(ctx, s, id, &c, err) < 0)
    return -1;
  rootless_cgroup_describe(&c, s, buf, size);
  return 0;
}

static void add_rlimit(struct spec_process *p, const struct fallback *f) {
  for (size_t i = 0; i < p->n_rlimits; i++) {
    struct spec_rlimit *rl = &p->rlimits[i];
    if (rl->resource != f->resource)
      continue;
    if (rl->hard > f->value)
      rl->hard = f->value;
    if (rl->soft > rl->hard)
      rl->soft = rl->hard;
    return;
  }
  struct spec_rlimit *grown = realloc(p->rlimits, (p->n_rlimits + 1) * sizeof(*grown));
  if (grown == NULL)
    abort();
  p->rlimits = grown;
  p->rlimits[p->n_rlimits++] = (struct spec_rlimit){.resource = f->resource, .type = strdup(f->type), .soft = f->value, .hard = f->value};
}

int rootless_cgroup_apply(const struct runtime_context *ctx, struct spec *s, const char *id,
                          struct runtime_context *ctx_out, struct cm_error **err) {
  *ctx_out = *ctx;
  struct rootless_cgroup c;
  if (rootless_cgroup_choose(ctx, s, id, &c, err) < 0)
    return -1;
  switch (c.kind) {
  case ROOTLESS_CGROUP_SYSTEMD:
    ctx_out->cgroup_manager = CGROUP_MANAGER_SYSTEMD;
    if (s->linux_.cgroups_path == NULL || !s->linux_.cgroups_path[0]) {
      free(s->linux_.cgroups_path);
      if (asprintf(&s->linux_.cgroups_path, "user.slice:codemode:%s", id) < 0)
        abort();
    }
    break;
  case ROOTLESS_CGROUP_DELEGATED:
    ctx_out->cgroup_manager = CGROUP_MANAGER_CGROUPFS;
    free(s->linux_.cgroups_path);
    s->linux_.cgroups_path = strdup(c.path);
    break;
  case ROOTLESS_CGROUP_NONE: {
    ctx_out->cgroup_manager = CGROUP_MANAGER_DISABLED;
    if (!wants_limits(s))
      break;
    char line[1024];
    rootless_cgroup_describe(&c, s, line, sizeof(line));
    /* On stderr whatever --log says: the one who started us must see it. */
    fprintf(stderr, "codemode: warning: container %s: %s\n", id, line + strlen("cgroups: "));
    if (cm_log_is_file())
      cm_warn("container %s: %s", id, line + strlen("cgroups: "));
    struct fallback f[3];
    size_t n = hardened(s) && s->process ? fallbacks(s, f) : 0;
    for (size_t i = 0; i < n; i++)
      add_rlimit(s->process, &f[i]);
    break;
  }
  }
  return 0;
}
