/* codemode-run --image REF: codemode-image (a separate binary: libcurl and libarchive never load
 * into codemode-run) pulls and unpacks the image into the store and names its read-only rootfs
 * and image config — or, for an image already there, the store's memo of that answer does,
 * without codemode-image (util/image_resolved.h); the image config becomes the process, the
 * image's User is looked up in the
 * rootfs' own /etc/passwd and /etc/group, and the rootfs stays locked (shared flock) while the
 * container runs, so `codemode images --prune` cannot take it away underneath. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spec/image_config.h"
#include "spec/json_util.h"
#include "supervisor/supervisor.h"
#include "util/cleanup.h"
#include "util/image_resolved.h"
#include "util/log.h"
#include "util/safepath.h"
#include "util/sibling.h"

#ifndef CODEMODE_BINDIR
#define CODEMODE_BINDIR "/usr/local/bin"
#endif

/* Run codemode-image resolve and read its one JSON line. Its stderr (progress, errors) is ours. */
static char *run_resolve(const struct run_options *o, struct cm_error **err) {
  cleanup_free char *helper = cm_sibling_binary("codemode-image", "CODEMODE_IMAGE", CODEMODE_BINDIR);
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0) {
    cm_error_set(err, errno, "--image: pipe");
    return NULL;
  }
  const char *argv[12];
  int n = 0;
  argv[n++] = helper;
  argv[n++] = "resolve";
  if (o->store) {
    argv[n++] = "--store";
    argv[n++] = o->store;
  }
  if (o->pull) {
    argv[n++] = "--pull";
    argv[n++] = o->pull;
  }
  argv[n++] = "-q";
  argv[n++] = o->image;
  argv[n] = NULL;
  pid_t pid = fork();
  if (pid < 0) {
    close(p[0]);
    close(p[1]);
    cm_error_set(err, errno, "--image: fork");
    return NULL;
  }
  if (pid == 0) {
    /* Not our blocked signal mask: a pull must be interruptible like any program. */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    dup2(p[1], STDOUT_FILENO);
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull >= 0)
      dup2(devnull, STDIN_FILENO); /* stdin is the MCP channel: never the helper's */
    execv(helper, (char *const *)argv);
    fprintf(stderr, "codemode-run: --image: exec %s: %s (install it next to codemode-run)\n", helper,
            strerror(errno));
    _exit(127);
  }
  close(p[1]);
  char *out = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len + 4096 > cap) {
      cap = cap ? cap * 2 : 8192;
      out = realloc(out, cap);
      if (out == NULL)
        abort();
    }
    ssize_t r = read(p[0], out + len, cap - len - 1);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    len += (size_t)r;
  }
  close(p[0]);
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || out == NULL) {
    free(out);
    /* codemode-image said why on stderr. */
    cm_error_set(err, 0, "--image %s: the image could not be made ready (see above)", o->image);
    return NULL;
  }
  out[len] = '\0';
  return out;
}

/* name → id from a passwd/group file of the rootfs: field 0 is the name, field idx the id. */
static bool lookup_id(int root_fd, const char *file, const char *name, int idx, uint32_t *id, uint32_t *gid_out) {
  cleanup_close int fd = safepath_open(root_fd, file, O_RDONLY, NULL);
  if (fd < 0)
    return false;
  cleanup_fclose FILE *f = fdopen(fd, "r");
  if (f == NULL)
    return false;
  fd = -1;
  char line[4096];
  while (fgets(line, sizeof(line), f)) {
    char *fields[8] = {0};
    int nf = 0;
    char *save = NULL;
    line[strcspn(line, "\n")] = '\0';
    for (char *t = strtok_r(line, ":", &save); t && nf < 8; t = strtok_r(NULL, ":", &save))
      fields[nf++] = t;
    if (nf > idx && strcmp(fields[0], name) == 0) {
      *id = (uint32_t)strtoul(fields[idx], NULL, 10);
      if (gid_out && nf > 3)
        *gid_out = (uint32_t)strtoul(fields[3], NULL, 10);
      return true;
    }
  }
  return false;
}

static bool all_digits(const char *s) {
  if (*s == '\0')
    return false;
  for (; *s; s++)
    if (*s < '0' || *s > '9')
      return false;
  return true;
}

/* Docker's User: "name", "uid", "name:group", "uid:gid" — looked up in the image. */
static int resolve_user(int root_fd, const char *user, struct spec_user *u, struct cm_error **err) {
  cleanup_free char *copy = xstrdup(user);
  char *group = strchr(copy, ':');
  if (group)
    *group++ = '\0';
  uint32_t uid = 0, gid = 0;
  bool gid_known = false;
  if (all_digits(copy)) {
    uid = (uint32_t)strtoul(copy, NULL, 10);
  } else if (!lookup_id(root_fd, "/etc/passwd", copy, 2, &uid, &gid)) {
    return cm_error_set(err, 0, "the image's User \"%s\": no user %s in the image's /etc/passwd", user, copy);
  } else {
    gid_known = true;
  }
  if (group && *group) {
    if (all_digits(group))
      gid = (uint32_t)strtoul(group, NULL, 10);
    else if (!lookup_id(root_fd, "/etc/group", group, 2, &gid, NULL))
      return cm_error_set(err, 0, "the image's User \"%s\": no group %s in the image's /etc/group", user, group);
    gid_known = true;
  }
  (void)gid_known;
  u->uid = uid;
  u->gid = gid;
  return 0;
}

