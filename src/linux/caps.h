#ifndef CM_LINUX_CAPS_H
#define CM_LINUX_CAPS_H
#include "spec/spec.h"
#include "util/error.h"
/* After user_switch: drop the bounding set to what is listed, set permitted/effective/
 * inheritable, raise ambient. Inheritable is empty unless listed (CVE-2022-29162 class).
 * With !c->present, every set is emptied except for uid 0 keeping nothing either (runc does
 * the same: no capabilities object means none). */
int caps_apply(const struct spec_capabilities *c, struct cm_error **err);
#endif
