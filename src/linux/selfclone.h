/* Self-protection against CVE-2019-5736 (/proc/PID/exe overwrite of the runtime binary): the
 * full answer, for the cases the exec trampoline (linux/exec_trampoline.h) leaves open.
 *
 * Every container process starts life as a fork of the runtime, so until its execve its
 * /proc/PID/exe is the runtime's own binary. Non-dumpable, that link opens only for a process
 * holding CAP_SYS_PTRACE over our user namespace; selfclone_required() says when such a process
 * may see ours, or when an LSM label must take effect at the exec of the user's program. Then
 * selfclone_ensure() makes the runtime run from a sealed, anonymous memfd copy of itself, so
 * /proc/PID/exe of any process we fork names that copy: no path on the host, and the seals make
 * it unwritable; and container processes exec their program directly.
 *
 * Alternatives weighed (issue 7):
 * - a private read-only overlayfs / bind mount of the binary (runc >= 1.2): we would still have
 *   to re-exec through it (only execve changes /proc/PID/exe), so it saves only the copy, and it
 *   relies on the kernel's read-only barriers, which page-cache poisoning bugs of the Dirty COW
 *   kind bypass (runc issue 5272); a sealed memfd is a separate copy they cannot reach.
 * - PR_SET_MM_EXE_FILE to a sealed file without re-exec: needs CAP_SYS_RESOURCE (absent on some
 *   hosts, e.g. this project's CI) and is refused while the old binary is still mapped.
 * Cost, measured: the copy is only the loaded part of the ELF (~530 kB), one execveat and a
 * second dynamic-loader start: about 1.5 ms per create/run/exec that needs it. */
#ifndef CM_LINUX_SELFCLONE_H
#define CM_LINUX_SELFCLONE_H
#include <stdbool.h>
#include "spec/spec.h"
#include "util/error.h"

/* Must the runtime run from its sealed copy before forking a process of the container `s` that
 * will run `p`? Yes when p carries an LSM exec label (SELinux, AppArmor), when the container's
 * pid namespace is not its own (host's, or joined: processes we do not control see ours), or
 * when, without a user namespace of its own, the container may hold CAP_SYS_PTRACE. */
bool selfclone_required(const struct spec *s, const struct spec_process *p);

/* Does this process already run from a sealed memfd copy of its binary? */
bool selfclone_is_sealed(void);
/* Already sealed: return 0. Otherwise copy /proc/self/exe into a sealed memfd and re-exec into
 * it with the same argv (from /proc/self/cmdline) and environment: does not return on success.
 * -1 with err set when the copy or the exec fails. */
int selfclone_ensure(struct cm_error **err);
#endif
