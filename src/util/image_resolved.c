/* The store's memo of a resolve (image_resolved.h). */
#include "util/image_resolved.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "spec/json_util.h"
#include "util/cleanup.h"
#include "util/host_root.h"

char *image_store_default_dir(void) {
  char *out;
  if (cm_host_root())
    return strdup("/var/lib/codemode");
  const char *xdg = getenv("XDG_DATA_HOME");
  if (xdg && xdg[0] == '/') {
    if (asprintf(&out, "%s/codemode", xdg) < 0)
      abort();
    return out;
  }
  const char *home = getenv("HOME");
  if (home == NULL || home[0] != '/')
    return NULL;
  if (asprintf(&out, "%s/.local/share/codemode", home) < 0)
    abort();
  return out;
}

void image_store_escape_name(const char *name, char *out, size_t size) {
  size_t n = 0;
  for (const unsigned char *p = (const unsigned char *)name; *p && n + 4 < size; p++) {
    if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.' ||
        *p == '_' || *p == '-')
      out[n++] = (char)*p;
    else
      n += (size_t)snprintf(out + n, size - n, "%%%02X", *p);
  }
  out[n] = '\0';
}

bool image_resolved_cacheable(const char *ref) {
  if (strncmp(ref, "oci:", 4) == 0)
    return ref[4] == '/';
  if (strncmp(ref, "docker-archive:", 15) == 0)
    return ref[15] == '/' && strcmp(ref + 15, "/dev/stdin") != 0;
  /* A registry reference has no path; anything that names a file some other way is not one. */
  return ref[0] != '\0' && ref[0] != '/' && ref[0] != '.' && strchr(ref, ' ') == NULL;
}

int image_source_stamp_of(const char *path, struct image_source_stamp *out) {
  struct stat st;
  if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
    return -1;
  *out = (struct image_source_stamp){
      .dev = st.st_dev,
      .ino = st.st_ino,
      .size = (uint64_t)st.st_size,
      .mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec,
      .ctime_ns = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec,
  };
  return 0;
}

static void memo_path(const char *ref, char *out, size_t size) {
  char esc[PATH_MAX];
  image_store_escape_name(ref, esc, sizeof(esc));
  snprintf(out, size, "resolved/%s", esc);
}

static void gen_str(yajl_gen g, const char *k, const char *v) {
  yajl_gen_string(g, (const unsigned char *)k, strlen(k));
  yajl_gen_string(g, (const unsigned char *)v, strlen(v));
}

static void gen_num(yajl_gen g, const char *k, long long v) {
  char num[32];
  snprintf(num, sizeof(num), "%lld", v);
  yajl_gen_string(g, (const unsigned char *)k, strlen(k));
  yajl_gen_number(g, num, strlen(num));
}

int image_resolved_write(int store_fd, const struct image_resolved *r, struct cm_error **err) {
  char path[PATH_MAX + 16], tmp[PATH_MAX + 48];
  memo_path(r->ref, path, sizeof(path));
  snprintf(tmp, sizeof(tmp), "%s.tmp-%d", path, (int)getpid());
  yajl_gen g = yajl_gen_alloc(NULL);
  yajl_gen_map_open(g);
  gen_str(g, "ref", r->ref);
  gen_str(g, "name", r->name);
  gen_str(g, "manifest", r->manifest);
  gen_str(g, "rootfs", r->rootfs);
  gen_str(g, "config", r->config);
  if (r->source) {
    gen_str(g, "source", r->source);
    /* As decimal strings' worth of integers: yajl reads them back as long long. */
    gen_num(g, "dev", (long long)r->stamp.dev);
    gen_num(g, "ino", (long long)r->stamp.ino);
    gen_num(g, "size", (long long)r->stamp.size);
    gen_num(g, "mtime_ns", (long long)r->stamp.mtime_ns);
    gen_num(g, "ctime_ns", (long long)r->stamp.ctime_ns);
  }
  yajl_gen_map_close(g);
  const unsigned char *buf;
  size_t len;
  yajl_gen_get_buf(g, &buf, &len);
  int rc = 0;
  int fd = openat(store_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0 || write(fd, buf, len) != (ssize_t)len || renameat(store_fd, tmp, store_fd, path) < 0) {
    rc = cm_error_set(err, errno, "image store: write %s", path);
    unlinkat(store_fd, tmp, 0);
  }
  if (fd >= 0)
    close(fd);
  yajl_gen_free(g);
  return rc;
}

