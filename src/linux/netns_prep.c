#include "linux/netns_prep.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"

static void *make_netns(void *arg) {
  struct netns_prep *p = arg;
  /* Only this thread moves; it exits right after, so the runtime's other threads (there are
   * none) and the main thread stay in the host's namespace. */
  if (unshare(CLONE_NEWNET) < 0) {
    p->error = errno;
    return NULL;
  }
  p->fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (p->fd < 0)
    p->error = errno;
  return NULL;
}

void netns_prep_start(struct netns_prep *p) {
  p->fd = -1;
  p->error = 0;
  p->started = pthread_create(&p->thread, NULL, make_netns, p) == 0;
}

int netns_prep_finish(struct netns_prep *p) {
  if (!p->started)
    return -1;
  pthread_join(p->thread, NULL);
  p->started = false;
  if (p->fd < 0)
    cm_debug("network namespace made ahead failed (%s): init makes its own", strerror(p->error));
  return p->fd;
}
