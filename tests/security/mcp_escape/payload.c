/* A hostile "MCP server" for tests/security/mcp_escape.bats: each subcommand tries one escape or
 * abuse from inside `codemode-run --profile mcp` and reports whether it was contained.
 *
 *   payload ATTEMPT [ARG]   exit 0: contained   exit 1: ESCAPED   exit 2: refused to run / error
 *
 * It refuses to do anything unless the marker file only its test bundle has is present (and says
 * what it should), so it can never run by accident on the host. Every loop is bounded. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/keyctl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#define MARKER "/.codemode-escape-marker"
#define MARKER_TEXT "codemode mcp escape test bundle"

static int contained(const char *what, const char *how) {
  printf("contained: %s (%s)\n", what, how);
  return 0;
}
static int escaped(const char *what) {
  printf("ESCAPED: %s\n", what);
  return 1;
}
/* A call that must fail: contained when it does. */
static int must_fail(const char *what, long rc) {
  if (rc < 0)
    return contained(what, strerror(errno));
  return escaped(what);
}

static pid_t sleeper(void) {
  pid_t p = fork();
  if (p == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    pause();
    _exit(0);
  }
  return p;
}

static void reap(pid_t p) {
  kill(p, SIGKILL);
  waitpid(p, NULL, 0);
}

static int try_ptrace(void) {
  pid_t p = sleeper();
  long rc = ptrace(PTRACE_ATTACH, p, NULL, NULL);
  reap(p);
  return must_fail("ptrace(PTRACE_ATTACH)", rc);
}

static int try_process_vm(void) {
  pid_t p = sleeper();
  char buf[16];
  struct iovec local = {buf, sizeof(buf)}, remote = {(void *)&buf, sizeof(buf)};
  long rc = process_vm_readv(p, &local, 1, &remote, 1, 0);
  reap(p);
  return must_fail("process_vm_readv", rc);
}

