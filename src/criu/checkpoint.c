/* checkpoint: a running container's processes dumped by CRIU (src/criu/criu.h). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "criu/criu.h"
#include "criu/externals.h"
#include "criu/swrk.h"
#include "cgroup/cgroup.h"
#include "runtime/container.h"
#include "util/cleanup.h"
#include "util/log.h"

int criu_cgroup_mode_parse(const char *s, enum criu_cgroup_mode *out, struct cm_error **err) {
  static const struct {
    const char *name;
    enum criu_cgroup_mode mode;
  } modes[] = {{"soft", CRIU_CG_SOFT}, {"full", CRIU_CG_FULL}, {"strict", CRIU_CG_STRICT}, {"ignore", CRIU_CG_IGNORE}};
  for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
    if (strcmp(s, modes[i].name) == 0) {
      *out = modes[i].mode;
      return 0;
    }
  return cm_error_set(err, EINVAL, "--manage-cgroups-mode: \"%s\" must be soft, full, strict or ignore", s);
}

int criu_empty_ns_parse(const char *s, uint32_t *mask, struct cm_error **err) {
  /* CRIU can leave only a network namespace empty (its empty_ns takes CLONE_NEWNET alone). */
  if (strcmp(s, "network") == 0) {
    *mask |= CLONE_NEWNET;
    return 0;
  }
  return cm_error_set(err, 0, "--empty-ns: namespace \"%s\" is not supported: CRIU can only make the "
                                   "network namespace empty (--empty-ns network)",
                      s);
}

int criu_page_server_parse(const char *s, struct checkpoint_options *o, struct cm_error **err) {
  /* ADDR:PORT, the address in brackets when it is IPv6 ("[::1]:27277"), as runc splits it. */
  const char *colon = strrchr(s, ':');
  const char *host = s, *host_end = colon;
  if (s[0] == '[') {
    const char *close = strchr(s, ']');
    if (close == NULL || close[1] != ':')
      colon = NULL;
    host = s + 1;
    host_end = close;
  } else if (colon && memchr(s, ':', (size_t)(colon - s)) != NULL)
    colon = NULL; /* an IPv6 address needs its brackets */
  char *end = NULL;
  long port = colon ? strtol(colon + 1, &end, 10) : 0;
  if (colon == NULL || host_end == host || colon[1] == '\0' || *end != '\0' || port < 1 || port > 65535)
    return cm_error_set(err, 0, "--page-server \"%s\": expected ADDRESS:PORT (a port 1-65535; an IPv6 "
                                     "address in brackets: [::1]:27277)",
                        s);
  free(o->page_server_addr);
  o->page_server_addr = strndup(host, (size_t)(host_end - host));
  o->page_server_port = (int)port;
  return 0;
}

/* mkdir -p (as runc does), then its fd. */
static int open_dir(const char *flag, const char *path, bool create, struct cm_error **err) {
  if (create) {
    cleanup_free char *p = strdup(path);
    for (char *slash = p + 1; (slash = strchr(slash, '/')) != NULL; slash++) {
      *slash = '\0';
      if (mkdir(p, 0700) < 0 && errno != EEXIST)
        return cm_error_set(err, errno, "%s %s: mkdir %s", flag, path, p);
      *slash = '/';
    }
    if (mkdir(p, 0700) < 0 && errno != EEXIST)
      return cm_error_set(err, errno, "%s %s", flag, path);
  }
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return cm_error_set(err, errno, "%s %s", flag, path);
  return fd;
}

/* Init's stdio (criu_externals_stdio's names), one line per fd, into the images for restore. */
static int save_descriptors(int images_fd, char names[3][CRIU_STDIO_NAME_MAX], struct cm_error **err) {
  char buf[3 * (CRIU_STDIO_NAME_MAX + 1) + 1];
  size_t len = 0;
  for (int fd = 0; fd < 3; fd++)
    len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s\n", names[fd]);
  return write_file_atomic(images_fd, CRIU_DESCRIPTORS_FILE, buf, len, 0600, err);
}

/* The host directory of the container's freezer: the v1 freezer hierarchy's when there is one
 * (pause freezes there, cgroup/v1.c), else cgroup2's. malloc'd, NULL when neither is mounted. */
