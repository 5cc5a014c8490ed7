/* Checkpoint and restore through CRIU (issue 28): codemode-criu's library part, never on the
 * container start path. CRIU is driven as runc drives it, over its RPC ("criu swrk FD" on a
 * SOCK_SEQPACKET socketpair, protobuf messages of src/criu/rpc.proto): one request, the
 * notifications CRIU sends while it works (each answered), one response.
 *
 * Layer: like runtime/ (it uses runtime/state.h, cgroup/, spec/); only cli/criu_main.c includes
 * it, and only the codemode-criu binary links it with protobuf-c. */
#ifndef CM_CRIU_CRIU_H
#define CM_CRIU_CRIU_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "runtime/runtime.h"
#include "util/error.h"

/* In the images: init's fds 0-2 at the dump, one link target a line (src/criu/checkpoint.c). */
#define CRIU_DESCRIPTORS_FILE "codemode-descriptors"

/* CRIU's --manage-cgroups-mode values, in rpc.proto's numbering. */
enum criu_cgroup_mode { CRIU_CG_UNSET = -1, CRIU_CG_SOFT = 3, CRIU_CG_FULL = 4, CRIU_CG_STRICT = 5, CRIU_CG_IGNORE = 0 };
/* "soft", "full", "strict", "ignore" → the mode; -1 with err naming the flag's value. */
int criu_cgroup_mode_parse(const char *s, enum criu_cgroup_mode *out, struct cm_error **err);

/* What both directions share (runc's flags). */
struct criu_common_options {
  const char *criu_path;  /* --criu (global): the criu binary; NULL: "criu" in $PATH */
  const char *image_path; /* --image-path, default ./checkpoint */
  const char *work_path;  /* --work-path (logs), default: the image path */
  bool tcp_established, ext_unix_sk, shell_job, file_locks;
  enum criu_cgroup_mode cgroup_mode;
  bool lazy_pages;
  bool auto_dedup;   /* --auto-dedup: punch pages out of parent images (dump) or the images (restore) */
  uint32_t empty_ns; /* --empty-ns: CLONE_NEW* namespaces CRIU makes empty (only CLONE_NEWNET) */
};
/* --empty-ns NS: the OCI name of a namespace CRIU can leave empty ("network", CRIU's only one)
 * added to *mask; -1 with err naming the value otherwise. */
int criu_empty_ns_parse(const char *s, uint32_t *mask, struct cm_error **err);

struct checkpoint_options {
  const char *id;
  struct criu_common_options c;
  bool leave_running;
  bool pre_dump;
  const char *parent_path; /* --parent-path: relative to the image path (CRIU's rule) */
  /* --page-server ADDR:PORT: the memory goes to a `criu page-server` there; with lazy_pages
   * the port a page server of the dump's own listens on (CRIU takes no address then). */
  char *page_server_addr;
  int page_server_port; /* 0: none */
  int status_fd;        /* --status-fd (lazy pages): gets one \0 when the page server listens; -1 */
};
/* --page-server ADDR:PORT ("[v6]:PORT" too) into o; -1 with err naming the value. */
int criu_page_server_parse(const char *s, struct checkpoint_options *o, struct cm_error **err);
/* Dump the running container's processes into the image path. Unless leave_running or
 * pre_dump, the container is then gone (CRIU killed its processes) and is deleted, as runc does. */
int criu_checkpoint(const struct runtime_context *ctx, const struct checkpoint_options *o, struct cm_error **err);

struct restore_options {
  const char *id;
  struct criu_common_options c;
  const char *bundle; /* default "." */
  const char *pid_file;
  const char *console_socket;
  bool detach;
  const char *profile; /* the global --profile, recorded as create records it; NULL: none */
};
/* Restore a checkpoint as container id: the state directory written as create writes it, init
 * the restored process. With detach: returns once it runs. Without: waits for it, deletes the
 * container and sets *exit_status (code, or 128+signal). */
int criu_restore(const struct runtime_context *ctx, const struct restore_options *o, int *exit_status,
                 struct cm_error **err);

/* Whether CRIU can work here: its version ("3.17.1") in *version (malloc'd) when it answers at
 * all, and 0 when a CHECK request succeeds; -1 with err quoting CRIU's reason otherwise. */
int criu_probe(const char *criu_path, char **version, struct cm_error **err);
/* Whether this CRIU and kernel can do lazy pages (a FEATURE_CHECK request: userfaultfd with the
 * non-cooperative events CRIU needs): 1 yes, 0 no (*why says so), -1 when CRIU cannot be asked. */
int criu_lazy_pages_probe(const char *criu_path, const char **why, struct cm_error **err);
/* 0 when lazy pages work here, else -1 with err saying why (--lazy-pages refused up front). */
int criu_lazy_pages_usable(const char *criu_path, struct cm_error **err);

#endif
