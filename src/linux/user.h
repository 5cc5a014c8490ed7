/* process.user → steps of the last-steps program (last_steps.h): supplementary groups, gid, uid
 * and umask, switched while keeping the capability sets (PR_SET_KEEPCAPS) so caps.c can then
 * set exactly what the spec lists. */
#ifndef CM_LINUX_USER_H
#define CM_LINUX_USER_H
#include "linux/last_steps.h"
#include "spec/spec.h"
#include "util/error.h"
/* -1 with err when the switch cannot work here (supplementary groups where setgroups is denied). */
int user_emit_switch(struct last_steps *ls, const struct spec_user *u, struct cm_error **err);
#endif
