/* OCI hooks: each runs with the container state JSON on stdin, its own args and env, and an
 * optional timeout. The spec's failure rules are the caller's: prestart, createRuntime,
 * createContainer and startContainer failures fail the operation; poststart and poststop
 * failures are only logged. */
#ifndef CM_RUNTIME_HOOKS_H
#define CM_RUNTIME_HOOKS_H

#include "spec/spec.h"
#include "util/error.h"

int hooks_run(const struct spec_hook_list *hooks, enum spec_hook_kind kind, const char *state_json,
              struct cm_error **err);

#endif
