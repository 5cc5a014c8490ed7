#ifndef CM_LINUX_FDS_H
#define CM_LINUX_FDS_H
#include "util/error.h"
/* Mark every fd >= 3 + preserve_fds close-on-exec (close_range), so nothing of the runtime
 * reaches the container process (CVE-2024-21626 class). */
int fds_close_on_exec_from(int first_fd, struct cm_error **err);
/* After chdir(cwd): verify the cwd lies inside the container root (not a leaked host dir). */
int fds_verify_cwd_inside_root(struct cm_error **err);
/* stdio that is the host's /dev/null (zero, full, random, urandom) becomes the container's own
 * node of that device, so the process cannot chmod or chown the host's (after pivot_root). */
int fds_localize_stdio_devices(struct cm_error **err);
#endif
