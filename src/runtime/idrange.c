/* The per-container host id range allocator (idrange.h). */
#include "runtime/idrange.h"
#include "runtime/userns_setup.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "linux/userns.h"
#include "util/cleanup.h"

struct pool {
  uint32_t uid_start, gid_start, slots;
  bool reserved; /* from /etc/subuid + /etc/subgid's codemode entries */
};

/* Does [start, start+count) meet a range that /etc/sub?id gives to anyone but us? */
static bool overlaps_others(const char *file, uint64_t start, uint64_t count) {
  cleanup_fclose FILE *f = fopen(file, "re");
  char line[512];
  while (f && fgets(line, sizeof(line), f)) {
    char *save = NULL;
    char *who = strtok_r(line, ":\n", &save), *s = strtok_r(NULL, ":\n", &save), *c = strtok_r(NULL, ":\n", &save);
    if (!who || !s || !c || who[0] == '#' || strcmp(who, "codemode") == 0)
      continue;
    uint64_t a = strtoull(s, NULL, 10), n = strtoull(c, NULL, 10);
    if (a < start + count && start < a + n)
      return true;
  }
  return false;
}

static int pool_load(struct pool *p, struct cm_error **err) {
  struct subid_range u[1], g[1];
  int nu = subid_ranges("/etc/subuid", "codemode", UINT32_MAX, u, 1, err);
  if (nu < 0)
    return -1;
  int ng = subid_ranges("/etc/subgid", "codemode", UINT32_MAX, g, 1, err);
  if (ng < 0)
    return -1;
  if (nu != ng)
    return cm_error_set(err, 0, "/etc/%s has a \"codemode\" entry but /etc/%s has none: give both the same size",
                        nu ? "subuid" : "subgid", nu ? "subgid" : "subuid");
  if (nu == 0) {
    *p = (struct pool){IDRANGE_DEFAULT_START, IDRANGE_DEFAULT_START, IDRANGE_DEFAULT_COUNT / IDRANGE_SIZE, false};
    return 0;
  }
  /* uid 0 in the pool would make some container's root the host's. */
  if (u[0].start == 0 || g[0].start == 0)
    return cm_error_set(err, 0, "/etc/subuid or /etc/subgid: the codemode range must not include id 0");
  uint32_t n = (u[0].count < g[0].count ? u[0].count : g[0].count) / IDRANGE_SIZE;
  if (n == 0)
    return cm_error_set(err, 0, "/etc/subuid, /etc/subgid: the codemode range holds less than %u ids", IDRANGE_SIZE);
  *p = (struct pool){u[0].start, g[0].start, n, true};
  return 0;
}

int idrange_pool_describe(char *buf, size_t size) {
  struct pool p;
  struct cm_error *err = NULL;
  if (pool_load(&p, &err) < 0) {
    cleanup_free char *msg = cm_error_format(err);
    cm_error_free(err);
    snprintf(buf, size, "no usable pool: %s", msg);
    return -1;
  }
  snprintf(buf, size, "%u ranges of %u ids from uid %u, gid %u (%s)", p.slots, IDRANGE_SIZE, p.uid_start,
           p.gid_start, p.reserved ? "the codemode entries of /etc/subuid and /etc/subgid" : "codemode's default pool");
  return 0;
}

/* Does /etc/passwd or /etc/group (db) name an account with this id? */
static bool account_has_id(const char *db, uint32_t id) {
  cleanup_free char *name = userns_setup_db_name(db, id);
  return name != NULL;
}

/* Is id in any range of /etc/sub?id, ours (codemode) included? */
static bool in_any_subid(const char *file, uint32_t id) {
  cleanup_fclose FILE *f = fopen(file, "re");
  char line[512];
  while (f && fgets(line, sizeof(line), f)) {
    char *save = NULL;
    char *who = strtok_r(line, ":\n", &save), *s = strtok_r(NULL, ":\n", &save), *c = strtok_r(NULL, ":\n", &save);
    if (!who || !s || !c || who[0] == '#')
      continue;
    uint64_t a = strtoull(s, NULL, 10), n = strtoull(c, NULL, 10);
    if (id >= a && id - a < n)
      return true;
  }
  return false;
}

