/* The parent↔child sync channel: a SOCK_SEQPACKET socketpair carrying small typed messages,
 * optionally with one fd (SCM_RIGHTS). Used by runtime/ on the parent side and by the container
 * setup code in the child. One message per packet, so no framing is needed. */
#ifndef CM_UTIL_SYNC_H
#define CM_UTIL_SYNC_H

#include <stddef.h>
#include <stdint.h>
#include "util/error.h"

enum sync_msg_type {
  SYNC_ERROR = 1,        /* child → parent: value = errno, text = message; child then exits */
  SYNC_USERNS_READY,     /* child → parent: unshared CLONE_NEWUSER, write my id maps */
  SYNC_USERNS_MAPPED,    /* parent → child */
  SYNC_INIT_PID,         /* stage1 → parent: value = host pid of the container init */
  SYNC_CGROUP_JOINED,    /* parent → child: init is in its cgroup, go on */
  SYNC_RUN_HOOKS,        /* init → parent: run prestart + createRuntime hooks now */
  SYNC_HOOKS_DONE,       /* parent → init */
  SYNC_CONSOLE_FD,       /* init → parent: the pty master, as an fd */
  SYNC_READY,            /* init → parent: set up, waiting for start */
  SYNC_SECCOMP_NOTIFY_FD, /* init → parent: the seccomp listener fd */
  SYNC_START,             /* parent → init (create_options.start_at_once): exec the process now */
  SYNC_EGRESS_SOCKET,     /* init → parent: a socket for the egress broker (linux/egress_sockets.h);
                           * value = role | port << 8 */
  SYNC_MOUNT_SOURCES,     /* stage1 → parent: open my bind sources; parent → stage1: all sent */
  SYNC_MOUNT_SOURCE,      /* parent → stage1: value = index in mounts[], the source's O_PATH fd */
  SYNC_MOUNT_FD,          /* parent → stage1: a detached (idmapped) mount for mounts[value], or
                           * for the rootfs when value is -1 (runtime/userns_setup.h) */
  SYNC_MOUNTS_DONE,       /* parent → stage1: no more SYNC_MOUNT_FD */
  SYNC_LISTENER_READY,    /* last steps → parent, a plain write(2): the supervisor's seccomp
                           * listener is loaded (linux/seccomp_listener.h); the parent takes it */
  SYNC_LISTENER_TAKEN,    /* parent → last steps: the supervisor has it (a plain read(2)) */
  SYNC_LOG                /* child → parent: value = level, text = a log line's msg; sync_recv
                           * writes it to the log and goes on to the next message */
};

struct sync_msg {
  uint32_t type;
  int64_t value;
  char text[4000]; /* NUL-terminated */
};

/* fd < 0: send none. */
int sync_send(int sock, uint32_t type, int64_t value, const char *text, int fd, struct cm_error **err);
/* Returns 0 with *msg filled (and *fd_out the received fd or -1), 1 on EOF, -1 on error. */
int sync_recv(int sock, struct sync_msg *msg, int *fd_out, struct cm_error **err);
/* Child side: report err to the parent as SYNC_ERROR (best effort). */
void sync_send_error(int sock, const struct cm_error *err);
/* Send/receive one fd on any unix socket (console socket, seccomp listener). */
int fd_send(int sock, int fd, const char *payload, struct cm_error **err);
/* Connect to the unix socket at `path` (SOCK_STREAM; paths longer than sun_path work through an
 * fd on the directory) and send `fd` with `payload`. */
int unix_path_send_fd(const char *path, int fd, const char *payload, struct cm_error **err);

#endif
