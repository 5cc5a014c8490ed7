/* linux.seccomp → classic BPF with libseccomp, loaded with seccomp(2) ourselves so the runtime
 * can compile (and reject) a profile before the container exists and the child only has to do
 * one syscall just before execve. */
/* libseccomp first: its seccomp_load prototype must be seen before our 2-argument macro. */
#include <seccomp.h>

#include "linux/seccomp.h"

#include <ctype.h>
#include <errno.h>
#include <linux/filter.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "linux/last_steps.h"
#include "util/cleanup.h"
#include "util/log.h"

/* Older uapi headers lack the newer flags; the values are kernel ABI. */
#ifndef SECCOMP_FILTER_FLAG_TSYNC
#define SECCOMP_FILTER_FLAG_TSYNC (1UL << 0)
#endif
#ifndef SECCOMP_FILTER_FLAG_LOG
#define SECCOMP_FILTER_FLAG_LOG (1UL << 1)
#endif
#ifndef SECCOMP_FILTER_FLAG_SPEC_ALLOW
#define SECCOMP_FILTER_FLAG_SPEC_ALLOW (1UL << 2)
#endif
#ifndef SECCOMP_FILTER_FLAG_NEW_LISTENER
#define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#endif
#ifndef SECCOMP_FILTER_FLAG_TSYNC_ESRCH
#define SECCOMP_FILTER_FLAG_TSYNC_ESRCH (1UL << 4)
#endif
#ifndef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (1UL << 5)
#endif
#ifndef SECCOMP_SET_MODE_FILTER
#define SECCOMP_SET_MODE_FILTER 1
#endif
#ifndef BPF_MAXINSNS
#define BPF_MAXINSNS 4096
#endif

static void seccomp_ctx_releasep(scmp_filter_ctx *ctx) {
  if (*ctx)
    seccomp_release(*ctx);
  *ctx = NULL;
}
#define cleanup_seccomp __attribute__((cleanup(seccomp_ctx_releasep)))

static const char *action_name(enum spec_seccomp_action a) {
  switch (a) {
  case SPEC_SECCOMP_KILL: return "SCMP_ACT_KILL";
  case SPEC_SECCOMP_KILL_PROCESS: return "SCMP_ACT_KILL_PROCESS";
  case SPEC_SECCOMP_KILL_THREAD: return "SCMP_ACT_KILL_THREAD";
  case SPEC_SECCOMP_TRAP: return "SCMP_ACT_TRAP";
  case SPEC_SECCOMP_ERRNO: return "SCMP_ACT_ERRNO";
  case SPEC_SECCOMP_TRACE: return "SCMP_ACT_TRACE";
  case SPEC_SECCOMP_ALLOW: return "SCMP_ACT_ALLOW";
  case SPEC_SECCOMP_LOG: return "SCMP_ACT_LOG";
  case SPEC_SECCOMP_NOTIFY: return "SCMP_ACT_NOTIFY";
  }
  return "?";
}

static int action_value(enum spec_seccomp_action a, bool has_errno, uint32_t errno_ret, uint32_t *out,
                        struct cm_error **err) {
  /* Like runc: ERRNO and TRACE without errnoRet answer EPERM. */
  uint32_t e = has_errno ? errno_ret : EPERM;
  switch (a) {
  case SPEC_SECCOMP_KILL:
  case SPEC_SECCOMP_KILL_THREAD: *out = SCMP_ACT_KILL_THREAD; return 0;
  case SPEC_SECCOMP_KILL_PROCESS: *out = SCMP_ACT_KILL_PROCESS; return 0;
  case SPEC_SECCOMP_TRAP: *out = SCMP_ACT_TRAP; return 0;
  case SPEC_SECCOMP_ERRNO: *out = SCMP_ACT_ERRNO(e); return 0;
  case SPEC_SECCOMP_TRACE: *out = SCMP_ACT_TRACE(e); return 0;
  case SPEC_SECCOMP_ALLOW: *out = SCMP_ACT_ALLOW; return 0;
  case SPEC_SECCOMP_LOG: *out = SCMP_ACT_LOG; return 0;
  case SPEC_SECCOMP_NOTIFY: *out = SCMP_ACT_NOTIFY; return 0;
  }
  return cm_error_set(err, 0, "linux.seccomp: unknown action %d", (int)a);
}

