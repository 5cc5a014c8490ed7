/* `run` in the foreground: create + start with the runtime as init's parent, forward every
 * signal to init, proxy the terminal when process.terminal is set and no console socket was
 * given, wait, delete (unless --keep), and report init's exit status. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "linux/console.h"
#include "runtime/foreground.h"
#include "runtime/notify_socket.h"
#include "runtime/runtime.h"
#include "runtime/state.h"
#include "util/cleanup.h"
#include "util/log.h"

static int exit_code_of(int status) {
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return 255;
}

bool foreground_pump(int from, int to) {
  char buf[8192];
  ssize_t n = read(from, buf, sizeof(buf));
  if (n <= 0)
    return n < 0 && (errno == EINTR || errno == EAGAIN);
  for (ssize_t off = 0; off < n;) {
    ssize_t w = write(to, buf + off, (size_t)(n - off));
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return true; /* the reader went away: keep draining so the container is not blocked */
    }
    off += w;
  }
  return true;
}

/* notify_sock >= 0 (NOTIFY_SOCKET, notify_socket.h): relayed as it comes, until READY= went
 * out with our pid as MAINPID: in the foreground we stay the service's main process (runc too). */
static int wait_and_forward(pid_t init, int sigfd, int master, int host_tty, int notify_sock,
                            const char *notify_host, int *exit_status) {
  bool stdin_open = master >= 0, master_open = master >= 0;
  bool raw = false, interrupted = false;
  struct termios saved;
  if (master >= 0 && host_tty >= 0) {
    raw = console_set_raw(host_tty, &saved, NULL) == 0;
    console_copy_winsize(host_tty, master);
  }
  int status = 0;
  bool exited = false;
  while (!exited || master_open) {
    struct pollfd fds[4] = {
        {.fd = sigfd, .events = POLLIN},
        {.fd = master_open ? master : -1, .events = POLLIN},
        {.fd = stdin_open ? STDIN_FILENO : -1, .events = POLLIN},
        {.fd = notify_sock, .events = POLLIN},
    };
    /* After init exited, only drain what the pty still holds. */
    int r = poll(fds, exited ? 2 : 4, exited ? 100 : -1);
    if (!exited && (fds[3].revents & POLLIN) && notify_socket_handle(notify_sock, notify_host, getpid()))
      notify_sock = -1;
    if (r < 0 && errno != EINTR)
      break;
    if (r == 0 && exited)
      break;
    if (fds[1].revents & (POLLIN | POLLHUP | POLLERR))
      master_open = foreground_pump(master, STDOUT_FILENO);
    if (fds[2].revents & (POLLIN | POLLHUP | POLLERR)) {
      if (!foreground_pump(STDIN_FILENO, master))
        stdin_open = false;
    }
    if (fds[0].revents & POLLIN) {
      struct signalfd_siginfo si;
      while (read(sigfd, &si, sizeof(si)) == sizeof(si)) {
        if (si.ssi_signo == SIGCHLD) {
          pid_t p;
          int st;
          while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
            if (p == init) {
              status = st;
              exited = true;
            }
          }
        } else if (si.ssi_signo == SIGWINCH) {
          if (master >= 0 && host_tty >= 0)
            console_copy_winsize(host_tty, master);
        } else if (si.ssi_signo == SIGINT && master >= 0) {
          if (raw) {
            console_restore(host_tty, &saved);
            raw = false;
          }
          interrupted = true;
          kill(init, SIGKILL);
        } else {
          kill(init, (int)si.ssi_signo);
        }
      }
    }
  }
  if (raw)
    console_restore(host_tty, &saved);
  *exit_status = interrupted ? 128 + SIGINT : exit_code_of(status);
  return 0;
}

int foreground_wait_and_forward(pid_t init, int sigfd, int master, int host_tty, int *exit_status) {
  return wait_and_forward(init, sigfd, master, host_tty, -1, NULL, exit_status);
}

