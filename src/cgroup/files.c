/* Reading, writing, creating and removing cgroupfs files and directories, with errors that name
 * the file (and the config field when the caller gives one). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cgroup/internal.h"
#include "util/cleanup.h"
#include "util/log.h"

static void sleep_ms(long ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
    ;
}

/* The value as shown in messages: without its trailing newline. */
static int shown_len(const char *value) {
  size_t len = strlen(value);
  while (len > 0 && value[len - 1] == '\n')
    len--;
  return (int)len;
}

int cg_write(const char *dir, const char *file, const char *value, const char *field, struct cm_error **err) {
  cleanup_free char *path = NULL;
  if (asprintf(&path, "%s/%s", dir, file) < 0)
    abort();
  cleanup_close int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
  ssize_t len = (ssize_t)strlen(value);
  if (fd >= 0) {
    ssize_t n = write(fd, value, (size_t)len);
    if (n == len)
      return 0;
    if (n >= 0)
      errno = EIO;
  }
  int saved = errno;
  if (field != NULL)
    return cm_error_set(err, saved, "%s: write %.*s to %s", field, shown_len(value), value, path);
  return cm_error_set(err, saved, "write %.*s to %s", shown_len(value), value, path);
}

int cg_writef(const char *dir, const char *file, const char *field, struct cm_error **err, const char *fmt, ...) {
  cleanup_free char *value = NULL;
  va_list ap;
  va_start(ap, fmt);
  int r = vasprintf(&value, fmt, ap);
  va_end(ap);
  if (r < 0)
    abort();
  return cg_write(dir, file, value, field, err);
}

char *cg_read(const char *dir, const char *file, struct cm_error **err) {
  cleanup_free char *path = NULL;
  if (asprintf(&path, "%s/%s", dir, file) < 0)
    abort();
  cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    cm_error_set(err, errno, "open %s", path);
    return NULL;
  }
  size_t cap = 4096, len = 0;
  cleanup_free char *buf = malloc(cap + 1);
  if (buf == NULL)
    abort();
  for (;;) {
    ssize_t n = read(fd, buf + len, cap - len);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      cm_error_set(err, errno, "read %s", path);
      return NULL;
    }
    if (n == 0)
      break;
    len += (size_t)n;
    if (len == cap) {
      cap *= 2;
      char *bigger = realloc(buf, cap + 1);
      if (bigger == NULL)
        abort();
      buf = bigger;
    }
  }
  buf[len] = '\0';
  return cm_steal_ptr(&buf);
}

bool cg_file_exists(const char *dir, const char *file) {
  cleanup_free char *path = NULL;
  if (asprintf(&path, "%s/%s", dir, file) < 0)
    abort();
  return access(path, F_OK) == 0;
}

int cg_mkdir_p(const char *base, const char *path, int *existing_depth, struct cm_error **err) {
  cleanup_free char *copy = strdup(path);
  cleanup_free char *cur = strdup(base);
  if (copy == NULL || cur == NULL)
    abort();
  int depth = 0;
  *existing_depth = -1;
  bool made = false;
  char *save = NULL;
  for (char *comp = strtok_r(copy, "/", &save); comp != NULL; comp = strtok_r(NULL, "/", &save)) {
    cleanup_free char *parent = cur;
    if (asprintf(&cur, "%s/%s", parent, comp) < 0)
      abort();
    made = mkdir(cur, 0755) == 0;
    if (made) {
      if (*existing_depth < 0)
        *existing_depth = depth;
    } else if (errno != EEXIST) {
      return cm_error_set(err, errno, "mkdir %s", cur);
    } else {
      struct stat st;
      if (stat(cur, &st) < 0 || !S_ISDIR(st.st_mode))
        return cm_error_set(err, ENOTDIR, "mkdir %s", cur);
    }
    depth++;
  }
  return made ? 1 : 0;
}

/* rmdir with retries: a cgroup stays busy for a moment after its last process exits. */
static int rmdir_retry(const char *dir) {
  for (int attempt = 0;; attempt++) {
    if (rmdir(dir) == 0 || errno == ENOENT)
      return 0;
    if (errno != EBUSY || attempt >= 100)
      return -1;
    sleep_ms(10);
  }
}

