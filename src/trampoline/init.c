/* codemode-init: pid 1 of a codemode-run container, so that the server is not (the way
 * `docker run --init` puts tini there, which the Docker MCP gateway always asks for).
 *
 * Usage (never by hand): codemode-init PROGRAM ARG…  → fork; the child execs PROGRAM (looked up
 * in $PATH when it has no '/'); this process forwards every signal it gets to the child, reaps
 * every process that ends up its child (orphans are reparented to pid 1), and when PROGRAM
 * exits, exits with its status (128+N if a signal N killed it).
 *
 * Why: the kernel gives pid 1 of a pid namespace no default signal actions, so a server that is
 * pid 1 and installs no SIGTERM handler (node) ignores SIGTERM and Ctrl-C, and only the SIGKILL
 * after the grace period stops it; and nobody would reap a double-forked child's zombie. As
 * pid 2 the server dies of SIGTERM/SIGINT at once, as it would outside a container.
 *
 * Built freestanding like the exec trampoline (no libc, a few hundred bytes, loaded from a
 * sealed memfd, so /proc/1/exe is a copy nobody can write: CVE-2019-5736). Its syscalls are ones
 * every profile that lets a container start allows: rt_sigprocmask, rt_sigtimedwait, clone (as
 * fork), wait4, kill, execve, close, write, exit_group. */

#if defined(__x86_64__)
enum {
  NR_write = 1, NR_close = 3, NR_rt_sigprocmask = 14, NR_clone = 56, NR_execve = 59, NR_exit_group = 231,
  NR_wait4 = 61, NR_kill = 62, NR_rt_sigtimedwait = 128
};
static long sys4(long nr, long a, long b, long c, long d) {
  long ret;
  register long r10 __asm__("r10") = d;
  __asm__ volatile("syscall" : "=a"(ret) : "0"(nr), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
  return ret;
}
/* clone(flags, stack, parent_tid, child_tid, tls) on x86_64. */
#define FORK() sys4(NR_clone, 17 /* SIGCHLD */, 0, 0, 0)
__asm__(".text\n.global _start\n_start:\n  xor %rbp, %rbp\n  mov %rsp, %rdi\n  and $-16, %rsp\n"
        "  call init_main\n  hlt\n");
#elif defined(__aarch64__)
enum {
  NR_write = 64, NR_close = 57, NR_rt_sigprocmask = 135, NR_clone = 220, NR_execve = 221, NR_exit_group = 94,
  NR_wait4 = 260, NR_kill = 129, NR_rt_sigtimedwait = 137
};
static long sys4(long nr, long a, long b, long c, long d) {
  register long x8 __asm__("x8") = nr;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
  return x0;
}
#define FORK() sys4(NR_clone, 17 /* SIGCHLD */, 0, 0, 0)
__asm__(".text\n.global _start\n_start:\n  mov x0, sp\n  bl init_main\n  brk #0\n");
#else
#error "codemode-init: add this architecture's syscall numbers and entry point"
#endif

#define SIGCHLD_ 17
#define SIG_BLOCK_ 0
#define SIG_SETMASK_ 2
#define WNOHANG_ 1
#define EINTR_ 4
#define EAGAIN_ 11
#define ENOENT_ 2
#define ENOTDIR_ 20
#define EACCES_ 13

static unsigned long length(const char *s) {
  unsigned long n = 0;
  while (s[n])
    n++;
  return n;
}

static void say(const char *s) { sys4(NR_write, 2, (long)s, (long)length(s), 0); }

static __attribute__((noreturn)) void exit_with(long code) {
  for (;;)
    sys4(NR_exit_group, code, 0, 0, 0);
}

static const char *env_path(char **envp) {
  for (; *envp; envp++) {
    const char *e = *envp;
    if (e[0] == 'P' && e[1] == 'A' && e[2] == 'T' && e[3] == 'H' && e[4] == '=')
      return e + 5;
  }
  return "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
}

/* execvp's search: each $PATH entry in turn; EACCES remembered, the first other error ends it. */
static long exec_program(char **argv, char **envp) {
  const char *name = argv[0];
  for (const char *p = name; *p; p++)
    if (*p == '/')
      return -sys4(NR_execve, (long)name, (long)argv, (long)envp, 0);
  unsigned long nlen = length(name);
  long saved = ENOENT_;
  const char *path = env_path(envp);
  char buf[4096];
  while (1) {
    const char *end = path;
    while (*end && *end != ':')
      end++;
    unsigned long dlen = (unsigned long)(end - path);
    if (dlen + nlen + 2 <= sizeof(buf)) {
      unsigned long i = 0;
      if (dlen == 0)
        buf[i++] = '.';
      for (unsigned long k = 0; k < dlen; k++)
        buf[i++] = path[k];
      buf[i++] = '/';
      for (unsigned long k = 0; k < nlen; k++)
        buf[i++] = name[k];
      buf[i] = '\0';
      long e = -sys4(NR_execve, (long)buf, (long)argv, (long)envp, 0);
      if (e == EACCES_)
        saved = e;
      else if (e != ENOENT_ && e != ENOTDIR_)
        return e;
    }
    if (*end == '\0')
      return saved;
    path = end + 1;
  }
}

__attribute__((noreturn, used)) void init_main(long *sp) {
  long argc = sp[0];
  char **argv = (char **)(sp + 1);
  char **envp = argv + argc + 1;
  if (argc < 2) {
    say("codemode-init: no program to run\n");
    exit_with(127);
  }
  /* Every signal waits in the queue until we take it: none is lost between fork and wait, and
   * none has its (ignored, for pid 1) default action on us. */
  unsigned long all = ~0UL, none = 0, old = 0;
  sys4(NR_rt_sigprocmask, SIG_BLOCK_, (long)&all, (long)&old, 8);
  long child = FORK();
  if (child == 0) {
    sys4(NR_rt_sigprocmask, SIG_SETMASK_, (long)&none, 0, 8);
    /* codemode-run handed us our own image as fd 3 (our /proc/self/exe is that memfd): the
     * server gets none of it. */
    sys4(NR_close, 3, 0, 0, 0);
    long e = exec_program(argv + 1, envp);
    say("codemode-init: exec ");
    say(argv[1]);
    say(e == ENOENT_ ? ": not found\n" : e == EACCES_ ? ": permission denied\n" : ": failed\n");
    exit_with(e == ENOENT_ ? 127 : 126);
  }
  if (child < 0) {
    say("codemode-init: fork failed\n");
    exit_with(125);
  }
  sys4(NR_close, 3, 0, 0, 0);
  for (;;) {
    /* siginfo_t is 128 bytes; we only need the signal number (its first int). */
    int info[32];
    long sig = sys4(NR_rt_sigtimedwait, (long)&all, (long)info, 0, 8);
    if (sig < 0) {
      if (sig == -EINTR_ || sig == -EAGAIN_)
        continue;
      exit_with(125);
    }
    if (sig != SIGCHLD_) {
      /* The server's to handle (SIGTERM, SIGINT, SIGHUP, SIGUSR1…). */
      sys4(NR_kill, child, sig, 0, 0);
      continue;
    }
    for (;;) {
      int status = 0;
      long pid = sys4(NR_wait4, -1, (long)&status, WNOHANG_, 0);
      if (pid <= 0)
        break;
      if (pid == child) {
        int termsig = status & 0x7f;
        /* Exited: its code; killed: 128+N, as a shell reports it. Our own exit then ends the pid
         * namespace, and the kernel kills whatever the server left behind. */
        exit_with(termsig == 0 ? (status >> 8) & 0xff : 128 + termsig);
      }
    }
  }
}