static enum scmp_compare compare_op(enum spec_seccomp_op op) {
  switch (op) {
  case SPEC_SECCOMP_OP_NE: return SCMP_CMP_NE;
  case SPEC_SECCOMP_OP_LT: return SCMP_CMP_LT;
  case SPEC_SECCOMP_OP_LE: return SCMP_CMP_LE;
  case SPEC_SECCOMP_OP_EQ: return SCMP_CMP_EQ;
  case SPEC_SECCOMP_OP_GE: return SCMP_CMP_GE;
  case SPEC_SECCOMP_OP_GT: return SCMP_CMP_GT;
  case SPEC_SECCOMP_OP_MASKED_EQ: return SCMP_CMP_MASKED_EQ;
  }
  return _SCMP_CMP_MIN; /* invalid: libseccomp rejects it */
}

uint32_t seccomp_arch_token(const char *name) {
  const char *prefix = "SCMP_ARCH_";
  if (strncmp(name, prefix, strlen(prefix)) == 0)
    name += strlen(prefix);
  char lower[32];
  size_t i = 0;
  for (; name[i] && i < sizeof(lower) - 1; i++)
    lower[i] = (char)tolower((unsigned char)name[i]);
  if (name[i])
    return 0;
  lower[i] = '\0';
  return seccomp_arch_resolve_name(lower);
}

static int parse_flags(const struct spec_strv *flags, unsigned *out, struct cm_error **err) {
  static const struct {
    const char *name;
    unsigned value;
  } known[] = {
      {"SECCOMP_FILTER_FLAG_TSYNC", SECCOMP_FILTER_FLAG_TSYNC},
      {"SECCOMP_FILTER_FLAG_LOG", SECCOMP_FILTER_FLAG_LOG},
      {"SECCOMP_FILTER_FLAG_SPEC_ALLOW", SECCOMP_FILTER_FLAG_SPEC_ALLOW},
      {"SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV", SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV},
  };
  *out = 0;
  for (size_t i = 0; i < flags->count; i++) {
    size_t k = 0;
    for (; k < sizeof(known) / sizeof(known[0]); k++)
      if (strcmp(flags->items[i], known[k].name) == 0)
        break;
    if (k == sizeof(known) / sizeof(known[0]))
      return cm_error_set(err, 0, "linux.seccomp.flags: unsupported flag %s", flags->items[i]);
    *out |= known[k].value;
  }
  return 0;
}

static int add_architectures(scmp_filter_ctx ctx, const struct spec_strv *archs, struct cm_error **err) {
  for (size_t i = 0; i < archs->count; i++) {
    uint32_t token = seccomp_arch_token(archs->items[i]);
    if (token == 0) {
      /* Syscalls from an architecture not in the filter hit the bad-arch action (kill), so
       * skipping one we cannot name only makes the filter stricter. */
      cm_warn("linux.seccomp: architecture %s is unknown to libseccomp %u.%u; its syscalls will be killed",
              archs->items[i], seccomp_version()->major, seccomp_version()->minor);
      continue;
    }
    int rc = seccomp_arch_add(ctx, token);
    if (rc < 0 && rc != -EEXIST)
      return cm_error_set(err, -rc, "linux.seccomp: add architecture %s", archs->items[i]);
  }
  return 0;
}

static bool args_share_an_index(const struct spec_seccomp_syscall *sc) {
  for (size_t i = 0; i < sc->n_args; i++)
    for (size_t j = i + 1; j < sc->n_args; j++)
      if (sc->args[i].index == sc->args[j].index)
        return true;
  return false;
}

static int add_syscall_rule(scmp_filter_ctx ctx, uint32_t action, const char *name,
                            const struct spec_seccomp_syscall *sc, struct cm_error **err) {
  int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR) {
    /* A profile written for a newer kernel/libseccomp names syscalls we cannot: runc skips them. */
    cm_debug("linux.seccomp: unknown syscall %s skipped", name);
    return 0;
  }
  struct scmp_arg_cmp cmps[6];
  if (sc->n_args > 6 && !args_share_an_index(sc))
    return cm_error_set(err, 0, "linux.seccomp: %s: more than 6 argument conditions", name);
  for (size_t i = 0; i < sc->n_args && i < 6; i++)
    if (sc->args[i].index > 5)
      return cm_error_set(err, 0, "linux.seccomp: %s: argument index %u out of range 0..5", name,
                          sc->args[i].index);

  int rc = 0;
  if (sc->n_args == 0) {
    rc = seccomp_rule_add_array(ctx, action, nr, 0, NULL);
  } else if (args_share_an_index(sc)) {
    /* Conditions on one argument can't all hold at once: runc and crun read them as OR, one rule
     * each. */
    for (size_t i = 0; i < sc->n_args && rc == 0; i++) {
      const struct spec_seccomp_arg *a = &sc->args[i];
      if (a->index > 5)
        return cm_error_set(err, 0, "linux.seccomp: %s: argument index %u out of range 0..5", name, a->index);
      struct scmp_arg_cmp one = {a->index, compare_op(a->op), a->value, a->value_two};
      rc = seccomp_rule_add_array(ctx, action, nr, 1, &one);
    }
  } else {
    /* Conditions on different arguments must all hold (AND). For MASKED_EQ, value is the mask
     * and valueTwo the expected result, as libseccomp's datum_a/datum_b. */
    for (size_t i = 0; i < sc->n_args; i++) {
      const struct spec_seccomp_arg *a = &sc->args[i];
      cmps[i] = (struct scmp_arg_cmp){a->index, compare_op(a->op), a->value, a->value_two};
    }
    rc = seccomp_rule_add_array(ctx, action, nr, (unsigned)sc->n_args, cmps);
  }
  if (rc < 0)
    return cm_error_set(err, -rc, "linux.seccomp: add rule %s for %s", action_name(sc->action), name);
  return 0;
}