/* The store's memo (util/image_resolved.h) of this REF, when it may stand in for a resolve:
 * --pull missing (the default) or never, and still fresh. 0 and *memo filled, else -1. */
static int memo_lookup(const struct run_options *o, struct image_resolved *memo) {
  if (o->pull && strcmp(o->pull, "missing") != 0 && strcmp(o->pull, "never") != 0)
    return -1;
  cleanup_free char *store = o->store ? xstrdup(o->store) : image_store_default_dir();
  cleanup_close int fd = store ? open(store, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
  return fd < 0 ? -1 : image_resolved_lookup(fd, o->image, memo);
}

/* Lock the rootfs at path (held until we exit: prune skips a rootfs somebody holds) and check,
 * once locked, that it is still the directory at that path (prune moves what it removes away
 * first). 0, 1 when it is gone (the lock dropped), -1 with err. */
static int lock_rootfs(struct run_image *img, const char *image, const char *rootfs, struct cm_error **err) {
  img->lock_fd = open(rootfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (img->lock_fd < 0 || flock(img->lock_fd, LOCK_SH) < 0)
    return cm_error_set(err, errno, "--image %s: %s", image, rootfs);
  struct stat held, now;
  if (fstat(img->lock_fd, &held) < 0 || stat(rootfs, &now) < 0 || held.st_dev != now.st_dev ||
      held.st_ino != now.st_ino) {
    close(img->lock_fd);
    img->lock_fd = -1;
    return 1;
  }
  return 0;
}

int run_image_prepare(struct spec *s, const struct run_options *o, struct run_image *img, struct cm_error **err) {
  img->lock_fd = -1;
  cleanup_free char *json = NULL;
  yajl_val t = NULL;
  const char *rootfs = NULL, *config = NULL;
  int rc = -1;
  char *cfg = NULL;
  struct image_resolved memo = {0};
  if (memo_lookup(o, &memo) == 0) {
    /* In the store already: codemode-image need not start (nor load its libraries). A rootfs
     * that cannot be locked (gone since the memo was written) is the slow path's to report. */
    struct cm_error *ignored = NULL;
    int locked = lock_rootfs(img, o->image, memo.rootfs, &ignored);
    cm_error_freep(&ignored);
    if (locked == 0) {
      rootfs = memo.rootfs;
      config = memo.config;
      cm_debug("--image %s: %s, from the store's memo of it", o->image, rootfs);
    }
  }
  if (rootfs == NULL) {
    json = run_resolve(o, err);
    if (json == NULL)
      goto out;
    t = yajl_tree_parse(json, NULL, 0);
    rootfs = t ? YAJL_GET_STRING(jfind(t, "rootfs")) : NULL;
    config = t ? YAJL_GET_STRING(jfind(t, "config")) : NULL;
    if (rootfs == NULL || config == NULL) {
      cm_error_set(err, 0, "--image %s: codemode-image gave no rootfs", o->image);
      goto out;
    }
    int locked = lock_rootfs(img, o->image, rootfs, err);
    if (locked == 1)
      cm_error_set(err, 0, "--image %s: its rootfs %s was removed as we started (codemode images --prune?): run again",
                   o->image, rootfs);
    if (locked != 0)
      goto out;
  }
  img->rootfs = xstrdup(rootfs);
  size_t len;
  cfg = read_whole_file(config, &len, err);
  struct image_process ip;
  if (cfg == NULL || image_process_parse(cfg, len, &ip, err) < 0)
    goto out;
  rc = image_process_apply(&ip, s->process, o->cmd, o->cmd ? (size_t)o->n_cmd : 0, o->entrypoint, err);
  if (rc == 0 && ip.user && ip.user[0])
    rc = resolve_user(img->lock_fd, ip.user, &s->process->user, err);
  image_process_clear(&ip);
  if (rc < 0)
    goto out;
  free(s->root_path);
  s->root_path = xstrdup(rootfs);
  rc = 0;
out:
  free(cfg);
  if (t)
    yajl_tree_free(t);
  image_resolved_clear(&memo);
  return rc;
}

void run_image_release(struct run_image *img) {
  if (img->lock_fd >= 0)
    close(img->lock_fd);
  img->lock_fd = -1;
  free(img->rootfs);
  img->rootfs = NULL;
}
