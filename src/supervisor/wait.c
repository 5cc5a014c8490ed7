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
      bool open = l->hints ? erofs_hints_pump(l->hints, &l->hints->out, l->out_from, l->out_to)
                           : foreground_pump(l->out_from, l->out_to);
      if (!open) {
        close(l->out_from);
        l->out_from = -1;
      }
    }
    if (fds[6].revents & (POLLIN | POLLHUP | POLLERR)) {
      if (!erofs_hints_pump(l->hints, &l->hints->err, l->err_from, l->err_to)) {
        close(l->err_from);
        l->err_from = -1;
      }
    }
    if (activity && l->idle_fd >= 0 && !exited)
      supervise_timer_arm(l->idle_fd, l->idle);
  }
  return exited ? exit_code_of(status) : EXIT_RUN_ERROR;
}

int supervise_interpose_stdio(struct supervise_loop *l, bool in, bool err, int saved[3]) {
  for (int fd = 0; fd < 3; fd++) {
    if ((fd == 0 && !in) || (fd == 2 && !err))
      continue;
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
      return -1;
    saved[fd] = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    /* dup2 clears O_CLOEXEC: the container inherits exactly this end as its fd. */
    if (saved[fd] < 0 || dup2(p[fd == 0 ? 0 : 1], fd) < 0) {
      close(p[0]);
      close(p[1]);
      return -1;
    }
    close(p[fd == 0 ? 0 : 1]);
    if (fd == 0) {
      l->in_from = saved[0];
      l->in_to = p[1];
    } else if (fd == 1) {
      l->out_from = p[0];
      l->out_to = saved[1];
    } else {
      l->err_from = p[0];
      l->err_to = saved[2];
    }
  }
  return 0;
}

void supervise_restore_stdio(int saved[3]) {
  for (int fd = 0; fd < 3; fd++)
    if (saved[fd] >= 0)
      dup2(saved[fd], fd);
}
