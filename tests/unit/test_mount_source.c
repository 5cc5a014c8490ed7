/* linux/mount_source.c: what a bind source or overlay layer is, judged on its fd — pseudo
 * filesystems, sockets and devices, host trees by identity (also through a symlink), /tmp as a
 * whole but not inside it, credentials above and below, and the tree walk for sockets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka.h needs the four above first. */
#include <cmocka.h>

#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <unistd.h>

#include "linux/mount_source.h"

static struct mount_source_rules *rules;
static char dir[] = "/tmp/cm-test-mount-source-XXXXXX";

static int setup(void **state) {
  rules = mount_source_rules_load();
  return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
  mount_source_rules_free(rules);
  char cmd[256];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : -1;
}

/* Judge PATH (opened O_PATH, following symlinks as a bind source is); NULL: accepted. */
static char *judge(const char *path, struct mount_source_kind *kind) {
  int fd = open(path, O_PATH | O_CLOEXEC);
  if (fd < 0) {
    print_error("open %s failed\n", path);
    fail();
  }
  struct mount_source_kind k;
  struct cm_error *err = NULL;
  char *msg = NULL;
  if (mount_source_check(rules, fd, "bind source", false, kind ? kind : &k, &err) < 0) {
    msg = strdup(err->msg);
    cm_error_free(err);
  }
  close(fd);
  return msg;
}

static void expect_refused(const char *path, const char *word) {
  char *msg = judge(path, NULL);
  if (msg == NULL || strstr(msg, word) == NULL) {
    print_error("%s: expected a refusal naming \"%s\", got %s\n", path, word, msg ? msg : "acceptance");
    fail();
  }
  free(msg);
}

static void expect_accepted(const char *path) {
  char *msg = judge(path, NULL);
  if (msg) {
    print_error("%s: refused: %s\n", path, msg);
    fail();
  }
}

static char *in_dir(const char *rel) {
  char *p;
  if (asprintf(&p, "%s/%s", dir, rel) < 0)
    abort();
  return p;
}

static void test_pseudo_filesystems_sockets_devices(void **state) {
  expect_refused("/proc/self", "proc filesystem");
  expect_refused("/sys/kernel", "sysfs filesystem");
  /* A cgroup hierarchy (cgroup2 at /sys/fs/cgroup on a unified host, v1 ones below it here). */
  static const char *const cgroups[] = {"/sys/fs/cgroup", "/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified"};
  for (size_t i = 0; i < sizeof(cgroups) / sizeof(cgroups[0]); i++) {
    struct statfs sfs;
    if (statfs(cgroups[i], &sfs) == 0 &&
        (sfs.f_type == CGROUP_SUPER_MAGIC || sfs.f_type == CGROUP2_SUPER_MAGIC)) {
      expect_refused(cgroups[i], "cgroup");
      break;
    }
  }
  struct mount_source_kind kind;
  assert_null(judge("/dev/null", &kind));
  assert_true(kind.is_device);
  expect_refused("/dev/kmsg", "character device 1:11");
  char *sock = in_dir("s.sock");
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
  assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
  expect_refused(sock, "socket");
  close(fd);
  unlink(sock);
  free(sock);
}

static void test_host_trees_by_identity(void **state) {
  expect_refused("/", "whole filesystem");
  expect_refused("/etc", "is the host's /etc");
  expect_refused("/etc/ssl", "inside the host's /etc");
  expect_refused("/etc/hostname", "inside the host's /etc");
  expect_refused("/var", "contains the host's /var/tmp");
  expect_refused("/tmp", "/tmp as a whole");
  expect_refused("/run", "/run");
  /* A symlink is followed: what counts is what it points at. */
  char *link = in_dir("innocent");
  assert_int_equal(symlink("/etc", link), 0);
  expect_refused(link, "is the host's /etc");
  free(link);
  /* Inside /tmp is one's own. */
  expect_accepted(dir);
}

static void test_credentials_above_and_the_tree_walk(void **state) {
  char *keys = in_dir("proj/.aws/sub");
  char cmd[512];
  snprintf(cmd, sizeof(cmd), "mkdir -p '%s' '%s/proj/src/deep'", keys, dir);
  assert_int_equal(system(cmd), 0);
  expect_refused(keys, "inside a credentials directory (.aws)");
  free(keys);
  char *proj = in_dir("proj");
  expect_accepted(proj); /* the fd checks: its name and place are fine */
  int fd = open(proj, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct cm_error *err = NULL;
  assert_int_equal(mount_source_check_tree(rules, fd, "bind source", &err), -1);
  assert_non_null(strstr(err->msg, "holds credentials (/.aws)"));
  cm_error_freep(&err);
  close(fd);
  /* Without the keys, a socket deep down is what the walk finds. */
  snprintf(cmd, sizeof(cmd), "rm -rf '%s/proj/.aws'", dir);
  assert_int_equal(system(cmd), 0);
  char *sock = in_dir("proj/src/deep/x.sock");
  int s = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
  assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
  fd = open(proj, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  assert_int_equal(mount_source_check_tree(rules, fd, "bind source", &err), -1);
  assert_non_null(strstr(err->msg, "holds a socket (/src/deep/x.sock)"));
  cm_error_freep(&err);
  unlink(sock);
  assert_int_equal(mount_source_check_tree(rules, fd, "bind source", &err), 0);
  close(fd);
  close(s);
  free(sock);
  free(proj);
}

int main(void) {
  if (geteuid() != 0) {
    printf("1..0 # SKIP needs root (statfs of /sys/fs/cgroup, /dev nodes)\n");
    return 0;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pseudo_filesystems_sockets_devices),
      cmocka_unit_test(test_host_trees_by_identity),
      cmocka_unit_test(test_credentials_above_and_the_tree_walk),
  };
  return cmocka_run_group_tests_name("mount_source", tests, setup, teardown);
}
