/* codemode-run's command line turned into the container's config: the generated bundle of
 * --rootfs, the command, env, cwd, binds, limits and network of the flags, --seccomp, and the
 * --ephemeral overlay root. Applied before the profile tightens the result (policy/). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "linux/selfclone.h"
#include "policy/seccomp_profile.h"
#include "runtime/idrange.h"
#include "spec/json_util.h"
#include "supervisor/supervisor.h"
#include "util/cleanup.h"
#include "util/host_root.h"
#include "util/safepath.h"

/* --rootfs (and --image): a bundle dir holding the default config (written to disk: the runtime keeps a copy
 * of the config file for exec and hooks), root.path pointing at DIR. */
int run_spec_generate_bundle(const char *flag, const char *dir, struct cleanup_plan *plan, struct cm_error **err) {
  char rootfs[PATH_MAX];
  if (realpath(dir, rootfs) == NULL)
    return cm_error_set(err, errno, "%s %s", flag, dir);
  if (plan->ephemeral_dir[0]) {
    /* In the scratch tmpfs (--host made it already): gone with our mount namespace, nothing for
     * the watcher to remove, and no inode of /tmp's disk made and freed per run (on this VM's
     * ext4 /tmp, ~0.3 ms of the start: issue 27). */
    int n = snprintf(plan->tmp_bundle, sizeof(plan->tmp_bundle), "%.*s/bundle",
                     (int)(sizeof(plan->tmp_bundle) - sizeof("/bundle")), plan->ephemeral_dir);
    if (n < 0 || (size_t)n >= sizeof(plan->tmp_bundle) || mkdir(plan->tmp_bundle, 0700) < 0) {
      plan->tmp_bundle[0] = '\0';
      return cm_error_set(err, errno, "scratch space: mkdir the bundle");
    }
  } else {
    snprintf(plan->tmp_bundle, sizeof(plan->tmp_bundle), "/tmp/codemode-run.XXXXXX");
    if (mkdtemp(plan->tmp_bundle) == NULL) {
      plan->tmp_bundle[0] = '\0';
      return cm_error_set(err, errno, "mkdtemp");
    }
    plan_tell(plan, 'B', plan->tmp_bundle);
  }
  cleanup_free char *json = spec_default_json(false);
  /* Point root.path at DIR: the default config says "rootfs"; a symlink keeps the JSON as is. */
  char link[PATH_MAX + 16], cfg[PATH_MAX + 16];
  snprintf(link, sizeof(link), "%s/rootfs", plan->tmp_bundle);
  snprintf(cfg, sizeof(cfg), "%s/config.json", plan->tmp_bundle);
  if (symlink(rootfs, link) < 0)
    return cm_error_set(err, errno, "symlink %s", link);
  cleanup_close int fd = open(cfg, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 || write(fd, json, strlen(json)) != (ssize_t)strlen(json))
    return cm_error_set(err, errno, "write %s", cfg);
  return 0;
}

/* "~" and "~/…" as the shell would expand them (an mcpServers entry is not run by a shell);
 * "~user" is refused with the fix. NULL with err set. */
char *run_spec_expand_home(const char *flag, const char *path, struct cm_error **err) {
  if (path[0] != '~')
    return xstrdup(path);
  if (path[1] != '\0' && path[1] != '/') {
    cm_error_set(err, 0, "%s %s: ~user is not expanded: write the absolute path", flag, path);
    return NULL;
  }
  const char *home = getenv("HOME");
  if (home == NULL || home[0] != '/') {
    cm_error_set(err, 0, "%s %s: HOME is not set: write the absolute path", flag, path);
    return NULL;
  }
  char *out;
  if (asprintf(&out, "%s%s", home, path + 1) < 0)
    abort();
  return out;
}

