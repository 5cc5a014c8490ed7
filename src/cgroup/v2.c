/* cgroup v2 mechanics: enabling controllers down the tree, freeze/thaw, cgroup.kill. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static bool word_in_list(const char *list, const char *word) {
  size_t want = strlen(word);
  const char *p = list;
  while (*p) {
    p += strspn(p, " \n");
    size_t len = strcspn(p, " \n");
    if (len == want && strncmp(p, word, len) == 0)
      return true;
    p += len;
  }
  return false;
}

bool cg_v2_has_controller(const char *dir, const char *controller) {
  cleanup_free char *list = cg_read(dir, "cgroup.controllers", NULL);
  return list != NULL && word_in_list(list, controller);
}

/* Enable in dir's cgroup.subtree_control every controller dir has. All at once first; if the
 * kernel refuses one (e.g. cpu while a realtime thread sits there), enable them one by one and
 * leave out the ones it refuses: a missing controller surfaces later as an error naming the field
 * that needs it. */
int cg_v2_enable_subtree(const char *dir, struct cm_error **err) {
  cleanup_free char *available = cg_read(dir, "cgroup.controllers", err);
  if (available == NULL)
    return -1;
  cleanup_free char *enabled = cg_read(dir, "cgroup.subtree_control", NULL);
  cleanup_free char *wanted = NULL;
  size_t wanted_len = 0;
  FILE *f = open_memstream(&wanted, &wanted_len);
  if (f == NULL)
    abort();
  char *save = NULL;
  for (char *c = strtok_r(available, " \n", &save); c != NULL; c = strtok_r(NULL, " \n", &save)) {
    if (enabled == NULL || !word_in_list(enabled, c))
      fprintf(f, "%s+%s", ftell(f) > 0 ? " " : "", c);
  }
  fclose(f);
  if (wanted_len == 0)
    return 0;
  struct cm_error *ignored = NULL;
  if (cg_write(dir, "cgroup.subtree_control", wanted, NULL, &ignored) == 0)
    return 0;
  cm_error_free(ignored);
  save = NULL;
  for (char *c = strtok_r(wanted, " ", &save); c != NULL; c = strtok_r(NULL, " ", &save)) {
    ignored = NULL;
    if (cg_write(dir, "cgroup.subtree_control", c, NULL, &ignored) < 0) {
      cm_debug("cgroup: not enabling %s in %s/cgroup.subtree_control: %s", c + 1, dir, strerror(ignored->errnum));
      cm_error_free(ignored);
    }
  }
  return 0;
}

int cg_v2_enable_controllers(const char *mount, const char *path, struct cm_error **err) {
  /* Usually every ancestor delegates all it has already: then the leaf is offered what the root
   * has, and two reads replace two per ancestor. */
  cleanup_free char *leaf = NULL;
  if (asprintf(&leaf, "%s%s", mount, path) < 0)
    abort();
  cleanup_free char *at_root = cg_read(mount, "cgroup.controllers", NULL);
  cleanup_free char *at_leaf = at_root ? cg_read(leaf, "cgroup.controllers", NULL) : NULL;
  if (at_leaf != NULL && strcmp(at_root, at_leaf) == 0)
    return 0;
  cleanup_free char *dir = strdup(mount);
  cleanup_free char *copy = strdup(path);
  if (dir == NULL || copy == NULL)
    abort();
  /* Every ancestor of the leaf, root included; the leaf itself keeps an empty subtree_control
   * so that processes may live in it ("no internal processes" rule). */
  char *last = strrchr(copy, '/');
  if (last != NULL)
    *last = '\0';
  if (cg_v2_enable_subtree(dir, err) < 0)
    return -1;
  char *save = NULL;
  for (char *comp = strtok_r(copy, "/", &save); comp != NULL; comp = strtok_r(NULL, "/", &save)) {
    char *next = NULL;
    if (asprintf(&next, "%s/%s", dir, comp) < 0)
      abort();
    free(dir);
    dir = next;
    if (cg_v2_enable_subtree(dir, err) < 0)
      return -1;
  }
  return 0;
}

/* "key value" lines (cgroup.events): the value of key, or -1. */
static long events_value(const char *dir, const char *key) {
  cleanup_free char *events = cg_read(dir, "cgroup.events", NULL);
  if (events == NULL)
    return -1;
  size_t klen = strlen(key);
  for (char *line = events; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
    if (strncmp(line, key, klen) == 0 && line[klen] == ' ')
      return strtol(line + klen + 1, NULL, 10);
  }
  return -1;
}

/* The requested state (cgroup.freeze), not cgroup.events' "frozen", which flickers to 0 while a
 * task of a paused cgroup dies of a fatal signal. cg_v2_freeze() already waited for it. */
int cg_v2_is_frozen(const char *dir, struct cm_error **err) {
  cleanup_free char *state = cg_read(dir, "cgroup.freeze", err);
  if (state == NULL)
    return -1;
  return state[0] == '1';
}

int cg_v2_frozen_effective(const char *dir) {
  return (int)events_value(dir, "frozen");
}

int cg_v2_freeze(const char *dir, bool frozen, struct cm_error **err) {
  if (cg_write(dir, "cgroup.freeze", frozen ? "1" : "0", NULL, err) < 0)
    return -1;
  /* Freezing is asynchronous: wait until the kernel reports it done (about 5 s at most). Thawing
   * takes effect on the write; its report was once seen lagging behind with dying tasks in a
   * nested cgroup, so it gets a short wait only. */
  int tries = frozen ? 500 : 100;
  for (int i = 0; i < tries; i++) {
    long v = events_value(dir, "frozen");
    if (v < 0 || v == (frozen ? 1 : 0))
      return 0;
    sleep_ms(10);
  }
  if (!frozen) {
    cm_debug("cgroup: thaw %s: cgroup.events still says frozen 1; cgroup.freeze is 0", dir);
    return 0;
  }
  cleanup_free char *events = cg_read(dir, "cgroup.events", NULL);
  for (char *p = events; p && *p; p++)
    if (*p == '\n')
      *p = ' ';
  return cm_error_set(err, ETIMEDOUT, "%s %s: cgroup.events never reported frozen %d (it says: %s)",
                      frozen ? "freeze" : "thaw", dir, frozen ? 1 : 0, events ? events : "?");
}

int cg_v2_kill(const char *dir, struct cm_error **err) {
  if (!cg_file_exists(dir, "cgroup.kill"))
    return 0; /* kernel < 5.14 */
  if (cg_write(dir, "cgroup.kill", "1", NULL, err) < 0)
    return -1;
  return 1;
}

/* Populated according to cgroup.events; -1 when the file is missing. */
int cg_v2_populated(const char *dir) {
  return (int)events_value(dir, "populated");
}
