/* codemode-exec-trampoline: the last program a container process runs before its own.
 *
 * Usage (never by hand): exec-trampoline PATH ARGV0 ARGV1 ...  → execve(PATH, [ARGV0, ...], envp)
 *
 * Why it exists (CVE-2019-5736, see src/linux/exec_trampoline.h): the runtime's container
 * processes are forks of the runtime binary; if one execve'd the user's program directly and that
 * program were `#!/proc/self/exe`, the kernel would run the runtime binary again inside the
 * container, where the container could grab it through /proc/PID/exe and overwrite it. The
 * runtime therefore execs this program from a sealed memfd, and only this program execs the
 * user's: /proc/self/exe is then the sealed copy of these few hundred bytes.
 *
 * Built freestanding (no libc, static, no dynamic loader): its whole run is one execve, so it
 * costs about as much as the kernel's ELF load of two pages, and it makes no syscall a seccomp
 * filter that allows the container to start would deny (only execve, then write + exit_group
 * when that fails). */

#if defined(__x86_64__)
enum { NR_write = 1, NR_execve = 59, NR_exit_group = 231 };
static long sys3(long nr, long a, long b, long c) {
  long ret;
  __asm__ volatile("syscall" : "=a"(ret) : "0"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
  return ret;
}
/* The kernel starts us with argc at (%rsp); the ABI wants a 16-byte aligned stack at the call. */
__asm__(".text\n.global _start\n_start:\n  xor %rbp, %rbp\n  mov %rsp, %rdi\n  and $-16, %rsp\n"
        "  call trampoline_main\n  hlt\n");
#elif defined(__aarch64__)
enum { NR_write = 64, NR_execve = 221, NR_exit_group = 94 };
static long sys3(long nr, long a, long b, long c) {
  register long x8 __asm__("x8") = nr;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
  return x0;
}
__asm__(".text\n.global _start\n_start:\n  mov x0, sp\n  bl trampoline_main\n  brk #0\n");
#else
#error "exec trampoline: add this architecture's syscall numbers and entry point"
#endif

static unsigned long length(const char *s) {
  unsigned long n = 0;
  while (s[n])
    n++;
  return n;
}

static void say(const char *s) { sys3(NR_write, 2, (long)s, (long)length(s)); }

/* The errors execve can give once the runtime has already checked that PATH exists and is an
 * executable regular file. */
static const char *errno_name(long e) {
  switch (e) {
  case 1: return "operation not permitted (EPERM)";
  case 2: return "no such file or directory (ENOENT)";
  case 7: return "argument list too long (E2BIG)";
  case 8: return "exec format error (ENOEXEC)";
  case 12: return "out of memory (ENOMEM)";
  case 13: return "permission denied (EACCES)";
  case 20: return "not a directory (ENOTDIR)";
  case 22: return "invalid argument (EINVAL)";
  case 26: return "text file busy (ETXTBSY)";
  case 40: return "too many levels of symbolic links (ELOOP)";
  default: return "error";
  }
}

__attribute__((noreturn, used)) void trampoline_main(long *sp) {
  long argc = sp[0];
  char **argv = (char **)(sp + 1);
  char **envp = argv + argc + 1;
  long err = 22; /* EINVAL: run without a PATH */
  if (argc >= 2)
    err = -sys3(NR_execve, (long)argv[0], (long)(argv + 1), (long)envp);
  /* The runtime that started us is gone (it saw our execve): the container's stderr is the only
   * place left for the reason; 127 is the shell's "could not run". */
  say("codemode: exec ");
  say(argc >= 1 ? argv[0] : "(no path)");
  say(": ");
  say(errno_name(err));
  say("\n");
  for (;;)
    sys3(NR_exit_group, 127, 0, 0);
}
