/* linux/exec_trampoline.c, the trampoline program (src/trampoline/) and the last steps it runs
 * (linux/last_steps.c): the sealed copy, the exec through it, its error reports, its
 * non-dumpable start, and that it is invisible: the user's execve is checked and ends with the
 * credentials of one execve from init. Execs run in forked children (test_linux_child.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka.h needs the four above first. */
#include <cmocka.h>

#include <fcntl.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>

#include "linux/exec_trampoline.h"
#include "linux/last_steps.h"
#include "test_linux_child.h"
#include "util/sync.h"

#define BIT(c) (1ULL << (c))

extern char **environ;

/* A trampoline whose program is `ls` (or empty). */
static int prepare(struct exec_trampoline *t, const struct last_steps *ls, struct cm_error **err) {
  struct last_steps empty;
  if (ls == NULL) {
    last_steps_init(&empty, 2, false);
    ls = &empty;
  }
  size_t len;
  void *prog = last_steps_serialize(ls, &len);
  int rc = exec_trampoline_prepare(t, prog, len, err);
  free(prog);
  if (ls == &empty)
    last_steps_free(&empty);
  return rc;
}

static void test_copy_is_sealed_and_exec_only(void **state) {
  struct exec_trampoline t;
  struct cm_error *err = NULL;
  assert_int_equal(prepare(&t, NULL, &err), 0);
  int seals = fcntl(t.fd, F_GET_SEALS);
  int want = F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;
  assert_int_equal(seals & want, want);
  /* What a container that grabbed it would try. */
  assert_int_equal(write(t.fd, "x", 1), -1);
  assert_int_equal(errno, EPERM);
  assert_int_equal(ftruncate(t.fd, 0), -1);
  assert_true(fcntl(t.fd, F_GETFD) & FD_CLOEXEC);
  struct stat st;
  assert_int_equal(fstat(t.fd, &st), 0);
  assert_int_equal(st.st_mode & 07777, 0111);
  /* The program sits after the image, where argv will say. */
  uint32_t magic = 0;
  assert_int_equal(pread(t.fd, &magic, 4, (off_t)t.offset), 4);
  assert_int_equal(magic, LS_MAGIC);
  close(t.fd);
}

static int exec_sh_exit_7(void *unused) {
  struct exec_trampoline t;
  /* sh -c takes $0 and $1 from the words after its script: the argv reached it intact. */
  char *argv[] = {"custom0", "-c", "[ \"$0\" = zero ] && [ \"$1\" = one ] && exit 7; exit 1", "zero", "one", NULL};
  CHILD_OK(prepare(&t, NULL, &err));
  exec_trampoline_exec(&t, "/bin/sh", argv, NULL, 0, environ);
  CHILD_CHECK(!"exec_trampoline_exec returned");
  return 1;
}

static void test_exec_runs_the_program(void **state) { assert_int_equal(run_in_child(exec_sh_exit_7, NULL), 7); }

static int exec_missing(void *pipe_fd) {
  dup2(*(int *)pipe_fd, STDERR_FILENO);
  struct exec_trampoline t;
  char *argv[] = {"missing", NULL};
  CHILD_OK(prepare(&t, NULL, &err));
  exec_trampoline_exec(&t, "/nonexistent/program", argv, NULL, 0, environ);
  CHILD_CHECK(!"the trampoline itself failed to start");
  return 1;
}

static char *read_all(int fd) {
  static char buf[4096];
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  buf[n > 0 ? n : 0] = '\0';
  return buf;
}

static void test_failed_exec_is_reported(void **state) {
  int p[2];
  assert_int_equal(pipe(p), 0);
  /* The trampoline started (the runtime's execve succeeded) and its own execve failed: it says
   * so on stderr and exits 127, as a shell does. */
  assert_int_equal(run_in_child(exec_missing, &p[1]), 127);
  close(p[1]);
  assert_string_equal(read_all(p[0]), "codemode: exec /nonexistent/program: no such file or directory (ENOENT)\n");
  close(p[0]);
}