static int add_bind(struct spec *s, const char *arg, struct cm_error **err) {
  cleanup_free char *copy = run_spec_expand_home("--mount", arg, err);
  if (copy == NULL)
    return -1;
  char *src = copy, *dst = strchr(copy, ':');
  if (dst == NULL)
    return cm_error_set(err, 0, "--mount %s: expects SRC:DST[:ro|rw]", arg);
  *dst++ = '\0';
  char *mode = strchr(dst, ':');
  if (mode)
    *mode++ = '\0';
  if (mode && strcmp(mode, "ro") != 0 && strcmp(mode, "rw") != 0 && strcmp(mode, "cow") != 0)
    return cm_error_set(err, 0, "--mount %s: the mode must be ro, rw or cow", arg);
  if (dst[0] != '/')
    return cm_error_set(err, 0, "--mount %s: DST must be absolute", arg);
  char real[PATH_MAX];
  if (realpath(src, real) == NULL)
    return cm_error_set(err, errno, "--mount %s: the source %s", arg, src);
  struct spec_mount *grown = realloc(s->mounts, (s->n_mounts + 1) * sizeof(*grown));
  if (grown == NULL)
    abort();
  s->mounts = grown;
  struct spec_mount *m = &s->mounts[s->n_mounts++];
  bool dotdot = false;
  char *clean = path_clean_absolute(dst, &dotdot);
  if (clean == NULL) {
    s->n_mounts--;
    return cm_error_set(err, 0, "--mount %s: DST must not contain ..", arg);
  }
  *m = (struct spec_mount){.destination = clean, .type = xstrdup("bind"), .source = xstrdup(real)};
  spec_strv_push(&m->options, "rbind");
  /* cow: read-only here, where the profile judges it; run_spec_cow_mounts makes it an overlay. */
  spec_strv_push(&m->options, mode && strcmp(mode, "rw") == 0 ? "rw" : "ro");
  spec_strv_push(&m->options, "nosuid");
  spec_strv_push(&m->options, "nodev");
  spec_mount_decode_options(m);
  m->cow_lower = mode && strcmp(mode, "cow") == 0;
  return 0;
}

/* A --state directory for a ci job as root, made owned by the shared owner (runtime/idrange.h),
 * whom every job's root writes it as; 0700, so host users other than root cannot reach what a
 * job leaves there. Made under a temporary name and renamed into place, so that a job starting
 * at the same moment never finds it still root's (and refuses it); if one made it first, that
 * one is used. */
static int make_shared_state(const char *arg, const char *dir, struct cm_error **err) {
  if (idrange_check_shared_owner(IDRANGE_SHARED_OWNER, err) < 0)
    return cm_error_prefix(err, "--state %s: make %s for a ci job", arg, dir);
  char tmp[PATH_MAX];
  if (snprintf(tmp, sizeof(tmp), "%s.codemode-XXXXXX", dir) >= (int)sizeof(tmp))
    return cm_error_set(err, ENAMETOOLONG, "--state %s", arg);
  if (mkdtemp(tmp) == NULL)
    return cm_error_set(err, errno, "--state %s: create %s", arg, dir);
  cleanup_close int fd = open(tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  int rc = 0;
  if (fd < 0 || fchown(fd, IDRANGE_SHARED_OWNER, IDRANGE_SHARED_OWNER) < 0 || fchmod(fd, 0700) < 0)
    rc = cm_error_set(err, errno, "--state %s: give %s to uid and gid %u", arg, dir, IDRANGE_SHARED_OWNER);
  else if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_NOREPLACE) == 0)
    return 0;
  else if (errno != EEXIST)
    rc = cm_error_set(err, errno, "--state %s: create %s", arg, dir);
  rmdir(tmp);
  return rc;
}

/* --state DIR[:DST]: a host directory the server may keep data in, read-write at DST (default
 * /state), made (0700) when it does not exist yet: the one place writes survive the run. Under
 * --profile ci as root, one this run makes belongs to the shared owner, and an existing one of
 * host root's is refused here, naming the fix (the job's root would write it as host root). */
