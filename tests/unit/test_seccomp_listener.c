/* linux/seccomp_listener + supervisor/notify_decode, rootless: a process running as nobody
 * (no capability, no root anywhere) runs the last steps that load the learning filter and hand
 * its listener over by write(2) (its baseline), its supervisor (also nobody) takes it with
 * pidfd_getfd, and sees every
 * call with the arguments that matter and the files reached, each answered CONTINUE (the calls
 * work), without auditd, eBPF or ptrace. Also the audit filter: only the file calls reach it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka.h needs the four above first. */
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "linux/last_steps.h"
#include "linux/seccomp_listener.h"
#include "policy/learned_policy.h"
#include "supervisor/observe.h"
#include "util/sync.h"

#define NOBODY 65534

static char dir[64];

/* The target: the learning filter, then a few calls whose results it checks itself. */
static void target(int sock, const struct seccomp_program *prog) {
  struct cm_error *err = NULL;
  /* The same steps init's last steps end with (linux/last_steps.h), run in place. */
  struct last_steps ls;
  last_steps_init(&ls, STDERR_FILENO, false);
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || seccomp_supervised_emit(&ls, NULL, prog, sock, &err) < 0 ||
      last_steps_run_here(&ls, &err) < 0)
    _exit(10);
  char path[128];
  snprintf(path, sizeof(path), "%s/file", dir);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600); /* CONTINUE: it really happens */
  if (fd < 0 || write(fd, "x", 1) != 1)
    _exit(11);
  close(fd);
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0)
    _exit(12);
  close(s);
  struct winsize ws;
  ioctl(s, TIOCGWINSZ, &ws); /* EBADF: still a notified call */
  snprintf(path, sizeof(path), "%s/sub", dir);
  if (mkdir(path, 0700) < 0)
    _exit(13);
  _exit(0);
}

struct seen {
  bool open_created, socket_unix, ioctl_winsz, mkdir_sub, anything_baseline;
  int calls;
};

static void note(struct seen *s, const struct observed_call *c) {
  char want_dir[128];
  snprintf(want_dir, sizeof(want_dir), "%s", dir);
  s->calls++;
  if (strcmp(c->name, "openat") == 0)
    for (int i = 0; i < c->n_files; i++)
      if (strcmp(c->files[i].path, want_dir) == 0 && (c->files[i].access & LL_FS_MAKE_REG) &&
          (c->files[i].access & LL_FS_WRITE_FILE))
        s->open_created = true;
  if (strcmp(c->name, "socket") == 0 && c->key.n >= 2 && c->key.args[0].value == AF_UNIX &&
      c->key.args[1].value_two == SOCK_STREAM)
    s->socket_unix = true;
  if (strcmp(c->name, "ioctl") == 0 && c->key.n == 1 && c->key.args[0].value_two == TIOCGWINSZ)
    s->ioctl_winsz = true;
  if (strcmp(c->name, "mkdir") == 0 || strcmp(c->name, "mkdirat") == 0)
    for (int i = 0; i < c->n_files; i++)
      if (strcmp(c->files[i].path, want_dir) == 0 && c->files[i].access == LL_FS_MAKE_DIR)
        s->mkdir_sub = true;
  for (size_t i = 0; learned_baseline_syscalls[i]; i++)
    if (strcmp(c->name, learned_baseline_syscalls[i]) == 0)
      s->anything_baseline = true;
}

/* The supervisor, as nobody: returns a bit mask of what it failed to see (0: all seen). */
static int supervise(bool audit_filter) {
  if (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
      setresuid(NOBODY, NOBODY, NOBODY) < 0)
    return 0x100;
  /* The uid change made us non-dumpable (as any set*id does); a rootless codemode-run never
   * changed its uid and is dumpable, which is what pidfd_getfd's ptrace check asks of a target
   * in our own user namespace. */
  if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
    return 0x100;
  struct seccomp_program prog;
  struct cm_error *err = NULL;
  if (audit_filter ? seccomp_listener_compile(false, notify_file_syscalls, &prog, &err) < 0
                   : seccomp_listener_compile(true, learned_baseline_syscalls, &prog, &err) < 0)
    return 0x200;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
    return 0x400;
  pid_t pid = fork();
  if (pid == 0) {
    close(sv[0]);
    target(sv[1], &prog);
  }
  close(sv[1]);
  struct sync_msg m;
  if (sync_recv(sv[0], &m, NULL, &err) != 0 || m.type != SYNC_LISTENER_READY)
    return 0x800;
  int fd = seccomp_listener_take(pid, &err);
  if (fd < 0)
    return 0x1000;
  struct notify_decoder *d = notify_decoder_new(&err);
  if (d == NULL || sync_send(sv[0], SYNC_LISTENER_TAKEN, 0, NULL, -1, &err) < 0)
    return 0x2000;
  struct seen s = {0};
  for (;;) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 10000) <= 0)
      return 0x4000; /* a notification nobody answers would hang the target */
    if (!(p.revents & POLLIN))
      break; /* POLLHUP: the target is gone */
    struct observed_call c;
    int r = notify_receive(d, fd, &c);
    if (r < 0)
      break;
    if (r == 1)
      note(&s, &c);
  }
  int status;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return 0x8000 | (WIFEXITED(status) ? WEXITSTATUS(status) : 0xff);
  notify_decoder_free(d);
  int missing = 0;
  if (!s.open_created)
    missing |= 1;
  if (audit_filter) {
    /* only the file calls reach the audit filter's listener */
    if (s.socket_unix || s.ioctl_winsz)
      missing |= 0x10;
  } else {
    if (!s.socket_unix)
      missing |= 2;
    if (!s.ioctl_winsz)
      missing |= 4;
  }
  if (!s.mkdir_sub)
    missing |= 8;
  if (s.anything_baseline)
    missing |= 0x20; /* the baseline passes without a notification */
  return missing;
}

static void run_as_nobody(bool audit_filter) {
  snprintf(dir, sizeof(dir), "/tmp/cm-test-listener-XXXXXX");
  assert_non_null(mkdtemp(dir));
  assert_int_equal(chown(dir, NOBODY, NOBODY), 0);
  int pipefd[2];
  assert_int_equal(pipe(pipefd), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(pipefd[0]);
    int r = supervise(audit_filter);
    _exit(write(pipefd[1], &r, sizeof(r)) == sizeof(r) ? 0 : 1);
  }
  close(pipefd[1]);
  int result = -1;
  ssize_t n = read(pipefd[0], &result, sizeof(result));
  close(pipefd[0]);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  char path[128];
  snprintf(path, sizeof(path), "%s/file", dir);
  unlink(path);
  snprintf(path, sizeof(path), "%s/sub", dir);
  rmdir(path);
  rmdir(dir);
  if (n != sizeof(result) || result != 0) {
    print_error(
        "supervisor as nobody: 0x%x (1 open, 2 socket, 4 ioctl, 8 mkdir, 0x10 the audit filter saw "
        "non-file calls, 0x20 a baseline call was notified; 0x100 and up: setup, 0x8000|N target exit N)\n",
        result);
    fail();
  }
}

static void test_learning_filter_rootless(void **state) {
  run_as_nobody(false);
}

static void test_audit_filter_rootless(void **state) {
  run_as_nobody(true);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_learning_filter_rootless),
      cmocka_unit_test(test_audit_filter_rootless),
  };
  return cmocka_run_group_tests_name("seccomp_listener", tests, NULL, NULL);
}
