/* Collapsing the files a run touched into Landlock rules a person can read and a later run can
 * live with (a log file rotated, a cache entry with a new name), without handing out more than
 * the run showed a need for:
 *   0. what was done inside a directory the run made itself (a temporary or per-request
 *      directory: its name is the run's) is a right of the directory it was made in;
 *   1. /proc/<anything> becomes /proc (pids and thread ids differ in every run), /dev/pts/N
 *      /dev/pts;
 *   2. a file's read, write and truncate rights go to its directory, except directly inside the
 *      system directories below (/etc/passwd stays /etc/passwd); its execute and ioctl_dev
 *      rights stay on the file itself;
 *   3. read-only directories merge into a common parent when it has two or more subtrees with
 *      rules, the parent is at least two levels deep (or a mount point of the container), not
 *      one of those system directories, and never above the mount the files are on (a bind of
 *      ~/project never grows into ~);
 *   4. a rule another rule above it already covers goes.
 * Write rights never move up: a server that wrote /data/out gets /data/out, not /data. */
#include <stdlib.h>
#include <string.h>

#include "policy/learned_internal.h"
#include "spec/json_util.h"

#define READ_RIGHTS (LL_FS_READ_FILE | LL_FS_READ_DIR)
#define MOVED_RIGHTS (LL_FS_READ_FILE | LL_FS_WRITE_FILE | LL_FS_TRUNCATE)

/* Where a rule never lands by collapsing (files directly inside stay exact). */
static const char *const system_dirs[] = {"/",     "/etc",     "/proc",    "/sys",     "/dev", "/run",
                                          "/root", "/home",    "/var",     "/boot",    "/mnt", "/media",
                                          "/srv",  "/var/run", "/var/lib", "/etc/ssh", NULL};

static bool is_system_dir(const char *p) {
  for (size_t i = 0; system_dirs[i]; i++)
    if (strcmp(system_dirs[i], p) == 0)
      return true;
  return false;
}

