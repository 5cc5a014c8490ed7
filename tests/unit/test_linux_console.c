/* linux/console.c and console_proxy.c: the container pty, /dev/console, the console socket and
 * the terminal helpers. Container-side tests run in a forked child, in a private mount namespace,
 * chrooted into a temp root with its own devpts instance; the temp dir is removed afterwards. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <ftw.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <termios.h>

#include "linux/console.h"
#include "test_linux_child.h"

enum root_kind {
  ROOT_NORMAL,           /* devpts newinstance, /dev/ptmx -> pts/ptmx, empty /dev/console */
  ROOT_NO_CONSOLE,       /* same, without /dev/console */
  ROOT_CONSOLE_SYMLINK,  /* /dev/console -> /etc/target */
  ROOT_PTMX_NODE,        /* /dev/ptmx is a 5:2 node: the kernel uses the devpts at its sibling pts/ */
  ROOT_OTHER_DEVPTS,     /* /dev/ptmx -> pts2/ptmx, another devpts than the one at /dev/pts */
};

struct console_case {
  char root[64];
  enum root_kind kind;
};

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  return remove(path);
}

static void make_root(struct console_case *c) {
  strcpy(c->root, "/tmp/cm-console-XXXXXX");
  assert_non_null(mkdtemp(c->root));
  char p[128];
  snprintf(p, sizeof(p), "%s/dev", c->root);
  assert_int_equal(mkdir(p, 0755), 0);
  snprintf(p, sizeof(p), "%s/dev/pts", c->root);
  assert_int_equal(mkdir(p, 0755), 0);
  snprintf(p, sizeof(p), "%s/etc", c->root);
  assert_int_equal(mkdir(p, 0755), 0);
  snprintf(p, sizeof(p), "%s/etc/target", c->root);
  int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
  assert_true(fd >= 0);
  close(fd);
  snprintf(p, sizeof(p), "%s/dev/ptmx", c->root);
  if (c->kind == ROOT_PTMX_NODE)
    assert_int_equal(mknod(p, S_IFCHR | 0666, makedev(5, 2)), 0);
  else
    assert_int_equal(symlink(c->kind == ROOT_OTHER_DEVPTS ? "pts2/ptmx" : "pts/ptmx", p), 0);
  snprintf(p, sizeof(p), "%s/dev/pts2", c->root);
  assert_int_equal(mkdir(p, 0755), 0);
  snprintf(p, sizeof(p), "%s/dev/console", c->root);
  if (c->kind == ROOT_CONSOLE_SYMLINK) {
    assert_int_equal(symlink("/etc/target", p), 0);
  } else if (c->kind != ROOT_NO_CONSOLE) {
    fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    close(fd);
  }
}