/* libseccomp writes the program to an fd; read it back into memory. */
static int export_bpf(scmp_filter_ctx ctx, struct seccomp_program *out, struct cm_error **err);
int seccomp_program_export(void *ctx, struct seccomp_program *out, struct cm_error **err) {
  return export_bpf((scmp_filter_ctx)ctx, out, err);
}

static int export_bpf(scmp_filter_ctx ctx, struct seccomp_program *out, struct cm_error **err) {
#if SCMP_VER_MAJOR > 2 || (SCMP_VER_MAJOR == 2 && SCMP_VER_MINOR >= 6)
  size_t len = 0;
  int rc = seccomp_export_bpf_mem(ctx, NULL, &len);
  if (rc < 0)
    return cm_error_set(err, -rc, "linux.seccomp: export BPF");
  void *buf = malloc(len ? len : 1);
  if (buf == NULL)
    return cm_error_set(err, ENOMEM, "linux.seccomp: export BPF");
  rc = seccomp_export_bpf_mem(ctx, buf, &len);
  if (rc < 0) {
    free(buf);
    return cm_error_set(err, -rc, "linux.seccomp: export BPF");
  }
#else
  cleanup_close int fd = memfd_create("codemode-seccomp", MFD_CLOEXEC);
  if (fd < 0)
    return cm_error_set(err, errno, "linux.seccomp: memfd_create");
  int rc = seccomp_export_bpf(ctx, fd);
  if (rc < 0)
    return cm_error_set(err, -rc, "linux.seccomp: export BPF");
  off_t end = lseek(fd, 0, SEEK_END);
  if (end < 0 || lseek(fd, 0, SEEK_SET) < 0)
    return cm_error_set(err, errno, "linux.seccomp: read back BPF");
  size_t len = (size_t)end;
  char *buf = malloc(len ? len : 1);
  if (buf == NULL)
    return cm_error_set(err, ENOMEM, "linux.seccomp: export BPF");
  size_t got = 0;
  while (got < len) {
    ssize_t n = read(fd, buf + got, len - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      int e = n < 0 ? errno : EIO;
      free(buf);
      return cm_error_set(err, e, "linux.seccomp: read back BPF");
    }
    got += (size_t)n;
  }
#endif
  if (len % sizeof(struct sock_filter) != 0) {
    free(buf);
    return cm_error_set(err, 0, "linux.seccomp: BPF of odd size %zu", len);
  }
  out->bpf = buf;
  out->n_insns = len / sizeof(struct sock_filter);
  return 0;
}

/* seccomp_enosys.c's stub in front of the program libseccomp made. */
static int prepend_enosys_stub(const struct spec_seccomp *sc, uint32_t default_action, struct seccomp_program *prog,
                               struct cm_error **err) {
  void *stub;
  size_t n;
  if (seccomp_enosys_stub(sc, default_action, &stub, &n, err) < 0) {
    seccomp_program_free(prog);
    return -1;
  }
  if (n == 0)
    return 0;
  size_t insn = sizeof(struct sock_filter);
  char *all = malloc((n + prog->n_insns) * insn);
  if (all == NULL)
    abort();
  memcpy(all, stub, n * insn);
  memcpy(all + n * insn, prog->bpf, prog->n_insns * insn);
  free(stub);
  free(prog->bpf);
  prog->bpf = all;
  prog->n_insns += n;
  return 0;
}

