/* linux/userns.c and linux/idmap.c, the parts that read files: /etc/subuid ranges, AppArmor's
 * user namespace restriction, an overlay's layers from mountinfo, and an overlay assembled over
 * detached layers the way kernels before 6.15 need it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "linux/idmap.h"
#include "linux/userns.h"

static char dir[64];

static int setup(void **state) {
  snprintf(dir, sizeof(dir), "/tmp/cm-unit-userns.XXXXXX");
  assert_non_null(mkdtemp(dir));
  return 0;
}
static int teardown(void **state) {
  char cmd[128];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  return system(cmd);
}

static const char *write_file(const char *name, const char *text) {
  static char path[4][128];
  static int k;
  char *p = path[k++ % 4];
  snprintf(p, 128, "%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  return p;
}

static void test_subid_ranges(void **state) {
  const char *f = write_file("subuid",
                             "# a comment\n"
                             "alice:100000:65536\n"
                             "bob:165536:65536\n"
                             "1001:231072:65536\n"
                             "alice:300000:10\n"
                             "alice:bad:10\n"
                             "alice:400000:0\n"
                             "alice:4294967290:100\n");
  struct subid_range r[8];
  struct cm_error *err = NULL;
  /* By name, in file order; malformed, empty and overflowing lines grant nothing. */
  assert_int_equal(subid_ranges(f, "alice", 1000, r, 8, &err), 2);
  assert_int_equal(r[0].start, 100000);
  assert_int_equal(r[0].count, 65536);
  assert_int_equal(r[1].start, 300000);
  assert_int_equal(r[1].count, 10);
  /* By number, as newuidmap also accepts. */
  assert_int_equal(subid_ranges(f, "carol", 1001, r, 8, &err), 1);
  assert_int_equal(r[0].start, 231072);
  assert_int_equal(subid_ranges(f, "nobody", 65534, r, 8, &err), 0);
  assert_int_equal(subid_ranges(f, "alice", 1000, r, 1, &err), 1);
  /* A missing file: none, no error. */
  char missing[128];
  snprintf(missing, sizeof(missing), "%s/none", dir);
  assert_int_equal(subid_ranges(missing, "alice", 1000, r, 8, &err), 0);
  assert_null(err);
}

static void test_apparmor_check(void **state) {
  struct cm_error *err = NULL;
  const char *on = write_file("knob-on", "1\n"), *off = write_file("knob-off", "0\n");
  const char *unconfined = write_file("label-unconfined", "unconfined\n");
  const char *ours = write_file("label-ours", "codemode (unconfined)\n");
  char missing[128];
  snprintf(missing, sizeof(missing), "%s/none", dir);
  /* Restricted and unconfined: refused, with the fix. */
  assert_int_equal(userns_apparmor_check_at(on, unconfined, missing, &err), -1);
  assert_non_null(err);
  assert_non_null(strstr(err->msg, "apparmor_restrict_unprivileged_userns=1"));
  assert_non_null(strstr(err->msg, "make install-apparmor"));
  assert_non_null(strstr(err->msg, "sysctl kernel.apparmor_restrict_unprivileged_userns=0"));
  cm_error_freep(&err);
  /* The older label file when the new one is missing. */
  assert_int_equal(userns_apparmor_check_at(on, missing, unconfined, &err), -1);
  cm_error_freep(&err);
  /* Under our profile, or not restricted, or no such sysctl: fine. */
  assert_int_equal(userns_apparmor_check_at(on, ours, missing, &err), 0);
  assert_int_equal(userns_apparmor_check_at(off, unconfined, missing, &err), 0);
  assert_int_equal(userns_apparmor_check_at(missing, unconfined, missing, &err), 0);
  assert_null(err);
}

/* overlay_layers_of reads this process's mountinfo: an overlay mounted in a private mount
 * namespace, in a child. */
