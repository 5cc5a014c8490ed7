/* Who holds a container's state lock, for a writer that may wait for a create (start): waiting
 * is safe unless the holder is one of our ancestors (a create's hook running codemode on its own
 * container), which would wait for us in turn. */
#ifndef CM_RUNTIME_LOCK_HOLDER_H
#define CM_RUNTIME_LOCK_HOLDER_H

#include <stdbool.h>
#include <sys/types.h>

/* The pid that took the flock(2) write lock on fd's file (/proc/locks), or -1 when none is
 * listed or it cannot be read. */
pid_t flock_holder_pid(int fd);
/* Whether pid is this process's parent, grandparent, …; true when the walk cannot be done (the
 * caller then refuses instead of waiting). */
bool pid_is_our_ancestor(pid_t pid);

#endif
