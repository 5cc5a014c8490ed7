/* codemode-exec-trampoline: the last program a container process runs before its own.
 *
 * Usage (never by hand): exec-trampoline FD:OFFSET PATH ARGV0 ARGV1 ...
 *   reads the last-steps program (last_steps.h) at OFFSET of FD (the sealed memfd it was itself
 *   exec'd from), closes FD, runs the steps (credentials, no_new_privs, seccomp filters), then
 *   execve(PATH, [ARGV0, ...], envp).
 *
 * Why it exists (CVE-2019-5736, see src/linux/exec_trampoline.h): the runtime's container
 * processes are forks of the runtime binary; if one execve'd the user's program directly and that
 * program were `#!/proc/self/exe`, the kernel would run the runtime binary again inside the
 * container, where the container could grab it through /proc/PID/exe and overwrite it. The
 * runtime therefore execs this program from a sealed memfd, and only this program execs the
 * user's: /proc/self/exe is then the sealed copy of these few kilobytes.
 *
 * It is exec'd as the container's root, before the credentials change, so that its own execve
 * changes nothing the user's program gets (last_steps.h says why); the runtime makes that execve
 * non-dumpable (linux/exec_trampoline.c), so nothing in the container can attach to us while we
 * still hold root's capabilities and no filter.
 *
 * Built freestanding (no libc, static, no dynamic loader). Its syscalls: pread64, close, the
 * steps, execve; write + exit_group when something fails. After the seccomp filters (the last
 * steps, except a final capset when loading them needed CAP_SYS_ADMIN) comes only execve. */
#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__)
enum { NR_pread64 = 17, NR_close = 3, NR_execve = 59, NR_exit_group = 231 };
static long ls_syscall6(long nr, long a, long b, long c, long d, long e, long f) {
  long ret;
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "0"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return ret;
}
/* The kernel starts us with argc at (%rsp); the ABI wants a 16-byte aligned stack at the call. */
__asm__(".text\n.global _start\n_start:\n  xor %rbp, %rbp\n  mov %rsp, %rdi\n  and $-16, %rsp\n"
        "  call trampoline_main\n  hlt\n");
#elif defined(__aarch64__)
enum { NR_pread64 = 67, NR_close = 57, NR_execve = 221, NR_exit_group = 94 };
static long ls_syscall6(long nr, long a, long b, long c, long d, long e, long f) {
  register long x8 __asm__("x8") = nr;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  register long x4 __asm__("x4") = e;
  register long x5 __asm__("x5") = f;
  __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5) : "memory");
  return x0;
}
__asm__(".text\n.global _start\n_start:\n  mov x0, sp\n  bl trampoline_main\n  brk #0\n");
#else
#error "exec trampoline: add this architecture's syscall numbers and entry point"
#endif

#include "last_steps_run.h"

/* The program lands here; bss costs nothing until touched. */
static unsigned char program[LS_MAX_SIZE] __attribute__((aligned(16)));

static __attribute__((noreturn)) void die(void) {
  /* 127 is the shell's "could not run". */
  for (;;)
    ls_syscall6(NR_exit_group, 127, 0, 0, 0, 0, 0);
}

/* Without a program we cannot know where errors go: the container's stderr is all there is. */
static __attribute__((noreturn)) void die_bad_program(const char *why) {
  struct ls_header h = {.report = LS_REPORT_TEXT, .report_fd = 2};
  ls_report_failure(&h, "exec trampoline: ", why, 22);
  die();
}

static int parse_ulong(const char **s, char end, unsigned long *out) {
  unsigned long v = 0;
  const char *p = *s;
  if (*p < '0' || *p > '9')
    return -1;
  for (; *p >= '0' && *p <= '9'; p++)
    v = v * 10 + (unsigned long)(*p - '0');
  if (*p != end)
    return -1;
  *s = p + 1;
  *out = v;
  return 0;
}

static long pread_all(long fd, unsigned char *buf, unsigned long len, unsigned long off) {
  unsigned long done = 0;
  while (done < len) {
    long n = ls_syscall6(NR_pread64, fd, (long)(buf + done), (long)(len - done), (long)(off + done), 0, 0);
    if (n == -4) /* EINTR */
      continue;
    if (n <= 0)
      return n < 0 ? n : -5;
    done += (unsigned long)n;
  }
  return 0;
}

__attribute__((noreturn, used)) void trampoline_main(long *sp) {
  long argc = sp[0];
  char **argv = (char **)(sp + 1);
  char **envp = argv + argc + 1;
  unsigned long fd, off;
  const char *where = argc >= 3 ? argv[0] : "";
  if (argc < 3 || parse_ulong(&where, ':', &fd) < 0 || parse_ulong(&where, '\0', &off) < 0)
    die_bad_program("usage: FD:OFFSET PATH ARGV0...");
  struct ls_header *h = (struct ls_header *)program;
  if (pread_all((long)fd, program, sizeof(*h), off) < 0 || h->magic != LS_MAGIC || h->size < sizeof(*h) ||
      h->size > sizeof(program) ||
      pread_all((long)fd, program + sizeof(*h), h->size - sizeof(*h), off + sizeof(*h)) < 0)
    die_bad_program("cannot read its program");
  ls_syscall6(NR_close, (long)fd, 0, 0, 0, 0, 0);
  if (ls_load(program, h->size) < 0)
    die_bad_program("malformed program");
  if (ls_run(program) < 0)
    die();
  long err = -ls_syscall6(NR_execve, (long)argv[1], (long)(argv + 2), (long)envp, 0, 0, 0);
  /* The runtime that started us may be gone (it saw our execve): the report goes where the
   * program says, the container's stderr or the `exec` that waits for us. */
  ls_report_failure(h, "exec ", argv[1], err);
  die();
}
