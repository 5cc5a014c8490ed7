/* restore: a checkpoint brought back as a container (src/criu/criu.h). The state directory is
 * written as create writes it (state.json, the kept config.json, the cgroup), with the restored
 * process as init, so state, exec, kill, ps and delete treat it like any other container. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "criu/criu.h"
#include "criu/externals.h"
#include "criu/swrk.h"
#include "linux/console.h"
#include "runtime/hooks.h"
#include "runtime/state.h"
#include "util/cleanup.h"
#include "util/log.h"
#include "util/safepath.h"

#define PROFILE_ANNOTATION "run.codemode.profile"
#define CRIU_ROOT "criu-root"

struct restore_run {
  const struct restore_options *o;
  const struct spec *spec;
  struct container_state *st;
};

static int restore_notify(void *arg, const char *script, pid_t pid, int fd, struct cm_error **err) {
  struct restore_run *r = arg;
  cm_debug("restore: criu notification %s (pid %d)", script, (int)pid);
  if (strcmp(script, "orphan-pts-master") == 0 && fd >= 0) {
    /* The restored pty's new master: the caller's, as at create (--console-socket). */
    int rc = 0;
    if (r->o->console_socket)
      rc = console_socket_send(r->o->console_socket, fd, err);
    else
      rc = cm_error_set(err, 0, "the checkpoint has a terminal: restore needs --console-socket");
    close(fd);
    return rc;
  }
  if (fd >= 0)
    close(fd);
  /* The restored tree's namespaces exist, nothing runs yet: the prestart and createRuntime hooks
   * (a network set up by a hook, as Docker's and CNI's are), where runc runs them too. */
  if (strcmp(script, "setup-namespaces") == 0 &&
      (r->spec->hooks[SPEC_HOOK_PRESTART].count || r->spec->hooks[SPEC_HOOK_CREATE_RUNTIME].count)) {
    r->st->pid = pid;
    cleanup_free char *json = state_oci_json(r->st, "creating");
    struct hook_exec how = {.cwd = r->st->bundle};
    if (hooks_run(r->spec->hooks, SPEC_HOOK_PRESTART, json, &how, err) < 0 ||
        hooks_run(r->spec->hooks, SPEC_HOOK_CREATE_RUNTIME, json, &how, err) < 0)
      return -1;
  }
  return 0;
}

/* The checkpoint's stdio pipes and external files become ours: CRIU connects the restored fds
 * to the fds we were given (an engine's new pipes), keyed by the old one's name
 * (criu_externals_stdio). Other kinds are CRIU's business. */