static char *freezer_dir(const char *cgroup_path) {
  cleanup_fclose FILE *f = fopen("/proc/self/mountinfo", "re");
  if (f == NULL)
    return NULL;
  char *line = NULL, *v1 = NULL, *v2 = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, f) > 0) {
    char root[4096], mnt[4096], fstype[64], sopts[1024];
    const char *dash = strstr(line, " - ");
    if (dash == NULL || sscanf(line, "%*s %*s %*s %4095s %4095s", root, mnt) != 2 ||
        sscanf(dash + 3, "%63s %*s %1023s", fstype, sopts) != 2 || strcmp(root, "/") != 0)
      continue;
    char **slot = NULL;
    if (strcmp(fstype, "cgroup2") == 0)
      slot = &v2;
    else if (strcmp(fstype, "cgroup") == 0 && strstr(sopts, "freezer"))
      slot = &v1;
    if (slot && *slot == NULL && asprintf(slot, "%s%s", mnt, cgroup_path) < 0)
      abort();
  }
  free(line);
  if (v1) {
    free(v2);
    return v1;
  }
  return v2;
}

static int dump_notify(void *arg, const char *script, pid_t pid, int fd, struct cm_error **err) {
  (void)err;
  int *status_fd = arg;
  if (fd >= 0)
    close(fd);
  cm_debug("checkpoint: criu notification %s (pid %d)", script, (int)pid);
  /* Lazy pages: the dump is written and its page server listens; the caller may start the
   * restore (CRIU 3.15+ says so here, not on a status fd of its own). */
  if (strcmp(script, "status-ready") == 0 && *status_fd >= 0) {
    ssize_t n;
    do
      n = write(*status_fd, "", 1);
    while (n < 0 && errno == EINTR);
    if (n != 1)
      cm_warn("checkpoint: write to --status-fd %d: %s", *status_fd, strerror(errno));
    close(*status_fd);
    *status_fd = -1;
  }
  return 0;
}

/* --status-fd: an open fd of ours that can be written. */
static int check_status_fd(int fd, struct cm_error **err) {
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0)
    return cm_error_set(err, errno, "--status-fd %d: not an open file descriptor", fd);
  if ((fl & O_ACCMODE) == O_RDONLY)
    return cm_error_set(err, EBADF, "--status-fd %d: open read-only, it must be writable", fd);
  return 0;
}

/* Things a dump would lose or CRIU cannot take, refused before anything is touched. */
static int check_dumpable(const struct container *c, const struct spec *s, const struct checkpoint_options *o,
                          struct cm_error **err) {
  if (c->status == STATUS_PAUSED && c->cgroup == NULL)
    return cm_error_set(err, 0, "container \"%s\" is paused and has no cgroup CRIU could find it frozen in", o->id);
  if (c->status != STATUS_RUNNING && c->status != STATUS_PAUSED)
    return cm_error_set(err, 0, "container not running: \"%s\" is %s (only a running container can be checkpointed)",
                        o->id, container_status_name(c->status));
  /* Its egress broker is a process of ours outside the container that CRIU would not dump. */
  if (faccessat(c->dirfd, "supervisor", F_OK, AT_SYMLINK_NOFOLLOW) == 0)
    return cm_error_set(err, 0, "container \"%s\" has an egress broker (--allow-host): checkpoint cannot take "
                                "the broker with it",
                        o->id);
  if (s->process && s->process->terminal && !o->c.shell_job)
    cm_debug("checkpoint: terminal container, its pty master is CRIU's orphan-pts-master");
  if (o->status_fd >= 0 && !o->c.lazy_pages)
    return cm_error_set(err, 0, "--status-fd %d: only used with --lazy-pages (it says when the lazy page "
                                     "server listens)",
                        o->status_fd);
  if (o->c.lazy_pages) {
    if (o->pre_dump)
      return cm_error_set(err, 0, "--lazy-pages with --pre-dump: a pre-dump leaves the memory where it is; "
                                       "use --lazy-pages on the final dump");
    if (o->status_fd >= 0 && check_status_fd(o->status_fd, err) < 0)
      return -1;
    if (criu_lazy_pages_usable(o->c.criu_path, err) < 0)
      return -1;
  }
  return 0;
}

