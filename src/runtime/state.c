#include "runtime/state.h"

#include <ctype.h>
#include <libgen.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "runtime/lock_holder.h"
#include "util/cleanup.h"

const char *container_status_name(enum container_status s) {
  switch (s) {
  case STATUS_CREATING: return "creating";
  case STATUS_CREATED: return "created";
  case STATUS_RUNNING: return "running";
  case STATUS_PAUSED: return "paused";
  default: return "stopped";
  }
}

int container_id_validate(const char *id, struct cm_error **err) {
  if (id == NULL || *id == '\0')
    return cm_error_set(err, 0, "container id must not be empty");
  size_t len = strlen(id);
  if (len > 1024)
    return cm_error_set(err, 0, "invalid container id: longer than 1024 characters");
  /* The id names a directory under --root: no path separators or dot-dirs, so it can never
   * point outside the state root. */
  if (strcmp(id, ".") == 0 || strcmp(id, "..") == 0)
    return cm_error_set(err, 0, "invalid container id \"%s\"", id);
  for (const char *p = id; *p; p++) {
    unsigned char c = (unsigned char)*p;
    if (!(isalnum(c) || c == '_' || c == '-' || c == '.' || c == '+'))
      return cm_error_set(err, 0, "invalid container id \"%s\": only letters, digits and _ - . + are allowed",
                          id);
  }
  return 0;
}

char *state_dir_path(const char *root, const char *id) {
  char *p;
  if (asprintf(&p, "%s/%s", root, id) < 0)
    abort();
  return p;
}

static int mkdir_p(const char *path, mode_t mode) {
  cleanup_free char *copy = strdup(path);
  for (char *p = copy + 1; *p; p++) {
    if (*p == '/') {
      *p = '\0';
      if (mkdir(copy, mode) < 0 && errno != EEXIST)
        return -1;
      *p = '/';
    }
  }
  if (mkdir(copy, mode) < 0 && errno != EEXIST)
    return -1;
  return 0;
}

int state_dir_create(const char *root, const char *id, struct cm_error **err) {
  cleanup_free char *dir = state_dir_path(root, id);
  /* The root exists but the first time: one mkdir, not one per component of the root. */
  int made = mkdir(dir, 0700);
  if (made < 0 && errno == ENOENT) {
    if (mkdir_p(root, 0700) < 0)
      return cm_error_set(err, errno, "create state root %s", root);
    made = mkdir(dir, 0700);
  }
  if (made < 0) {
    if (errno == EEXIST)
      return cm_error_set(err, 0, "container with given ID already exists: \"%s\"", id);
    return cm_error_set(err, errno, "create state directory %s", dir);
  }
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return cm_error_set(err, errno, "open state directory %s", dir);
  if (flock(fd, LOCK_EX) < 0) {
    close(fd);
    return cm_error_set(err, errno, "lock state directory %s", dir);
  }
  return fd;
}

bool state_dir_exists(const char *root, const char *id) {
  cleanup_free char *dir = state_dir_path(root, id);
  struct stat st;
  return lstat(dir, &st) == 0 || errno != ENOENT;
}

/* The exclusive lock of a writer. Every holder but create keeps it for bounded work (a file
 * write, a freeze, a kill and its wait); create keeps it until init is ready, which its hooks and
 * the container decide, without bound. Waiting behind a create could be forever when the waiter
 * is what the create waits for (its hook running codemode on its own container), so a writer
 * that finds one at work refuses at once; `start` (wait_for_create) waits for it unless the
 * create is its own ancestor, or cannot be told from one. A create is at work when the lock is
 * held and state.json is not there yet (a delete that already removed it looks the same, and is
 * as brief). */
