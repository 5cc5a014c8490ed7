/* Syscalls a seccomp profile does not know get ENOSYS, not its default action.
 *
 * A profile is written against some kernel: a syscall newer than all it names (clone3,
 * faccessat2, syscall(1000) on a kernel that may one day have it) would otherwise get the default
 * action, typically EPERM, and glibc only falls back to the older syscall on ENOSYS. So, as runc
 * does (its patchbpf), a stub in front of libseccomp's program answers ENOSYS to any syscall
 * number above the highest one the profile names for that architecture, and hands everything
 * else to the program unchanged. Not for a permissive default (allow, log, trace: a tracer is
 * expected to handle new syscalls itself), and only for the architectures the profile lists, as
 * runc 1.1.5. */
#include <seccomp.h>

#include "linux/seccomp.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdlib.h>
#include <string.h>

#define X32_SYSCALL_BIT 0x40000000u
#define MAX_ARCHES 16

struct arch_max {
  uint32_t audit_arch; /* what seccomp_data.arch holds */
  int64_t max, max_x32; /* highest syscall number named; -1: none (x86_64 and its x32 mode) */
};

static uint32_t arch_of_token(uint32_t token) {
  if (token == SCMP_ARCH_NATIVE)
    token = seccomp_arch_native();
  /* x32 syscalls arrive as x86_64 ones with bit 30 set in the number. */
  return token == SCMP_ARCH_X32 ? AUDIT_ARCH_X86_64 : token;
}

static struct arch_max *arch_slot(struct arch_max *a, size_t *n, uint32_t audit_arch) {
  for (size_t i = 0; i < *n; i++)
    if (a[i].audit_arch == audit_arch)
      return &a[i];
  if (*n == MAX_ARCHES)
    return NULL;
  a[*n] = (struct arch_max){.audit_arch = audit_arch, .max = -1, .max_x32 = -1};
  return &a[(*n)++];
}

struct insns {
  struct sock_filter *v;
  size_t n, cap;
};

static void emit(struct insns *p, uint16_t code, uint8_t jt, uint8_t jf, uint32_t k) {
  if (p->n == p->cap) {
    p->cap = p->cap ? p->cap * 2 : 64;
    p->v = realloc(p->v, p->cap * sizeof(*p->v));
    if (p->v == NULL)
      abort();
  }
  p->v[p->n++] = (struct sock_filter)BPF_JUMP(code, k, jt, jf);
}

#define RET_ENOSYS (SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA))

/* One architecture's section: numbers above its maximum get ENOSYS, the rest (and, for x86_64,
 * the other mode when the profile names none of its syscalls) go to the program. Each section
 * ends with its own "ja program", patched once the stub's length is known. */
static void emit_section(struct insns *p, const struct arch_max *a, size_t *ja_at, size_t *n_ja) {
  emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0, offsetof(struct seccomp_data, nr));
  if (a->audit_arch == AUDIT_ARCH_X86_64 && a->max >= 0 && a->max_x32 >= 0) {
    emit(p, BPF_JMP | BPF_JSET | BPF_K, 1, 0, X32_SYSCALL_BIT);   /* x32 → its own check */
    emit(p, BPF_JMP | BPF_JGT | BPF_K, 1, 2, (uint32_t)a->max);     /* → ENOSYS : program */
    emit(p, BPF_JMP | BPF_JGT | BPF_K, 0, 1, (uint32_t)a->max_x32); /* → ENOSYS : program */
  } else if (a->audit_arch == AUDIT_ARCH_X86_64 && a->max >= 0) {
    emit(p, BPF_JMP | BPF_JSET | BPF_K, 2, 0, X32_SYSCALL_BIT); /* x32: not ours to judge */
    emit(p, BPF_JMP | BPF_JGT | BPF_K, 0, 1, (uint32_t)a->max);
  } else if (a->audit_arch == AUDIT_ARCH_X86_64) {
    emit(p, BPF_JMP | BPF_JSET | BPF_K, 0, 2, X32_SYSCALL_BIT); /* x86_64 mode: not ours */
    emit(p, BPF_JMP | BPF_JGT | BPF_K, 0, 1, (uint32_t)a->max_x32);
  } else {
    if (a->audit_arch == AUDIT_ARCH_S390 || a->audit_arch == AUDIT_ARCH_S390X)
      /* s390 leaves a number its kernel does not know as 0 (the multiplexer): ENOSYS too. */
      emit(p, BPF_JMP | BPF_JEQ | BPF_K, 1, 0, 0);
    emit(p, BPF_JMP | BPF_JGT | BPF_K, 0, 1, (uint32_t)a->max);
  }
  emit(p, BPF_RET | BPF_K, 0, 0, RET_ENOSYS);
  ja_at[(*n_ja)++] = p->n;
  emit(p, BPF_JMP | BPF_JA, 0, 0, 0);
}

