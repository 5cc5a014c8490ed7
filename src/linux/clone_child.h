/* Fork a container process into its new namespaces and its cgroup in one system call. */
#ifndef CM_LINUX_CLONE_CHILD_H
#define CM_LINUX_CLONE_CHILD_H

#include <stdbool.h>
#include <sys/types.h>

/* Like fork() (no shared memory, SIGCHLD on exit), with the CLONE_NEW* bits of ns_flags, and,
 * when cgroup2_fd >= 0, born inside that cgroup2 directory (clone3 CLONE_INTO_CGROUP, Linux 5.7).
 * *in_cgroup (in parent and child) says whether the kernel placed it there. When it could not (older kernel, a cgroup
 * that refuses processes), the child is still created the classic way and the caller moves it
 * itself, which then reports the real reason. Returns like fork(): -1 with errno, 0 in the child. */
pid_t clone_child(unsigned long ns_flags, int cgroup2_fd, bool *in_cgroup);

#endif