static int stdio_inherits(int images_fd, bool new_pidns, CriuInheritFd *slots, char names[3][64], CriuInheritFd **out,
                          size_t *n_out, struct cm_error **err) {
  *n_out = 0;
  cleanup_close int fd = openat(images_fd, CRIU_DESCRIPTORS_FILE, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return 0;
  char buf[3 * (CRIU_STDIO_NAME_MAX + 1) + 1];
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  if (n <= 0)
    return 0;
  buf[n] = '\0';
  size_t k = 0;
  /* One line per fd, an empty one for an fd that is neither (strtok would skip it). */
  char *line = buf;
  for (int i = 0; i < 3 && line && *line; i++, line = strchr(line, '\0') + 1) {
    char *nl = strchr(line, '\n');
    if (nl == NULL)
      break;
    *nl = '\0';
    if ((strncmp(line, "pipe:[", 6) != 0 && strncmp(line, "file[", 5) != 0) || strlen(line) >= 64)
      continue;
    /* CRIU 3.17 reopens an inherited external file through /proc/<its own pid>, which in a new
     * pid namespace names another process (it then finds that one's fd): refuse, clearly. */
    if (new_pidns && strncmp(line, "file[", 5) == 0)
      return cm_error_set(err, ENOTSUP, "restore: the checkpointed container's fd %d was a file outside it (%s); "
                                        "CRIU cannot hand such a file back to a container with its own pid "
                                        "namespace: give the container pipes as stdio (as containerd and "
                                        "Docker do) before checkpointing it",
                          i, line);
    /* One fd per key (stdout and stderr are often the same pipe or file): CRIU takes one. */
    bool seen = false;
    for (size_t j = 0; j < k && !seen; j++)
      seen = strcmp(names[j], line) == 0;
    if (seen)
      continue;
    snprintf(names[k], 64, "%s", line);
    slots[k] = (CriuInheritFd)CRIU_INHERIT_FD__INIT;
    slots[k].key = names[k];
    slots[k].fd = i;
    out[k] = &slots[k];
    k++;
  }
  *n_out = k;
  return 0;
}

/* The config's mount points in the rootfs, made where missing (runc does the same): a restore
 * on a fresh copy of an image (containerd's new snapshot) lacks the directories the original
 * create made, and CRIU mounts onto them. Inside the rootfs only (util/safepath.h): a hostile
 * rootfs's symlinks cannot point these mkdirs at the host. What cannot be made (a read-only
 * rootfs) is left to CRIU, whose error names the mount point. */
static void make_mount_points(const struct spec *s, const char *rootfs, const char *bundle) {
  cleanup_close int root_fd = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root_fd < 0)
    return;
  for (size_t i = 0; i < s->n_mounts; i++) {
    const struct spec_mount *m = &s->mounts[i];
    bool is_dir = true;
    if (m->source && m->type && strcmp(m->type, "bind") == 0) {
      cleanup_free char *src = NULL;
      if (m->source[0] != '/' && asprintf(&src, "%s/%s", bundle, m->source) < 0)
        abort();
      struct stat st;
      if (stat(src ? src : m->source, &st) == 0 && !S_ISDIR(st.st_mode))
        is_dir = false;
    }
    struct cm_error *e = NULL;
    int fd = safepath_mount_target(root_fd, m->destination, is_dir, &e);
    if (fd >= 0)
      close(fd);
    else
      cm_debug("restore: mount point %s not made: %s", m->destination, e ? e->msg : "");
    cm_error_free(e);
  }
}

static int copy_config(int dirfd, const char *src, struct cm_error **err) {
  cleanup_close int in = open(src, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (in < 0 || fstat(in, &st) < 0)
    return cm_error_set(err, errno, "keep a copy of %s", src);
  cleanup_free char *buf = malloc((size_t)st.st_size + 1);
  if (buf == NULL)
    abort();
  ssize_t n = read(in, buf, (size_t)st.st_size);
  if (n < 0)
    return cm_error_set(err, errno, "keep a copy of %s", src);
  return write_file_atomic(dirfd, "config.json", buf, (size_t)n, 0600, err);
}

/* A mount namespace of our own, slave of the host's, for the bind below: it is never seen on the
 * host and goes away with us (criu is our child and shares it). First of all, before any fd is
 * opened: CRIU mounts under its work dir (its cgroup yard), which must be in this namespace. */
static int private_mount_ns(struct cm_error **err) {
  if (unshare(CLONE_NEWNS) < 0)
    return cm_error_set(err, errno, "restore: unshare a mount namespace");
  /* Without this, our bind would propagate to the host's mount table (a shared /). */
  if (mount(NULL, "/", NULL, MS_SLAVE | MS_REC, NULL) < 0)
    return cm_error_set(err, errno, "restore: make / a slave mount");
  return 0;
}

/* CRIU restores the container's mount tree on a root that must be a mount point: the rootfs
 * bound onto <state dir>/criu-root (in private_mount_ns's namespace). */
static int prepare_root(const char *state_dir, const char *rootfs, char **root_out, struct cm_error **err) {
  if (asprintf(root_out, "%s/" CRIU_ROOT, state_dir) < 0)
    abort();
  if (mkdir(*root_out, 0700) < 0 && errno != EEXIST)
    return cm_error_set(err, errno, "restore: mkdir %s", *root_out);
  if (mount(rootfs, *root_out, NULL, MS_BIND | MS_REC, NULL) < 0)
    return cm_error_set(err, errno, "restore: bind %s onto %s", rootfs, *root_out);
  return 0;
}

static int wait_restored(pid_t pid, int *exit_status) {
  /* Forward the usual termination signals to the container, as a foreground run does. */
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGCHLD);
  sigprocmask(SIG_BLOCK, &set, &old);
  int status = 0;
  for (;;) {
    pid_t got = waitpid(pid, &status, WNOHANG);
    if (got == pid)
      break;
    if (got < 0 && errno != EINTR)
      return -1;
    int sig = 0;
    sigwait(&set, &sig);
    if (sig != SIGCHLD)
      kill(pid, sig);
  }
  sigprocmask(SIG_SETMASK, &old, NULL);
  *exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return 0;
}