static void test_overlay_layers(void **state) {
  if (geteuid() != 0)
    skip();
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    char l1[160], l2[160], up[160], work[160], merged[160], data[800];
    snprintf(l1, sizeof(l1), "%s/lower one", dir); /* a blank: escaped in mountinfo */
    snprintf(l2, sizeof(l2), "%s/l2", dir);
    snprintf(up, sizeof(up), "%s/up", dir);
    snprintf(work, sizeof(work), "%s/work", dir);
    snprintf(merged, sizeof(merged), "%s/merged", dir);
    if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
      _exit(10);
    if (mkdir(l1, 0755) || mkdir(l2, 0755) || mkdir(up, 0755) || mkdir(work, 0755) || mkdir(merged, 0755))
      _exit(11);
    snprintf(data, sizeof(data), "lowerdir=%s:%s,upperdir=%s,workdir=%s,redirect_dir=on", l1, l2, up, work);
    if (mount("overlay", merged, "overlay", 0, data) < 0)
      _exit(12);
    struct overlay_layers l;
    struct cm_error *err = NULL;
    if (overlay_layers_of(merged, &l, &err) != 1)
      _exit(13);
    if (!l.upper || strcmp(l.upper, up) || l.n_lowers != 2 || strcmp(l.lowers[0], l1) || strcmp(l.lowers[1], l2))
      _exit(14);
    if (!l.extra_options || !strstr(l.extra_options, "redirect_dir=on"))
      _exit(15);
    overlay_layers_free(&l);
    /* Not an overlay mount's root: 0. */
    if (overlay_layers_of(dir, &l, &err) != 0)
      _exit(16);
    _exit(0);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

static int count_mounts(void) {
  FILE *f = fopen("/proc/self/mountinfo", "re");
  int n = 0, c;
  if (f == NULL)
    return -1;
  while ((c = getc(f)) != EOF)
    n += c == '\n';
  fclose(f);
  return n;
}

static int read_at(int dirfd, const char *name, char *buf, size_t size) {
  int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t r = read(fd, buf, size - 1);
  close(fd);
  if (r < 0)
    return -1;
  buf[r] = '\0';
  return 0;
}

/* idmap_overlay_assemble_attached, the way before Linux 6.15: two detached lower layers and a
 * detached tmpfs holding upper/work, assembled by its child in a private mount namespace. The
 * overlay it returns shows both lowers, takes a write into the upper, and our own mount table
 * is what it was (the layers were attached only in the child's namespace). Runs on any kernel. */
static void test_overlay_assembled_attached(void **state) {
  if (geteuid() != 0)
    skip();
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    char l1[160], l2[160], buf[64], lowerdir[128];
    snprintf(l1, sizeof(l1), "%s/l1", dir);
    snprintf(l2, sizeof(l2), "%s/l2", dir);
    if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
      _exit(10);
    if (mkdir(l1, 0755) || mkdir(l2, 0755))
      _exit(11);
    write_file("l1/a", "one");
    write_file("l1/c", "top");
    write_file("l2/b", "two");
    write_file("l2/c", "bottom");
    int f1 = open_tree(AT_FDCWD, l1, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    int f2 = open_tree(AT_FDCWD, l2, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    int fs = fsopen("tmpfs", FSOPEN_CLOEXEC);
    if (f1 < 0 || f2 < 0 || fs < 0 || fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
      _exit(12);
    int tmp = fsmount(fs, FSMOUNT_CLOEXEC, 0);
    if (tmp < 0 || mkdirat(tmp, "upper", 0755) < 0 || mkdirat(tmp, "work", 0700) < 0)
      _exit(13);
    snprintf(lowerdir, sizeof(lowerdir), "/proc/self/fd/%d:/proc/self/fd/%d", f1, f2);
    int layers[2] = {f1, f2};
    int before = count_mounts();
    struct cm_error *err = NULL;
    int ov = idmap_overlay_assemble_attached(layers, 2, lowerdir, tmp, NULL, true, &err);
    if (ov < 0) {
      fprintf(stderr, "assemble: %s\n", err->msg);
      _exit(14);
    }
    struct statfs sfs;
    if (fstatfs(ov, &sfs) < 0 || sfs.f_type != OVERLAYFS_SUPER_MAGIC)
      _exit(15);
    if (read_at(ov, "a", buf, sizeof(buf)) || strcmp(buf, "one") || read_at(ov, "b", buf, sizeof(buf)) ||
        strcmp(buf, "two") || read_at(ov, "c", buf, sizeof(buf)) || strcmp(buf, "top"))
      _exit(16);
    int w = openat(ov, "new", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (w < 0 || write(w, "x", 1) != 1)
      _exit(17);
    close(w);
    if (faccessat(tmp, "upper/new", F_OK, 0) < 0)
      _exit(18);
    if (count_mounts() != before)
      _exit(19);
    /* Read-only, no upper: the write is refused. New clones: a detached mount attached in the
     * child's namespace went with it. */
    layers[0] = open_tree(AT_FDCWD, l1, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    layers[1] = open_tree(AT_FDCWD, l2, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    snprintf(lowerdir, sizeof(lowerdir), "/proc/self/fd/%d:/proc/self/fd/%d", layers[0], layers[1]);
    int ro = idmap_overlay_assemble_attached(layers, 2, lowerdir, -1, NULL, false, &err);
    if (ro < 0 || openat(ro, "new2", O_WRONLY | O_CREAT | O_CLOEXEC, 0644) >= 0)
      _exit(20);
    /* A layer that is not there: the child's error comes back. */
    if (idmap_overlay_assemble_attached(layers, 2, "/proc/self/fd/999:/proc/self/fd/998", -1, NULL, false,
                                        &err) >= 0 ||
        err == NULL || strstr(err->msg, "overlay") == NULL)
      _exit(21);
    _exit(0);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_subid_ranges, setup, teardown),
      cmocka_unit_test_setup_teardown(test_apparmor_check, setup, teardown),
      cmocka_unit_test_setup_teardown(test_overlay_layers, setup, teardown),
      cmocka_unit_test_setup_teardown(test_overlay_assembled_attached, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
