/* Compiled seccomp programs cached by content, so Docker's ~300-syscall default profile is not
 * recompiled by libseccomp on every create (measured: 15.4 ms of CPU for it, 2.2 ms for mcp.json,
 * against ~12 ms for the whole rest of a `run`).
 *
 * The cache is machine-wide, in SECCOMP_CACHE_DIR (/var/cache/codemode/seccomp): not under
 * --root, whose contents callers and tests expect to be exactly their containers.
 * An entry is <cache dir>/<64-bit FNV-1a of the key, hex>.bpf and holds the whole key (a
 * canonical serialization of the spec_seccomp plus libseccomp's version and API level), a
 * checksum and the program. A lookup compares the stored key byte for byte: a hash collision
 * (accidental or crafted by a config's author) is a miss, never another config's filter. Entries
 * are written to a temp file and renamed in, so a reader sees a whole entry or none. */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <seccomp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "linux/seccomp.h"
#include "util/cleanup.h"
#include "util/host_root.h"
#include "util/log.h"

/* Changes whenever seccomp_compile's output for the same key would: "CMS2" since the ENOSYS stub
 * (seccomp_enosys.c), so programs cached without it are never loaded again. */
#define CACHE_MAGIC 0x32534d43u /* "CMS2" */

struct buf {
  uint8_t *data;
  size_t len, cap;
};

static void buf_put(struct buf *b, const void *p, size_t n) {
  if (b->len + n > b->cap) {
    b->cap = (b->len + n) * 2 + 256;
    b->data = realloc(b->data, b->cap);
    if (b->data == NULL)
      abort();
  }
  memcpy(b->data + b->len, p, n);
  b->len += n;
}

static void put_u64(struct buf *b, uint64_t v) {
  buf_put(b, &v, sizeof(v));
}

/* Length-prefixed, so ["ab","c"] and ["a","bc"] differ. */
static void put_str(struct buf *b, const char *s) {
  size_t n = s ? strlen(s) : 0;
  put_u64(b, n);
  buf_put(b, s, n);
}

static void put_strv(struct buf *b, const struct spec_strv *v) {
  put_u64(b, v->count);
  for (size_t i = 0; i < v->count; i++)
    put_str(b, v->items[i]);
}

/* Everything seccomp_compile's output depends on. */
static void serialize_key(const struct spec_seccomp *sc, struct buf *b) {
  const struct scmp_version *v = seccomp_version();
  put_u64(b, CACHE_MAGIC);
  put_u64(b, ((uint64_t)v->major << 32) | ((uint64_t)v->minor << 16) | v->micro);
  put_u64(b, seccomp_api_get());
  put_u64(b, sizeof(void *));
  put_u64(b, seccomp_arch_native()); /* SCMP_ARCH_NATIVE, and the stub's arch resolution */
  put_u64(b, sc->default_action);
  put_u64(b, sc->has_default_errno_ret);
  put_u64(b, sc->default_errno_ret);
  put_strv(b, &sc->architectures);
  put_strv(b, &sc->flags);
  put_u64(b, sc->n_syscalls);
  for (size_t i = 0; i < sc->n_syscalls; i++) {
    const struct spec_seccomp_syscall *r = &sc->syscalls[i];
    put_strv(b, &r->names);
    put_u64(b, r->action);
    put_u64(b, r->has_errno_ret);
    put_u64(b, r->errno_ret);
    put_u64(b, r->n_args);
    for (size_t a = 0; a < r->n_args; a++) {
      put_u64(b, r->args[a].index);
      put_u64(b, r->args[a].value);
      put_u64(b, r->args[a].value_two);
      put_u64(b, r->args[a].op);
    }
  }
}

static uint64_t fnv1a(const void *p, size_t n, uint64_t h) {
  const uint8_t *s = p;
  for (size_t i = 0; i < n; i++)
    h = (h ^ s[i]) * 0x100000001b3ULL;
  return h;
}
#define FNV_INIT 0xcbf29ce484222325ULL

/* The cache directory (its parent and itself made 0700 if missing); -1 (no cache) unless it is a
 * real directory owned by us that nobody else can write: a planted entry would be a filter we
 * load unverified. */
static int open_cache_dir(const char *dir) {
  cleanup_free char *parent = strdup(dir);
  char *slash = parent ? strrchr(parent, '/') : NULL;
  if (slash && slash != parent) {
    *slash = '\0';
    if (mkdir(parent, 0700) < 0 && errno != EEXIST)
      return -1;
  }
  if (mkdir(dir, 0700) < 0 && errno != EEXIST)
    return -1;
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 022) != 0)) {
    close(fd);
    return -1;
  }
  return fd;
}

