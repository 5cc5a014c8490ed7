/* rootfs_prepare / rootfs_pivot / rootfs_finalize, driven directly with hand-built specs.
 *
 * Each case forks a child that unshares its mount namespace (so every mount dies with it), makes
 * it private, checks the marker file only our temp bundle has (the hostile cases refuse to run
 * anywhere else), then prepares, pivots and finalizes, and checks the result from inside. The
 * parent asserts the exit status and that the host sentinels next to the bundle were never
 * touched. Everything lives under one temp dir, removed at the end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka.h needs the four above first. */
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "linux/rootfs.h"

#define MARKER ".codemode-rootfs-test-marker"
#define MQUEUE_MAGIC 0x19800202 /* not in linux/magic.h */

struct bundle {
  char tmp[64];
  char dir[128];    /* tmp/bundle (the child's cwd) */
  char rootfs[160]; /* tmp/bundle/rootfs */
  char host[128];   /* tmp/host: sentinels the container must never touch */
};

/* --- helpers usable in the parent --- */

static void write_file(const char *path, const char *content) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(content, f);
  fclose(f);
}

static void pathf(char *out, size_t size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(out, size, fmt, ap);
  va_end(ap);
  assert_true(n > 0 && (size_t)n < size);
}

static void mkdirf(const char *fmt, const char *a, const char *b) {
  char path[512];
  pathf(path, sizeof(path), fmt, a, b);
  assert_int_equal(mkdir(path, 0755), 0);
}

static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  if (!d)
    return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
      n++;
  closedir(d);
  return n;
}

static void make_bundle(struct bundle *b) {
  strcpy(b->tmp, "/tmp/cm-rootfs-XXXXXX");
  assert_non_null(mkdtemp(b->tmp));
  pathf(b->dir, sizeof(b->dir), "%s/bundle", b->tmp);
  pathf(b->rootfs, sizeof(b->rootfs), "%s/rootfs", b->dir);
  pathf(b->host, sizeof(b->host), "%s/host", b->tmp);
  assert_int_equal(mkdir(b->dir, 0755), 0);
  assert_int_equal(mkdir(b->rootfs, 0755), 0);
  assert_int_equal(mkdir(b->host, 0755), 0);
  static const char *const dirs[] = {"bin", "etc", "proc", "sys", "tmp"};
  for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
    mkdirf("%s/%s", b->rootfs, dirs[i]);
  char path[512], cmd[1024];
  pathf(cmd, sizeof(cmd), "cp /bin/busybox '%s/bin/busybox'", b->rootfs);
  assert_int_equal(system(cmd), 0);
  pathf(path, sizeof(path), "%s/bin/sh", b->rootfs);
  assert_int_equal(symlink("busybox", path), 0);
  pathf(path, sizeof(path), "%s/" MARKER, b->rootfs);
  write_file(path, "1");
  pathf(path, sizeof(path), "%s/etc/secret", b->rootfs);
  write_file(path, "secret");
  pathf(path, sizeof(path), "%s/sentinel", b->host);
  write_file(path, "host-sentinel");
}

static void remove_bundle(struct bundle *b) {
  char cmd[256];
  pathf(cmd, sizeof(cmd), "rm -rf '%s'", b->tmp);
  assert_int_equal(system(cmd), 0);
}

/* The host sentinel dir holds exactly what the fixture put there, unchanged. */
static void assert_host_untouched(const struct bundle *b, int expected_entries) {
  char path[512], buf[64] = "";
  assert_int_equal(count_entries(b->host), expected_entries);
  pathf(path, sizeof(path), "%s/sentinel", b->host);
  struct stat st;
  assert_int_equal(lstat(path, &st), 0);
  assert_true(S_ISREG(st.st_mode));
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  assert_non_null(fgets(buf, sizeof(buf), f));
  fclose(f);
  assert_string_equal(buf, "host-sentinel");
}

/* --- helpers for the child (no cmocka there: it must not longjmp across fork) --- */

