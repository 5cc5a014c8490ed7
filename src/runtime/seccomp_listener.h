/* linux.seccomp.listenerPath: a NOTIFY filter's listener fd goes there with the OCI "container
 * process state", for the container's init (create) and for every exec'd process (exec), as
 * runc does. */
#ifndef CM_RUNTIME_SECCOMP_LISTENER_H
#define CM_RUNTIME_SECCOMP_LISTENER_H

#include <sys/types.h>

#include "runtime/state.h"
#include "spec/spec.h"
#include "util/error.h"

/* `pid`: the process whose filter it is; `st`/`status`: the container's state as of now. */
int seccomp_listener_send(const struct spec_seccomp *sc, const struct container_state *st, const char *status,
                          pid_t pid, int listener, struct cm_error **err);

#endif
