/* A process the runtime waits for in the foreground (`run`, `exec` without --detach). */
#ifndef CM_RUNTIME_FOREGROUND_H
#define CM_RUNTIME_FOREGROUND_H

#include <stdbool.h>
#include <sys/types.h>

/* Copy what is readable from `from` to `to`; false on EOF or a read error of `from`. A reader
 * that went away is not an error: draining goes on, so the writer is never blocked. */
bool foreground_pump(int from, int to);

/* With every signal blocked and `sigfd` a signalfd for them: forward each signal to `pid`,
 * proxy the terminal (master >= 0: stdin → master, master → stdout; host_tty, from
 * console_host_open, in raw mode and its window size on the pty), reap children until `pid`
 * exits, and set *exit_status to its code or 128+signal.
 * With a terminal, SIGINT stops the process (SIGKILL) and the status is 130: the host terminal
 * is raw, so a SIGINT cannot be a key typed for the container, only the caller's "stop" (runc
 * leaves on it too). Without one, SIGINT is forwarded like every other signal. */
int foreground_wait_and_forward(pid_t pid, int sigfd, int master, int host_tty, int *exit_status);

#endif
