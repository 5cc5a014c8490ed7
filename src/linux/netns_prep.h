/* The container's new network namespace, made by a helper thread while the runtime does its
 * other pre-clone work (state dir, cgroup, progress record).
 *
 * A new network namespace is the most expensive of the namespaces (~0.5 ms: every pernet
 * subsystem initialises its state), and clone(CLONE_NEWNET) pays it on the critical path of a
 * `run`. unshare(CLONE_NEWNET) in a thread moves only that thread; the thread hands back an fd of
 * /proc/thread-self/ns/net, which init joins with setns() first thing, before anything that
 * depends on the network namespace (the sysfs mount, lo, net.* sysctls). */
#ifndef CM_LINUX_NETNS_PREP_H
#define CM_LINUX_NETNS_PREP_H

#include <pthread.h>
#include <stdbool.h>

struct netns_prep {
  pthread_t thread;
  bool started;
  int fd;    /* the namespace, once joined: -1 if the thread could not make it */
  int error; /* errno of the failure, for the debug log */
};

/* Start making the namespace. On failure to start, p->started is false and the caller clones
 * with CLONE_NEWNET as usual. */
void netns_prep_start(struct netns_prep *p);
/* Wait for the thread; the namespace fd (close-on-exec) or -1 (then clone with CLONE_NEWNET). */
int netns_prep_finish(struct netns_prep *p);

#endif
