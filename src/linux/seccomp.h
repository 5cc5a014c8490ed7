/* linux.seccomp → a BPF program (libseccomp). Compiled by the runtime before the container
 * starts, so a bad profile fails `create` clearly; loaded last, just before execve. */
#ifndef CM_LINUX_SECCOMP_H
#define CM_LINUX_SECCOMP_H
#include <stddef.h>
#include <stdbool.h>
#include "spec/spec.h"
#include "util/error.h"

struct seccomp_program {
  void *bpf;       /* struct sock_filter[] */
  size_t n_insns;
  unsigned flags;  /* SECCOMP_FILTER_FLAG_* to pass to seccomp(2) */
  bool notify;     /* has SCMP_ACT_NOTIFY rules: load returns a listener fd */
};
int seccomp_compile(const struct spec_seccomp *sc, struct seccomp_program *out, struct cm_error **err);
/* Load with seccomp(SECCOMP_SET_MODE_FILTER). Returns the notify fd (>= 0) when prog->notify,
 * else 0; -1 on error. */
int seccomp_load(const struct seccomp_program *prog, struct cm_error **err);
void seccomp_program_free(struct seccomp_program *prog);
#endif