static int lock_for_writing(int fd, const char *id, bool wait_for_create, struct cm_error **err) {
  if (flock(fd, LOCK_EX | LOCK_NB) == 0)
    return 0;
  if (errno != EWOULDBLOCK)
    return cm_error_set(err, errno, "lock the state of container \"%s\"", id);
  if (faccessat(fd, "state.json", F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT) {
    if (!wait_for_create)
      return cm_error_set(err, 0,
                          "container \"%s\" is busy: another codemode process is creating (or removing) it; "
                          "try again when it is done",
                          id);
    pid_t holder = flock_holder_pid(fd);
    if (holder <= 0 || pid_is_our_ancestor(holder))
      return cm_error_set(err, 0,
                          "container \"%s\" is busy: it is being created by codemode process %d, which %s; "
                          "waiting for it could wait for ourselves (a hook of that create?): start it after "
                          "create returns",
                          id, (int)holder, holder <= 0 ? "could not be identified" : "is an ancestor of this one");
  }
  if (flock(fd, LOCK_EX) < 0)
    return cm_error_set(err, errno, "lock the state of container \"%s\"", id);
  return 0;
}

int state_dir_open(const char *root, const char *id, enum state_dir_access access, struct cm_error **err) {
  if (container_id_validate(id, err) < 0)
    return -1;
  cleanup_free char *dir = state_dir_path(root, id);
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP)
      return cm_error_set(err, 0, "container does not exist: \"%s\"", id);
    return cm_error_set(err, errno, "open state directory %s", dir);
  }
  if (access != STATE_DIR_READ && lock_for_writing(fd, id, access == STATE_DIR_WRITE_AFTER_CREATE, err) < 0) {
    close(fd);
    return -1;
  }
  /* Deleted while we waited for the lock? */
  struct stat st;
  if (fstat(fd, &st) < 0 || st.st_nlink == 0) {
    close(fd);
    return cm_error_set(err, 0, "container does not exist: \"%s\"", id);
  }
  return fd;
}

static int remove_tree_at(int dirfd) {
  DIR *d = fdopendir(dirfd);
  if (d == NULL) {
    close(dirfd);
    return -1;
  }
  struct dirent *de;
  int rc = 0;
  while ((de = readdir(d)) != NULL) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    if (unlinkat(dirfd, de->d_name, 0) == 0)
      continue;
    if (errno == EISDIR) {
      int sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub < 0 || remove_tree_at(sub) < 0 || unlinkat(dirfd, de->d_name, AT_REMOVEDIR) < 0)
        rc = -1;
    } else {
      rc = -1;
    }
  }
  closedir(d);
  return rc;
}

int state_dir_remove(const char *root, const char *id, struct cm_error **err) {
  cleanup_free char *dir = state_dir_path(root, id);
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT)
      return 0;
    return cm_error_set(err, errno, "open state directory %s", dir);
  }
  if (remove_tree_at(fd) < 0 || rmdir(dir) < 0)
    return cm_error_set(err, errno, "remove state directory %s", dir);
  return 0;
}

int write_file_atomic(int dirfd, const char *name, const char *data, size_t len, mode_t mode,
                      struct cm_error **err) {
  char tmp[256];
  snprintf(tmp, sizeof(tmp), ".%s.%d.tmp", name, getpid());
  cleanup_close int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0)
    return cm_error_set(err, errno, "create %s", tmp);
  size_t off = 0;
  while (off < len) {
    ssize_t n = write(fd, data + off, len - off);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      int e = errno;
      unlinkat(dirfd, tmp, 0);
      return cm_error_set(err, e, "write %s", name);
    }
    off += (size_t)n;
  }
  /* The rename is what makes it atomic: a runtime killed at any point leaves the old file or the
   * new one, never half of one. No fsync: these files describe processes that do not survive a
   * reboot, so durability across a power loss buys nothing, and on a disk-backed /run each fsync
   * cost about 1 ms of a `run` (four of them). A file cut short by a system crash is handled like
   * any unreadable state: `delete --force` still removes the directory. */
  if (renameat(dirfd, tmp, dirfd, name) < 0) {
    int e = errno;
    unlinkat(dirfd, tmp, 0);
    return cm_error_set(err, e, "write %s", name);
  }
  return 0;
}

static void gen_str(yajl_gen g, const char *s) {
  yajl_gen_string(g, (const unsigned char *)s, strlen(s));
}
static void gen_kv_str(yajl_gen g, const char *k, const char *v) {
  gen_str(g, k);
  if (v)
    gen_str(g, v);
  else
    yajl_gen_null(g);
}

