/* Internal to runtime/doctor*.c. */
#ifndef CM_RUNTIME_DOCTOR_INTERNAL_H
#define CM_RUNTIME_DOCTOR_INTERNAL_H

#include "runtime/doctor.h"

void doctor_set(struct doctor_check *c, const char *check, enum doctor_status s, const char *fix,
                const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* root/rel's first size-1 bytes, NUL-terminated; false when it cannot be read. */
bool doctor_read(const char *root, const char *rel, char *buf, size_t size);

enum doctor_cgroup_mode { DOCTOR_CGROUP_NONE, DOCTOR_CGROUP_V1, DOCTOR_CGROUP_HYBRID, DOCTOR_CGROUP_V2 };
enum doctor_cgroup_mode doctor_cgroup_mode_of(const struct doctor_env *e);

#endif