static void remove_root(struct console_case *c) {
  assert_int_equal(nftw(c->root, remove_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
}

/* In the child: private mount ns, devpts on <root>/dev/pts, chroot, new session. */
static void enter_root(struct console_case *c) {
  CHILD_CHECK(unshare(CLONE_NEWNS) == 0);
  CHILD_CHECK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
  char p[128];
  snprintf(p, sizeof(p), "%s/dev/pts", c->root);
  CHILD_CHECK(mount("devpts", p, "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620") == 0);
  snprintf(p, sizeof(p), "%s/dev/pts2", c->root);
  CHILD_CHECK(mount("devpts", p, "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620") == 0);
  CHILD_CHECK(chroot(c->root) == 0 && chdir("/") == 0);
  CHILD_CHECK(setsid() > 0);
  child_report_fd = fcntl(2, F_DUPFD_CLOEXEC, 10); /* stdio is about to become the pty */
  CHILD_CHECK(child_report_fd >= 0);
}

static int console_normal_child(void *arg) {
  struct console_case *c = arg;
  enter_root(c);
  struct spec_process p = {.terminal = true, .has_console_size = true, .console_height = 40, .console_width = 100};
  int master = -1;
  CHILD_OK(master = console_setup(&p, &err));
  CHILD_CHECK(master > 2);
  CHILD_CHECK(fcntl(master, F_GETFD) & FD_CLOEXEC);
  struct stat slave_st;
  CHILD_CHECK(fstat(0, &slave_st) == 0 && S_ISCHR(slave_st.st_mode));
  for (int fd = 0; fd <= 2; fd++) {
    CHILD_CHECK(isatty(fd));
    CHILD_CHECK(!(fcntl(fd, F_GETFD) & FD_CLOEXEC)); /* must survive execve */
    struct stat st;
    CHILD_CHECK(fstat(fd, &st) == 0 && st.st_rdev == slave_st.st_rdev);
  }
  /* The slave is this session's controlling terminal. */
  pid_t sid = 0;
  CHILD_CHECK(ioctl(0, TIOCGSID, &sid) == 0 && sid == getsid(0));
  /* It lives in the container's devpts, as /dev/pts/N. */
  int n = -1;
  CHILD_CHECK(ioctl(master, TIOCGPTN, &n) == 0);
  char path[64];
  snprintf(path, sizeof(path), "/dev/pts/%d", n);
  struct stat st;
  CHILD_CHECK(stat(path, &st) == 0 && st.st_rdev == slave_st.st_rdev);
  /* /dev/console is now the same pty. */
  CHILD_CHECK(stat("/dev/console", &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == slave_st.st_rdev);
  struct winsize ws;
  CHILD_CHECK(ioctl(0, TIOCGWINSZ, &ws) == 0 && ws.ws_row == 40 && ws.ws_col == 100);
  /* Data flows slave → master. */
  CHILD_CHECK(write(1, "hi\n", 3) == 3);
  char buf[16] = {0};
  CHILD_CHECK(read(master, buf, sizeof(buf) - 1) > 0);
  CHILD_CHECK(strncmp(buf, "hi", 2) == 0);
  return 0;
}

static int console_no_console_child(void *arg) {
  enter_root(arg);
  struct spec_process p = {.terminal = true};
  int master = -1;
  CHILD_OK(master = console_setup(&p, &err));
  CHILD_CHECK(isatty(0) && isatty(1) && isatty(2));
  struct stat st;
  CHILD_CHECK(stat("/dev/console", &st) < 0 && errno == ENOENT); /* nothing created */
  return 0;
}

static int console_symlink_child(void *arg) {
  enter_root(arg);
  struct spec_process p = {.terminal = true};
  CHILD_FAILS_WITH(console_setup(&p, &err), "symlink");
  struct stat st;
  CHILD_CHECK(stat("/etc/target", &st) == 0 && S_ISREG(st.st_mode)); /* nothing mounted over it */
  pid_t sid;
  CHILD_CHECK(ioctl(child_report_fd, TIOCGSID, &sid) < 0 || sid != getpid()); /* no pty became our ctty */
  return 0;
}

static int console_other_devpts_child(void *arg) {
  enter_root(arg);
  struct spec_process p = {.terminal = true};
  CHILD_FAILS_WITH(console_setup(&p, &err), "does not belong to the devpts mounted at /dev/pts");
  return 0;
}

static void run_console_case(enum root_kind kind, int (*fn)(void *)) {
  struct console_case c = {.kind = kind};
  make_root(&c);
  int rc = run_in_child(fn, &c);
  remove_root(&c);
  assert_int_equal(rc, 0);
}

static void test_console_setup(void **state) {
  run_console_case(ROOT_NORMAL, console_normal_child);
}
static void test_console_without_dev_console(void **state) {
  run_console_case(ROOT_NO_CONSOLE, console_no_console_child);
}
static void test_console_refuses_symlinked_dev_console(void **state) {
  run_console_case(ROOT_CONSOLE_SYMLINK, console_symlink_child);
}
static void test_console_refuses_ptmx_of_other_devpts(void **state) {
  run_console_case(ROOT_OTHER_DEVPTS, console_other_devpts_child);
}
static void test_console_ptmx_device_node(void **state) {
  run_console_case(ROOT_PTMX_NODE, console_normal_child);
}

/* --- runtime side --- */

static void check_socket_send(const char *dir, const char *name) {
  char path[512];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  assert_true(listener >= 0);
  /* Bind through the directory fd, so paths longer than sun_path work in the test too. */
  int dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  assert_true(dirfd >= 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  snprintf(a.sun_path, sizeof(a.sun_path), "/proc/self/fd/%d/%s", dirfd, name);
  assert_int_equal(bind(listener, (struct sockaddr *)&a, sizeof(a)), 0);
  assert_int_equal(listen(listener, 1), 0);

  int p[2];
  assert_int_equal(pipe2(p, O_CLOEXEC), 0);
  struct cm_error *err = NULL;
  if (console_socket_send(path, p[1], &err) < 0)
    fail_msg("console_socket_send: %s", err->msg);
  int conn = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
  assert_true(conn >= 0);
  char payload[64] = {0};
  struct iovec iov = {.iov_base = payload, .iov_len = sizeof(payload) - 1};
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } ctrl;
  struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctrl.buf, .msg_controllen = sizeof(ctrl.buf)};
  assert_true(recvmsg(conn, &mh, MSG_CMSG_CLOEXEC) > 0);
  assert_string_equal(payload, "/dev/ptmx");
  struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
  assert_non_null(cm);
  assert_int_equal(cm->cmsg_type, SCM_RIGHTS);
  int got;
  memcpy(&got, CMSG_DATA(cm), sizeof(int));
  /* The received fd is the same pipe: write through it, read from our end. */
  assert_int_equal(write(got, "x", 1), 1);
  char c;
  assert_int_equal(read(p[0], &c, 1), 1);
  assert_int_equal(c, 'x');
  close(got);
  close(conn);
  close(listener);
  close(dirfd);
  close(p[0]);
  close(p[1]);
  unlink(path);
}

static void test_console_socket_send(void **state) {
  char dir[] = "/tmp/cm-consock-XXXXXX";
  assert_non_null(mkdtemp(dir));
  check_socket_send(dir, "console.sock");
  /* A path longer than sun_path (108 bytes). */
  char longdir[256];
  snprintf(longdir, sizeof(longdir), "%s/%0120d", dir, 0);
  assert_int_equal(mkdir(longdir, 0700), 0);
  check_socket_send(longdir, "console.sock");
  rmdir(longdir);
  rmdir(dir);
}

static void test_console_socket_send_no_listener(void **state) {
  struct cm_error *err = NULL;
  assert_int_equal(console_socket_send("/nonexistent/console.sock", 0, &err), -1);
  assert_non_null(err);
  assert_non_null(strstr(err->msg, "/nonexistent/console.sock"));
  cm_error_free(err);
}

static int open_pty_pair(int *master, int *slave) {
  *master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (*master < 0 || unlockpt(*master) < 0)
    return -1;
  *slave = ioctl(*master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
  return *slave < 0 ? -1 : 0;
}

static void test_console_raw_and_restore(void **state) {
  int m, s;
  assert_int_equal(open_pty_pair(&m, &s), 0);
  struct termios before, saved, now;
  assert_int_equal(tcgetattr(s, &before), 0);
  assert_true(before.c_lflag & ICANON);
  struct cm_error *err = NULL;
  assert_int_equal(console_set_raw(s, &saved, &err), 0);
  assert_int_equal(tcgetattr(s, &now), 0);
  assert_false(now.c_lflag & (ICANON | ECHO | ISIG));
  console_restore(s, &saved);
  assert_int_equal(tcgetattr(s, &now), 0);
  assert_int_equal(now.c_lflag, before.c_lflag);
  assert_int_equal(now.c_oflag, before.c_oflag);
  close(s);
  close(m);
  /* Not a terminal: a clear error. */
  int p[2];
  assert_int_equal(pipe2(p, O_CLOEXEC), 0);
  assert_int_equal(console_set_raw(p[0], &saved, &err), -1);
  assert_non_null(err);
  assert_int_equal(err->errnum, ENOTTY);
  cm_error_free(err);
  close(p[0]);
  close(p[1]);
}

static void test_console_copy_winsize(void **state) {
  int m1, s1, m2, s2;
  assert_int_equal(open_pty_pair(&m1, &s1), 0);
  assert_int_equal(open_pty_pair(&m2, &s2), 0);
  struct winsize ws = {.ws_row = 33, .ws_col = 133};
  assert_int_equal(ioctl(s1, TIOCSWINSZ, &ws), 0);
  assert_int_equal(console_copy_winsize(s1, m2), 0);
  struct winsize got;
  assert_int_equal(ioctl(s2, TIOCGWINSZ, &got), 0);
  assert_int_equal(got.ws_row, 33);
  assert_int_equal(got.ws_col, 133);
  close(s1);
  close(m1);
  close(s2);
  close(m2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_console_setup),
      cmocka_unit_test(test_console_without_dev_console),
      cmocka_unit_test(test_console_refuses_symlinked_dev_console),
      cmocka_unit_test(test_console_refuses_ptmx_of_other_devpts),
      cmocka_unit_test(test_console_ptmx_device_node),
      cmocka_unit_test(test_console_socket_send),
      cmocka_unit_test(test_console_socket_send_no_listener),
      cmocka_unit_test(test_console_raw_and_restore),
      cmocka_unit_test(test_console_copy_winsize),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