int seccomp_compile(const struct spec_seccomp *sc, struct seccomp_program *out, struct cm_error **err) {
  memset(out, 0, sizeof(*out));
  if (sc == NULL || !sc->present)
    return 0; /* n_insns == 0: seccomp_load does nothing */

  uint32_t default_action;
  if (action_value(sc->default_action, sc->has_default_errno_ret, sc->default_errno_ret, &default_action,
                   err) < 0)
    return -1;
  /* Every unmatched syscall would wait for an agent, including the runtime's own last steps. */
  if (sc->default_action == SPEC_SECCOMP_NOTIFY)
    return cm_error_set(err, 0, "linux.seccomp: SCMP_ACT_NOTIFY cannot be the default action");
  unsigned flags;
  if (parse_flags(&sc->flags, &flags, err) < 0)
    return -1;

  cleanup_seccomp scmp_filter_ctx ctx = seccomp_init(default_action);
  if (ctx == NULL)
    return cm_error_set(err, EINVAL, "linux.seccomp: seccomp_init(%s)", action_name(sc->default_action));
  if (add_architectures(ctx, &sc->architectures, err) < 0)
    return -1;

  bool notify = false;
  for (size_t i = 0; i < sc->n_syscalls; i++) {
    const struct spec_seccomp_syscall *rule = &sc->syscalls[i];
    uint32_t action;
    if (action_value(rule->action, rule->has_errno_ret, rule->errno_ret, &action, err) < 0)
      return -1;
    if (action == default_action) {
      /* libseccomp refuses a rule that repeats the default; it would change nothing anyway. */
      cm_debug("linux.seccomp: rule %zu has the default action; skipped", i);
      continue;
    }
    for (size_t n = 0; n < rule->names.count; n++)
      if (add_syscall_rule(ctx, action, rule->names.items[n], rule, err) < 0)
        return -1;
    if (rule->action == SPEC_SECCOMP_NOTIFY && rule->names.count > 0)
      notify = true;
  }

  if (export_bpf(ctx, out, err) < 0)
    return -1;
  if (prepend_enosys_stub(sc, default_action, out, err) < 0)
    return -1;
  /* Fail `create`, not the container's init, when the kernel would refuse the program. */
  if (out->n_insns > BPF_MAXINSNS) {
    size_t n = out->n_insns;
    seccomp_program_free(out);
    return cm_error_set(err, 0,
                        "linux.seccomp: the filter has %zu instructions, more than the kernel's limit of %d",
                        n, BPF_MAXINSNS);
  }
  out->flags = flags;
  out->notify = notify;
  return 0;
}

int seccomp_program_load(const struct seccomp_program *prog, struct cm_error **err) {
  if (prog->n_insns == 0)
    return 0;
  struct sock_fprog fprog = {
      .len = (unsigned short)prog->n_insns,
      .filter = (struct sock_filter *)prog->bpf,
  };
  unsigned long flags = prog->flags;
  if (prog->notify) {
    flags |= SECCOMP_FILTER_FLAG_NEW_LISTENER;
    /* The kernel refuses TSYNC with NEW_LISTENER unless a thread-sync failure reports ESRCH
     * instead of a tid (the return value is the listener fd). */
    if (flags & SECCOMP_FILTER_FLAG_TSYNC)
      flags |= SECCOMP_FILTER_FLAG_TSYNC_ESRCH;
  }
  long rc = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &fprog);
  if (rc < 0) {
    if (errno == EACCES)
      return cm_error_set(err, errno,
                          "linux.seccomp: load filter (needs no_new_privs or CAP_SYS_ADMIN at this point)");
    return cm_error_set(err, errno, "linux.seccomp: load filter (flags 0x%lx)", flags);
  }
  if (prog->notify)
    return (int)rc;
  if (rc > 0) /* TSYNC: a thread that could not be synchronized */
    return cm_error_set(err, 0, "linux.seccomp: thread %ld could not be synchronized to the filter", rc);
  return 0;
}

void seccomp_emit_load(struct last_steps *ls, const struct seccomp_program *prog, const char *what) {
  /* The program, then a struct sock_fprog pointing at it (a reloc: the pointer is filled in when
   * the last-steps program runs, wherever it was loaded). */
  uint32_t insns = last_steps_data(ls, prog->bpf, prog->n_insns * sizeof(struct sock_filter));
  struct {
    uint16_t len;
    uint16_t pad[3];
    uint64_t filter;
  } fprog = {.len = (uint16_t)prog->n_insns, .filter = insns};
  _Static_assert(sizeof(fprog) == sizeof(struct sock_fprog) && offsetof(struct sock_fprog, filter) == 8,
                 "struct sock_fprog layout");
  uint32_t at = last_steps_data(ls, &fprog, sizeof(fprog));
  last_steps_reloc(ls, at + 8);
  unsigned long flags = prog->flags;
  last_steps_syscall(ls, SYS_seccomp, LS_ARG_DATA(2), (uint64_t[6]){SECCOMP_SET_MODE_FILTER, flags, at},
                     "%slinux.seccomp: load filter (flags 0x%lx)", what, flags);
}

void seccomp_program_free(struct seccomp_program *prog) {
  if (prog == NULL)
    return;
  free(prog->bpf);
  memset(prog, 0, sizeof(*prog));
}
