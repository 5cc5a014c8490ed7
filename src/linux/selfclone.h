/* Self-protection against CVE-2019-5736 (/proc/PID/exe overwrite of the runtime binary).
 *
 * Every container process starts life as a fork of the runtime, so until its execve its
 * /proc/PID/exe is the runtime's own binary; a container process that gets hold of that link
 * (the waiting init seen from a shared pid namespace, or `#!/proc/self/exe` as the entrypoint)
 * could reopen it for writing once the runtime has exited and replace the host binary.
 * selfclone_ensure() makes the runtime run from a sealed, anonymous memfd copy of itself
 * instead, so /proc/PID/exe of any process we fork names that copy: no path on the host, and
 * the seals make it unwritable. Called before anything that forks a container process.
 *
 * Why this mechanism (issue 7 weighed the alternatives):
 * - a private read-only overlayfs / bind mount of the binary (runc >= 1.2): we would still have
 *   to re-exec through it (only execve changes /proc/PID/exe), so it saves only the copy, and it
 *   relies on the kernel's read-only barriers, which page-cache poisoning bugs of the Dirty COW
 *   kind bypass (runc issue 5272); a sealed memfd is a separate copy they cannot reach.
 * - PR_SET_DUMPABLE 0 plus refusing to execve our own binary: /proc/PID/exe stays reachable for a
 *   container holding CAP_SYS_PTRACE, and a refusal check is bypassed by '#!' interpreters and
 *   PT_INTERP pointing at /proc/self/exe. Weaker: rejected.
 * - PR_SET_MM_EXE_FILE to a sealed file without re-exec: needs CAP_SYS_RESOURCE (absent on some
 *   hosts, e.g. this project's CI) and is refused while the old binary is still mapped.
 * Cost, measured: the copy is only the loaded part of the ELF (~350 kB of a 1.4 MB -g build), one
 * execveat and a second dynamic-loader start (~1.1 ms CPU since libsystemd is dlopened only for
 * the systemd driver); about 1.5 ms CPU per create/run/exec in all. */
#ifndef CM_LINUX_SELFCLONE_H
#define CM_LINUX_SELFCLONE_H
#include <stdbool.h>
#include "util/error.h"

/* Does this process already run from a sealed memfd copy of its binary? */
bool selfclone_is_sealed(void);
/* Already sealed: return 0. Otherwise copy /proc/self/exe into a sealed memfd and re-exec into
 * it with the same argv (from /proc/self/cmdline) and environment: does not return on success.
 * -1 with err set when the copy or the exec fails. */
int selfclone_ensure(struct cm_error **err);
#endif
