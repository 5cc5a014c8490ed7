/* safepath: resolution confined to a root, against hostile symlinks (absolute, relative,
 * dangling, loops, "..", magic links). Everything lives in a temp dir; a sentinel directory
 * next to the root must never be touched. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka.h needs the four above first. */
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/safepath.h"

struct fixture {
  char tmp[64];
  char root[96];
  char outside[96];
  int root_fd;
};

static void write_file(const char *path, const char *content) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(content, f);
  fclose(f);
}

static void make_link(const struct fixture *fx, const char *target, const char *name) {
  char path[256];
  snprintf(path, sizeof(path), "%s/%s", fx->root, name);
  assert_int_equal(symlink(target, path), 0);
}

static int setup(void **state) {
  struct fixture *fx = calloc(1, sizeof(*fx));
  strcpy(fx->tmp, "/tmp/cm-safepath-XXXXXX");
  assert_non_null(mkdtemp(fx->tmp));
  snprintf(fx->root, sizeof(fx->root), "%s/root", fx->tmp);
  snprintf(fx->outside, sizeof(fx->outside), "%s/outside", fx->tmp);
  assert_int_equal(mkdir(fx->root, 0755), 0);
  assert_int_equal(mkdir(fx->outside, 0755), 0);
  char path[256];
  snprintf(path, sizeof(path), "%s/secret", fx->outside);
  write_file(path, "host");
  snprintf(path, sizeof(path), "%s/etc", fx->root);
  assert_int_equal(mkdir(path, 0755), 0);
  snprintf(path, sizeof(path), "%s/etc/inroot", fx->root);
  write_file(path, "inside");

  char target[256];
  snprintf(target, sizeof(target), "%s", fx->outside);
  make_link(fx, target, "escape_abs");                      /* absolute host path */
  make_link(fx, "../../../../../../outside", "escape_rel"); /* climbs with .. */
  make_link(fx, "/made/by/link", "dangle");                 /* dangling */
  make_link(fx, "loop2", "loop1");                          /* loop */
  make_link(fx, "loop1", "loop2");
  make_link(fx, "/etc/inroot", "to_inroot"); /* benign, inside */
  make_link(fx, "etc/../../..", "climb");    /* .. through a link */
  fx->root_fd = open(fx->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
  assert_true(fx->root_fd >= 0);
  *state = fx;
  return 0;
}

static int teardown(void **state) {
  struct fixture *fx = *state;
  /* The sentinel dir holds exactly what we put there. */
  DIR *d = opendir(fx->outside);
  assert_non_null(d);
  struct dirent *e;
  int entries = 0;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
      entries++;
  closedir(d);
  assert_int_equal(entries, 1);
  close(fx->root_fd);
  char cmd[128];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->tmp);
  assert_int_equal(system(cmd), 0);
  free(fx);
  return 0;
}

static void read_content(int fd, char *buf, size_t size) {
  ssize_t n = pread(fd, buf, size - 1, 0);
  assert_true(n >= 0);
  buf[n] = '\0';
}

static void assert_inside_exists(const struct fixture *fx, const char *rel) {
  char path[512];
  struct stat st;
  snprintf(path, sizeof(path), "%s/%s", fx->root, rel);
  assert_int_equal(lstat(path, &st), 0);
}

/* --- openat2 path --- */

static void test_open_absolute_link_stays_inside(void **state) {
  struct fixture *fx = *state;
  struct cm_error *err = NULL;
  assert_int_equal(safepath_open(fx->root_fd, "/escape_abs/secret", O_RDONLY, &err), -1);
  assert_int_equal(errno, ENOENT);
  assert_non_null(err);
  cm_error_free(err);
}

static void test_open_relative_link_stays_inside(void **state) {
  struct fixture *fx = *state;
  assert_int_equal(safepath_open(fx->root_fd, "escape_rel/secret", O_RDONLY, NULL), -1);
  assert_int_equal(errno, ENOENT);
  assert_int_equal(safepath_open(fx->root_fd, "/../../outside/secret", O_RDONLY, NULL), -1);
  assert_int_equal(errno, ENOENT);
}

static void test_open_dotdot_clamps_at_root(void **state) {
  struct fixture *fx = *state;
  char buf[32];
  int fd = safepath_open(fx->root_fd, "/../../../etc/inroot", O_RDONLY, NULL);
  assert_true(fd >= 0);
  read_content(fd, buf, sizeof(buf));
  assert_string_equal(buf, "inside");
  close(fd);
  fd = safepath_open(fx->root_fd, "climb/etc/inroot", O_RDONLY, NULL);
  assert_true(fd >= 0);
  close(fd);
}

static void test_open_follows_link_inside(void **state) {
  struct fixture *fx = *state;
  char buf[32];
  int fd = safepath_open(fx->root_fd, "/to_inroot", O_RDONLY, NULL);
  assert_true(fd >= 0);
  read_content(fd, buf, sizeof(buf));
  assert_string_equal(buf, "inside");
  close(fd);
}

static void test_open_nofollow_returns_link(void **state) {
  struct fixture *fx = *state;
  struct stat st;
  int fd = safepath_open(fx->root_fd, "/escape_abs", O_PATH | O_NOFOLLOW, NULL);
  assert_true(fd >= 0);
  assert_int_equal(fstat(fd, &st), 0);
  assert_true(S_ISLNK(st.st_mode));
  close(fd);
}

static void test_open_loop(void **state) {
  struct fixture *fx = *state;
  assert_int_equal(safepath_open(fx->root_fd, "loop1", O_PATH, NULL), -1);
  assert_int_equal(errno, ELOOP);
}