/* A failing step is reported with its label, and nothing after it runs. */
static int failing_step(void *pipe_fd) {
  dup2(*(int *)pipe_fd, STDERR_FILENO);
  struct last_steps ls;
  last_steps_init(&ls, STDERR_FILENO, false);
  last_steps_syscall(&ls, SYS_close, 0, (uint64_t[6]){9999}, "close fd %d", 9999);
  struct exec_trampoline t;
  CHILD_OK(prepare(&t, &ls, &err));
  char *argv[] = {"sh", "-c", "exit 0", NULL};
  exec_trampoline_exec(&t, "/bin/sh", argv, NULL, 0, environ);
  return 1;
}

static void test_failed_step_is_reported(void **state) {
  int p[2];
  assert_int_equal(pipe(p), 0);
  assert_int_equal(run_in_child(failing_step, &p[1]), 127);
  close(p[1]);
  assert_string_equal(read_all(p[0]), "codemode: close fd 9999: bad file descriptor (EBADF)\n");
  close(p[0]);
}

/* As a sync message (for `exec`, whose runtime waits on the socket). */
static int failing_step_sync(void *sock) {
  struct last_steps ls;
  last_steps_init(&ls, *(int *)sock, true);
  last_steps_syscall(&ls, SYS_close, 0, (uint64_t[6]){9999}, "close fd %d", 9999);
  struct exec_trampoline t;
  CHILD_OK(prepare(&t, &ls, &err));
  char *argv[] = {"sh", "-c", "exit 0", NULL};
  exec_trampoline_exec(&t, "/bin/sh", argv, (int *)sock, 1, environ);
  return 1;
}

static void test_failed_step_is_reported_to_the_runtime(void **state) {
  int sv[2];
  assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
  assert_int_equal(run_in_child(failing_step_sync, &sv[1]), 127);
  close(sv[1]);
  struct sync_msg m;
  struct cm_error *err = NULL;
  assert_int_equal(sync_recv(sv[0], &m, NULL, &err), 0);
  assert_int_equal(m.type, SYNC_ERROR);
  assert_int_equal(m.value, EBADF);
  assert_string_equal(m.text, "close fd 9999");
  close(sv[0]);
}

/* While the trampoline still holds the container root's capabilities and no filter, it must be
 * non-dumpable from its first instruction: its /proc files then belong to root, not to its
 * uid. Seen here from a uid-1000 process, whose copy is owned by 1000. */
static int sleeping_trampoline(void *unused) {
  CHILD_CHECK(setresgid(1000, 1000, 1000) == 0 && setresuid(1000, 1000, 1000) == 0);
  struct last_steps ls;
  last_steps_init(&ls, STDERR_FILENO, false);
  struct timespec ts = {.tv_sec = 0, .tv_nsec = 400 * 1000 * 1000};
  uint32_t at = last_steps_data(&ls, &ts, sizeof(ts));
  last_steps_syscall(&ls, SYS_nanosleep, LS_ARG_DATA(0), (uint64_t[6]){at}, "nanosleep");
  struct exec_trampoline t;
  CHILD_OK(prepare(&t, &ls, &err));
  char *argv[] = {"true", NULL};
  exec_trampoline_exec(&t, "/bin/true", argv, NULL, 0, environ);
  return 1;
}

static int owner_during_sleep(void *unused) {
  pid_t pid = fork();
  if (pid == 0)
    _exit(sleeping_trampoline(NULL));
  usleep(150 * 1000);
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/fd", pid);
  struct stat st;
  int r = stat(path, &st);
  int status;
  waitpid(pid, &status, 0);
  CHILD_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CHILD_CHECK(r == 0);
  CHILD_CHECK(st.st_uid == 0); /* dumpable, it would be 1000 */
  return 0;
}

static void test_trampoline_starts_non_dumpable(void **state) {
  assert_int_equal(run_in_child(owner_during_sleep, NULL), 0);
}