static int add_state(struct spec *s, const char *arg, bool ci_as_root, struct cm_error **err) {
  cleanup_free char *copy = run_spec_expand_home("--state", arg, err);
  if (copy == NULL)
    return -1;
  char *dst = strchr(copy, ':');
  if (dst)
    *dst++ = '\0';
  if (dst && dst[0] != '/')
    return cm_error_set(err, 0, "--state %s: DST must be absolute", arg);
  if (copy[0] == '\0')
    return cm_error_set(err, 0, "--state %s: expects DIR[:DST]", arg);
  size_t n = strlen(copy);
  while (n > 1 && copy[n - 1] == '/')
    copy[--n] = '\0';
  struct stat st;
  if (ci_as_root) {
    if (lstat(copy, &st) < 0 && errno == ENOENT && make_shared_state(arg, copy, err) < 0)
      return -1;
  } else if (mkdir(copy, 0700) < 0 && errno != EEXIST) {
    return cm_error_set(err, errno, "--state %s: create %s", arg, copy);
  }
  if (stat(copy, &st) < 0 || !S_ISDIR(st.st_mode))
    return cm_error_set(err, ENOTDIR, "--state %s: %s", arg, copy);
  if (ci_as_root && (st.st_uid == 0 || st.st_gid == 0))
    return cm_error_set(err, EPERM,
                        "--state %s: %s is host root's (uid %u, gid %u): a ci job's root writes its state "
                        "directory as the directory's owner, and a setuid program it left there would be host "
                        "root's (fix: chown -R %u:%u %s && chmod 0700 %s, the owner codemode-run gives the "
                        "state directories it makes for ci jobs; or remove it and let codemode-run make it)",
                        arg, copy, (unsigned)st.st_uid, (unsigned)st.st_gid, IDRANGE_SHARED_OWNER,
                        IDRANGE_SHARED_OWNER, copy, copy);
  cleanup_free char *spec_arg = NULL;
  if (asprintf(&spec_arg, "%s:%s:rw", copy, dst ? dst : "/state") < 0)
    abort();
  return add_bind(s, spec_arg, err);
}

int run_spec_apply_options(struct spec *s, const struct run_options *o, enum policy_profile profile,
                           struct cm_error **err) {
  struct spec_process *p = s->process;
  if (p == NULL)
    return cm_error_set(err, 0, "config.json: .process: missing");
  /* stdio is the caller's pipes; a tty would need a console socket and mangle the bytes. */
  p->terminal = false;
  if (o->cmd && !o->image) { /* with --image, run_image_prepare combined it with the Entrypoint */
    spec_strv_free(&p->args);
    for (int i = 0; i < o->n_cmd; i++)
      spec_strv_push(&p->args, o->cmd[i]);
  }
  for (size_t i = 0; i < o->env.count; i++) {
    const char *kv = o->env.items[i];
    if (strchr(kv, '=') == NULL) {
      /* --env NAME: the caller's own value, as `docker run -e NAME` does; not set: nothing. */
      const char *v = getenv(kv);
      if (v == NULL)
        continue;
      cleanup_free char *pass = NULL;
      if (asprintf(&pass, "%s=%s", kv, v) < 0)
        abort();
      spec_env_set(&p->env, pass);
      continue;
    }
    spec_env_set(&p->env, kv);
  }
  if (o->cwd) {
    free(p->cwd);
    p->cwd = xstrdup(o->cwd);
  }
  for (size_t i = 0; i < o->mounts.count; i++)
    if (add_bind(s, o->mounts.items[i], err) < 0)
      return -1;
  /* --deny: the profile's Landlock layer carves these out of the trees it allows. */
  for (size_t i = 0; i < o->deny.count; i++) {
    bool dotdot = false;
    cleanup_free char *clean = path_clean_absolute(o->deny.items[i], &dotdot);
    if (clean == NULL)
      return cm_error_set(err, 0, "--deny %s: must not contain ..", o->deny.items[i]);
    spec_strv_push(&s->landlock_deny, clean);
  }
  for (size_t i = 0; i < o->states.count; i++)
    if (add_state(s, o->states.items[i], profile == POLICY_PROFILE_CI && cm_host_root(), err) < 0)
      return -1;
  struct spec_resources *res = &s->linux_.resources;
  if (o->memory) {
    res->present = res->memory.present = true;
    res->memory.limit = (struct spec_opt_i64){true, o->memory};
    if (res->memory.swap.set && res->memory.swap.value >= 0 && res->memory.swap.value < o->memory)
      res->memory.swap.value = o->memory;
  }
  if (o->pids) {
    res->present = res->has_pids = true;
    res->pids_limit = o->pids;
  }
  if (o->cpus > 0) {
    res->present = res->cpu.present = true;
    uint64_t period = res->cpu.period.set && res->cpu.period.value ? res->cpu.period.value : 100000;
    res->cpu.period = (struct spec_opt_u64){true, period};
    res->cpu.quota = (struct spec_opt_i64){true, (int64_t)ceil(o->cpus * (double)period)};
  }
  struct spec_namespace *net = &s->linux_.namespaces[SPEC_NS_NETWORK];
  if (o->net && strcmp(o->net, "host") == 0) {
    /* Sharing ours: the mcp profiles refuse this with an error naming them. */
    free(net->path);
    *net = (struct spec_namespace){0};
  } else {
    /* none (the default): a new namespace; the runtime brings lo up in it. */
    free(net->path);
    *net = (struct spec_namespace){.present = true};
  }
  s->has_linux = true;
  if (o->seccomp) {
    struct seccomp_profile_target target = {.capabilities = p->capabilities.bounding};
    struct spec_seccomp loaded;
    if (seccomp_profile_load(o->seccomp, &target, &loaded, err) < 0)
      return cm_error_prefix(err, "--seccomp");
    spec_seccomp_clear(&s->linux_.seccomp);
    s->linux_.seccomp = loaded;
  }
  return 0;
}

