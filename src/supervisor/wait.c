/* codemode-run's wait loop: signals forwarded to the container, --timeout and --idle-timeout
 * enforced (SIGTERM, then SIGKILL after the grace period), init reaped, and with
 * --idle-timeout the bytes between the caller's stdio and the container's pipes pumped. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/foreground.h"
#include "supervisor/supervisor.h"
#include "util/error.h"

int supervise_timer_arm(int fd, double seconds) {
  struct itimerspec its = {0};
  its.it_value.tv_sec = (time_t)seconds;
  its.it_value.tv_nsec = (long)((seconds - (double)(time_t)seconds) * 1e9);
  if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
    its.it_value.tv_nsec = 1;
  return timerfd_settime(fd, 0, &its, NULL);
}

static void stop_container(struct supervise_loop *l, int sig) {
  struct cm_error *err = NULL;
  /* Every process in the container, not only init: a double-forked child must not linger. */
  if (runtime_kill(l->ctx, l->id, sig, true, &err) < 0) {
    cm_error_freep(&err);
    kill(l->init, sig);
  }
  if (sig != SIGKILL && !l->term_sent) {
    l->term_sent = true;
    supervise_timer_arm(l->grace_fd, l->grace);
  }
}

static int exit_code_of(int status) {
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return EXIT_RUN_ERROR;
}

int supervise_wait(struct supervise_loop *l) {
  int status = 0;
  bool exited = false;
  while (!exited || l->out_from >= 0 || l->err_from >= 0) {
    struct pollfd fds[7] = {
        {.fd = l->sigfd, .events = POLLIN},
        {.fd = l->timeout_fd, .events = POLLIN},
        {.fd = l->grace_fd, .events = POLLIN},
        {.fd = l->idle_fd, .events = POLLIN},
        {.fd = exited ? -1 : l->in_from, .events = POLLIN},
        {.fd = l->out_from, .events = POLLIN},
        {.fd = l->err_from, .events = POLLIN},
    };
    /* After init exited, only drain what its output pipe still holds (the pid namespace is gone,
     * so nobody else can keep it open for long). */
    int r = poll(fds, 7, exited ? 200 : -1);
    if (r < 0 && errno != EINTR)
      break;
    if (r == 0 && exited)
      break;
    if (fds[0].revents & POLLIN) {
      struct signalfd_siginfo si;
      while (read(l->sigfd, &si, sizeof(si)) == sizeof(si)) {
        if (si.ssi_signo == SIGCHLD) {
          pid_t p;
          int st;
          while ((p = waitpid(-1, &st, WNOHANG)) > 0)
            if (p == l->init) {
              status = st;
              exited = true;
            }
        } else if (!exited) {
          /* SIGTERM/SIGINT/SIGHUP (also our parent's death signal): pass it on, then SIGKILL
           * after the grace period if the server ignores it. */
          if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT || si.ssi_signo == SIGHUP)
            stop_container(l, (int)si.ssi_signo);
          else
            kill(l->init, (int)si.ssi_signo);
        }
      }
    }
    uint64_t ticks;
    if ((fds[1].revents & POLLIN) && read(l->timeout_fd, &ticks, sizeof(ticks)) > 0 && !exited) {
      fprintf(stderr, "codemode-run: --timeout expired; stopping the container\n");
      l->timed_out = true;
      stop_container(l, SIGTERM);
    }
    if ((fds[2].revents & POLLIN) && read(l->grace_fd, &ticks, sizeof(ticks)) > 0 && !exited)
      stop_container(l, SIGKILL);
    if ((fds[3].revents & POLLIN) && read(l->idle_fd, &ticks, sizeof(ticks)) > 0 && !exited) {
      fprintf(stderr, "codemode-run: --idle-timeout expired; stopping the container\n");
      l->timed_out = true;
      stop_container(l, SIGTERM);
    }
    bool activity = false;
    if (fds[4].revents & (POLLIN | POLLHUP | POLLERR)) {
      activity = true;
      if (!foreground_pump(l->in_from, l->in_to)) {
        /* EOF from the client: the server sees EOF too (MCP's "clean shutdown"). */
        close(l->in_to);
        l->in_to = -1;
        l->in_from = -1;
      }
    }
    if (fds[5].revents & (POLLIN | POLLHUP | POLLERR)) {
      activity = true;
      if (!foreground_pump(l->out_from, l->out_to)) {
        close(l->out_from);
        l->out_from = -1;
      }
    }
    if (fds[6].revents & (POLLIN | POLLHUP | POLLERR)) {
      if (!stderr_hints_pump(l->hints, l->err_from)) {
        close(l->err_from);
        l->err_from = -1;
      }
    }
    if (activity && l->idle_fd >= 0 && !exited)
      supervise_timer_arm(l->idle_fd, l->idle);
  }
  return exited ? exit_code_of(status) : EXIT_RUN_ERROR;
}

int supervise_interpose_stdio(struct supervise_loop *l, int saved[2]) {
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0)
    return -1;
  saved[0] = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
  saved[1] = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  /* dup2 clears O_CLOEXEC: the container inherits exactly these two ends as its 0 and 1. */
  if (saved[0] < 0 || saved[1] < 0 || dup2(in[0], STDIN_FILENO) < 0 || dup2(out[1], STDOUT_FILENO) < 0)
    return -1;
  close(in[0]);
  close(out[1]);
  l->in_from = saved[0];
  l->in_to = in[1];
  l->out_from = out[0];
  l->out_to = saved[1];
  return 0;
}

void supervise_restore_stdio(int saved[2]) {
  /* Our copies of the container's ends must go, or the pipes never report EOF. */
  dup2(saved[0], STDIN_FILENO);
  dup2(saved[1], STDOUT_FILENO);
}

int supervise_interpose_stderr(struct supervise_loop *l, int *saved) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0)
    return -1;
  *saved = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
  if (*saved < 0 || dup2(p[1], STDERR_FILENO) < 0) {
    close(p[0]);
    close(p[1]);
    return -1;
  }
  close(p[1]);
  l->err_from = p[0];
  return 0;
}

void supervise_restore_stderr(int saved) {
  /* Ours again (the container has its own copy of the pipe), so the pipe reports EOF when the
   * container's processes are gone. */
  if (saved >= 0)
    dup2(saved, STDERR_FILENO);
}
