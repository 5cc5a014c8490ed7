/* Are a normal user's subordinate ranges enough for a ci job (rootless.h)? The job's root is
 * the user's own id; its ids 1-65536 are the user's first /etc/subuid and /etc/subgid ranges,
 * mapped by newuidmap and newgidmap (userns_setup.c). With less, the job still runs, but a
 * switch to an unmapped id (su, sudo, setpriv, chown) fails deep inside it with EINVAL from
 * setresuid, which names neither the cause nor the fix: said once, at start, instead. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "linux/userns.h"
#include "runtime/rootless.h"
#include "runtime/userns_setup.h"
#include "util/cleanup.h"

/* What the user has in one file, as userns_setup_rootless_maps reads it: its first range. */
struct subids {
  const char *file;
  bool found;
  struct subid_range r;
  uint32_t mapped; /* how many of them the job gets (0 without the helper) */
};

static void load(struct subids *s, const char *file, const char *name, uint32_t id, const char *helper) {
  struct cm_error *ignored = NULL;
  s->file = file;
  s->found = subid_ranges(file, name, id, &s->r, 1, &ignored) == 1;
  cm_error_freep(&ignored);
  s->mapped = s->found && userns_helper_path(helper) ? (s->r.count < ROOTLESS_CI_SUBIDS ? s->r.count : ROOTLESS_CI_SUBIDS)
                                                     : 0;
}

/* Does [start, start+count) meet a range of `file` that is not `own`'s (the line the fix
 * replaces: its name or its id)? *end: the end of the range it meets. */
static bool meets_other(const char *file, const char *own, uint32_t own_id, uint64_t start, uint64_t count,
                        uint64_t *end) {
  cleanup_fclose FILE *f = fopen(file, "re");
  char line[512], idbuf[16];
  snprintf(idbuf, sizeof(idbuf), "%u", own_id);
  while (f && fgets(line, sizeof(line), f)) {
    char *save = NULL;
    char *who = strtok_r(line, ":\n", &save), *s = strtok_r(NULL, ":\n", &save), *c = strtok_r(NULL, ":\n", &save);
    if (!who || !s || !c || who[0] == '#' || strcmp(who, own) == 0 || strcmp(who, idbuf) == 0)
      continue;
    uint64_t a = strtoull(s, NULL, 10), n = strtoull(c, NULL, 10);
    if (a < start + count && start < a + n) {
      *end = a + n;
      return true;
    }
  }
  return false;
}

/* A first id for the fix: the user's own start when the whole size fits there, else the first
 * place from 100000 (where useradd starts) that meets nobody else's range in either file. */
static uint64_t fix_start(const struct subids *u, const char *uname, const char *gname, uint32_t uid, uint32_t gid) {
  uint64_t end;
  if (u->found && !meets_other("/etc/subuid", uname, uid, u->r.start, ROOTLESS_CI_SUBIDS, &end) &&
      !meets_other("/etc/subgid", gname, gid, u->r.start, ROOTLESS_CI_SUBIDS, &end))
    return u->r.start;
  uint64_t c = 100000;
  for (int guard = 0; guard < 10000; guard++) {
    if (meets_other("/etc/subuid", uname, uid, c, ROOTLESS_CI_SUBIDS, &end) ||
        meets_other("/etc/subgid", gname, gid, c, ROOTLESS_CI_SUBIDS, &end))
      c = end;
    else
      break;
  }
  return c;
}

/* One file's part of the fix: its line added, or the user's first one replaced. */
static void fix_line(char *buf, size_t size, const struct subids *s, const char *name, uint64_t start) {
  if (s->found)
    snprintf(buf, size, "replace its line in %s with \"%s:%llu:%u\"", s->file, name, (unsigned long long)start,
             ROOTLESS_CI_SUBIDS);
  else
    snprintf(buf, size, "add \"%s:%llu:%u\" to %s", name, (unsigned long long)start, ROOTLESS_CI_SUBIDS, s->file);
}

static void describe(char *buf, size_t size, const struct subids *s) {
  if (!s->found)
    snprintf(buf, size, "%s has no range for it", s->file);
  else
    snprintf(buf, size, "%s gives it %u-%u (%u ids)", s->file, s->r.start, s->r.start + s->r.count - 1, s->r.count);
}

char *rootless_ci_subid_warning(void) {
  uid_t uid = geteuid();
  gid_t gid = getegid();
  cleanup_free char *upw = userns_setup_db_name("/etc/passwd", uid);
  cleanup_free char *ggr = userns_setup_db_name("/etc/group", gid);
  char uidbuf[16], gidbuf[16];
  snprintf(uidbuf, sizeof(uidbuf), "%u", (unsigned)uid);
  snprintf(gidbuf, sizeof(gidbuf), "%u", (unsigned)gid);
  const char *uname = upw ? upw : uidbuf, *gname = ggr ? ggr : gidbuf;
  struct subids u, g;
  load(&u, "/etc/subuid", upw, uid, "newuidmap");
  load(&g, "/etc/subgid", ggr, gid, "newgidmap");
  if (u.mapped >= ROOTLESS_CI_SUBIDS && g.mapped >= ROOTLESS_CI_SUBIDS)
    return NULL;
  bool helpers = userns_helper_path("newuidmap") && userns_helper_path("newgidmap");
  uint32_t m = u.mapped < g.mapped ? u.mapped : g.mapped;
  char du[128], dg[128], gets[192];
  describe(du, sizeof(du), &u);
  describe(dg, sizeof(dg), &g);
  if (m == 0)
    snprintf(gets, sizeof(gets), "this one gets only its root: su, sudo, setpriv or chown to any other id fail with "
                                 "EINVAL and files of other ids show as nobody");
  else
    snprintf(gets, sizeof(gets), "this one gets its ids 1-%u: su, sudo, setpriv or chown to ids %u-%u (nobody "
                                 "65534 among them) fail with EINVAL",
             m, m + 1, ROOTLESS_CI_SUBIDS);
  uint64_t s = fix_start(&u, uname, gname, uid, gid);
  char fu[160], fg[160];
  fix_line(fu, sizeof(fu), &u, uname, s);
  fix_line(fg, sizeof(fg), &g, gname, s);
  char *msg = NULL;
  if (asprintf(&msg,
               "--profile ci as user %s (uid %u): %s, %s%s; a ci job maps its root and %u subordinate uids and "
               "gids (its ids 1-%u: the users and groups of its image, nested user namespaces), and %s (fix: %s and "
               "%s%s)",
               uname, (unsigned)uid, du, dg, helpers ? "" : ", and newuidmap or newgidmap is not installed",
               ROOTLESS_CI_SUBIDS, ROOTLESS_CI_SUBIDS, gets, fu, fg,
               helpers ? "" : "; install newuidmap and newgidmap: Debian's uidmap package") < 0)
    abort();
  return msg;
}
