/* The exec trampoline: how a container process execs the user's program without ever letting
 * the container reach the runtime's binary (CVE-2019-5736), and without re-executing the whole
 * runtime first.
 *
 * The threat: every container process is a fork of the runtime, so until its execve its
 * /proc/PID/exe is the host's runtime binary. Two ways to it for a container:
 * 1. /proc/PID/exe of a waiting runtime process (init before `start`, an exec'd process before
 *    its execve). Every runtime process makes itself non-dumpable first thing (cli/main.c), and
 *    the kernel then lets only holders of CAP_SYS_PTRACE over our user namespace open that link.
 * 2. `#!/proc/self/exe` (or a PT_INTERP, or a symlink to it) as the program: the kernel resolves
 *    it in the exec'ing process, i.e. to the runtime binary, and runs the runtime again inside
 *    the container, dumpable, for the container to grab. The trampoline closes this one: the
 *    container process execs a tiny freestanding program (src/trampoline/) from a sealed memfd,
 *    and that program execs the user's; /proc/self/exe at that point is the sealed copy.
 * The trampoline must be invisible: the user's execve checked and ending exactly as one execve
 * from init would. So init execs it as the container's root, and it runs the last steps
 * (linux/last_steps.h: credentials, no_new_privs, seccomp filters) before that one execve; its
 * own execve is made non-dumpable (an exec-only copy, read by no capability we hold), so
 * nothing in the container attaches to it while it still holds root's capabilities.
 * What is left for (1) — a process seeing ours that holds CAP_SYS_PTRACE over it: another
 * container sharing the pid namespace, or the container's own processes when it keeps
 * CAP_SYS_PTRACE without a user namespace — and LSM exec labels (the label's transition must
 * happen at the exec of the user's program, the entrypoint policies are written for, not at the
 * trampoline's) are handled by the full sealed re-exec of the runtime, linux/selfclone.h.
 * Cost, measured (issue 7): ~0.1 ms per start instead of ~1.5 ms for the re-exec. */
#ifndef CM_LINUX_EXEC_TRAMPOLINE_H
#define CM_LINUX_EXEC_TRAMPOLINE_H
#include "util/error.h"

/* Threat (1): called first thing by every runtime binary's main(), before anything forks. Also
 * when not root: a rootless runtime's binary usually belongs to the user its container's root is
 * mapped to, so that container could write it. While its id maps are written, a rootless child
 * is made dumpable again for that moment only (linux/userns.h): no container process exists yet. */
void exec_guard_make_nondumpable(void);

struct exec_trampoline {
  int fd;        /* sealed memfd: the trampoline, then its last-steps program; close-on-exec */
  size_t offset; /* of the program in fd */
};

/* Make the sealed copy of the trampoline with `prog` (a serialized linux/last_steps.h program),
 * before anything denies memfd_create. -1 with err set on failure. */
int exec_trampoline_prepare(struct exec_trampoline *t, const void *prog, size_t prog_len, struct cm_error **err);
/* execve(path, argv, envp) through the trampoline, which runs the program first. Call it as the
 * container's root, after every other fd was made close-on-exec: t->fd and keep_fds stay open
 * across the trampoline's execve. Returns only on failure (-1, errno set). */
int exec_trampoline_exec(const struct exec_trampoline *t, const char *path, char *const argv[], const int *keep_fds,
                         size_t n_keep, char *const envp[]);

#endif
