/* Per-process attributes applied in the container just before execve, while still root:
 * rlimits, oomScoreAdj, personality, ioPriority, scheduler, umask. */
#ifndef CM_LINUX_PROCESS_ATTRS_H
#define CM_LINUX_PROCESS_ATTRS_H

#include "spec/spec.h"
#include "util/error.h"

int rlimits_apply(const struct spec_process *p, struct cm_error **err);
int oom_score_adj_apply(const struct spec_process *p, struct cm_error **err);
/* process.lock_loginuid (a hardening profile): give the process an audit login uid (the runtime's
 * uid) if it has none yet, so that it cannot choose one itself; while still in the host's user
 * namespace and holding CAP_AUDIT_CONTROL. */
int loginuid_lock(const struct spec_process *p, struct cm_error **err);
int personality_apply(const struct spec_personality *pers, struct cm_error **err);
int io_priority_apply(const struct spec_process *p, struct cm_error **err);
int scheduler_apply(const struct spec_process *p, struct cm_error **err);

#endif
