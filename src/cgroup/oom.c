/* OOM notifications for `events`: cgroup2's memory.events watched with inotify (oom_kill
 * counter), or cgroup v1's memory.oom_control registered with an eventfd. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "cgroup/internal.h"
#include "util/cleanup.h"

struct cgroup_oom_watch {
  bool v2;
  int fd; /* inotify (v2) or eventfd (v1) */
  char *dir;
  uint64_t last_oom_kill; /* v2 */
};

static uint64_t oom_kill_count(const char *dir) {
  cleanup_free char *s = cg_read(dir, "memory.events", NULL);
  for (char *line = s; line && *line;) {
    if (strncmp(line, "oom_kill ", 9) == 0)
      return strtoull(line + 9, NULL, 10);
    char *nl = strchr(line, '\n');
    line = nl ? nl + 1 : NULL;
  }
  return 0;
}

static int open_v2(struct cgroup_oom_watch *w, struct cm_error **err) {
  w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (w->fd < 0)
    return cm_error_set(err, errno, "inotify_init1");
  /* cgroup.events too: "populated 0" is how we learn the container's processes are all gone. */
  static const char *const files[] = {"memory.events", "cgroup.events"};
  for (size_t i = 0; i < 2; i++) {
    cleanup_free char *path = NULL;
    if (asprintf(&path, "%s/%s", w->dir, files[i]) < 0)
      abort();
    if (inotify_add_watch(w->fd, path, IN_MODIFY) < 0)
      return cm_error_set(err, errno, "inotify_add_watch %s", path);
  }
  w->last_oom_kill = oom_kill_count(w->dir);
  return 0;
}

static int open_v1(struct cgroup_oom_watch *w, struct cm_error **err) {
  cleanup_free char *path = NULL;
  if (asprintf(&path, "%s/memory.oom_control", w->dir) < 0)
    abort();
  cleanup_close int control = open(path, O_RDONLY | O_CLOEXEC);
  if (control < 0)
    return cm_error_set(err, errno, "open %s", path);
  w->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (w->fd < 0)
    return cm_error_set(err, errno, "eventfd");
  /* The kernel signals the eventfd on each OOM in the cgroup, and once more when it is removed. */
  char value[32];
  snprintf(value, sizeof(value), "%d %d", w->fd, control);
  return cg_write(w->dir, "cgroup.event_control", value, NULL, err);
}

int cgroup_oom_watch_open(struct cgroup *cg, struct cgroup_oom_watch **out, struct cm_error **err) {
  *out = NULL;
  if (cg->mode == CGROUP_MODE_DISABLED)
    return cm_error_set(err, ENOTSUP, "events: the container runs without a cgroup (--cgroup-manager disabled)");
  struct cgroup_oom_watch *w = calloc(1, sizeof(*w));
  if (w == NULL)
    abort();
  w->fd = -1;
  struct cgroup_v1_hierarchy *h = cg->mode == CGROUP_MODE_UNIFIED ? NULL : cg_v1_find(cg, "memory");
  if (h != NULL) {
    w->dir = strdup(h->dir);
  } else if (cg->v2_dir != NULL && cg_file_exists(cg->v2_dir, "memory.events")) {
    w->v2 = true;
    w->dir = strdup(cg->v2_dir);
  } else {
    free(w);
    return cm_error_set(err, ENOTSUP, "events: cgroup %s has no memory controller to watch for OOM", cg->path);
  }
  if (w->dir == NULL)
    abort();
  if ((w->v2 ? open_v2(w, err) : open_v1(w, err)) < 0) {
    cgroup_oom_watch_free(w);
    return cm_error_prefix(err, "events: watch %s for OOM", cg->path);
  }
  *out = w;
  return 0;
}

int cgroup_oom_watch_fd(const struct cgroup_oom_watch *w) {
  return w->fd;
}

int cgroup_oom_watch_read(struct cgroup_oom_watch *w, bool *gone, struct cm_error **err) {
  *gone = false;
  if (!w->v2) {
    uint64_t n = 0;
    if (read(w->fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
      return cm_error_set(err, errno, "events: read OOM eventfd");
    /* The last signal of a removed cgroup is not an OOM. */
    if (!cg_file_exists(w->dir, "memory.oom_control")) {
      *gone = true;
      return n > 0 ? (int)n - 1 : 0;
    }
    return (int)n;
  }
  char buf[4096];
  ssize_t r;
  while ((r = read(w->fd, buf, sizeof(buf))) > 0) {
    for (ssize_t off = 0; off < r;) {
      const struct inotify_event *ev = (const struct inotify_event *)(buf + off);
      if (ev->mask & IN_IGNORED)
        *gone = true; /* the file, hence the cgroup, was removed */
      off += (ssize_t)(sizeof(*ev) + ev->len);
    }
  }
  if (r < 0 && errno != EAGAIN)
    return cm_error_set(err, errno, "events: read inotify");
  uint64_t now = oom_kill_count(w->dir);
  int fresh = now > w->last_oom_kill ? (int)(now - w->last_oom_kill) : 0;
  w->last_oom_kill = now;
  if (cg_v2_populated(w->dir) == 0 || !cg_file_exists(w->dir, "memory.events"))
    *gone = true;
  return fresh;
}

void cgroup_oom_watch_free(struct cgroup_oom_watch *w) {
  if (w == NULL)
    return;
  if (w->fd >= 0)
    close(w->fd);
  free(w->dir);
  free(w);
}