/* root.path, relative to the bundle when it is not absolute (malloc'd). */
static char *root_dir(const struct spec *s, const char *bundle) {
  char *root;
  if (s->root_path[0] == '/')
    return xstrdup(s->root_path);
  if (asprintf(&root, "%s/%s", bundle, s->root_path) < 0)
    abort();
  return root;
}

/* The root as an overlay: the rootfs below, a throwaway upper layer in the scratch tmpfs. */
int run_spec_ephemeral_root(struct spec *s, const char *bundle, struct cleanup_plan *plan, struct cm_error **err) {
  char lower[PATH_MAX];
  cleanup_free char *root = root_dir(s, bundle);
  if (realpath(root, lower) == NULL)
    return cm_error_set(err, errno, "--ephemeral: rootfs %s", root);
  char merged[PATH_MAX];
  if (scratch_overlay(plan, "root", lower, merged, sizeof(merged), err) < 0)
    return cm_error_prefix(err, "--ephemeral");
  free(s->root_path);
  s->root_path = xstrdup(merged);
  return 0;
}

/* Read from the config as the caller wrote it (or the default one --rootfs generates): the
 * options and the profiles never add an LSM label, a shared pid namespace or CAP_SYS_PTRACE. A
 * config that does not load says no: the real load reports why, and nothing is forked. */
bool run_spec_needs_sealed_copy(const struct run_options *o) {
  struct cm_error *ignored = NULL;
  struct spec *s;
  if (o->rootfs || o->image || o->host) {
    cleanup_free char *json = spec_default_json(false);
    s = spec_load_string(json, strlen(json), "default config", &ignored);
  } else {
    char cfg[PATH_MAX + 16];
    snprintf(cfg, sizeof(cfg), "%s/config.json", o->bundle);
    s = spec_load_file(cfg, "config.json", &ignored);
  }
  cm_error_freep(&ignored);
  bool needed = s && s->process && selfclone_required(s, s->process);
  spec_free(s);
  return needed;
}

static bool under_mount(const struct spec *s, const char *path) {
  for (size_t i = 0; i < s->n_mounts; i++) {
    const char *d = s->mounts[i].destination;
    size_t n = strlen(d);
    if (strncmp(path, d, n) == 0 && (path[n] == '\0' || path[n] == '/' || (n == 1 && d[0] == '/')))
      return true;
  }
  return false;
}

int run_spec_check_process(const struct spec *s, const struct run_options *o, const char *bundle,
                           struct cm_error **err) {
  cleanup_free char *root = root_dir(s, bundle);
  cleanup_close int root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root_fd < 0)
    return cm_error_set(err, errno, "the container's root %s", root);
  /* The runtime would create a missing cwd inside the rootfs, as runc does: that is a write into
   * the bundle on the host, which codemode-run never makes for a flag. */
  if (o->cwd && !o->ephemeral && !o->image && !o->host && !under_mount(s, o->cwd)) {
    cleanup_close int fd = safepath_open(root_fd, o->cwd, O_PATH | O_DIRECTORY, NULL);
    if (fd < 0)
      return cm_error_set(err, 0,
                          "--cwd %s: no such directory in the container (codemode-run does not create it in the "
                          "bundle's rootfs): use a directory that exists, mount one there (--mount, --state), "
                          "or add --ephemeral",
                          o->cwd);
  }
  const char *cmd = s->process->args.items[0];
  if (cmd[0] == '/') {
    cleanup_close int fd = safepath_open(root_fd, cmd, O_PATH, NULL);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))
      return cm_error_set(err, 0,
                          "the command %s is a directory in the container, not a program: name the program "
                          "(e.g. -- node %s/index.js)",
                          cmd, cmd);
  }
  return 0;
}

