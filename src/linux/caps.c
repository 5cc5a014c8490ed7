/* process.capabilities → the bounding, permitted, effective, inheritable and ambient sets.
 *
 * Runs after user_switch (which kept permitted across setuid with PR_SET_KEEPCAPS), so a
 * non-root user too ends with exactly the listed sets. Order: regain CAP_SETPCAP in effective,
 * shrink the bounding set, set permitted/effective/inheritable in one capset, then ambient. */
#include "linux/caps.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/log.h"

#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_RAISE 2
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

static void cap_freep(cap_t *c) {
  if (*c)
    cap_free(*c);
  *c = NULL;
}
#define cleanup_cap __attribute__((cleanup(cap_freep)))

/* The running kernel's last capability (what /proc/sys/kernel/cap_last_cap says, possibly newer
 * than libcap knows), asked of the kernel itself: a fake /proc in the rootfs must not be able to
 * make us skip dropping the newest capabilities. CAPBSET_READ fails with EINVAL past the last. */
static int kernel_last_cap(void) {
  /* Binary search: six calls, not one per capability (this runs before every container's exec). */
  int lo = 0, hi = 63; /* lo is known to exist (CAP_CHOWN) */
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (prctl(PR_CAPBSET_READ, mid, 0, 0, 0) >= 0)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

static uint64_t valid_mask(int last_cap) {
  return last_cap >= 63 ? ~0ULL : ((1ULL << (last_cap + 1)) - 1);
}

/* With CAP_SETPCAP only in permitted (setuid cleared effective), make it effective again so
 * PR_CAPBSET_DROP works. */
static int raise_effective_to_permitted(struct cm_error **err) {
  cleanup_cap cap_t cur = cap_get_proc();
  if (cur == NULL)
    return cm_error_set(err, errno, "capabilities: cap_get_proc");
  cap_flag_value_t has = CAP_CLEAR;
  if (cap_get_flag(cur, CAP_SETPCAP, CAP_PERMITTED, &has) < 0 || has != CAP_SET)
    return 0; /* the drop below then reports EPERM with the capability's name */
  for (int c = 0; c < 64; c++) {
    cap_value_t v = c;
    cap_flag_value_t in_perm = CAP_CLEAR;
    if (cap_get_flag(cur, v, CAP_PERMITTED, &in_perm) == 0 && in_perm == CAP_SET)
      cap_set_flag(cur, CAP_EFFECTIVE, 1, &v, CAP_SET);
  }
  if (cap_set_proc(cur) < 0)
    return cm_error_set(err, errno, "capabilities: raise effective set");
  return 0;
}

static const char *cap_display_name(int cap, char *buf, size_t len) {
  char *name = cap_to_name((cap_value_t)cap);
  if (name) {
    snprintf(buf, len, "%s", name);
    cap_free(name);
  } else {
    snprintf(buf, len, "capability %d", cap);
  }
  return buf;
}

static int drop_bounding(uint64_t keep, int last_cap, struct cm_error **err) {
  for (int c = 0; c <= last_cap; c++) {
    if (keep & (1ULL << c))
      continue;
    /* Without this, a setuid binary or file caps could regain what the spec withheld. Dropped
     * directly (dropping one already gone succeeds); asked only when the drop is refused, which
     * is no error for a capability the set does not hold. */
    if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0) {
      int e = errno;
      if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) == 0)
        continue;
      char name[64];
      return cm_error_set(err, e, "capabilities: drop %s from the bounding set",
                          cap_display_name(c, name, sizeof(name)));
    }
  }
  return 0;
}

static void set_flags(cap_t caps, cap_flag_t flag, uint64_t mask) {
  for (int c = 0; c < 64; c++) {
    if (!(mask & (1ULL << c)))
      continue;
    cap_value_t v = c;
    cap_set_flag(caps, flag, 1, &v, CAP_SET);
  }
}

static int set_process_sets(uint64_t permitted, uint64_t effective, uint64_t inheritable,
                            struct cm_error **err) {
  cleanup_cap cap_t caps = cap_init(); /* all clear */
  if (caps == NULL)
    return cm_error_set(err, errno, "capabilities: cap_init");
  set_flags(caps, CAP_PERMITTED, permitted);
  set_flags(caps, CAP_EFFECTIVE, effective);
  /* Inheritable stays empty unless listed: otherwise file-inheritable binaries in the image
   * would gain capabilities across execve (CVE-2022-29162 class). */
  set_flags(caps, CAP_INHERITABLE, inheritable);
  if (cap_set_proc(caps) < 0) {
    int e = errno;
    const char *hint = "";
    if ((effective & ~permitted) != 0)
      hint = " (effective lists capabilities that are not in permitted)";
    else if (e == EPERM)
      hint = " (a listed capability is not in the bounding set or was not kept across the user switch)";
    return cm_error_set(err, e, "capabilities: set permitted/effective/inheritable%s", hint);
  }
  return 0;
}

static int set_ambient(uint64_t ambient, int last_cap, struct cm_error **err) {
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0) {
    if (errno == EINVAL && ambient == 0)
      return 0; /* kernel < 4.3: no ambient set to clear */
    return cm_error_set(err, errno, "capabilities: clear the ambient set");
  }
  for (int c = 0; c <= last_cap; c++) {
    if (!(ambient & (1ULL << c)))
      continue;
    /* Fails unless the capability is in permitted and inheritable. runc's own default config
     * lists ambient caps without inheritable ones, so this is routine: a debug line, not a
     * warning on every run. */
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, c, 0, 0) < 0) {
      char name[64];
      cm_debug("cannot raise ambient capability %s: %s", cap_display_name(c, name, sizeof(name)),
              strerror(errno));
    }
  }
  return 0;
}

int caps_apply(const struct spec_capabilities *c, struct cm_error **err) {
  int last_cap = kernel_last_cap();
  uint64_t known = valid_mask(last_cap);
  /* No capabilities object means none at all, also for uid 0. */
  uint64_t bounding = 0, permitted = 0, effective = 0, inheritable = 0, ambient = 0;
  if (c->present) {
    bounding = c->bounding;
    permitted = c->permitted;
    effective = c->effective;
    inheritable = c->inheritable;
    ambient = c->ambient;
    uint64_t unknown = (bounding | permitted | effective | inheritable | ambient) & ~known;
    if (unknown)
      cm_warn("capabilities unknown to this kernel (mask 0x%llx) are ignored", (unsigned long long)unknown);
    bounding &= known;
    permitted &= known;
    effective &= known;
    inheritable &= known;
    ambient &= known;
  }

  if (raise_effective_to_permitted(err) < 0)
    return -1;
  if (drop_bounding(bounding, last_cap, err) < 0)
    return -1;
  if (set_process_sets(permitted, effective, inheritable, err) < 0)
    return -1;
  if (set_ambient(ambient, last_cap, err) < 0)
    return -1;
  /* KEEPCAPS was only needed across user_switch's setuid; execve resets it anyway. */
  prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
  return 0;
}
