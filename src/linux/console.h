/* process.terminal: a pty allocated inside the container's devpts. */
#ifndef CM_LINUX_CONSOLE_H
#define CM_LINUX_CONSOLE_H

#include <termios.h>

#include "spec/spec.h"
#include "util/error.h"

/* Called in the container after pivot_root, after setsid(): open /dev/ptmx, unlock, set
 * consoleSize, make the slave the controlling terminal and stdin/stdout/stderr, bind it over
 * /dev/console if that exists. Returns the master fd (O_CLOEXEC) to hand to the runtime. */
int console_setup(const struct spec_process *p, struct cm_error **err);
/* The same for a process exec'd into a running container: /dev/console is left alone (it is
 * init's, and a bind here would stack a mount in the container's mount namespace per exec). */
int console_setup_exec(const struct spec_process *p, struct cm_error **err);

/* Runtime side (`--console-socket`): connect to the unix socket at `socket_path` and pass
 * `master_fd` over SCM_RIGHTS, as containerd's shim expects. */
int console_socket_send(const char *socket_path, int master_fd, struct cm_error **err);
/* A pty master the container sent: to --console-socket when there is one (and closed), else kept
 * in *keep (closing what was there) for a foreground proxy. */
int console_route_master(const char *console_socket, int master_fd, int *keep, struct cm_error **err);
/* ONLCR off on a pty (either side): \n stays \n, as runc leaves the pty it proxies. */
int console_clear_onlcr(int pty_fd, struct cm_error **err);

/* Runtime side, foreground `run` or `exec` with a terminal and no --console-socket: the terminal
 * the container's pty is proxied to, found as runc finds it: the first of stderr, stdout and
 * stdin that is a terminal, else the controlling terminal (/dev/tty). A new fd (O_CLOEXEC), or -1
 * and an error naming `what` asked for the terminal when there is none: without it the process
 * would wait on its pty for input nobody can type. */
int console_host_open(const char *what, struct cm_error **err);

/* Runtime side, foreground `run` with a terminal: put the user's terminal `fd` in raw mode,
 * saving its settings in *saved; console_restore() puts them back (best effort, for exit paths). */
int console_set_raw(int fd, struct termios *saved, struct cm_error **err);
void console_restore(int fd, const struct termios *saved);
/* Copy the window size of terminal `from_fd` to `to_fd` (e.g. on SIGWINCH). 0, or -1 + errno. */
int console_copy_winsize(int from_fd, int to_fd);

#endif