int seccomp_enosys_stub(const struct spec_seccomp *sc, uint32_t default_action, void **out, size_t *n_out,
                        struct cm_error **err) {
  *out = NULL;
  *n_out = 0;
  uint32_t kind = default_action & SECCOMP_RET_ACTION_FULL;
  if (kind == SECCOMP_RET_ALLOW || kind == SECCOMP_RET_LOG || kind == SECCOMP_RET_TRACE ||
      default_action == RET_ENOSYS)
    return 0;

  struct arch_max arches[MAX_ARCHES];
  size_t n_arches = 0;
  for (size_t i = 0; i < sc->architectures.count; i++) {
    uint32_t token = seccomp_arch_token(sc->architectures.items[i]);
    if (token == 0)
      continue; /* unknown to libseccomp: not in the program either, so killed as a bad arch */
    uint32_t native_token = token == SCMP_ARCH_NATIVE ? seccomp_arch_native() : token;
    struct arch_max *a = arch_slot(arches, &n_arches, arch_of_token(token));
    if (a == NULL)
      return cm_error_set(err, 0, "linux.seccomp.architectures: more than %d", MAX_ARCHES);
    int64_t *max = native_token == SCMP_ARCH_X32 ? &a->max_x32 : &a->max;
    for (size_t r = 0; r < sc->n_syscalls; r++) {
      const struct spec_strv *names = &sc->syscalls[r].names;
      for (size_t k = 0; k < names->count; k++) {
        /* Negative: a pseudo number for a syscall this architecture does not have. */
        int nr = seccomp_syscall_resolve_name_arch(native_token, names->items[k]);
        if (nr != __NR_SCMP_ERROR && nr >= 0 && nr > *max)
          *max = nr;
      }
    }
  }

  struct insns p = {0};
  size_t ja_at[MAX_ARCHES + 1], n_ja = 0;
  /* Dispatch: per architecture "jeq arch → ja section", then "ja program". Section offsets are
   * known only once the dispatch is laid out: 2 instructions per architecture, plus 2. */
  size_t n_used = 0;
  for (size_t i = 0; i < n_arches; i++)
    if (arches[i].max >= 0 || arches[i].max_x32 >= 0)
      arches[n_used++] = arches[i];
  if (n_used == 0)
    return 0; /* as runc: a profile naming no syscall of its architectures gets no stub */
  emit(&p, BPF_LD | BPF_W | BPF_ABS, 0, 0, offsetof(struct seccomp_data, arch));
  size_t dispatch_ja[MAX_ARCHES];
  for (size_t i = 0; i < n_used; i++) {
    emit(&p, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, arches[i].audit_arch);
    dispatch_ja[i] = p.n;
    emit(&p, BPF_JMP | BPF_JA, 0, 0, 0);
  }
  ja_at[n_ja++] = p.n;
  emit(&p, BPF_JMP | BPF_JA, 0, 0, 0);
  for (size_t i = 0; i < n_used; i++) {
    p.v[dispatch_ja[i]].k = (uint32_t)(p.n - dispatch_ja[i] - 1);
    emit_section(&p, &arches[i], ja_at, &n_ja);
  }
  /* Every "ja program" lands just past the stub, on the program's own first instruction. */
  for (size_t i = 0; i < n_ja; i++)
    p.v[ja_at[i]].k = (uint32_t)(p.n - ja_at[i] - 1);
  *out = p.v;
  *n_out = p.n;
  return 0;
}
