/* linux.seccomp → a BPF program (libseccomp). Compiled by the runtime before the container
 * starts, so a bad profile fails `create` clearly; loaded last, just before execve.
 *
 * Load order: with process.noNewPrivileges, load after no_new_privs_apply and after caps_apply
 * (nothing privileged is left to do). Without it, seccomp(2) needs CAP_SYS_ADMIN, so load while
 * still privileged, before caps_apply drops it — the filter then also applies to the remaining
 * setup syscalls (capset, prctl, close_range, chdir, the sync write, execve), which a strict
 * profile must allow. A NOTIFY filter blocks any notified syscall until an agent answers the
 * listener fd: hand the fd over with syscalls the profile does not notify. */
#ifndef CM_LINUX_SECCOMP_H
#define CM_LINUX_SECCOMP_H
#include "spec/spec.h"
#include "util/error.h"
#include <stdbool.h>
#include <stddef.h>

struct seccomp_program {
  void *bpf;      /* struct sock_filter[] */
  size_t n_insns; /* 0: no seccomp (linux.seccomp absent); loading is then a no-op */
  unsigned flags; /* SECCOMP_FILTER_FLAG_* to pass to seccomp(2) */
  bool notify;    /* has SCMP_ACT_NOTIFY rules: load returns a listener fd */
};
int seccomp_compile(const struct spec_seccomp *sc, struct seccomp_program *out, struct cm_error **err);
/* Load with seccomp(SECCOMP_SET_MODE_FILTER). Returns the notify fd (>= 0) when prog->notify,
 * else 0; -1 on error. Named seccomp_program_load because libseccomp exports seccomp_load. */
int seccomp_program_load(const struct seccomp_program *prog, struct cm_error **err);
void seccomp_program_free(struct seccomp_program *prog);
/* "SCMP_ARCH_X86_64" (or "x86_64") → libseccomp's token; 0 when this libseccomp does not know it. */
uint32_t seccomp_arch_token(const char *name);
/* seccomp_enosys.c: the stub seccomp_compile puts in front of libseccomp's program so that
 * syscalls newer than every one the profile names get ENOSYS (runc does the same). *out
 * (struct sock_filter[], malloc'd) is NULL and *n 0 when the profile needs none. */
int seccomp_enosys_stub(const struct spec_seccomp *sc, uint32_t default_action, void **out, size_t *n,
                        struct cm_error **err);
/* seccomp_compile through a cache of compiled programs in cache_dir (normally
 * SECCOMP_CACHE_DIR), keyed by the whole filter (see seccomp_cache.c); any cache problem falls
 * back to compiling. */
#define SECCOMP_CACHE_DIR "/var/cache/codemode/seccomp"
int seccomp_compile_cached(const struct spec_seccomp *sc, const char *cache_dir, struct seccomp_program *out,
                           struct cm_error **err);
#endif