static void test_open_refuses_magic_links(void **state) {
  (void)state;
  /* With the host "/" as root, /proc/self/root is a magic link: refused, not followed. */
  int host_root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  assert_true(host_root >= 0);
  assert_int_equal(safepath_open(host_root, "/proc/self/root/etc", O_PATH, NULL), -1);
  assert_int_equal(errno, ELOOP);
  close(host_root);
}

/* --- the portable walk --- */

static void test_walk_absolute_and_relative_links(void **state) {
  struct fixture *fx = *state;
  assert_int_equal(safepath_walk(fx->root_fd, "/escape_abs/secret", SAFEPATH_NO_CREATE, 0, NULL), -1);
  assert_int_equal(errno, ENOENT);
  assert_int_equal(safepath_walk(fx->root_fd, "escape_rel/secret", SAFEPATH_NO_CREATE, 0, NULL), -1);
  assert_int_equal(errno, ENOENT);
  int fd = safepath_walk(fx->root_fd, "../../climb/to_inroot", SAFEPATH_NO_CREATE, 0, NULL);
  assert_true(fd >= 0);
  struct stat st;
  assert_int_equal(fstat(fd, &st), 0);
  assert_true(S_ISREG(st.st_mode));
  close(fd);
}

static void test_walk_loop(void **state) {
  struct fixture *fx = *state;
  struct cm_error *err = NULL;
  assert_int_equal(safepath_walk(fx->root_fd, "/loop1/x", SAFEPATH_MKDIR, 0755, &err), -1);
  assert_int_equal(errno, ELOOP);
  assert_non_null(err);
  cm_error_free(err);
}

static void test_walk_creates_inside_through_hostile_links(void **state) {
  struct fixture *fx = *state;
  struct cm_error *err = NULL;
  /* mkdir -p through an absolute link to a host dir: created under root/<host path>. */
  int fd = safepath_mkdir_p(fx->root_fd, "/escape_abs/newdir/deeper", 0755, &err);
  assert_true(fd >= 0);
  close(fd);
  char rel[256];
  snprintf(rel, sizeof(rel), "%s/newdir/deeper", fx->outside + 1);
  assert_inside_exists(fx, rel);
  /* A file target through a relative climbing link: created under root/outside. */
  fd = safepath_mount_target(fx->root_fd, "escape_rel/newfile", false, &err);
  assert_true(fd >= 0);
  struct stat st;
  assert_int_equal(fstat(fd, &st), 0);
  assert_true(S_ISREG(st.st_mode));
  close(fd);
  assert_inside_exists(fx, "outside/newfile");
  assert_null(err);
}

static void test_walk_dangling_link_target_created_inside(void **state) {
  struct fixture *fx = *state;
  int fd = safepath_mount_target(fx->root_fd, "/dangle", false, NULL);
  assert_true(fd >= 0);
  close(fd);
  assert_inside_exists(fx, "made/by/link");
  fd = safepath_mount_target(fx->root_fd, "/dangle", true, NULL);
  assert_true(fd >= 0); /* exists as a file now: returned as is */
  close(fd);
}

static void test_walk_file_in_the_middle(void **state) {
  struct fixture *fx = *state;
  assert_int_equal(safepath_mkdir_p(fx->root_fd, "/etc/inroot/sub", 0755, NULL), -1);
  assert_int_equal(errno, ENOTDIR);
}

static void test_walk_root_itself(void **state) {
  struct fixture *fx = *state;
  int fd = safepath_walk(fx->root_fd, "/", SAFEPATH_NO_CREATE, 0, NULL);
  assert_true(fd >= 0);
  struct stat a, b;
  assert_int_equal(fstat(fd, &a), 0);
  assert_int_equal(fstat(fx->root_fd, &b), 0);
  assert_true(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
  close(fd);
}

static void test_split(void **state) {
  (void)state;
  const char *base = NULL;
  char *parent = safepath_split("/dev/net/tun", &base);
  assert_string_equal(parent, "/dev/net");
  assert_string_equal(base, "tun");
  free(parent);
  parent = safepath_split("/console", &base);
  assert_string_equal(parent, "/");
  assert_string_equal(base, "console");
  free(parent);
  parent = safepath_split("null", &base);
  assert_string_equal(parent, ".");
  free(parent);
  assert_null(safepath_split("/", &base));
  assert_null(safepath_split("/a/..", &base));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_open_absolute_link_stays_inside, setup, teardown),
      cmocka_unit_test_setup_teardown(test_open_relative_link_stays_inside, setup, teardown),
      cmocka_unit_test_setup_teardown(test_open_dotdot_clamps_at_root, setup, teardown),
      cmocka_unit_test_setup_teardown(test_open_follows_link_inside, setup, teardown),
      cmocka_unit_test_setup_teardown(test_open_nofollow_returns_link, setup, teardown),
      cmocka_unit_test_setup_teardown(test_open_loop, setup, teardown),
      cmocka_unit_test(test_open_refuses_magic_links),
      cmocka_unit_test_setup_teardown(test_walk_absolute_and_relative_links, setup, teardown),
      cmocka_unit_test_setup_teardown(test_walk_loop, setup, teardown),
      cmocka_unit_test_setup_teardown(test_walk_creates_inside_through_hostile_links, setup, teardown),
      cmocka_unit_test_setup_teardown(test_walk_dangling_link_target_created_inside, setup, teardown),
      cmocka_unit_test_setup_teardown(test_walk_file_in_the_middle, setup, teardown),
      cmocka_unit_test_setup_teardown(test_walk_root_itself, setup, teardown),
      cmocka_unit_test(test_split),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