int runtime_run(const struct runtime_context *ctx, const struct create_options *opts, bool detach, bool keep,
                int *exit_status, struct cm_error **err) {
  *exit_status = 0;
  struct create_options o = *opts;
  o.foreground = !detach;
  o.start_at_once = true;
  /* Block every signal before init exists, so none sent meanwhile is lost: they wait in the
   * signalfd and are forwarded once init runs. */
  sigset_t all, old;
  sigfillset(&all);
  sigdelset(&all, SIGSEGV);
  sigdelset(&all, SIGBUS);
  sigdelset(&all, SIGFPE);
  sigdelset(&all, SIGILL);
  sigprocmask(SIG_BLOCK, &all, &old);
  struct created_container c = {.pid = -1, .console_master = -1, .start_sock = -1};
  int rc = -1, notify_sock = -1;
  cleanup_close int sigfd = -1, host_tty = -1;
  /* A terminal proxied to ours: there must be one, or the process would wait on its pty for
   * input nobody can type. Checked before anything is made (runc fails the same way). */
  if (!detach && o.console_socket == NULL && o.spec && o.spec->process && o.spec->process->terminal &&
      (host_tty = console_host_open("config.json's .process.terminal", err)) < 0)
    goto out;
  if (runtime_create(ctx, &o, &c, err) < 0)
    goto out;
  /* NOTIFY_SOCKET (notify_socket.h): listening before the process may speak. */
  const char *notify_host = getenv("NOTIFY_SOCKET");
  if (notify_host) {
    cleanup_free char *dir = state_dir_path(ctx->root, o.id);
    cleanup_close int dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    notify_sock = dirfd < 0 ? cm_error_set(err, errno, "open %s", dir) : notify_socket_listen(dirfd, err);
  }
  if (notify_sock == -1 && notify_host) {
    close(c.start_sock);
    struct cm_error *ignored = NULL;
    runtime_delete(ctx, o.id, true, &ignored);
    cm_error_freep(&ignored);
    goto out;
  }
  if (runtime_start_at_once(ctx, o.id, o.spec, c.start_sock, NULL, err) < 0) {
    struct cm_error *ignored = NULL;
    runtime_delete(ctx, o.id, true, &ignored);
    cm_error_freep(&ignored);
    goto out;
  }
  if (detach) {
    /* As runc: `run --detach` returns once the container said READY (or died). */
    if (notify_sock >= 0)
      notify_socket_relay(notify_sock, notify_host, c.pid, c.pid);
    rc = 0;
    goto out;
  }
  sigfd = signalfd(-1, &all, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sigfd < 0) {
    cm_error_set(err, errno, "signalfd");
    goto out;
  }
  /* The child may already have exited before the signalfd existed: its SIGCHLD is pending and
   * the signalfd reports it. */
  wait_and_forward(c.pid, sigfd, c.console_master, host_tty, notify_sock, notify_host, exit_status);
  rc = 0;
  if (!keep) {
    struct cm_error *derr = NULL;
    /* Someone may have deleted it already (delete --force while we waited): nothing to do. */
    cleanup_free char *dir = state_dir_path(ctx->root, o.id);
    if (access(dir, F_OK) == 0 && runtime_delete_with_spec(ctx, o.id, true, o.spec, &derr) < 0) {
      cleanup_free char *msg = cm_error_format(derr);
      cm_warn("delete after run: %s", msg);
      cm_error_free(derr);
    }
  }
out:
  if (c.console_master >= 0)
    close(c.console_master);
  if (notify_sock >= 0)
    close(notify_sock);
  sigprocmask(SIG_SETMASK, &old, NULL);
  return rc;
}

int signal_parse(const char *s, struct cm_error **err) {
  if (s == NULL || *s == '\0')
    return cm_error_set(err, 0, "signal must not be empty");
  char *end;
  long n = strtol(s, &end, 10);
  if (*end == '\0') {
    /* 0 is kill(2)'s probe: it checks that init is alive and signals nothing (runc accepts it). */
    if (n < 0 || n >= NSIG)
      return cm_error_set(err, 0, "invalid signal \"%s\"", s);
    return (int)n;
  }
  const char *name = s;
  if (strncasecmp(name, "SIG", 3) == 0)
    name += 3;
  for (int sig = 1; sig < NSIG; sig++) {
    const char *abbrev = sigabbrev_np(sig);
    if (abbrev && strcasecmp(abbrev, name) == 0)
      return sig;
  }
  if (strncasecmp(name, "RTMIN", 5) == 0 || strncasecmp(name, "RTMAX", 5) == 0) {
    long off = name[5] ? strtol(name + 5, &end, 10) : 0;
    if (*end == '\0' || name[5] == '\0') {
      int sig = strncasecmp(name, "RTMIN", 5) == 0 ? SIGRTMIN + (int)off : SIGRTMAX + (int)off;
      if (sig >= SIGRTMIN && sig <= SIGRTMAX)
        return sig;
    }
  }
  return cm_error_set(err, 0, "invalid signal \"%s\"", s);
}