/* at or beneath dir */
static bool beneath(const char *path, const char *dir) {
  if (strcmp(dir, "/") == 0)
    return true;
  size_t n = strlen(dir);
  return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* "/" 0, "/usr" 1, "/usr/lib" 2 */
static int depth(const char *p) {
  if (strcmp(p, "/") == 0)
    return 0;
  int d = 0;
  for (; *p; p++)
    d += *p == '/';
  return d;
}

static char *parent_of(const char *p) {
  char *d = xstrdup(p);
  char *slash = strrchr(d, '/');
  if (slash == d)
    slash[1] = '\0';
  else if (slash)
    *slash = '\0';
  return d;
}

struct anchors {
  const char **v;
  size_t n;
};

static void anchors_of(const struct learned_policy *p, struct anchors *a) {
  size_t cap = 1;
  for (size_t i = 0; i < p->n_runs; i++)
    cap += p->runs[i].mounts.count;
  a->v = calloc(cap, sizeof(char *));
  if (a->v == NULL)
    abort();
  a->v[a->n++] = "/";
  for (size_t i = 0; i < p->n_runs; i++)
    for (size_t k = 0; k < p->runs[i].mounts.count; k++)
      a->v[a->n++] = p->runs[i].mounts.items[k];
}

static bool is_anchor(const struct anchors *a, const char *p) {
  for (size_t i = 0; i < a->n; i++)
    if (strcmp(a->v[i], p) == 0)
      return true;
  return false;
}

/* The deepest mount point at or above path. */
static const char *anchor_of(const struct anchors *a, const char *path) {
  const char *best = "/";
  for (size_t i = 0; i < a->n; i++)
    if (beneath(path, a->v[i]) && strlen(a->v[i]) > strlen(best))
      best = a->v[i];
  return best;
}

static void remove_path(struct learned_policy *p, size_t i) {
  free(p->paths[i].path);
  free(p->paths[i].example);
  memmove(&p->paths[i], &p->paths[i + 1], (p->n_paths - i - 1) * sizeof(*p->paths));
  p->n_paths--;
}

/* The directory a path made by the run belongs to: the one the outermost made directory above
 * (or at) it was made in; NULL when no made directory is above it. */
static char *made_in(const struct learned_policy *p, const char *path) {
  const char *outer = NULL;
  for (size_t i = 0; i < p->made_dirs.count; i++) {
    const char *d = p->made_dirs.items[i];
    if (beneath(path, d) && strcmp(d, "/") != 0 && (outer == NULL || strlen(d) < strlen(outer)))
      outer = d;
  }
  return outer ? parent_of(outer) : NULL;
}

/* Steps 1 and 2: rebuild the list. */
static void place_files(struct learned_policy *p) {
  struct learned_path *old = p->paths;
  size_t n = p->n_paths;
  p->paths = NULL;
  p->n_paths = 0;
  for (size_t i = 0; i < n; i++) {
    struct learned_path *l = &old[i];
    /* Inside a directory the run made: the rights go to where it was made (a directory rule
     * there also covers the made one and what is beneath it). */
    char *in = made_in(p, l->path);
    if (in) {
      learned_policy_add_path(p, in, l->access & ~(uint64_t)(LL_FS_EXECUTE | LL_FS_IOCTL_DEV), &l->seen,
                              l->paths ? l->paths : 1, l->example ? l->example : l->path, false);
      free(in);
      free(l->path);
      free(l->example);
      continue;
    }
    const char *path = l->path;
    if (strcmp(path, "/proc") == 0 || strncmp(path, "/proc/", 6) == 0) {
      /* Executing /proc/self/fd/N is a memfd (the runtime's trampoline and init): Landlock does
       * not restrict files of internal mounts, so no rule is needed for it. */
      uint64_t a = l->access & (READ_RIGHTS | LL_FS_WRITE_FILE | LL_FS_TRUNCATE);
      if (a)
        learned_policy_add_path(p, "/proc", a, &l->seen, l->paths ? l->paths : 1,
                                l->example ? l->example : path, false);
    } else if (strncmp(path, "/dev/pts/", 9) == 0) {
      learned_policy_add_path(p, "/dev/pts", l->access & (MOVED_RIGHTS | LL_FS_IOCTL_DEV), &l->seen, 1, path,
                              false);
    } else if (l->file) {
      char *dir = parent_of(path);
      uint64_t moved = l->access & MOVED_RIGHTS, kept = l->access & ~MOVED_RIGHTS;
      if (is_system_dir(dir)) {
        kept = l->access;
        moved = 0;
      }
      if (moved)
        learned_policy_add_path(p, dir, moved, &l->seen, l->paths ? l->paths : 1,
                                l->example ? l->example : path, false);
      if (kept)
        learned_policy_add_path(p, path, kept, &l->seen, l->paths ? l->paths : 1, l->example, true);
      free(dir);
    } else {
      learned_policy_add_path(p, path, l->access, &l->seen, l->paths, l->example, false);
    }
    free(l->path);
    free(l->example);
  }
  free(old);
}

static bool merge_candidate(const struct learned_path *l) {
  return !l->file && (l->access & ~READ_RIGHTS) == 0 && l->access;
}

/* The first component of path below dir ("/usr/lib/x/y" below "/usr" → "lib"), as a length. */
static const char *below(const char *path, const char *dir, size_t *len) {
  const char *rest = path + (strcmp(dir, "/") == 0 ? 1 : strlen(dir) + 1);
  const char *slash = strchr(rest, '/');
  *len = slash ? (size_t)(slash - rest) : strlen(rest);
  return rest;
}

/* Step 3: one merge; false when none is possible any more. */
static bool merge_once(struct learned_policy *p, const struct anchors *a) {
  char *best = NULL;
  int best_depth = -1;
  for (size_t i = 0; i < p->n_paths; i++) {
    if (!merge_candidate(&p->paths[i]))
      continue;
    /* Every proper ancestor of a candidate is a possible target; the deepest possible wins. */
    char *anc = parent_of(p->paths[i].path);
    while (strcmp(anc, "/") != 0) {
      int d = depth(anc);
      bool eligible = !is_system_dir(anc) && (d >= 2 || is_anchor(a, anc));
      if (eligible && d > best_depth) {
        /* Subtrees of anc with a candidate on the same mount. */
        size_t subtrees = 0;
        const char *first = NULL;
        size_t first_len = 0;
        for (size_t k = 0; k < p->n_paths && subtrees < 2; k++) {
          const struct learned_path *c = &p->paths[k];
          if (!merge_candidate(c) || strcmp(c->path, anc) == 0 || !beneath(c->path, anc) ||
              !beneath(anc, anchor_of(a, c->path)))
            continue;
          size_t len;
          const char *name = below(c->path, anc, &len);
          if (first == NULL) {
            first = name;
            first_len = len;
            subtrees = 1;
          } else if (len != first_len || strncmp(name, first, len) != 0) {
            subtrees = 2;
          }
        }
        if (subtrees >= 2) {
          free(best);
          best = xstrdup(anc);
          best_depth = d;
        }
      }
      char *up = parent_of(anc);
      free(anc);
      anc = up;
    }
    free(anc);
  }
  if (best == NULL)
    return false;
  struct learned_path merged = {.file = false};
  for (size_t k = 0; k < p->n_paths;) {
    struct learned_path *c = &p->paths[k];
    if (merge_candidate(c) && beneath(c->path, best) && beneath(best, anchor_of(a, c->path))) {
      merged.access |= c->access;
      learned_seen_merge(&merged.seen, &c->seen);
      merged.paths += c->paths ? c->paths : 1;
      if (merged.example == NULL)
        merged.example = c->example ? xstrdup(c->example) : xstrdup(c->path);
      remove_path(p, k);
    } else {
      k++;
    }
  }
  learned_policy_add_path(p, best, merged.access, &merged.seen, merged.paths, merged.example, false);
  free(merged.example);
  free(best);
  return true;
}

static int path_order(const void *a, const void *b) {
  const struct learned_path *x = a, *y = b;
  int c = strcmp(x->path, y->path);
  return c ? c : (int)x->file - (int)y->file;
}

void learned_paths_collapse(struct learned_policy *p) {
  struct anchors a = {0};
  anchors_of(p, &a);
  place_files(p);
  while (merge_once(p, &a))
    ;
  /* One rule per path: a file's exact rule and a directory rule on the same path are the same
   * rule to Landlock. */
  for (size_t i = 0; i < p->n_paths; i++)
    for (size_t k = i + 1; k < p->n_paths;) {
      if (strcmp(p->paths[i].path, p->paths[k].path) == 0) {
        p->paths[i].access |= p->paths[k].access;
        learned_seen_merge(&p->paths[i].seen, &p->paths[k].seen);
        p->paths[i].file = p->paths[i].file && p->paths[k].file;
        remove_path(p, k);
      } else {
        k++;
      }
    }
  /* Step 4: covered by a directory rule above (or at) it with every right it has. */
  for (size_t i = 0; i < p->n_paths;) {
    bool covered = false;
    for (size_t k = 0; k < p->n_paths && !covered; k++)
      covered = k != i && !p->paths[k].file && beneath(p->paths[i].path, p->paths[k].path) &&
                (p->paths[i].access & ~p->paths[k].access) == 0 &&
                (strcmp(p->paths[i].path, p->paths[k].path) != 0 || p->paths[i].file);
    if (covered) {
      /* its sightings count for the rule that covers it */
      remove_path(p, i);
    } else {
      i++;
    }
  }
  if (p->n_paths)  /* qsort of NULL is undefined */
    qsort(p->paths, p->n_paths, sizeof(*p->paths), path_order);
  free(a.v);
}
