#ifndef CM_LINUX_SYSCTL_H
#define CM_LINUX_SYSCTL_H
#include "spec/spec.h"
#include "util/error.h"
/* Validate linux.sysctl against the namespaces the container gets (net.* needs a new network
 * namespace, IPC keys a new IPC namespace, kernel.{hostname,domainname} a new UTS one; anything
 * else is host-wide and refused). Called by the runtime before the container is built. */
int sysctl_validate(const struct spec *s, struct cm_error **err);
/* In the container, after pivot_root: write each key under /proc/sys, through a procfs verified
 * with fstatfs (CVE-2025-52881 class). */
int sysctl_apply(const struct spec_kv_list *sysctl, struct cm_error **err);
#endif