static int try_mount(void) {
  return must_fail("mount tmpfs", mount("tmpfs", "/tmp", "tmpfs", 0, NULL));
}
static int try_fsopen(void) {
  return must_fail("fsopen (new mount API)", syscall(SYS_fsopen, "tmpfs", 0));
}
static int try_unshare(void) {
  if (unshare(CLONE_NEWUSER) == 0)
    return escaped("unshare(CLONE_NEWUSER)");
  return must_fail("unshare(CLONE_NEWNS|CLONE_NEWNET)", unshare(CLONE_NEWNS | CLONE_NEWNET));
}
static int try_setns(void) {
  int fd = open("/proc/1/ns/mnt", O_RDONLY);
  if (fd < 0)
    return contained("setns", "cannot even open /proc/1/ns/mnt");
  return must_fail("setns", setns(fd, 0));
}
static int try_clone_newuser(void) {
  long rc = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, NULL);
  if (rc == 0)
    _exit(0);
  if (rc > 0)
    waitpid((pid_t)rc, NULL, 0);
  return must_fail("clone(CLONE_NEWUSER)", rc);
}
static int try_clone3(void) {
  long rc = syscall(SYS_clone3, NULL, 0);
  if (rc < 0 && errno == ENOSYS)
    return contained("clone3", "ENOSYS (libc falls back to clone)");
  return escaped("clone3 did not answer ENOSYS");
}
static int try_socket(int domain, int type, int proto, const char *what) {
  int fd = socket(domain, type, proto);
  if (fd >= 0)
    close(fd);
  return must_fail(what, fd);
}
static int try_keyctl(void) {
  if (syscall(SYS_add_key, "user", "cm", "x", 1, KEY_SPEC_PROCESS_KEYRING) >= 0)
    return escaped("add_key");
  return must_fail("keyctl", syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0));
}
static int try_bpf(void) {
  char attr[128] = {0};
  return must_fail("bpf(BPF_MAP_CREATE)", syscall(SYS_bpf, 0, attr, sizeof(attr)));
}
static int try_perf(void) {
  char attr[128] = {0};
  *(uint32_t *)(attr + 4) = 128; /* size */
  return must_fail("perf_event_open", syscall(SYS_perf_event_open, attr, 0, -1, -1, 0));
}
static int try_io_uring(void) {
  char params[120] = {0};
  return must_fail("io_uring_setup", syscall(SYS_io_uring_setup, 8, params));
}
static int try_userfaultfd(void) {
  return must_fail("userfaultfd", syscall(SYS_userfaultfd, O_CLOEXEC));
}
static int try_write_root(void) {
  int fd = open("/escape-was-here", O_WRONLY | O_CREAT, 0644);
  if (fd >= 0)
    close(fd);
  return must_fail("write a file in /", fd);
}
static int try_write_path(const char *path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    return contained(path, strerror(errno));
  ssize_t n = write(fd, "1", 1);
  close(fd);
  return n == 1 ? escaped(path) : contained(path, strerror(errno));
}
static int try_module(void) {
  int fd = open("/escape", O_RDONLY);
  return must_fail("finit_module", syscall(SYS_finit_module, fd, "", 0));
}
static int try_chroot(void) {
  return must_fail("chroot", chroot("/tmp"));
}
static int try_mknod(void) {
  /* A FIFO is fine; a device node is not. */
  return must_fail("mknod /tmp/sda (block 8:0)", mknod("/tmp/sda", S_IFBLK | 0600, makedev(8, 0)));
}
static int try_caps(void) {
  struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct d[2];
  if (syscall(SYS_capget, &h, d) < 0)
    return escaped("capget failed unexpectedly");
  if (d[0].effective | d[0].permitted | d[0].inheritable | d[1].effective | d[1].permitted | d[1].inheritable)
    return escaped("capabilities left");
  if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
    return escaped("no_new_privs not set (a setuid binary would regain privileges)");
  if (prctl(PR_CAPBSET_READ, CAP_SYS_ADMIN, 0, 0, 0) != 0)
    return escaped("CAP_SYS_ADMIN in the bounding set");
  return contained("capabilities", "none, no_new_privs, empty bounding set");
}
static int try_tiocsti(void) {
  char c = 'x';
  if (ioctl(0, TIOCSTI, &c) == 0)
    return escaped("TIOCSTI");
  /* The kernel only looks at the low 32 bits of the command: try to sneak past the filter. */
  if (syscall(SYS_ioctl, 0, (unsigned long)TIOCSTI | (1UL << 32), &c) == 0)
    return escaped("TIOCSTI with high bits set");
  return contained("TIOCSTI", strerror(errno));
}
static int try_32bit(void) {
  pid_t p = fork();
  if (p == 0) {
    long ret;
    /* getpid through the 32-bit entry point (int 0x80, nr 20). */
    __asm__ volatile("int $0x80" : "=a"(ret) : "a"(20) : "memory");
    _exit(ret > 0 ? 1 : 0);
  }
  int st;
  waitpid(p, &st, 0);
  if (WIFSIGNALED(st))
    return contained("32-bit syscall", "killed");
  return WEXITSTATUS(st) == 1 ? escaped("32-bit syscall ran") : contained("32-bit syscall", "failed");
}
static int try_misc_syscalls(void) {
  int r = 0;
  r |= must_fail("modify_ldt", syscall(SYS_modify_ldt, 0, NULL, 0));
  r |= must_fail("execveat", syscall(SYS_execveat, -1, "/escape", NULL, NULL, 0));
  r |= must_fail("memfd_secret", syscall(447 /* memfd_secret */, 0));
  struct iovec iov = {"x", 1};
  int p[2];
  if (pipe(p) == 0) {
    r |= must_fail("vmsplice", syscall(SYS_vmsplice, p[1], &iov, 1, 0));
    close(p[0]);
    close(p[1]);
  }
  char handle[128] = {0};
  int mount_id;
  *(unsigned *)handle = 64;
  r |= must_fail("name_to_handle_at", syscall(SYS_name_to_handle_at, AT_FDCWD, "/", handle, &mount_id, 0));
  return r;
}
static int try_fork_bomb(void) {
  pid_t kids[1000];
  int n = 0;
  for (; n < 1000; n++) {
    pid_t p = fork();
    if (p == 0) {
      pause();
      _exit(0);
    }
    if (p < 0)
      break;
    kids[n] = p;
  }
  for (int i = 0; i < n; i++)
    kill(kids[i], SIGKILL);
  for (int i = 0; i < n; i++)
    waitpid(kids[i], NULL, 0);
  printf("forked %d processes before failing\n", n);
  return n < 300 ? contained("fork bomb", "pids limit") : escaped("fork bomb not bounded");
}
static int try_memory_hog(void) {
  /* 1 GiB in 16 MiB chunks, touched: the cgroup OOM killer must stop us first. */
  for (int i = 0; i < 64; i++) {
    char *p = mmap(NULL, 16 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
      return contained("memory hog", "mmap failed");
    memset(p, 1, 16 << 20);
  }
  return escaped("allocated 1 GiB");
}
static int try_fill_tmp(void) {
  int fd = open("/tmp/fill", O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0)
    return contained("fill /tmp", strerror(errno));
  static char buf[1 << 20];
  memset(buf, 'x', sizeof(buf));
  for (int i = 0; i < 200; i++) {
    if (write(fd, buf, sizeof(buf)) < 0) {
      printf("wrote %d MiB\n", i);
      close(fd);
      unlink("/tmp/fill");
      return contained("fill /tmp", strerror(errno));
    }
  }
  close(fd);
  unlink("/tmp/fill");
  return escaped("wrote 200 MiB to /tmp");
}
static int try_fds(void) {
  int n = 0;
  for (; n < 100000; n++)
    if (dup(0) < 0)
      break;
  printf("opened %d fds\n", n);
  return n < 5000 ? contained("fd exhaustion", "RLIMIT_NOFILE") : escaped("fd exhaustion");
}
static int try_core(void) {
  struct rlimit rl;
  getrlimit(RLIMIT_CORE, &rl);
  if (rl.rlim_cur != 0 || rl.rlim_max != 0)
    return escaped("RLIMIT_CORE is not 0");
  rl.rlim_cur = rl.rlim_max = RLIM_INFINITY;
  return must_fail("raise RLIMIT_CORE", setrlimit(RLIMIT_CORE, &rl));
}
static int try_self_exe(void) {
  return must_fail("open /proc/self/exe for writing", open("/proc/self/exe", O_WRONLY));
}
static int try_connect(const char *addr) {
  char host[64];
  snprintf(host, sizeof(host), "%s", addr);
  char *colon = strrchr(host, ':');
  if (colon == NULL)
    return 2;
  *colon = '\0';
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
  inet_pton(AF_INET, host, &sa.sin_addr);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return contained("connect", "no socket");
  struct timeval tv = {3, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  int rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
  close(fd);
  return must_fail(addr, rc);
}
static int try_loopback(void) {
  /* The one network the server keeps: its own loopback. */
  int l = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof(sa);
  if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(l, 1) < 0 ||
      getsockname(l, (struct sockaddr *)&sa, &len) < 0)
    return 2;
  int c = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(c, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
    printf("loopback connect failed: %s\n", strerror(errno));
    return 2;
  }
  printf("loopback works\n");
  return 0;
}
static int try_double_fork(void) {
  /* A grandchild in its own session that would like to outlive the container. */
  if (fork() == 0) {
    setsid();
    if (fork() == 0) {
      for (int i = 0; i < 600; i++)
        sleep(1);
      _exit(0);
    }
    _exit(0);
  }
  wait(NULL);
  printf("left a daemon behind\n");
  return 0;
}
/* --profile ci (ci_escape.bats): host-facing files, opened for writing only (nothing written, so
 * even a failure of the test changes nothing on the host). */
static int try_open_write(const char *path) {
  int fd = open(path, O_WRONLY);
  if (fd >= 0) {
    close(fd);
    return escaped(path);
  }
  return contained(path, strerror(errno));
}
static int try_read(const char *path) {
  char buf[64];
  int fd = open(path, O_RDONLY);
  if (fd < 0)
    return contained(path, strerror(errno));
  ssize_t n = read(fd, buf, sizeof(buf));
  close(fd);
  return n > 0 ? escaped(path) : contained(path, "empty");
}
/* The nested-runtime path: a mount and pid namespace of the job's own (with "user": a user
 * namespace too, full capabilities there), a fresh procfs, and through it the host's kernel
 * settings. In a nested user namespace the kernel refuses the procfs while the job's /proc has
 * masked paths (they are locked there and hide parts of it): contained either way. */
static int try_nested_proc(const char *arg) {
  int flags = CLONE_NEWNS | CLONE_NEWPID | (strcmp(arg, "user") == 0 ? CLONE_NEWUSER : 0);
  pid_t p = fork();
  if (p == 0) {
    if (unshare(flags) < 0) {
      printf("unshare: %s\n", strerror(errno));
      _exit(2);
    }
    pid_t c = fork();
    if (c == 0) {
      mkdir("/tmp/nested-proc", 0755);
      if (mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
        printf("make / private: %s\n", strerror(errno));
        _exit(2);
      }
      if (mount("proc", "/tmp/nested-proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
        _exit(contained("nested procfs", strerror(errno)));
      printf("nested procfs mounted\n");
      static const char *const files[] = {"/tmp/nested-proc/sys/kernel/core_pattern", "/tmp/nested-proc/sysrq-trigger",
                                          "/tmp/nested-proc/sys/kernel/modprobe", "/tmp/nested-proc/sys/vm/drop_caches"};
      int r = 0;
      for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
        r |= try_open_write(files[i]);
      _exit(r);
    }
    int st;
    waitpid(c, &st, 0);
    _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 2);
  }
  int st;
  waitpid(p, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 2;
}
/* A host process carrying TOKEN in its command line must be invisible (and so unsignalable). */
static int try_host_procs(const char *token) {
  char path[64], buf[4096];
  int seen = 0;
  for (int pid = 1; pid < 4194304 && seen < 100000; pid++) {
    snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
      continue;
    seen++;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    for (ssize_t i = 0; i < n; i++)
      if (buf[i] == '\0')
        buf[i] = ' ';
    if (n > 0 && (buf[n] = '\0', strstr(buf, token)) && !strstr(buf, "host_procs")) {
      printf("pid %d: %s\n", pid, buf);
      return escaped("a host process is visible");
    }
  }
  printf("%d processes visible\n", seen);
  return contained("host processes", "not in the job's pid namespace");
}

static int try_ignore_term(void) {
  signal(SIGTERM, SIG_IGN);
  for (int i = 0; i < 120; i++)
    sleep(1);
  return escaped("outlived its timeout");
}

int main(int argc, char **argv) {
  char text[64] = {0};
  int fd = open(MARKER, O_RDONLY);
  if (fd < 0 || read(fd, text, sizeof(text) - 1) < 0 || strncmp(text, MARKER_TEXT, strlen(MARKER_TEXT)) != 0) {
    fprintf(stderr, "payload: no %s: refusing to run outside its test bundle\n", MARKER);
    return 2;
  }
  close(fd);
  if (argc < 2)
    return 2;
  setvbuf(stdout, NULL, _IONBF, 0);
  const char *a = argv[1], *arg = argc > 2 ? argv[2] : "";
  /* tests/security/learn.bats: behave while codemode learns the policy, attack under it later */
  if (!strcmp(a, "quiet")) return contained("quiet", "nothing hostile while being watched");
  if (!strcmp(a, "ptrace")) return try_ptrace();
  if (!strcmp(a, "process_vm")) return try_process_vm();
  if (!strcmp(a, "mount")) return try_mount();
  if (!strcmp(a, "fsopen")) return try_fsopen();
  if (!strcmp(a, "unshare")) return try_unshare();
  if (!strcmp(a, "setns")) return try_setns();
  if (!strcmp(a, "clone_newuser")) return try_clone_newuser();
  if (!strcmp(a, "clone3")) return try_clone3();
  if (!strcmp(a, "packet")) return try_socket(AF_PACKET, SOCK_RAW, 0, "AF_PACKET socket");
  if (!strcmp(a, "raw")) return try_socket(AF_INET, SOCK_RAW, IPPROTO_ICMP, "raw INET socket");
  if (!strcmp(a, "vsock")) return try_socket(AF_VSOCK, SOCK_STREAM, 0, "AF_VSOCK socket");
  if (!strcmp(a, "alg")) return try_socket(AF_ALG, SOCK_SEQPACKET, 0, "AF_ALG socket");
  if (!strcmp(a, "netlink_audit")) return try_socket(AF_NETLINK, SOCK_RAW, 9 /* NETLINK_AUDIT */, "NETLINK_AUDIT");
  if (!strcmp(a, "keyctl")) return try_keyctl();
  if (!strcmp(a, "bpf")) return try_bpf();
  if (!strcmp(a, "perf")) return try_perf();
  if (!strcmp(a, "io_uring")) return try_io_uring();
  if (!strcmp(a, "userfaultfd")) return try_userfaultfd();
  if (!strcmp(a, "write_root")) return try_write_root();
  if (!strcmp(a, "write")) return try_write_path(arg);
  if (!strcmp(a, "module")) return try_module();
  if (!strcmp(a, "chroot")) return try_chroot();
  if (!strcmp(a, "mknod")) return try_mknod();
  if (!strcmp(a, "caps")) return try_caps();
  if (!strcmp(a, "tiocsti")) return try_tiocsti();
  if (!strcmp(a, "32bit")) return try_32bit();
  if (!strcmp(a, "misc")) return try_misc_syscalls();
  if (!strcmp(a, "forkbomb")) return try_fork_bomb();
  if (!strcmp(a, "memhog")) return try_memory_hog();
  if (!strcmp(a, "filltmp")) return try_fill_tmp();
  if (!strcmp(a, "fds")) return try_fds();
  if (!strcmp(a, "core")) return try_core();
  if (!strcmp(a, "self_exe")) return try_self_exe();
  if (!strcmp(a, "connect")) return try_connect(arg);
  if (!strcmp(a, "loopback")) return try_loopback();
  if (!strcmp(a, "double_fork")) return try_double_fork();
  if (!strcmp(a, "ignore_term")) return try_ignore_term();
  if (!strcmp(a, "open_write")) return try_open_write(arg);
  if (!strcmp(a, "read")) return try_read(arg);
  if (!strcmp(a, "nested_proc")) return try_nested_proc(arg);
  if (!strcmp(a, "host_procs")) return try_host_procs(arg);
  fprintf(stderr, "payload: unknown attempt %s\n", a);
  return 2;
}
