/* Switch to process.user (additionalGids, gid, uid, umask) keeping capabilities across the
 * switch (PR_SET_KEEPCAPS), so caps.c can then set exactly what the spec lists. */
#ifndef CM_LINUX_USER_H
#define CM_LINUX_USER_H
#include "spec/spec.h"
#include "util/error.h"
int user_switch(const struct spec_user *u, struct cm_error **err);
#endif
