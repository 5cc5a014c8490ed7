#ifndef CM_LINUX_CAPS_H
#define CM_LINUX_CAPS_H
#include <stdint.h>

#include "linux/last_steps.h"
#include "spec/spec.h"
#include "util/error.h"

/* process.capabilities, resolved against the running kernel (capabilities it does not have are
 * ignored with a warning). With !present every set is empty, also for uid 0 (runc does the
 * same: no capabilities object means none). Inheritable is empty unless listed
 * (CVE-2022-29162 class). */
struct caps_plan {
  int last_cap;
  uint64_t bounding, permitted, effective, inheritable, ambient;
  uint64_t drop; /* to drop from the bounding set */
};
int caps_plan(const struct spec_capabilities *c, struct caps_plan *out, struct cm_error **err);

/* Steps, in last_steps_for_process's order. The bounding set: while still root. */
void caps_emit_bounding(struct last_steps *ls, const struct caps_plan *p);
/* After the user switch: permitted/effective/inheritable (with `extra` also effective and
 * permitted: CAP_SYS_ADMIN that seccomp(2) needs without no_new_privs), then ambient. */
void caps_emit_sets(struct last_steps *ls, const struct caps_plan *p, uint64_t extra);
/* The exact permitted/effective/inheritable again, once `extra` has served. */
void caps_emit_exact(struct last_steps *ls, const struct caps_plan *p);
#endif