int criu_checkpoint(const struct runtime_context *ctx, const struct checkpoint_options *o, struct cm_error **err) {
  if (geteuid() != 0)
    return cm_error_set(err, EPERM, "checkpoint: CRIU needs root");
  struct container c;
  if (container_open(ctx, o->id, STATE_DIR_WRITE, &c, err) < 0)
    return -1;
  int rc = -1;
  struct spec *s = NULL;
  struct criu_externals ext = {.netns_fd = -1};
  int images_fd = -1, work_fd = -1;
  struct criu_swrk w = {.pid = -1, .sock = -1};
  CriuResp *resp = NULL;
  char *frozen = NULL;
  const char *image_path = o->c.image_path ? o->c.image_path : "checkpoint";
  const char *work_path = o->c.work_path ? o->c.work_path : image_path;
  const char *log_name = o->pre_dump ? "pre-dump.log" : "dump.log";
  {
    cleanup_free char *cfg = NULL;
    cleanup_free char *dir = state_dir_path(ctx->root, o->id);
    if (asprintf(&cfg, "%s/config.json", dir) < 0)
      abort();
    s = spec_load_file(cfg, "config.json (kept at create)", err);
  }
  if (s == NULL || check_dumpable(&c, s, o, err) < 0)
    goto out;
  char stdio_names[3][CRIU_STDIO_NAME_MAX];
  if (criu_externals_for_dump(s, c.st.pid, &ext, err) < 0 || criu_externals_stdio(c.st.pid, &ext, stdio_names) < 0)
    goto out;
  if ((images_fd = open_dir("--image-path", image_path, true, err)) < 0 ||
      (work_fd = open_dir("--work-path", work_path, true, err)) < 0)
    goto out;
  if (o->parent_path) {
    /* CRIU resolves it from the image directory: say so when it is not there. */
    struct stat st;
    if (fstatat(images_fd, o->parent_path, &st, 0) < 0 || !S_ISDIR(st.st_mode)) {
      cm_error_set(err, errno ? errno : ENOTDIR, "--parent-path %s: not a directory relative to --image-path %s",
                   o->parent_path, image_path);
      goto out;
    }
  }

  CriuOpts opts = CRIU_OPTS__INIT;
  criu_opts_common(&opts, &o->c, s, images_fd, work_fd, log_name, c.st.rootfs);
  opts.has_pid = true;
  opts.pid = c.st.pid;
  if (o->leave_running) {
    opts.has_leave_running = true;
    opts.leave_running = true;
  }
  if (o->parent_path)
    opts.parent_img = (char *)o->parent_path;
  /* The memory goes to a page server: a `criu page-server` at ADDR:PORT, or with lazy pages
   * one of this dump's own on PORT that the restore side's `criu lazy-pages` fetches from
   * (the dump returns once it has served every page). */
  CriuPageServerInfo ps = CRIU_PAGE_SERVER_INFO__INIT;
  if (o->page_server_port > 0) {
    ps.address = o->page_server_addr;
    ps.has_port = true;
    ps.port = o->page_server_port;
    opts.ps = &ps;
  }
  /* A paused container (containerd pauses one before it checkpoints it): CRIU finds it frozen
   * in its cgroup, dumps it from there and leaves it as it was. */
  if (c.status == STATUS_PAUSED) {
    frozen = freezer_dir(cgroup_path(c.cgroup));
    if (frozen == NULL) {
      cm_error_set(err, ENOENT, "container \"%s\" is paused: no freezer cgroup mounted to dump it from", o->id);
      goto out;
    }
    opts.freeze_cgroup = frozen;
  }
  /* Pre-dumps and the dump after them track dirty memory: each one saves only what changed. */
  if (o->pre_dump || o->parent_path) {
    opts.has_track_mem = true;
    opts.track_mem = true;
  }
  opts.n_external = ext.n;
  opts.external = ext.ext;

  if (!o->pre_dump && save_descriptors(images_fd, stdio_names, err) < 0)
    goto out;
  CriuReq req = CRIU_REQ__INIT;
  req.type = o->pre_dump ? CRIU_REQ_TYPE__PRE_DUMP : CRIU_REQ_TYPE__DUMP;
  req.opts = &opts;
  int keep[] = {images_fd, work_fd};
  cm_debug("checkpoint: %s of %s (pid %d) into %s, %zu external(s)", o->pre_dump ? "pre-dump" : "dump", o->id,
           (int)c.st.pid, image_path, ext.n);
  int status_fd = o->status_fd;
  if (criu_swrk_start(&w, o->c.criu_path, keep, 2, err) < 0 ||
      criu_swrk_call(&w, &req, dump_notify, &status_fd, &resp, err) < 0)
    goto out;
  if (!resp->success) {
    criu_fail(err, o->pre_dump ? "pre-dump" : "dump", resp, work_fd, work_path, log_name);
    goto out;
  }
  rc = 0;
out:
  free(frozen);
  if (resp)
    criu_resp__free_unpacked(resp, NULL);
  criu_swrk_end(&w);
  if (images_fd >= 0)
    close(images_fd);
  if (work_fd >= 0)
    close(work_fd);
  criu_externals_free(&ext);
  spec_free(s);
  container_close(&c);
  /* The processes are gone (CRIU killed them after the dump): the container goes too, as with
   * runc, so that a restore may take the same id. */
  if (rc == 0 && !o->leave_running && !o->pre_dump)
    rc = runtime_delete(ctx, o->id, true, err);
  return rc;
}
