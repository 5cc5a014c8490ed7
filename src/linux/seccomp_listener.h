/* Seccomp filters whose listener is codemode's own supervisor (seccomp_unotify(2)), never the
 * container's and never an agent named by the config:
 *   - the learning filter (codemode-run --learn): a baseline of syscalls passes, every other
 *     syscall waits for the supervisor, which records it and answers CONTINUE;
 *   - the audit filter (codemode-run --policy with an audit log or --audit-summary): the
 *     syscalls that reach a file pass through the supervisor, which checks them against the
 *     Landlock rules to name a denial, and answers CONTINUE.
 * Neither is ever used to enforce anything: the supervisor always answers CONTINUE (a decision
 * made on memory the target can still change would be a TOCTOU hole, seccomp_unotify(2),
 * "Design goals"); what is denied, the kernel denies through filters and Landlock layers that
 * need no listener.
 *
 * A filter stack has at most one listener (the kernel refuses a second, EBUSY), so these cannot
 * be combined with a config whose linux.seccomp notifies (listenerPath).
 *
 * Where: loaded in the container's last steps (linux/last_steps.h), after the profile's and the
 * config's filters (so their ERRNO outranks NOTIFY: only what they allow reaches the listener),
 * as the last filter before the program's execve. Its listener then reaches the runtime without
 * a syscall the new filter would hold: the last steps write(2) a SYNC_LISTENER_READY on the sync
 * socket and read(2) the answer (both in every baseline), and the runtime takes the fd from the
 * process with pidfd_getfd(2) (it is the only seccomp listener there). sendmsg(2) with
 * SCM_RIGHTS would wait for a listener that has no fd yet, and the fd number is not known when
 * the last steps are built. The listener fd is close-on-exec (the kernel makes it so): the
 * program never holds it. */
#ifndef CM_LINUX_SECCOMP_LISTENER_H
#define CM_LINUX_SECCOMP_LISTENER_H

#include <stdbool.h>
#include <sys/types.h>

#include "linux/seccomp.h"
#include "util/error.h"

/* notify_by_default: every syscall of the native architecture NOTIFY except `names` (ALLOW);
 * otherwise `names` NOTIFY and every other syscall ALLOW. names: NULL-terminated, unknown names
 * skipped. The program's notify is true. */
int seccomp_listener_compile(bool notify_by_default, const char *const *names, struct seccomp_program *out,
                             struct cm_error **err);

/* In the last steps being built for init (linux/last_steps.h): load `listener` (may be NULL) then
 * `policy` (a plain filter, may be NULL) as the last filters (the listener first, so `policy`
 * need not allow seccomp(2)), then hand the listener over on sync_fd and wait until the runtime
 * has it. Needs no_new_privs (the last steps set it first). */
struct last_steps;
int seccomp_supervised_emit(struct last_steps *ls, const struct seccomp_program *policy,
                            const struct seccomp_program *listener, int sync_fd, struct cm_error **err);

/* Runtime side, at SYNC_LISTENER_READY: the seccomp listener of process `init` (found in
 * /proc/PID/fd) → our own copy (close-on-exec), by pidfd_getfd(2). */
int seccomp_listener_take(pid_t init, struct cm_error **err);

#endif