int idrange_check_shared_owner(uint32_t id, struct cm_error **err) {
  struct pool p;
  if (pool_load(&p, err) < 0)
    return -1;
  uint64_t ids = (uint64_t)p.slots * IDRANGE_SIZE;
  const char *why = NULL;
  if ((id >= p.uid_start && id - p.uid_start < ids) || (id >= p.gid_start && id - p.gid_start < ids))
    why = "it is in codemode's pool of job ranges (a job's processes would run as it)";
  else if (in_any_subid("/etc/subuid", id) || in_any_subid("/etc/subgid", id))
    why = "a range of /etc/subuid or /etc/subgid holds it";
  else if (account_has_id("/etc/passwd", id) || account_has_id("/etc/group", id))
    why = "an account of /etc/passwd or a group of /etc/group has it";
  if (why)
    return cm_error_set(err, EEXIST,
                        "the owner of the directories ci jobs share, id %u, is not free on this host: %s (fix: "
                        "move that range or account, or make the directory yourself, owned by an id that owns "
                        "nothing else, mode 0700)",
                        id, why);
  return 0;
}

/* The registry directory, ours: made 0700 by root, refused if anyone else could write it. */
static int registry_open(struct cm_error **err) {
  if (mkdir(IDRANGE_DIR, 0700) < 0 && errno != EEXIST)
    return cm_error_set(err, errno, "create %s", IDRANGE_DIR);
  int fd = open(IDRANGE_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return cm_error_set(err, errno, "open %s", IDRANGE_DIR);
  struct stat st;
  if (fstat(fd, &st) < 0 || st.st_uid != 0 || (st.st_mode & 022)) {
    close(fd);
    return cm_error_set(err, EPERM, "%s must be a directory owned by root and writable only by it", IDRANGE_DIR);
  }
  if (flock(fd, LOCK_EX) < 0) {
    int e = errno;
    close(fd);
    return cm_error_set(err, e, "lock %s", IDRANGE_DIR);
  }
  return fd;
}

/* The first slot the state directory records, or -1; *n the number of slots ("slot uid gid
 * [n]": a record without n, from before ranges of several slots, holds one). */
static long recorded_slots(int dirfd, uint32_t *n) {
  cleanup_close int fd = openat(dirfd, IDRANGE_STATE_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  char buf[96] = "";
  *n = 1;
  if (fd < 0 || read(fd, buf, sizeof(buf) - 1) <= 0)
    return -1;
  unsigned long v, u, g, k;
  int got = sscanf(buf, "%lu %lu %lu %lu", &v, &u, &g, &k);
  if (got < 1 || v > UINT32_MAX)
    return -1;
  if (got == 4 && k >= 1 && k <= UINT32_MAX)
    *n = (uint32_t)k;
  return (long)v;
}

/* Registry file of `slot` → is it held (by a state directory that still records it)? */
static bool slot_held(int reg, uint32_t slot) {
  char name[16], path[PATH_MAX + 2];
  snprintf(name, sizeof(name), "%u", slot);
  cleanup_close int fd = openat(reg, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return errno != ENOENT; /* unreadable: treat as held, never hand it out twice */
  ssize_t n = read(fd, path, sizeof(path) - 1);
  if (n <= 0)
    return true; /* a file being written under our own lock cannot be: keep it held anyway */
  path[n] = '\0';
  path[strcspn(path, "\n")] = '\0';
  cleanup_close int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0)
    return errno != ENOENT;
  uint32_t held;
  long first = recorded_slots(dir, &held);
  return first >= 0 && slot >= (uint64_t)first && slot < (uint64_t)first + held;
}

static void unregister(int reg, uint32_t first, uint32_t n) {
  for (uint32_t k = 0; k < n; k++) {
    char name[16];
    snprintf(name, sizeof(name), "%u", first + k);
    unlinkat(reg, name, 0);
  }
}

int idrange_allocate(const char *state_dir, int dirfd, uint32_t n_slots, struct idrange *out, struct cm_error **err) {
  struct pool p;
  if (n_slots == 0)
    n_slots = 1;
  if (pool_load(&p, err) < 0)
    return cm_error_prefix(err, "allocate a host id range");
  cleanup_close int reg = registry_open(err);
  if (reg < 0)
    return cm_error_prefix(err, "allocate a host id range");
  uint64_t ids = (uint64_t)n_slots * IDRANGE_SIZE;
  for (uint32_t slot = 0; slot + n_slots <= p.slots; slot++) {
    uint64_t u = (uint64_t)p.uid_start + (uint64_t)slot * IDRANGE_SIZE;
    uint64_t g = (uint64_t)p.gid_start + (uint64_t)slot * IDRANGE_SIZE;
    /* The default pool steps around what /etc/subuid and /etc/subgid give to other users. */
    if (!p.reserved && (overlaps_others("/etc/subuid", u, ids) || overlaps_others("/etc/subgid", g, ids)))
      continue;
    bool held = false;
    for (uint32_t k = 0; k < n_slots && !held; k++)
      held = slot_held(reg, slot + k);
    if (held)
      continue;
    char rec[80];
    /* The state directory first: from then on the slots count as held. */
    int len = snprintf(rec, sizeof(rec), "%u %u %u %u\n", slot, (uint32_t)u, (uint32_t)g, n_slots);
    cleanup_close int sfd = openat(dirfd, IDRANGE_STATE_FILE, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (sfd < 0 || write(sfd, rec, (size_t)len) != len)
      return cm_error_set(err, errno, "record the host id range in %s", state_dir);
    size_t plen = strlen(state_dir);
    for (uint32_t k = 0; k < n_slots; k++) {
      char name[16];
      snprintf(name, sizeof(name), "%u", slot + k);
      unlinkat(reg, name, 0);
      cleanup_close int rfd = openat(reg, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
      if (rfd < 0 || write(rfd, state_dir, plen) != (ssize_t)plen || write(rfd, "\n", 1) != 1) {
        int e = errno;
        unregister(reg, slot, k + 1);
        unlinkat(dirfd, IDRANGE_STATE_FILE, 0);
        return cm_error_set(err, e, "register host id range %u in %s", slot + k, IDRANGE_DIR);
      }
    }
    *out = (struct idrange){slot, n_slots, (uint32_t)u, (uint32_t)g};
    return 0;
  }
  return cm_error_set(err, ENOSPC,
                      "allocate a host id range: no %u consecutive free ranges of %u ids in the pool of %u (delete "
                      "some containers, or give codemode a bigger range in /etc/subuid and /etc/subgid, e.g. "
                      "\"codemode:2147483648:268435456\")",
                      n_slots, IDRANGE_SIZE, p.slots);
}

void idrange_release(const char *state_dir, int dirfd) {
  uint32_t n;
  long first = recorded_slots(dirfd, &n);
  if (first < 0)
    return;
  struct cm_error *ignored = NULL;
  int reg = registry_open(&ignored);
  cm_error_freep(&ignored);
  if (reg >= 0) {
    for (uint32_t k = 0; k < n; k++) {
      char name[24], path[PATH_MAX + 2];
      snprintf(name, sizeof(name), "%lu", (unsigned long)first + k);
      int fd = openat(reg, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0)
        continue;
      ssize_t len = read(fd, path, sizeof(path) - 1);
      close(fd);
      path[len > 0 ? len : 0] = '\0';
      path[strcspn(path, "\n")] = '\0';
      /* Only our own registration: after a crash someone may hold this slot by now. */
      if (strcmp(path, state_dir) == 0)
        unlinkat(reg, name, 0);
    }
    close(reg);
  }
  unlinkat(dirfd, IDRANGE_STATE_FILE, 0);
}
