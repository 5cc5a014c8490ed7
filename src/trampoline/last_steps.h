/* The last steps: the syscalls between a container process's setup and its program, as one
 * position-independent program that the exec trampoline (exec_trampoline.c) runs after its own
 * execve, or the runtime runs in place when it execs the program directly.
 *
 * Why a program and not code in the runtime: the trampoline's execve must not change what the
 * user's program ends up with. A process that switched to a non-root user before the
 * trampoline's execve would lose every capability there that is not ambient, so the user's
 * execve would be checked without them (a 0744 binary and CAP_DAC_OVERRIDE, issue 14) and the
 * credentials would differ from one execve from init. So init execs the trampoline while still
 * the container's root, and the credential changes (bounding set, groups, gid, uid, capability
 * sets, no_new_privs), then the seccomp filters, happen in the trampoline, right before the one
 * execve that matters: the filter is then followed by nothing but that execve.
 *
 * The format (all offsets in bytes; everything native-endian, written and read on one machine):
 *   struct ls_header | struct ls_step[n_steps] | uint32_t reloc[n_relocs] | data
 * A step is one syscall (or LS_OP_CHECK_CWD) with six arguments; an argument flagged
 * LS_ARG_DATA(i) is an offset into data, turned into an address before the call. A reloc names a
 * uint64_t inside data that holds a data offset to turn into an address the same way (the filter
 * pointer inside a struct sock_fprog). A step's label (a data offset of a NUL-terminated string)
 * names it in the error when it fails.
 *
 * Freestanding: the trampoline includes it with no libc, the runtime too (linux/last_steps.c).
 * The interpreter is last_steps_run.h. */
#ifndef CM_TRAMPOLINE_LAST_STEPS_H
#define CM_TRAMPOLINE_LAST_STEPS_H

#include <stddef.h>
#include <stdint.h>

#define LS_MAGIC 0x314c4d43u /* "CML1" */
/* Two filters of the kernel's 4096-instruction maximum, plus steps and labels. */
#define LS_MAX_SIZE (80 * 1024)

enum ls_op {
  LS_OP_SYSCALL = 0,
  /* getcwd must name a path inside our root: a cwd reached through a leaked fd of the host gives
   * "(unreachable)/..." or ENOENT (CVE-2024-21626 class). */
  LS_OP_CHECK_CWD = 1,
};

#define LS_ARG_DATA(i) (1u << (i))
#define LS_IGNORE_FAILURE (1u << 8) /* a failure is not an error (ambient raises, fd flags) */

struct ls_step {
  uint16_t op;
  uint16_t flags;
  uint16_t ok_errno; /* an errno that counts as success (0: none) */
  uint16_t reserved;
  uint32_t nr;
  uint32_t label;
  uint64_t args[6];
};

enum ls_report {
  LS_REPORT_TEXT = 0, /* "codemode: <label>: <reason>\n" on report_fd (the container's stderr) */
  LS_REPORT_SYNC = 1, /* one util/sync.h message {type = report_type, value = errno, text = label} */
};

struct ls_header {
  uint32_t magic;
  uint32_t size;
  uint32_t n_steps;
  uint32_t n_relocs;
  uint32_t data_off;
  uint32_t report;      /* enum ls_report */
  int32_t report_fd;
  uint32_t report_type; /* SYNC_ERROR, for LS_REPORT_SYNC */
};

/* util/sync.h's struct sync_msg, as the runtime lays it out (checked there at compile time). */
#define LS_SYNC_VALUE_OFF 8
#define LS_SYNC_TEXT_OFF 16

#endif
