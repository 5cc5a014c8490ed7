/* linux.seccomp → a BPF program (libseccomp). Compiled by the runtime before the container
 * starts, so a bad profile fails `create` clearly; loaded last, just before execve.
 *
 * Loaded as the last of the last steps (linux/last_steps.h), so nothing but execve runs under
 * it: with process.noNewPrivileges after everything else; without it seccomp(2) needs
 * CAP_SYS_ADMIN, which then stays effective until one capset right after the filters. A NOTIFY
 * filter is the exception: its listener fd must reach the runtime (and listenerPath) while the
 * runtime waits, so it is loaded before READY, as runc does, and the steps after it run under it:
 * a notified syscall waits for the agent's answer. */
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
/* The load as a step of the last-steps program (linux/last_steps.h); `what` prefixes its error
 * ("policy profile: "). Not for a NOTIFY program (its listener fd has to reach the runtime). */
struct last_steps;
void seccomp_emit_load(struct last_steps *ls, const struct seccomp_program *prog, const char *what);
/* "SCMP_ARCH_X86_64" (or "x86_64") → libseccomp's token; 0 when this libseccomp does not know it. */
uint32_t seccomp_arch_token(const char *name);
/* seccomp_enosys.c: the stub seccomp_compile puts in front of libseccomp's program so that
 * syscalls newer than every one the profile names get ENOSYS (runc does the same). *out
 * (struct sock_filter[], malloc'd) is NULL and *n 0 when the profile needs none. */
int seccomp_enosys_stub(const struct spec_seccomp *sc, uint32_t default_action, void **out, size_t *n,
                        struct cm_error **err);
/* The BPF of a libseccomp filter context (scmp_filter_ctx) into out->bpf/n_insns. */
int seccomp_program_export(void *ctx, struct seccomp_program *out, struct cm_error **err);
/* seccomp_compile through a cache of compiled programs in cache_dir (normally
 * SECCOMP_CACHE_DIR), keyed by the whole filter (see seccomp_cache.c); any cache problem falls
 * back to compiling. */
#define SECCOMP_CACHE_DIR "/var/cache/codemode/seccomp"
/* Where this process caches: SECCOMP_CACHE_DIR as the host's root; else
 * $XDG_RUNTIME_DIR/codemode-seccomp (a user's own, which hardened profiles never bind into a
 * container: it is under /run), or NULL (compile every time) without one. buf holds the path. */
const char *seccomp_cache_dir(char *buf, size_t size);
int seccomp_compile_cached(const struct spec_seccomp *sc, const char *cache_dir, struct seccomp_program *out,
                           struct cm_error **err);
#endif
