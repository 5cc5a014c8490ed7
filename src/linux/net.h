#ifndef CM_LINUX_NET_H
#define CM_LINUX_NET_H
#include <sys/types.h>
#include "spec/spec.h"
#include "util/error.h"
/* Bring `lo` up in the current (new) network namespace, over rtnetlink. */
int net_loopback_up(struct cm_error **err);
/* The same in the network namespace of process `pid`, from outside: the runtime does it while
 * init builds the rootfs (issue 7). -1: failed, back in our own namespace; -2: failed to come
 * back (nothing more may run in this process but its exit). */
int net_loopback_up_in(pid_t pid, struct cm_error **err);
/* A profile's "loopback only" (spec_namespace.loopback_only) for a network namespace joined by
 * path: when that namespace holds any interface but lo, the path is dropped and the container
 * gets a new namespace (logged). 0 when nothing needed doing or it was done. */
int net_enforce_loopback_only(struct spec_namespace *ns, struct cm_error **err);
#endif