/* --mount SRC:DST:cow: the profile judged a read-only bind of SRC; the container gets instead an
 * overlay of SRC with a throwaway upper layer in the scratch tmpfs, so it may write there (a
 * package manager's cache that must be writable to be read: npm's) and SRC never changes. The
 * overlay is a mount of the config, not one made here and bound: under a user namespace its
 * layers are idmapped and the container assembles it (runtime/userns_setup.h), so the files are
 * its root's (an overlay mount itself cannot be idmapped). */
int run_spec_cow_mounts(struct spec *s, const struct run_options *o, struct cleanup_plan *plan,
                        struct cm_error **err) {
  for (size_t i = 0; i < o->mounts.count; i++) {
    const char *arg = o->mounts.items[i];
    size_t n = strlen(arg);
    if (n < 4 || strcmp(arg + n - 4, ":cow") != 0)
      continue;
    cleanup_free char *copy = run_spec_expand_home("--mount", arg, err);
    if (copy == NULL)
      return -1;
    char *dst = strchr(copy, ':');
    *dst++ = '\0';
    *strrchr(dst, ':') = '\0';
    char real[PATH_MAX];
    bool dotdot = false;
    cleanup_free char *clean = path_clean_absolute(dst, &dotdot);
    if (clean == NULL || realpath(copy, real) == NULL)
      return cm_error_set(err, errno, "--mount %s", arg);
    struct spec_mount *m = NULL;
    for (size_t k = 0; k < s->n_mounts; k++)
      if (strcmp(s->mounts[k].destination, clean) == 0 && s->mounts[k].source && strcmp(s->mounts[k].source, real) == 0)
        m = &s->mounts[k];
    if (m == NULL)
      continue; /* the profile removed it */
    char name[32], upper[PATH_MAX], work[PATH_MAX], data[3 * PATH_MAX + 64];
    snprintf(name, sizeof(name), "cow-%zu", i);
    if (scratch_layers(plan, name, upper, work, sizeof(upper), err) < 0 ||
        scratch_overlay_data(real, upper, work, data, sizeof(data), err) < 0)
      return cm_error_prefix(err, "--mount %s", arg);
    free(m->type);
    m->type = xstrdup("overlay");
    free(m->source);
    m->source = xstrdup("overlay");
    struct spec_strv kept = {0};
    for (size_t k = 0; k < m->options.count; k++) {
      const char *opt = m->options.items[k];
      if (strcmp(opt, "rbind") != 0 && strcmp(opt, "bind") != 0 && strcmp(opt, "ro") != 0)
        spec_strv_push(&kept, opt);
    }
    spec_strv_free(&m->options);
    m->options = kept;
    char *opt = data;
    for (char *comma; (comma = strchr(opt, ',')) != NULL; opt = comma + 1) {
      *comma = '\0';
      spec_strv_push(&m->options, opt);
    }
    spec_strv_push(&m->options, opt);
    spec_mount_decode_options(m);
    /* The profile judged SRC; the other layers are the scratch space's. */
    m->trusted = true;
  }
  return 0;
}

/* An error about mounts[N] names the index of config.json, which the user of codemode-run never
 * wrote when the mount came from a flag: say which --mount or --state it was. */
void run_spec_name_mount_flag(const struct spec *s, const struct run_options *o, struct cm_error *err) {
  const char *at = err && err->msg ? strstr(err->msg, "mounts[") : NULL;
  if (at == NULL || s == NULL)
    return;
  size_t n = strtoul(at + 7, NULL, 10);
  if (n >= s->n_mounts)
    return;
  const char *dst = s->mounts[n].destination;
  const struct spec_strv *lists[2] = {&o->mounts, &o->states};
  const char *flags[2] = {"--mount", "--state"};
  for (int k = 0; k < 2; k++) {
    for (size_t i = 0; i < lists[k]->count; i++) {
      const char *arg = lists[k]->items[i];
      const char *colon = strchr(arg, ':');
      const char *d = colon ? colon + 1 : (k == 1 ? "/state" : NULL);
      if (d == NULL)
        continue;
      size_t dl = strcspn(d, ":");
      if (strlen(dst) == dl && strncmp(d, dst, dl) == 0) {
        cm_error_prefix(&err, "%s %s", flags[k], arg);
        return;
      }
    }
  }
}