/* Issue 14: a non-root user with CAP_DAC_OVERRIDE may exec a 0744 root-owned binary, as with one
 * execve from init (runc), and ends with the credentials that execve gives: no capability left
 * (not ambient), the uid and groups asked for. */
static char dac_dir[64];

static int dac_override_exec(void *unused) {
  struct spec_process p = {
      .user = {.uid = 1000, .gid = 1000},
      .cwd = "/",
      .capabilities = {.present = true,
                       .bounding = BIT(CAP_DAC_OVERRIDE),
                       .permitted = BIT(CAP_DAC_OVERRIDE),
                       .effective = BIT(CAP_DAC_OVERRIDE)},
  };
  struct last_steps_process lp = {.process = &p};
  struct last_steps ls;
  last_steps_init(&ls, STDERR_FILENO, false);
  CHILD_OK(last_steps_for_process(&ls, &lp, &err));
  struct exec_trampoline t;
  CHILD_OK(prepare(&t, &ls, &err));
  char prog[96], out[96];
  snprintf(prog, sizeof(prog), "%s/prog", dac_dir);
  snprintf(out, sizeof(out), "%s/out", dac_dir);
  char *argv[] = {"prog", out, NULL};
  exec_trampoline_exec(&t, prog, argv, NULL, 0, environ);
  CHILD_CHECK(!"exec failed");
  return 1;
}

static void test_dac_override_reaches_the_programs_execve(void **state) {
  strcpy(dac_dir, "/tmp/cm-trampoline-XXXXXX");
  assert_non_null(mkdtemp(dac_dir));
  assert_int_equal(chmod(dac_dir, 0777), 0);
  char path[96], cmd[256];
  snprintf(path, sizeof(path), "%s/prog", dac_dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  /* What the program sees of itself, for the parent to compare. */
  fprintf(f, "#!/bin/sh\ngrep -E '^(Uid|Gid|Groups|Cap(Inh|Prm|Eff|Amb)):' /proc/self/status > \"$1\"\n");
  fclose(f);
  assert_int_equal(chmod(path, 0744), 0);
  assert_int_equal(run_in_child(dac_override_exec, NULL), 0);
  snprintf(path, sizeof(path), "%s/out", dac_dir);
  f = fopen(path, "r");
  assert_non_null(f);
  char got[1024] = {0};
  size_t n = fread(got, 1, sizeof(got) - 1, f);
  fclose(f);
  assert_true(n > 0);
  assert_non_null(strstr(got, "Uid:\t1000\t1000\t1000\t1000"));
  assert_non_null(strstr(got, "Gid:\t1000\t1000\t1000\t1000"));
  assert_true(strstr(got, "Groups:\t\n") || strstr(got, "Groups:\t \n"));
  assert_non_null(strstr(got, "CapPrm:\t0000000000000000"));
  assert_non_null(strstr(got, "CapEff:\t0000000000000000"));
  assert_non_null(strstr(got, "CapAmb:\t0000000000000000"));
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dac_dir);
  assert_int_equal(system(cmd), 0);
}

static int nondumpable(void *unused) {
  exec_guard_make_nondumpable();
  CHILD_CHECK(prctl(PR_GET_DUMPABLE) == (geteuid() == 0 ? 0 : 1));
  return 0;
}

static void test_make_nondumpable(void **state) { assert_int_equal(run_in_child(nondumpable, NULL), 0); }

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_copy_is_sealed_and_exec_only),
      cmocka_unit_test(test_exec_runs_the_program),
      cmocka_unit_test(test_failed_exec_is_reported),
      cmocka_unit_test(test_failed_step_is_reported),
      cmocka_unit_test(test_failed_step_is_reported_to_the_runtime),
      cmocka_unit_test(test_trampoline_starts_non_dumpable),
      cmocka_unit_test(test_dac_override_reaches_the_programs_execve),
      cmocka_unit_test(test_make_nondumpable),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