static char *gen_finish(yajl_gen g) {
  const unsigned char *buf;
  size_t len;
  yajl_gen_get_buf(g, &buf, &len);
  char *out = strndup((const char *)buf, len);
  yajl_gen_free(g);
  if (out == NULL)
    abort();
  return out;
}

static void gen_annotations(yajl_gen g, const struct spec_kv_list *a) {
  gen_str(g, "annotations");
  yajl_gen_map_open(g);
  for (size_t i = 0; i < a->count; i++)
    gen_kv_str(g, a->items[i].key, a->items[i].value);
  yajl_gen_map_close(g);
}

static char *state_record_json(const struct container_state *st) {
  yajl_gen g = yajl_gen_alloc(NULL);
  yajl_gen_map_open(g);
  gen_kv_str(g, "id", st->id);
  gen_str(g, "pid");
  yajl_gen_integer(g, st->pid);
  gen_str(g, "pidStartTime");
  yajl_gen_integer(g, (long long)st->pid_start_time);
  gen_kv_str(g, "bundle", st->bundle);
  gen_kv_str(g, "rootfs", st->rootfs);
  gen_kv_str(g, "created", st->created);
  gen_kv_str(g, "owner", st->owner);
  gen_kv_str(g, "cgroup", st->cgroup);
  gen_annotations(g, &st->annotations);
  yajl_gen_map_close(g);
  return gen_finish(g);
}

int state_write(int dirfd, const struct container_state *st, struct cm_error **err) {
  cleanup_free char *json = state_record_json(st);
  return write_file_atomic(dirfd, "state.json", json, strlen(json), 0600, err);
}

/* One page: the kernel copies a write into the page cache chunk by chunk and stops for a fatal
 * signal only between chunks, so a pwrite of one page at offset 0 lands whole or not at all. */
#define PROGRESS_RECORD_SIZE 4096

/* The record padded with spaces to one page (JSON allows trailing white space). */
static bool progress_page(const char *json, char page[PROGRESS_RECORD_SIZE]) {
  size_t len = strlen(json);
  if (len >= PROGRESS_RECORD_SIZE)
    return false;
  memset(page, ' ', PROGRESS_RECORD_SIZE);
  memcpy(page, json, len);
  page[PROGRESS_RECORD_SIZE - 1] = '\n';
  return true;
}