int criu_restore(const struct runtime_context *ctx, const struct restore_options *o, int *exit_status,
                 struct cm_error **err) {
  *exit_status = 0;
  if (geteuid() != 0)
    return cm_error_set(err, EPERM, "restore: CRIU needs root");
  if (container_id_validate(o->id, err) < 0)
    return -1;
  /* Lazy pages: CRIU restores the tree without its memory and hands the faults to a `criu
   * lazy-pages` daemon the caller runs on the work path (its socket is there), which fetches
   * the pages from the dump's page server. Refused up front when the kernel cannot. */
  if (o->c.lazy_pages && criu_lazy_pages_usable(o->c.criu_path, err) < 0)
    return -1;
  /* CRIU's strict mode aborts on a cgroup that exists ("Abort restore of existing cgroups"),
   * and the container's is made first, for criu to start in it (runc does the same, and fails
   * the same way deep in CRIU's log): say so before anything is made. */
  if (o->c.cgroup_mode == CRIU_CG_STRICT && ctx->cgroup_manager != CGROUP_MANAGER_DISABLED)
    return cm_error_set(err, 0, "restore --manage-cgroups-mode strict: CRIU aborts when the container's cgroup "
                                "exists, and restore makes it before CRIU runs; restore with full (the checkpoint's "
                                "cgroup properties restored too) or soft");
  if (private_mount_ns(err) < 0)
    return -1;
  const char *image_path = o->c.image_path ? o->c.image_path : "checkpoint";
  const char *work_path = o->c.work_path ? o->c.work_path : image_path;
  const char *bundle_arg = o->bundle ? o->bundle : ".";
  char bundle[PATH_MAX], rootfs[PATH_MAX];
  if (realpath(bundle_arg, bundle) == NULL)
    return cm_error_set(err, errno, "--bundle %s", bundle_arg);
  cleanup_free char *cfg = NULL;
  if (asprintf(&cfg, "%s/config.json", bundle) < 0)
    abort();
  struct spec *s = spec_load_file(cfg, "config.json", err);
  if (s == NULL)
    return -1;
  int rc = -1, dirfd = -1, images_fd = -1, work_fd = -1;
  bool made = false;
  pid_t restored = -1;
  struct cgroup *cg = NULL;
  struct criu_externals ext = {.netns_fd = -1};
  struct criu_swrk w = {.pid = -1, .sock = -1};
  CriuResp *resp = NULL;
  char *state_dir = NULL, *criu_root = NULL;
  struct container_state st = {0};
  struct spec_kv *annotations = NULL;
  {
    cleanup_free char *joined = NULL;
    const char *root = s->root_path;
    if (root[0] != '/' && asprintf(&joined, "%s/%s", bundle, root) < 0)
      abort();
    if (realpath(joined ? joined : root, rootfs) == NULL) {
      cm_error_set(err, errno, "config.json: .root.path: %s", root);
      goto out;
    }
  }
  if (s->process && s->process->terminal && o->console_socket == NULL) {
    cm_error_set(err, 0, "config.json: .process.terminal is true but --console-socket was not given");
    goto out;
  }
  images_fd = open(image_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (images_fd < 0) {
    cm_error_set(err, errno, "--image-path %s", image_path);
    goto out;
  }
  if (faccessat(images_fd, "inventory.img", F_OK, 0) < 0) {
    cm_error_set(err, errno, "--image-path %s: not a checkpoint (no inventory.img)", image_path);
    goto out;
  }
  if (mkdir(work_path, 0700) < 0 && errno != EEXIST) {
    cm_error_set(err, errno, "--work-path %s", work_path);
    goto out;
  }
  work_fd = open(work_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (work_fd < 0) {
    cm_error_set(err, errno, "--work-path %s", work_path);
    goto out;
  }

  dirfd = state_dir_create(ctx->root, o->id, err);
  if (dirfd < 0)
    goto out;
  made = true;
  state_dir = state_dir_path(ctx->root, o->id);
  if (copy_config(dirfd, cfg, err) < 0)
    goto fail;
  st.id = strdup(o->id);
  st.bundle = strdup(bundle);
  st.rootfs = strdup(rootfs);
  char created[CM_RFC3339_LEN];
  cm_now_rfc3339(created);
  st.created = strdup(created);
  st.owner = strdup("");
  st.annotations = s->annotations;
  /* The profile the restoring runtime runs under is recorded as create records it: exec and
   * update on the restored container are then hardened as on the original. */
  if (o->profile && strcmp(o->profile, "default") != 0) {
    size_t n = s->annotations.count;
    annotations = calloc(n + 1, sizeof(*annotations));
    if (annotations == NULL)
      abort();
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
      if (strcmp(s->annotations.items[i].key, PROFILE_ANNOTATION) != 0)
        annotations[k++] = s->annotations.items[i];
    annotations[k++] = (struct spec_kv){(char *)PROFILE_ANNOTATION, (char *)o->profile};
    st.annotations = (struct spec_kv_list){.items = annotations, .count = k};
  }
  if (ctx->cgroup_manager != CGROUP_MANAGER_DISABLED) {
    if (cgroup_create_without_resources(o->id, &s->linux_, ctx->cgroup_manager, &cg, err) < 0)
      goto fail;
    st.cgroup = cgroup_serialize(cg);
  }
  if (criu_externals_for_restore(s, bundle, cg ? cgroup_path(cg) : NULL, &ext, err) < 0)
    goto fail;
  make_mount_points(s, rootfs, bundle);
  if (prepare_root(state_dir, rootfs, &criu_root, err) < 0)
    goto fail;

  CriuOpts opts = CRIU_OPTS__INIT;
  criu_opts_common(&opts, &o->c, s, images_fd, work_fd, "restore.log", criu_root);
  /* The restored tree becomes our child (not criu's): we wait for it, or the shim inherits it. */
  opts.has_rst_sibling = true;
  opts.rst_sibling = true;
  CriuCgroupRoot cgroot = CRIU_CGROUP_ROOT__INIT, *cgroots[1] = {&cgroot};
  if (cg) {
    /* The checkpoint's cgroup becomes this container's own (a restore under a new id gets its
     * own cgroup, not the original's). */
    cgroot.path = (char *)cgroup_path(cg);
    opts.n_cg_root = 1;
    opts.cg_root = cgroots;
  }
  opts.n_external = ext.n;
  opts.external = ext.ext;
  CriuInheritFd slots[4], *inherit[4];
  char pipe_names[3][64];
  size_t n_inherit = 0;
  const struct spec_namespace *pidns = &s->linux_.namespaces[SPEC_NS_PID];
  if (stdio_inherits(images_fd, pidns->present && pidns->path == NULL, slots, pipe_names, inherit, &n_inherit, err) < 0)
    goto fail;
  int keep[3] = {images_fd, work_fd, -1};
  size_t n_keep = 2;
  if (ext.netns_fd >= 0) {
    slots[n_inherit] = (CriuInheritFd)CRIU_INHERIT_FD__INIT;
    slots[n_inherit].key = CRIU_EXT_NETNS_KEY;
    slots[n_inherit].fd = ext.netns_fd;
    inherit[n_inherit] = &slots[n_inherit];
    n_inherit++;
    keep[n_keep++] = ext.netns_fd;
  }
  opts.n_inherit_fd = n_inherit;
  opts.inherit_fd = inherit;
  CriuReq req = CRIU_REQ__INIT;
  req.type = CRIU_REQ_TYPE__RESTORE;
  req.opts = &opts;
  struct restore_run run = {.o = o, .spec = s, .st = &st};
  if (criu_swrk_start(&w, o->c.criu_path, keep, n_keep, err) < 0)
    goto fail;
  /* criu in the container's cgroup first: what it forks, the restored tree, is born there. */
  if (cg && cgroup_enter(cg, w.pid, err) < 0)
    goto fail;
  cm_debug("restore: %s from %s, root %s, %zu external(s)", o->id, image_path, criu_root, ext.n);
  if (criu_swrk_call(&w, &req, restore_notify, &run, &resp, err) < 0)
    goto fail;
  if (!resp->success) {
    criu_fail(err, "restore", resp, work_fd, work_path, "restore.log");
    goto fail;
  }
  if (resp->restore == NULL || resp->restore->pid <= 0) {
    cm_error_set(err, EBADMSG, "criu restore: the response names no pid");
    goto fail;
  }
  restored = resp->restore->pid;
  criu_swrk_end(&w);
  if (cg && cgroup_apply_resources(cg, &s->linux_, err) < 0)
    goto fail;
  st.pid = restored;
  st.pid_start_time = proc_pid_start_time(restored);
  if (state_write(dirfd, &st, err) < 0)
    goto fail;
  if (o->pid_file && pid_file_write(o->pid_file, restored, err) < 0)
    goto fail;
  umount2(criu_root, MNT_DETACH);
  rmdir(criu_root);
  close(dirfd);
  dirfd = -1;
  if (!o->detach) {
    if (wait_restored(restored, exit_status) < 0) {
      cm_error_set(err, errno, "restore: wait for pid %d", (int)restored);
      goto out;
    }
    rc = runtime_delete(ctx, o->id, true, err);
    goto out;
  }
  rc = 0;
  goto out;

fail:
  if (restored > 0) {
    kill(restored, SIGKILL);
    waitpid(restored, NULL, 0);
  }
  criu_swrk_end(&w);
  if (cg) {
    struct cm_error *ignored = NULL;
    cgroup_kill_all(cg, SIGKILL, &ignored);
    cm_error_freep(&ignored);
    cgroup_destroy(cg, &ignored);
    cm_error_freep(&ignored);
  }
  if (criu_root) {
    umount2(criu_root, MNT_DETACH);
    rmdir(criu_root);
  }
  if (made) {
    struct cm_error *ignored = NULL;
    if (dirfd >= 0)
      close(dirfd);
    dirfd = -1;
    state_dir_remove(ctx->root, o->id, &ignored);
    cm_error_freep(&ignored);
  }
out:
  if (resp)
    criu_resp__free_unpacked(resp, NULL);
  criu_swrk_end(&w);
  if (dirfd >= 0)
    close(dirfd);
  if (images_fd >= 0)
    close(images_fd);
  if (work_fd >= 0)
    close(work_fd);
  if (cg)
    cgroup_free(cg);
  criu_externals_free(&ext);
  st.annotations = (struct spec_kv_list){0};
  free(annotations);
  container_state_clear(&st);
  free(state_dir);
  free(criu_root);
  spec_free(s);
  return rc;
}