/* Depth-first removal of the sub-cgroups of dir, then dir itself. */
static int rmdir_subtree(const char *dir, struct cm_error **err) {
  DIR *d = opendir(dir);
  if (d == NULL) {
    if (errno == ENOENT)
      return 0;
    return cm_error_set(err, errno, "open %s", dir);
  }
  struct dirent *e;
  int rc = 0;
  while ((e = readdir(d)) != NULL) {
    if (e->d_type != DT_DIR || strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    cleanup_free char *child = NULL;
    if (asprintf(&child, "%s/%s", dir, e->d_name) < 0)
      abort();
    if (rmdir_subtree(child, err) < 0) {
      rc = -1;
      break;
    }
  }
  closedir(d);
  if (rc < 0)
    return -1;
  if (rmdir_retry(dir) < 0)
    return cm_error_set(err, errno, "rmdir %s", dir);
  return 0;
}

int cg_rmdir_tree(const char *base, const char *path, int existing_depth, struct cm_error **err) {
  cleanup_free char *leaf = NULL;
  if (asprintf(&leaf, "%s%s", base, path) < 0)
    abort();
  if (rmdir_subtree(leaf, err) < 0)
    return -1;
  if (existing_depth < 0)
    return 0;
  /* Walk up, removing the ancestors this run created (those deeper than existing_depth). */
  int depth = 0;
  for (const char *p = path; *p; p++)
    if (*p == '/')
      depth++;
  char *slash;
  while (depth - 1 > existing_depth && (slash = strrchr(leaf, '/')) != NULL) {
    *slash = '\0';
    depth--;
    if (rmdir_retry(leaf) < 0 && errno != ENOTEMPTY && errno != EBUSY)
      return cm_error_set(err, errno, "rmdir %s", leaf);
  }
  return 0;
}

static int read_pids_into(const char *dir, pid_t **pids, size_t *n, size_t *cap, struct cm_error **err) {
  cleanup_free char *procs = cg_read(dir, "cgroup.procs", err);
  if (procs == NULL)
    return -1;
  char *save = NULL;
  for (char *line = strtok_r(procs, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
    long v = strtol(line, NULL, 10);
    if (v <= 0)
      continue;
    if (*n == *cap) {
      *cap = *cap ? *cap * 2 : 16;
      pid_t *bigger = realloc(*pids, *cap * sizeof(pid_t));
      if (bigger == NULL)
        abort();
      *pids = bigger;
    }
    (*pids)[(*n)++] = (pid_t)v;
  }
  DIR *d = opendir(dir);
  if (d == NULL)
    return cm_error_set(err, errno, "open %s", dir);
  struct dirent *e;
  int rc = 0;
  while ((e = readdir(d)) != NULL) {
    if (e->d_type != DT_DIR || strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    cleanup_free char *child = NULL;
    if (asprintf(&child, "%s/%s", dir, e->d_name) < 0)
      abort();
    if (read_pids_into(child, pids, n, cap, err) < 0) {
      rc = -1;
      break;
    }
  }
  closedir(d);
  return rc;
}

int cg_read_pids_recursive(const char *dir, pid_t **pids, size_t *n, struct cm_error **err) {
  size_t cap = 0;
  *pids = NULL;
  *n = 0;
  if (read_pids_into(dir, pids, n, &cap, err) < 0) {
    free(*pids);
    *pids = NULL;
    *n = 0;
    return -1;
  }
  return 0;
}

struct cgroup_v1_hierarchy *cg_v1_find(const struct cgroup *cg, const char *controller) {
  size_t want = strlen(controller);
  for (size_t i = 0; i < cg->n_v1; i++) {
    const char *p = cg->v1[i].controllers;
    while (*p) {
      size_t len = strcspn(p, ",");
      if (len == want && strncmp(p, controller, len) == 0)
        return &cg->v1[i];
      p += len;
      if (*p == ',')
        p++;
    }
  }
  return NULL;
}

int cg_pass_error(struct cm_error **err, struct cm_error *e) {
  if (err != NULL && *err == NULL)
    *err = e;
  else
    cm_error_free(e);
  return -1;
}

/* The kernel refuses a quota below the burst, and a burst above the quota: a quota written
 * under an older, larger burst (an update that lowers it) fails with EINVAL. The burst is
 * then zeroed (always valid), the quota written again, and the new burst follows (the
 * caller's cg_write_cpu_burst). One write on the usual path; the retry only when it fails. */
int cg_write_cpu_quota(const char *dir, const char *file, const char *value, const char *field,
                       const struct spec_cpu *c, const char *burst_file, struct cm_error **err) {
  struct cm_error *first = NULL;
  if (cg_write(dir, file, value, field, &first) == 0)
    return 0;
  if (first->errnum != EINVAL || !c->burst.set || !cg_file_exists(dir, burst_file))
    return cg_pass_error(err, first);
  cm_error_free(first);
  if (cg_write(dir, burst_file, "0", "linux.resources.cpu.burst", err) < 0)
    return -1;
  return cg_write(dir, file, value, field, err);
}

int cg_write_cpu_burst(const char *dir, const struct spec_cpu *c, const char *burst_file,
                       struct cm_error **err) {
  if (!c->burst.set)
    return 0;
  struct cm_error *e = NULL;
  if (cg_writef(dir, burst_file, "linux.resources.cpu.burst", &e, "%" PRIu64, c->burst.value) == 0)
    return 0;
  /* A profile's own burst (spec.h) on a kernel before 5.14, which has no such file: the
   * limit it refines (the quota) holds without it. */
  if (c->burst_optional && e->errnum == ENOENT) {
    cm_debug("linux.resources.cpu.burst: %s/%s does not exist (Linux < 5.14): the profile's burst is not set",
             dir, burst_file);
    cm_error_free(e);
    return 0;
  }
  return cg_pass_error(err, e);
}
