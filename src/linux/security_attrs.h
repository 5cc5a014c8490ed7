/* no_new_privs, LSM labels (AppArmor / SELinux) and the session keyring. */
#ifndef CM_LINUX_SECURITY_ATTRS_H
#define CM_LINUX_SECURITY_ATTRS_H
#include <stdbool.h>
#include "spec/spec.h"
#include "util/error.h"
int no_new_privs_apply(struct cm_error **err);
/* Set the exec-time label (apparmor: /proc/self/attr/apparmor/exec "exec PROFILE"; selinux:
 * /proc/self/attr/exec). Error if asked for and the LSM is not active. */
int lsm_apply_exec_label(const struct spec_process *p, struct cm_error **err);
/* A new session keyring named after the container (skipped with --no-new-keyring). */
int keyring_join_new(const char *container_id, struct cm_error **err);
#endif