int state_progress_write(int dirfd, struct state_progress *p, const struct container_state *st,
                         struct cm_error **err) {
  cleanup_free char *json = state_record_json(st);
  char page[PROGRESS_RECORD_SIZE];
  if (p->fd >= 0 && progress_page(json, page)) {
    if (pwrite(p->fd, page, sizeof(page), 0) != (ssize_t)sizeof(page))
      return cm_error_set(err, errno, "write creating.json");
    return 0;
  }
  if (p->fd >= 0) {
    close(p->fd);
    p->fd = -1;
  }
  if (!progress_page(json, page)) /* too big for one page: whole files, renamed (rare) */
    return write_file_atomic(dirfd, "creating.json", json, strlen(json), 0600, err);
  /* The first record: temp file + rename, then kept open to be rewritten in place. */
  char tmp[64];
  snprintf(tmp, sizeof(tmp), ".creating.json.%d.tmp", getpid());
  int fd = openat(dirfd, tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    return cm_error_set(err, errno, "create %s", tmp);
  if (write(fd, page, sizeof(page)) != (ssize_t)sizeof(page) || renameat(dirfd, tmp, dirfd, "creating.json") < 0) {
    int e = errno;
    close(fd);
    unlinkat(dirfd, tmp, 0);
    return cm_error_set(err, e, "write creating.json");
  }
  p->fd = fd;
  return 0;
}

int state_progress_commit(int dirfd, struct state_progress *p, const struct container_state *st,
                          struct cm_error **err) {
  cleanup_free char *json = state_record_json(st);
  char page[PROGRESS_RECORD_SIZE];
  int rc;
  if (p->fd >= 0 && progress_page(json, page)) {
    /* The complete record in place (a reader holding the lock sees it whole), cut to its length,
     * then renamed: creating.json becomes state.json without a new file. */
    size_t len = strlen(json);
    if (pwrite(p->fd, page, sizeof(page), 0) != (ssize_t)sizeof(page) || ftruncate(p->fd, (off_t)len) < 0 ||
        renameat(dirfd, "creating.json", dirfd, "state.json") < 0)
      rc = cm_error_set(err, errno, "write state.json");
    else
      rc = 0;
  } else {
    rc = write_file_atomic(dirfd, "state.json", json, strlen(json), 0600, err);
    /* state.json is complete now and supersedes the progress record. */
    if (rc == 0)
      unlinkat(dirfd, "creating.json", 0);
  }
  state_progress_close(p);
  return rc;
}

void state_progress_close(struct state_progress *p) {
  if (p->fd >= 0)
    close(p->fd);
  p->fd = -1;
}

static char *dup_string(yajl_val root, const char *key) {
  const char *path[] = {key, NULL};
  yajl_val v = yajl_tree_get(root, path, yajl_t_string);
  return v ? strdup(v->u.string) : NULL;
}

static int state_read_as(int dirfd, const char *name, const char *id, bool need_pid, struct container_state *st,
                         struct cm_error **err) {
  memset(st, 0, sizeof(*st));
  cleanup_close int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ENOENT)
      return 1;
    return cm_error_set(err, errno, "open state of container \"%s\"", id);
  }
  char buf[65536];
  size_t len = 0;
  ssize_t n;
  while ((n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
    len += (size_t)n;
  if (n < 0)
    return cm_error_set(err, errno, "read state of container \"%s\"", id);
  buf[len] = '\0';
  char ebuf[256];
  yajl_val root = yajl_tree_parse(buf, ebuf, sizeof(ebuf));
  if (root == NULL || !YAJL_IS_OBJECT(root)) {
    yajl_tree_free(root);
    return cm_error_set(err, 0, "state of container \"%s\" is corrupt", id);
  }
  st->id = dup_string(root, "id");
  st->bundle = dup_string(root, "bundle");
  st->rootfs = dup_string(root, "rootfs");
  st->created = dup_string(root, "created");
  st->owner = dup_string(root, "owner");
  st->cgroup = dup_string(root, "cgroup");
  const char *pid_path[] = {"pid", NULL}, *start_path[] = {"pidStartTime", NULL}, *ann_path[] = {"annotations", NULL};
  yajl_val v = yajl_tree_get(root, pid_path, yajl_t_number);
  st->pid = v ? (pid_t)YAJL_GET_INTEGER(v) : 0;
  v = yajl_tree_get(root, start_path, yajl_t_number);
  st->pid_start_time = v ? (uint64_t)YAJL_GET_INTEGER(v) : 0;
  v = yajl_tree_get(root, ann_path, yajl_t_object);
  if (v && v->u.object.len) {
    st->annotations.items = calloc(v->u.object.len, sizeof(struct spec_kv));
    for (size_t i = 0; i < v->u.object.len; i++) {
      if (!YAJL_IS_STRING(v->u.object.values[i]))
        continue;
      struct spec_kv *kv = &st->annotations.items[st->annotations.count++];
      kv->key = strdup(v->u.object.keys[i]);
      kv->value = strdup(v->u.object.values[i]->u.string);
    }
  }
  yajl_tree_free(root);
  if (st->id == NULL || st->bundle == NULL || st->pid < 0 || (need_pid && st->pid == 0)) {
    container_state_clear(st);
    return cm_error_set(err, 0, "state of container \"%s\" is corrupt", id);
  }
  return 0;
}

int state_read(int dirfd, const char *id, struct container_state *st, struct cm_error **err) {
  return state_read_as(dirfd, "state.json", id, true, st, err);
}

int state_remove_if_corrupt(const char *root, const char *id) {
  struct cm_error *err = NULL;
  cleanup_close int dirfd = state_dir_open(root, id, STATE_DIR_WRITE, &err);
  cm_error_freep(&err);
  if (dirfd < 0)
    return 0;
  /* Only an unparsable state.json (an empty one included) counts; an unreadable one does not. */
  struct container_state st;
  int r = state_read(dirfd, id, &st, &err);
  bool corrupt = r < 0 && err && err->errnum == 0;
  cm_error_freep(&err);
  if (r == 0)
    container_state_clear(&st);
  if (!corrupt || state_dir_remove(root, id, &err) < 0) {
    cm_error_freep(&err);
    return 0;
  }
  return 1;
}

int state_read_creating(int dirfd, const char *id, struct container_state *st, struct cm_error **err) {
  return state_read_as(dirfd, "creating.json", id, false, st, err);
}

void container_state_clear(struct container_state *st) {
  free(st->id);
  free(st->bundle);
  free(st->rootfs);
  free(st->created);
  free(st->owner);
  free(st->cgroup);
  for (size_t i = 0; i < st->annotations.count; i++) {
    free(st->annotations.items[i].key);
    free(st->annotations.items[i].value);
  }
  free(st->annotations.items);
  memset(st, 0, sizeof(*st));
}

/* Field 22 of /proc/PID/stat, and the state letter (field 3). */
static uint64_t read_stat(pid_t pid, char *state_out) {
  char path[64], buf[1024];
  snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  if (n <= 0)
    return 0;
  buf[n] = '\0';
  char *p = strrchr(buf, ')'); /* comm may contain spaces and parens */
  if (p == NULL || p[1] == '\0')
    return 0;
  p += 2;
  if (state_out)
    *state_out = *p;
  /* p is at field 3; skip to field 22. */
  for (int field = 3; field < 22 && p; field++) {
    p = strchr(p, ' ');
    if (p)
      p++;
  }
  return p ? strtoull(p, NULL, 10) : 0;
}

uint64_t proc_pid_start_time(pid_t pid) { return read_stat(pid, NULL); }

bool state_pid_alive(pid_t pid, uint64_t start_time) {
  char state = 0;
  uint64_t t = read_stat(pid, &state);
  if (t == 0 || t != start_time)
    return false;
  return state != 'Z' && state != 'X';
}

enum container_status state_status(int dirfd, const struct container_state *st) {
  if (!state_pid_alive(st->pid, st->pid_start_time))
    return STATUS_STOPPED;
  if (faccessat(dirfd, "exec.fifo", F_OK, AT_SYMLINK_NOFOLLOW) == 0)
    return STATUS_CREATED;
  /* Paused is read from the freezer by the caller that has the cgroup open. */
  return STATUS_RUNNING;
}

char *state_oci_json(const struct container_state *st, const char *status) {
  yajl_gen g = yajl_gen_alloc(NULL);
  yajl_gen_map_open(g);
  gen_kv_str(g, "ociVersion", SPEC_OCI_VERSION);
  gen_kv_str(g, "id", st->id);
  gen_kv_str(g, "status", status);
  gen_str(g, "pid");
  yajl_gen_integer(g, strcmp(status, "stopped") == 0 ? 0 : st->pid);
  gen_kv_str(g, "bundle", st->bundle);
  gen_kv_str(g, "rootfs", st->rootfs);
  gen_kv_str(g, "created", st->created);
  gen_kv_str(g, "owner", st->owner ? st->owner : "");
  gen_annotations(g, &st->annotations);
  yajl_gen_map_close(g);
  return gen_finish(g);
}

int pid_file_write(const char *path, pid_t pid, struct cm_error **err) {
  cleanup_free char *dir_copy = strdup(path), *base_copy = strdup(path);
  if (dir_copy == NULL || base_copy == NULL)
    return cm_error_set(err, ENOMEM, "--pid-file %s", path);
  const char *dir = dirname(dir_copy), *base = basename(base_copy);
  cleanup_close int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0)
    return cm_error_set(err, errno, "--pid-file: open directory %s", dir);
  char buf[32];
  int len = snprintf(buf, sizeof(buf), "%d", pid);
  if (write_file_atomic(dirfd, base, buf, (size_t)len, 0644, err) < 0)
    return cm_error_prefix(err, "--pid-file %s", path);
  return 0;
}
