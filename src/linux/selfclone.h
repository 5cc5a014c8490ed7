/* Self-protection against CVE-2019-5736 (/proc/PID/exe overwrite of the runtime binary).
 *
 * Every container process starts life as a fork of the runtime, so until its execve its
 * /proc/PID/exe is the runtime's own binary; a container process that gets hold of that link
 * (the waiting init seen from a shared pid namespace, or `#!/proc/self/exe` as the entrypoint)
 * could reopen it for writing once the runtime has exited and replace the host binary.
 * selfclone_ensure() makes the runtime run from a sealed, anonymous memfd copy of itself
 * instead, so /proc/PID/exe of any process we fork names that copy: no path on the host, and
 * the seals make it unwritable. Called before anything that forks a container process. */
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