#define CHECK(cond, ...)                                                                                     \
  do {                                                                                                       \
    if (!(cond)) {                                                                                           \
      fprintf(stderr, "child check failed (%s:%d): ", __FILE__, __LINE__);                                   \
      fprintf(stderr, __VA_ARGS__);                                                                          \
      fprintf(stderr, " [errno: %s]\n", strerror(errno));                                                    \
      _exit(2);                                                                                              \
    }                                                                                                        \
  } while (0)

static void child_fail_on_error(int rc, struct cm_error *err, const char *step) {
  if (rc == 0)
    return;
  char *text = err ? cm_error_format(err) : strdup("(no error)");
  fprintf(stderr, "%s failed: %s\n", step, text);
  _exit(3);
}

static void check_char_device(const char *path, unsigned major, unsigned minor) {
  struct stat st;
  CHECK(lstat(path, &st) == 0, "stat %s", path);
  CHECK(S_ISCHR(st.st_mode) && st.st_rdev == makedev(major, minor), "%s is not char %u:%u", path, major,
        minor);
}

static void check_fs(const char *path, long magic) {
  struct statfs sfs;
  CHECK(statfs(path, &sfs) == 0, "statfs %s", path);
  CHECK(sfs.f_type == magic, "%s has fs 0x%lx, want 0x%lx", path, (long)sfs.f_type, magic);
}

static void check_readonly(const char *path) {
  struct statvfs sv;
  CHECK(statvfs(path, &sv) == 0, "statvfs %s", path);
  CHECK(sv.f_flag & ST_RDONLY, "%s is not read-only", path);
}

static void check_link(const char *path, const char *target) {
  char buf[256];
  ssize_t n = readlink(path, buf, sizeof(buf) - 1);
  CHECK(n > 0, "readlink %s", path);
  buf[n] = '\0';
  CHECK(strcmp(buf, target) == 0, "%s -> %s, want %s", path, buf, target);
}

/* Run fn in a child with its own private mount namespace, cwd at the bundle dir. */
typedef void (*child_fn)(const struct bundle *b, void *arg);
static void write_proc(const char *path, const char *text) {
  int fd = open(path, O_WRONLY);
  CHECK(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text), "write %s", path);
  close(fd);
}

static int run_in_child_ns(const struct bundle *b, child_fn fn, void *arg, bool userns) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    if (userns) {
      /* Root mapped onto itself only: mknod is refused, as for a rootless container. */
      CHECK(unshare(CLONE_NEWUSER) == 0, "unshare user");
      write_proc("/proc/self/setgroups", "deny");
      write_proc("/proc/self/uid_map", "0 0 1");
      write_proc("/proc/self/gid_map", "0 0 1");
    }
    CHECK(unshare(CLONE_NEWNS) == 0, "unshare");
    CHECK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0, "make / rprivate");
    char marker[512];
    snprintf(marker, sizeof(marker), "%s/" MARKER, b->rootfs);
    /* Guard: the hostile setups below only ever run on our own temp bundle. */
    CHECK(access(marker, F_OK) == 0, "marker %s missing: refusing to run", marker);
    CHECK(chdir(b->dir) == 0, "chdir bundle");
    fn(b, arg);
    _exit(0);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int run_in_child(const struct bundle *b, child_fn fn, void *arg) {
  return run_in_child_ns(b, fn, arg, false);
}

static struct spec_mount mnt(const char *dest, const char *type, const char *source, unsigned long flags,
                             const char *data) {
  return (struct spec_mount){.destination = (char *)dest,
                             .type = (char *)type,
                             .source = (char *)source,
                             .flags = flags,
                             .data = (char *)data};
}

/* --- case 1: a Docker-like config, checked from inside --- */