void image_resolved_clear(struct image_resolved *r) {
  free(r->ref);
  free(r->name);
  free(r->manifest);
  free(r->rootfs);
  free(r->config);
  free(r->source);
  memset(r, 0, sizeof(*r));
}

/* A small file of the store (a memo, a name record), NUL-terminated, or NULL. */
static char *read_small_at(int dirfd, const char *path) {
  cleanup_close int fd = openat(dirfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return NULL;
  char *buf = malloc(16384);
  if (buf == NULL)
    abort();
  ssize_t n = read(fd, buf, 16383);
  if (n <= 0) {
    free(buf);
    return NULL;
  }
  buf[n] = '\0';
  return buf;
}

static char *dup_string(yajl_val t, const char *key) {
  const char *v = YAJL_GET_STRING(jfind(t, key));
  return v ? strdup(v) : NULL;
}

static bool get_int(yajl_val t, const char *key, long long *v) {
  yajl_val n = jfind(t, key);
  if (n == NULL || !YAJL_IS_INTEGER(n))
    return false;
  *v = YAJL_GET_INTEGER(n);
  return true;
}

int image_store_read_ref(int dirfd, const char *file, char **name, char **manifest) {
  cleanup_free char *json = read_small_at(dirfd, file);
  yajl_val t = json ? yajl_tree_parse(json, NULL, 0) : NULL;
  if (t == NULL)
    return -1;
  *name = dup_string(t, "name");
  *manifest = dup_string(t, "manifest");
  yajl_tree_free(t);
  if (*name && *manifest)
    return 0;
  free(*name);
  free(*manifest);
  *name = *manifest = NULL;
  return -1;
}

/* images/<escaped name> names manifest still. */
static bool name_names(int store_fd, const char *name, const char *manifest) {
  char esc[PATH_MAX], path[PATH_MAX + 16];
  image_store_escape_name(name, esc, sizeof(esc));
  snprintf(path, sizeof(path), "images/%s", esc);
  cleanup_free char *recorded_name = NULL, *recorded = NULL;
  return image_store_read_ref(store_fd, path, &recorded_name, &recorded) == 0 && strcmp(recorded, manifest) == 0;
}

int image_resolved_lookup(int store_fd, const char *ref, struct image_resolved *out) {
  memset(out, 0, sizeof(*out));
  if (!image_resolved_cacheable(ref))
    return -1;
  char path[PATH_MAX + 16];
  memo_path(ref, path, sizeof(path));
  cleanup_free char *json = read_small_at(store_fd, path);
  yajl_val t = json ? yajl_tree_parse(json, NULL, 0) : NULL;
  if (t == NULL)
    return -1;
  out->ref = dup_string(t, "ref");
  out->name = dup_string(t, "name");
  out->manifest = dup_string(t, "manifest");
  out->rootfs = dup_string(t, "rootfs");
  out->config = dup_string(t, "config");
  out->source = dup_string(t, "source");
  bool ok = out->ref && strcmp(out->ref, ref) == 0 && out->name && out->manifest && out->rootfs && out->config &&
            out->rootfs[0] == '/' && out->config[0] == '/';
  if (ok && out->source) {
    long long v[5];
    struct image_source_stamp now;
    ok = get_int(t, "dev", &v[0]) && get_int(t, "ino", &v[1]) && get_int(t, "size", &v[2]) &&
         get_int(t, "mtime_ns", &v[3]) && get_int(t, "ctime_ns", &v[4]) &&
         image_source_stamp_of(out->source, &now) == 0 && now.dev == (uint64_t)v[0] && now.ino == (uint64_t)v[1] &&
         now.size == (uint64_t)v[2] && now.mtime_ns == v[3] && now.ctime_ns == v[4];
  } else if (ok) {
    /* A registry reference: its memo holds for --pull missing while the name is unchanged. */
    ok = strncmp(ref, "oci:", 4) != 0 && strncmp(ref, "docker-archive:", 15) != 0;
  }
  yajl_tree_free(t);
  if (ok)
    ok = name_names(store_fd, out->name, out->manifest);
  if (!ok) {
    image_resolved_clear(out);
    return -1;
  }
  return 0;
}
