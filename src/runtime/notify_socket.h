/* NOTIFY_SOCKET (sd_notify) through the container, as runc does (podman --sdnotify=container,
 * systemd units of Type=notify running `codemode run`): when the runtime's environment has
 * NOTIFY_SOCKET at create, the container gets a socket of ours at /run/notify/notify.sock (the
 * state dir's notify/ directory bound read-only there, NOTIFY_SOCKET in the process's env);
 * `start` or `run` listens on it and, when the container says READY=, forwards that to the
 * host's NOTIFY_SOCKET with MAINPID (init's pid; the runtime's own in a foreground `run`, which
 * stays the service's main process). Nothing else the container sends leaves it. */
#ifndef CM_RUNTIME_NOTIFY_SOCKET_H
#define CM_RUNTIME_NOTIFY_SOCKET_H

#include <sys/types.h>

#include "spec/spec.h"
#include "util/error.h"

/* create: the state dir's notify/ directory, its mount and the process's env in `s`. */
int notify_socket_prepare(struct spec *s, int state_dirfd, const char *state_dir, struct cm_error **err);
/* start/run: bind notify/notify.sock (non-blocking datagrams); the fd, or -1 with err. */
int notify_socket_listen(int state_dirfd, struct cm_error **err);
/* Read what is waiting on `sock`; on READY= forward it with MAINPID to `host`: 1 then, else 0. */
int notify_socket_handle(int sock, const char *host, pid_t mainpid);
/* Until READY= was forwarded or `init` is gone. */
void notify_socket_relay(int sock, const char *host, pid_t init, pid_t mainpid);

#endif
