/* One CRIU RPC session: `criu swrk FD` started on one end of a SOCK_SEQPACKET socketpair. */
#ifndef CM_CRIU_SWRK_H
#define CM_CRIU_SWRK_H

#include <sys/types.h>
#include "criu/criu.h"
#include "criu/rpc.pb-c.h"
#include "spec/spec.h"
#include "util/error.h"

struct criu_swrk {
  pid_t pid;
  int sock;
};

/* A notification CRIU sends while it works ("post-dump", "post-restore", "orphan-pts-master"…):
 * fd is the one it passed with it (orphan-pts-master: the pty master) or -1; the handler owns it.
 * Returning -1 (err set) fails the request: CRIU is told, and undoes what it did. */
typedef int (*criu_notify_fn)(void *arg, const char *script, pid_t pid, int fd, struct cm_error **err);

/* Fork and exec criu (criu_path or "criu" from $PATH) in swrk mode. keep_fds: fds the request
 * names (images dir, work dir, inherited namespaces), left open across the exec; every other
 * fd of ours is closed there. */
int criu_swrk_start(struct criu_swrk *s, const char *criu_path, const int *keep_fds, size_t n_keep,
                    struct cm_error **err);
/* Send req and serve its notifications until the response, returned in *out (free it with
 * criu_resp__free_unpacked). A response with success false is still 0 here: the caller words it. */
int criu_swrk_call(struct criu_swrk *s, const CriuReq *req, criu_notify_fn notify, void *arg, CriuResp **out,
                   struct cm_error **err);
/* Close the socket and reap criu. */
void criu_swrk_end(struct criu_swrk *s);

/* What a dump and a restore ask of CRIU alike: the images and work directories by fd, its log
 * (log_file, in the work directory, level 4) and root, notify scripts, cgroups managed (in c's
 * mode when one is given), c's flags, and for a terminal container its pty as an orphan. */
void criu_opts_common(CriuOpts *opts, const struct criu_common_options *c, const struct spec *s, int images_fd,
                      int work_fd, const char *log_file, const char *root);

/* The lines of work_fd/log_name that say "Error", the last few of them joined by "; " (what the
 * user needs to see of CRIU's log), malloc'd, or NULL when there are none or no log. */
char *criu_log_errors(int work_fd, const char *log_name);
/* err for a failed request: "criu TYPE failed: <errmsg/errno>; <log errors> (log: PATH)". */
int criu_fail(struct cm_error **err, const char *what, const CriuResp *resp, int work_fd, const char *work_path,
              const char *log_name);

#endif