static void child_standard(const struct bundle *b, void *arg) {
  (void)arg;
  struct spec_mount mounts[] = {
      mnt("/proc", "proc", "proc", MS_NOSUID | MS_NOEXEC | MS_NODEV, NULL),
      mnt("/dev", "tmpfs", "tmpfs", MS_NOSUID | MS_STRICTATIME, "mode=755,size=65536k"),
      mnt("/dev/pts", "devpts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"),
      mnt("/dev/shm", "tmpfs", "shm", MS_NOSUID | MS_NOEXEC | MS_NODEV, "mode=1777,size=65536k"),
      mnt("/dev/mqueue", "mqueue", "mqueue", MS_NOSUID | MS_NOEXEC | MS_NODEV, NULL),
      mnt("/sys", "sysfs", "sysfs", MS_NOSUID | MS_NOEXEC | MS_NODEV | MS_RDONLY, NULL),
      mnt("/sys/fs/cgroup", "cgroup", "cgroup", MS_NOSUID | MS_NOEXEC | MS_NODEV | MS_RDONLY, NULL),
      /* relative source: resolved against the bundle dir */
      mnt("/etc/hostfile", "bind", "hostfile", MS_BIND | MS_RDONLY, NULL),
      /* rootfs/mnt is a symlink to the host sentinel dir: must land inside the rootfs */
      mnt("/mnt/escape", "bind", "bindsrc", MS_BIND | MS_REC, NULL),
      /* rro: the submount of rrosrc must be read-only too */
      mnt("/data", "bind", "rrosrc", MS_BIND | MS_REC, NULL),
      mnt("/run", "tmpfs", "tmpfs", MS_NOSUID | MS_NODEV, "mode=755"),
  };
  mounts[9].recursive_readonly = true;
  mounts[10].propagation = MS_SHARED;
  /* A submount inside the rro source, made in our private namespace. */
  CHECK(mount("tmpfs", "rrosrc/sub", "tmpfs", 0, NULL) == 0, "tmpfs on rrosrc/sub");

  char *masked[] = {"/proc/version", "/proc/driver", "/proc/does-not-exist", "/etc/secret", NULL};
  char *readonly[] = {"/proc/sys", "/proc/timer_list", "/proc/nope", NULL};
  struct spec_device devices[] = {{.path = "/dev/custom/null2",
                                   .type = 'c',
                                   .major = 1,
                                   .minor = 3,
                                   .has_file_mode = true,
                                   .file_mode = 0640}};
  struct spec_process process = {.terminal = true};
  struct spec s = {.mounts = mounts,
                   .n_mounts = sizeof(mounts) / sizeof(mounts[0]),
                   .root_readonly = true,
                   .process = &process,
                   .has_linux = true};
  s.linux_.masked_paths = (struct spec_strv){masked, 4};
  s.linux_.readonly_paths = (struct spec_strv){readonly, 3};
  s.linux_.devices = devices;
  s.linux_.n_devices = 1;

  struct cm_error *err = NULL;
  child_fail_on_error(rootfs_prepare(&s, b->rootfs, NULL, &err), err, "rootfs_prepare");
  child_fail_on_error(rootfs_pivot(b->rootfs, false, &err), err, "rootfs_pivot");
  child_fail_on_error(rootfs_finalize(&s, &err), err, "rootfs_finalize");

  CHECK(access("/" MARKER, F_OK) == 0, "not inside the rootfs after pivot");
  char cwd[64];
  CHECK(getcwd(cwd, sizeof(cwd)) && strcmp(cwd, "/") == 0, "cwd is not /");
  check_fs("/proc", PROC_SUPER_MAGIC);
  check_fs("/dev", TMPFS_MAGIC);
  check_fs("/dev/pts", DEVPTS_SUPER_MAGIC);
  check_fs("/dev/shm", TMPFS_MAGIC);
  check_fs("/dev/mqueue", MQUEUE_MAGIC);
  check_fs("/sys", SYSFS_MAGIC);
  check_readonly("/sys");
  check_readonly("/sys/fs/cgroup");
  struct statfs host_cg;
  CHECK(statfs("/sys/fs/cgroup", &host_cg) == 0, "statfs cgroup");
  if (host_cg.f_type == TMPFS_MAGIC) { /* v1/hybrid view: a bind per hierarchy */
    CHECK(access("/sys/fs/cgroup/memory/memory.limit_in_bytes", F_OK) == 0, "memory hierarchy");
    CHECK(access("/sys/fs/cgroup/memory/cgroup.procs", F_OK) == 0, "memory hierarchy");
    check_readonly("/sys/fs/cgroup/memory");
  } else { /* unified host: cgroup2 itself */
    check_fs("/sys/fs/cgroup", CGROUP2_SUPER_MAGIC);
  }
  check_char_device("/dev/null", 1, 3);
  check_char_device("/dev/zero", 1, 5);
  check_char_device("/dev/full", 1, 7);
  check_char_device("/dev/random", 1, 8);
  check_char_device("/dev/urandom", 1, 9);
  check_char_device("/dev/tty", 5, 0);
  check_char_device("/dev/custom/null2", 1, 3);
  struct stat st;
  CHECK(stat("/dev/custom/null2", &st) == 0 && (st.st_mode & 07777) == 0640, "null2 mode %o",
        st.st_mode & 07777);
  CHECK(stat("/dev/null", &st) == 0 && (st.st_mode & 07777) == 0666, "null mode %o", st.st_mode & 07777);
  check_link("/dev/fd", "/proc/self/fd");
  check_link("/dev/stdin", "/proc/self/fd/0");
  check_link("/dev/stdout", "/proc/self/fd/1");
  check_link("/dev/stderr", "/proc/self/fd/2");
  check_link("/dev/ptmx", "pts/ptmx");
  CHECK(lstat("/dev/console", &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0666,
        "/dev/console placeholder");
  /* binds */
  char buf[64] = "";
  int fd = open("/etc/hostfile", O_RDONLY);
  CHECK(fd >= 0 && read(fd, buf, sizeof(buf) - 1) > 0, "read /etc/hostfile");
  close(fd);
  CHECK(strncmp(buf, "hostfile-content", 16) == 0, "hostfile content %s", buf);
  CHECK(open("/etc/hostfile", O_WRONLY) < 0 && errno == EROFS, "/etc/hostfile writable");
  CHECK(access("/mnt/escape/from-bindsrc", F_OK) == 0, "bind through /mnt symlink");
  CHECK(access("/data/sub", F_OK) == 0, "rro source");
  check_readonly("/data");
  check_readonly("/data/sub");
  /* masked / read-only */
  check_char_device("/proc/version", 1, 3);
  check_char_device("/etc/secret", 1, 3);
  CHECK(count_entries("/proc/driver") == 0, "/proc/driver not empty");
  check_readonly("/proc/driver");
  CHECK(open("/proc/sys/kernel/hostname", O_WRONLY) < 0 && errno == EROFS, "/proc/sys writable");
  check_readonly("/proc/timer_list");
  /* root read-only, but /dev and /run stay writable */
  CHECK(mkdir("/tmp/x", 0755) < 0 && errno == EROFS, "/ is writable");
  CHECK(mkdir("/run/x", 0755) == 0, "/run not writable");
  CHECK(mkdir("/dev/shm/x", 0755) == 0, "/dev/shm not writable");
  /* /run got shared propagation */
  FILE *mi = fopen("/proc/self/mountinfo", "r");
  CHECK(mi != NULL, "mountinfo");
  char line[1024];
  bool run_shared = false;
  while (fgets(line, sizeof(line), mi))
    if (strstr(line, " /run ") && strstr(line, " shared:"))
      run_shared = true;
  fclose(mi);
  CHECK(run_shared, "/run is not shared");
  /* the rootfs really works */
  CHECK(system("/bin/sh -c 'test -c /dev/null && test -L /dev/fd'") == 0, "busybox sh");
}

static void test_standard_config(void **state) {
  struct bundle *bp = *state, b = *bp;
  char path[512];
  pathf(path, sizeof(path), "%s/hostfile", b.dir);
  write_file(path, "hostfile-content");
  mkdirf("%s/%s", b.dir, "bindsrc");
  pathf(path, sizeof(path), "%s/bindsrc/from-bindsrc", b.dir);
  write_file(path, "x");
  mkdirf("%s/%s", b.dir, "rrosrc");
  mkdirf("%s/%s", b.dir, "rrosrc/sub");
  pathf(path, sizeof(path), "%s/mnt", b.rootfs);
  assert_int_equal(symlink(b.host, path), 0); /* absolute host path */
  assert_int_equal(run_in_child(&b, child_standard, NULL), 0);
  assert_host_untouched(&b, 1);
  /* The /mnt target was created inside the rootfs, under the host path's name. */
  pathf(path, sizeof(path), "%s%s/escape", b.rootfs, b.host);
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
}

/* --- case 2: a hostile image /dev (no /dev mount in the spec) --- */

static void child_hostile_dev(const struct bundle *b, void *arg) {
  (void)arg;
  struct spec_mount mounts[] = {
      mnt("/proc", "proc", "proc", MS_NOSUID | MS_NOEXEC | MS_NODEV, NULL),
  };
  char *masked[] = {"/etc/secret", NULL};
  struct spec_process process = {.terminal = true};
  struct spec s = {.mounts = mounts, .n_mounts = 1, .process = &process, .has_linux = true};
  s.linux_.masked_paths = (struct spec_strv){masked, 1};
  struct cm_error *err = NULL;
  child_fail_on_error(rootfs_prepare(&s, b->rootfs, NULL, &err), err, "rootfs_prepare");
  child_fail_on_error(rootfs_pivot(b->rootfs, false, &err), err, "rootfs_pivot");
  child_fail_on_error(rootfs_finalize(&s, &err), err, "rootfs_finalize");
  check_char_device("/dev/null", 1, 3);
  check_char_device("/dev/zero", 1, 5);
  check_char_device("/etc/secret", 1, 3);
  struct stat st;
  CHECK(lstat("/dev/console", &st) == 0 && S_ISREG(st.st_mode), "/dev/console");
  check_link("/dev/ptmx", "pts/ptmx");
}

static void test_hostile_dev_entries(void **state) {
  struct bundle *bp = *state, b = *bp;
  char path[512], target[512];
  mkdirf("%s/%s", b.rootfs, "dev");
  pathf(target, sizeof(target), "%s/sentinel", b.host);
  static const char *const names[] = {"null", "zero", "console", "ptmx", "tty"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    pathf(path, sizeof(path), "%s/dev/%s", b.rootfs, names[i]);
    assert_int_equal(symlink(target, path), 0);
  }
  pathf(path, sizeof(path), "%s/dev/pts", b.rootfs);
  assert_int_equal(symlink(b.host, path), 0);
  assert_int_equal(run_in_child(&b, child_hostile_dev, NULL), 0);
  assert_host_untouched(&b, 1);
}

static void test_dev_symlinked_out(void **state) {
  struct bundle *bp = *state, b = *bp;
  char path[512];
  mkdirf("%s/%s", b.host, "devdir");
  pathf(path, sizeof(path), "%s/dev", b.rootfs);
  char target[512];
  pathf(target, sizeof(target), "%s/devdir", b.host);
  assert_int_equal(symlink(target, path), 0);
  assert_int_equal(run_in_child(&b, child_hostile_dev, NULL), 0);
  assert_host_untouched(&b, 2);
  assert_int_equal(count_entries(target), 0);
  /* The devices went to the same-named directory inside the rootfs. */
  pathf(path, sizeof(path), "%s%s/null", b.rootfs, target);
  struct stat st;
  assert_int_equal(lstat(path, &st), 0);
  assert_true(S_ISCHR(st.st_mode));
}

/* --- case 3: refusals --- */

static void child_expect_prepare_error(const struct bundle *b, void *arg) {
  const char *expected = arg;
  struct spec_mount mounts[] = {
      mnt("/proc", "proc", "proc", MS_NOSUID | MS_NOEXEC | MS_NODEV, NULL),
      mnt("/proc/sys/kernel/core_pattern", "bind", "hostfile", MS_BIND, NULL),
  };
  struct spec s = {.mounts = mounts, .n_mounts = 2};
  struct cm_error *err = NULL;
  CHECK(rootfs_prepare(&s, b->rootfs, NULL, &err) < 0, "prepare succeeded");
  CHECK(err && strstr(err->msg, expected), "error \"%s\" lacks \"%s\"", err ? err->msg : "", expected);
}

static void test_mount_over_proc_refused(void **state) {
  struct bundle *bp = *state, b = *bp;
  char path[512];
  pathf(path, sizeof(path), "%s/hostfile", b.dir);
  write_file(path, "x");
  assert_int_equal(
      run_in_child(&b, child_expect_prepare_error,
                   "mount \"hostfile\" on \"/proc/sys/kernel/core_pattern\" (mounts[1], type bind)"),
      0);
}

/* /dev bind-mounted from a fake dir whose "null" is a plain file: masking must refuse it. */
static void child_fake_dev_null(const struct bundle *b, void *arg) {
  (void)arg;
  struct spec_mount mounts[] = {mnt("/dev", "bind", "fakedev", MS_BIND, NULL)};
  char *masked[] = {"/etc/secret", NULL};
  struct spec s = {.mounts = mounts, .n_mounts = 1, .has_linux = true};
  s.linux_.masked_paths = (struct spec_strv){masked, 1};
  struct cm_error *err = NULL;
  child_fail_on_error(rootfs_prepare(&s, b->rootfs, NULL, &err), err, "rootfs_prepare");
  child_fail_on_error(rootfs_pivot(b->rootfs, false, &err), err, "rootfs_pivot");
  CHECK(rootfs_finalize(&s, &err) < 0, "finalize masked with a fake /dev/null");
  CHECK(strstr(err->msg, "not the null device"), "unexpected error %s", err->msg);
  char buf[16] = "";
  int fd = open("/etc/secret", O_RDONLY);
  CHECK(fd >= 0 && read(fd, buf, sizeof(buf) - 1) > 0, "read secret");
  CHECK(strcmp(buf, "secret") == 0, "secret replaced by %s", buf);
}

static void test_fake_dev_null_refused(void **state) {
  struct bundle *bp = *state, b = *bp;
  char path[512];
  mkdirf("%s/%s", b.dir, "fakedev");
  pathf(path, sizeof(path), "%s/fakedev/null", b.dir);
  write_file(path, "not a device");
  assert_int_equal(run_in_child(&b, child_fake_dev_null, NULL), 0);
}

/* --- case 4: --no-pivot --- */

static void child_no_pivot(const struct bundle *b, void *arg) {
  (void)arg;
  struct spec_mount mounts[] = {
      mnt("/proc", "proc", "proc", MS_NOSUID | MS_NOEXEC | MS_NODEV, NULL),
      mnt("/dev", "tmpfs", "tmpfs", MS_NOSUID, "mode=755"),
  };
  struct spec s = {.mounts = mounts, .n_mounts = 2};
  struct cm_error *err = NULL;
  child_fail_on_error(rootfs_prepare(&s, b->rootfs, NULL, &err), err, "rootfs_prepare");
  child_fail_on_error(rootfs_pivot(b->rootfs, true, &err), err, "rootfs_pivot");
  child_fail_on_error(rootfs_finalize(&s, &err), err, "rootfs_finalize");
  CHECK(access("/" MARKER, F_OK) == 0, "not inside the rootfs");
  check_fs("/proc", PROC_SUPER_MAGIC);
  check_char_device("/dev/null", 1, 3);
}

static void test_no_pivot(void **state) {
  struct bundle *bp = *state, b = *bp;
  assert_int_equal(run_in_child(&b, child_no_pivot, NULL), 0);
}

/* --- rootfsPropagation "rshared": pivot_root still works, / ends up shared --- */

static void child_rshared(const struct bundle *b, void *arg) {
  (void)arg;
  struct spec_mount mounts[] = {mnt("/proc", "proc", "proc", MS_NOSUID, NULL)};
  struct spec s = {.mounts = mounts, .n_mounts = 1, .has_linux = true};
  s.linux_.rootfs_propagation = "rshared";
  s.linux_.rootfs_propagation_flags = MS_SHARED | MS_REC;
  /* The rootfs on its own mount (as on an overlay), so "/" is not its parent mount. */
  CHECK(mount(b->rootfs, b->rootfs, NULL, MS_BIND, NULL) == 0, "bind rootfs");
  struct cm_error *err = NULL;
  child_fail_on_error(rootfs_prepare(&s, b->rootfs, NULL, &err), err, "rootfs_prepare");
  child_fail_on_error(rootfs_pivot(b->rootfs, false, &err), err, "rootfs_pivot");
  child_fail_on_error(rootfs_finalize(&s, &err), err, "rootfs_finalize");
  FILE *mi = fopen("/proc/self/mountinfo", "r");
  CHECK(mi != NULL, "mountinfo");
  char line[1024];
  bool root_shared = false;
  while (fgets(line, sizeof(line), mi)) {
    char mountpoint[512];
    if (sscanf(line, "%*s %*s %*s %*s %511s", mountpoint) == 1 && strcmp(mountpoint, "/") == 0)
      root_shared = strstr(line, " shared:") != NULL;
  }
  fclose(mi);
  CHECK(root_shared, "/ is not shared");
}

static void test_rootfs_propagation_shared(void **state) {
  struct bundle *bp = *state, b = *bp;
  assert_int_equal(run_in_child(&b, child_rshared, NULL), 0);
}

/* --- case 5: in a user namespace, devices are bind mounts of the host's nodes --- */

static void child_userns(const struct bundle *b, void *arg) {
  (void)arg;
  struct spec_mount mounts[] = {
      mnt("/dev", "tmpfs", "tmpfs", MS_NOSUID, "mode=755"),
      mnt("/dev/pts", "devpts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666"),
  };
  char *masked[] = {"/etc/secret", NULL};
  struct spec_device devices[] = {{.path = "/dev/net/tun", .type = 'c', .major = 10, .minor = 200}};
  struct spec_process process = {.terminal = true};
  struct spec s = {.mounts = mounts, .n_mounts = 2, .process = &process, .has_linux = true};
  s.linux_.masked_paths = (struct spec_strv){masked, 1};
  bool host_has_tun = access("/dev/net/tun", F_OK) == 0;
  if (host_has_tun) {
    s.linux_.devices = devices;
    s.linux_.n_devices = 1;
  }
  struct cm_error *err = NULL;
  child_fail_on_error(rootfs_prepare(&s, b->rootfs, NULL, &err), err, "rootfs_prepare");
  child_fail_on_error(rootfs_pivot(b->rootfs, false, &err), err, "rootfs_pivot");
  child_fail_on_error(rootfs_finalize(&s, &err), err, "rootfs_finalize");
  check_char_device("/dev/null", 1, 3);
  check_char_device("/dev/urandom", 1, 9);
  check_char_device("/etc/secret", 1, 3);
  struct stat null_st, dev_st;
  CHECK(stat("/dev/null", &null_st) == 0 && stat("/dev", &dev_st) == 0, "stat /dev");
  CHECK(null_st.st_dev != dev_st.st_dev, "/dev/null is not a bind of the host's node");
  if (host_has_tun)
    check_char_device("/dev/net/tun", 10, 200);
  int fd = open("/dev/null", O_WRONLY);
  CHECK(fd >= 0 && write(fd, "x", 1) == 1, "write /dev/null");
  close(fd);
}

static void test_userns_devices_are_binds(void **state) {
  struct bundle *bp = *state, b = *bp;
  assert_int_equal(run_in_child_ns(&b, child_userns, NULL, true), 0);
  assert_host_untouched(&b, 1);
}

static int setup_bundle(void **state) {
  struct bundle *b = calloc(1, sizeof(*b));
  assert_non_null(b);
  make_bundle(b);
  *state = b;
  return 0;
}

/* Runs even when a test failed, so no temp dir is left behind. */
static int teardown_bundle(void **state) {
  struct bundle *b = *state;
  remove_bundle(b);
  free(b);
  return 0;
}

int main(void) {
  if (geteuid() != 0) {
    fprintf(stderr, "test_rootfs needs root: skipped\n");
    return 0;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_standard_config, setup_bundle, teardown_bundle),
      cmocka_unit_test_setup_teardown(test_hostile_dev_entries, setup_bundle, teardown_bundle),
      cmocka_unit_test_setup_teardown(test_dev_symlinked_out, setup_bundle, teardown_bundle),
      cmocka_unit_test_setup_teardown(test_mount_over_proc_refused, setup_bundle, teardown_bundle),
      cmocka_unit_test_setup_teardown(test_fake_dev_null_refused, setup_bundle, teardown_bundle),
      cmocka_unit_test_setup_teardown(test_no_pivot, setup_bundle, teardown_bundle),
      cmocka_unit_test_setup_teardown(test_rootfs_propagation_shared, setup_bundle, teardown_bundle),
      cmocka_unit_test_setup_teardown(test_userns_devices_are_binds, setup_bundle, teardown_bundle),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
