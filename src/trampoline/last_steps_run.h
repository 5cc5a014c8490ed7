/* The interpreter of last_steps.h's programs, shared by the exec trampoline and the runtime
 * (linux/last_steps.c). Freestanding; the includer defines, before including it,
 *   static long ls_syscall6(long nr, long a, long b, long c, long d, long e, long f);
 * returning -errno on failure. */
#ifndef CM_TRAMPOLINE_LAST_STEPS_RUN_H
#define CM_TRAMPOLINE_LAST_STEPS_RUN_H

#include "last_steps.h"

#if defined(__x86_64__)
enum { LS_NR_write = 1, LS_NR_getcwd = 79 };
#elif defined(__aarch64__)
enum { LS_NR_write = 64, LS_NR_getcwd = 17 };
#else
#error "last steps: add this architecture's write and getcwd numbers"
#endif

/* The errors the last steps can meet, named as the shell and Go do ("permission denied"). */
static const char *ls_errno_name(long e) {
  switch (e) {
  case 1: return "operation not permitted (EPERM)";
  case 2: return "no such file or directory (ENOENT)";
  case 7: return "argument list too long (E2BIG)";
  case 8: return "exec format error (ENOEXEC)";
  case 9: return "bad file descriptor (EBADF)";
  case 12: return "out of memory (ENOMEM)";
  case 13: return "permission denied (EACCES)";
  case 14: return "bad address (EFAULT)";
  case 20: return "not a directory (ENOTDIR)";
  case 22: return "invalid argument (EINVAL)";
  case 26: return "text file busy (ETXTBSY)";
  case 36: return "file name too long (ENAMETOOLONG)";
  case 38: return "function not implemented (ENOSYS)";
  case 40: return "too many levels of symbolic links (ELOOP)";
  default: return "error";
  }
}

/* Report a failure of `what` (with `detail` appended when not NULL), as the header says. */
static void ls_report_failure(const struct ls_header *h, const char *what, const char *detail, long err) {
  char buf[LS_SYNC_TEXT_OFF + 512] __attribute__((aligned(8)));
  unsigned long n = 0;
  if (h->report == LS_REPORT_SYNC) {
    for (unsigned long i = 0; i < LS_SYNC_TEXT_OFF; i++)
      buf[i] = 0;
    *(uint32_t *)buf = h->report_type;
    *(int64_t *)(buf + LS_SYNC_VALUE_OFF) = err;
    n = LS_SYNC_TEXT_OFF;
  } else {
    const char *p = "codemode: ";
    while (*p)
      buf[n++] = *p++;
  }
  const char *parts[3] = {what, detail, NULL};
  for (int k = 0; k < 2; k++)
    for (const char *p = parts[k]; p && *p && n < sizeof(buf) - 96; p++)
      buf[n++] = *p;
  if (h->report == LS_REPORT_SYNC) {
    buf[n++] = '\0';
  } else {
    const char *tail[3] = {": ", ls_errno_name(err), "\n"};
    for (int k = 0; k < 3; k++)
      for (const char *p = tail[k]; *p && n < sizeof(buf); p++)
        buf[n++] = *p;
  }
  ls_syscall6(LS_NR_write, h->report_fd, (long)buf, (long)n, 0, 0, 0);
}

/* Check the program and turn its offsets into addresses (in place, once). 0, or -1 when it is not
 * one of ours. */
static int ls_load(unsigned char *prog, unsigned long len) {
  struct ls_header *h = (struct ls_header *)prog;
  if (len < sizeof(*h) || h->magic != LS_MAGIC || h->size != len || h->data_off > len ||
      (unsigned long)h->n_steps * sizeof(struct ls_step) + (unsigned long)h->n_relocs * 4 + sizeof(*h) >
          h->data_off)
    return -1;
  unsigned char *data = prog + h->data_off;
  unsigned long data_len = len - h->data_off;
  struct ls_step *steps = (struct ls_step *)(prog + sizeof(*h));
  const uint32_t *relocs = (const uint32_t *)(steps + h->n_steps);
  for (uint32_t r = 0; r < h->n_relocs; r++) {
    if ((unsigned long)relocs[r] + 8 > data_len)
      return -1;
    uint64_t *field = (uint64_t *)(data + relocs[r]);
    if (*field > data_len)
      return -1;
    *field += (uint64_t)(unsigned long)data;
  }
  for (uint32_t i = 0; i < h->n_steps; i++) {
    if (steps[i].label >= data_len)
      return -1;
    for (int a = 0; a < 6; a++) {
      if (!(steps[i].flags & LS_ARG_DATA(a)))
        continue;
      if (steps[i].args[a] > data_len)
        return -1;
      steps[i].args[a] += (uint64_t)(unsigned long)data;
    }
  }
  return 0;
}

/* Run the steps of a loaded program. 0, or -1 after reporting the failed step. */
static int ls_run(const unsigned char *prog) {
  const struct ls_header *h = (const struct ls_header *)prog;
  const char *data = (const char *)prog + h->data_off;
  const struct ls_step *steps = (const struct ls_step *)(prog + sizeof(*h));
  for (uint32_t i = 0; i < h->n_steps; i++) {
    const struct ls_step *s = &steps[i];
    const uint64_t *a = s->args;
    long r;
    if (s->op == LS_OP_CHECK_CWD) {
      char cwd[4096];
      r = ls_syscall6(LS_NR_getcwd, (long)cwd, sizeof(cwd), 0, 0, 0, 0);
      if (r == -34) /* ERANGE: longer than PATH_MAX, which we cannot tell from unreachable */
        r = -36;
      else if (r >= 0 && cwd[0] != '/')
        r = -2;
    } else {
      r = ls_syscall6(s->nr, (long)a[0], (long)a[1], (long)a[2], (long)a[3], (long)a[4], (long)a[5]);
    }
    if (r < 0 && -r != s->ok_errno && !(s->flags & LS_IGNORE_FAILURE)) {
      ls_report_failure(h, data + s->label, 0, -r);
      return -1;
    }
  }
  return 0;
}

#endif