/* Entry layout: u64 key_len, key, u64 flags, u64 notify, u64 n_insns, insns, u64 checksum of
 * everything before it. */
static int cache_read(int dirfd, const char *name, const struct buf *key, struct seccomp_program *out) {
  cleanup_close int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022) ||
      st.st_size > (off_t)(key->len + 5 * 8 + BPF_MAXINSNS * sizeof(struct sock_filter)))
    return -1;
  size_t len = (size_t)st.st_size;
  cleanup_free uint8_t *data = malloc(len ? len : 1);
  if (data == NULL || pread(fd, data, len, 0) != (ssize_t)len)
    return -1;
  size_t head = 8 + key->len + 3 * 8;
  if (len < head + 8)
    return -1;
  uint64_t key_len, flags, notify, n_insns, sum;
  memcpy(&key_len, data, 8);
  if (key_len != key->len || memcmp(data + 8, key->data, key->len) != 0)
    return -1;
  memcpy(&flags, data + 8 + key->len, 8);
  memcpy(&notify, data + 16 + key->len, 8);
  memcpy(&n_insns, data + 24 + key->len, 8);
  if (n_insns == 0 || n_insns > BPF_MAXINSNS || len != head + n_insns * sizeof(struct sock_filter) + 8)
    return -1;
  memcpy(&sum, data + len - 8, 8);
  if (sum != fnv1a(data, len - 8, FNV_INIT))
    return -1;
  size_t prog_len = n_insns * sizeof(struct sock_filter);
  out->bpf = malloc(prog_len);
  if (out->bpf == NULL)
    abort();
  memcpy(out->bpf, data + head, prog_len);
  out->n_insns = n_insns;
  out->flags = (unsigned)flags;
  out->notify = notify != 0;
  return 0;
}

static void cache_write(int dirfd, const char *name, const struct buf *key, const struct seccomp_program *p) {
  struct buf e = {0};
  put_u64(&e, key->len);
  buf_put(&e, key->data, key->len);
  put_u64(&e, p->flags);
  put_u64(&e, p->notify);
  put_u64(&e, p->n_insns);
  buf_put(&e, p->bpf, p->n_insns * sizeof(struct sock_filter));
  put_u64(&e, fnv1a(e.data, e.len, FNV_INIT));
  char tmp[64];
  snprintf(tmp, sizeof(tmp), ".%s.%d.tmp", name, (int)getpid());
  int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  bool ok = fd >= 0 && write(fd, e.data, e.len) == (ssize_t)e.len;
  if (fd >= 0)
    close(fd);
  /* No fsync: an entry lost or cut short by a crash fails its length or checksum and is
   * recompiled. */
  if (!ok || renameat(dirfd, tmp, dirfd, name) < 0) {
    cm_debug("seccomp cache: could not store %s", name);
    unlinkat(dirfd, tmp, 0);
  }
  free(e.data);
}

const char *seccomp_cache_dir(char *buf, size_t size) {
  if (cm_host_root())
    return SECCOMP_CACHE_DIR;
  /* A user (or root of a user namespace of our own) cannot use the host root's cache, and
   * compiled every filter on every start (mcp.json: ~2 ms of CPU, Docker's default ~15 ms). Their
   * runtime directory: theirs alone (open_cache_dir checks the owner and mode), on a tmpfs, and
   * under /run, which the hardened profiles refuse to bind into a container, so no container of
   * theirs can plant an entry there. */
  const char *xdg = getenv("XDG_RUNTIME_DIR");
  if (xdg == NULL || xdg[0] != '/' || (size_t)snprintf(buf, size, "%s/codemode-seccomp", xdg) >= size)
    return NULL;
  return buf;
}

int seccomp_compile_cached(const struct spec_seccomp *sc, const char *cache_dir, struct seccomp_program *out,
                           struct cm_error **err) {
  if (sc == NULL || !sc->present || cache_dir == NULL)
    return seccomp_compile(sc, out, err);
  cleanup_close int dirfd = open_cache_dir(cache_dir);
  if (dirfd < 0)
    return seccomp_compile(sc, out, err);
  struct buf key = {0};
  serialize_key(sc, &key);
  char name[32];
  snprintf(name, sizeof(name), "%016llx.bpf", (unsigned long long)fnv1a(key.data, key.len, FNV_INIT));
  memset(out, 0, sizeof(*out));
  int rc = 0;
  if (cache_read(dirfd, name, &key, out) < 0) {
    rc = seccomp_compile(sc, out, err);
    if (rc == 0 && out->n_insns > 0)
      cache_write(dirfd, name, &key, out);
  }
  free(key.data);
  return rc;
}
