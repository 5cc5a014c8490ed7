/* Docker's JSON seccomp profile format → struct spec_seccomp.
 *
 * Docker's format is the OCI linux.seccomp object plus a few fields resolved when the profile is
 * applied to one container on one machine:
 *   archMap       [{architecture, subArchitectures}]: only the entry of the native architecture
 *                 counts; it and its sub-architectures become `architectures`
 *   syscalls[].includes / .excludes  {caps, arches, minKernel}: a rule is kept only when every
 *                 `includes` condition holds and no `excludes` condition does
 *   syscalls[].name  the old single-name spelling of `names`
 * `comment` fields and unknown keys are ignored, as Docker does. The result is a plain
 * spec_seccomp that linux/seccomp.c compiles, so `codemode-run --seccomp FILE` takes the same
 * files `docker run --security-opt seccomp=FILE` does. */
#ifndef CM_POLICY_SECCOMP_PROFILE_H
#define CM_POLICY_SECCOMP_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "spec/spec.h"
#include "util/error.h"

/* What includes/excludes are evaluated against. */
struct seccomp_profile_target {
  uint64_t capabilities; /* the container's bounding set (CAP_* bit mask), as Docker uses */
  const char *arch;      /* "SCMP_ARCH_X86_64"…; NULL: the architecture codemode was built for */
  unsigned kernel_major; /* 0: the running kernel (uname) */
  unsigned kernel_minor;
};

/* Parse and resolve. `label` prefixes errors ("mcp.json"). Fills *out (zeroed first; free with
 * seccomp_profile_free). */
int seccomp_profile_load_string(const char *json, size_t len, const char *label,
                                const struct seccomp_profile_target *target, struct spec_seccomp *out,
                                struct cm_error **err);
int seccomp_profile_load_file(const char *path, const struct seccomp_profile_target *target,
                              struct spec_seccomp *out, struct cm_error **err);
/* The profiles built into the binary ("default", "mcp"): NULL when unknown. */
const char *seccomp_profile_builtin(const char *name, size_t *len);
/* A built-in name, or a path to a JSON file. */
int seccomp_profile_load(const char *name_or_path, const struct seccomp_profile_target *target,
                         struct spec_seccomp *out, struct cm_error **err);
void seccomp_profile_free(struct spec_seccomp *s);

/* How many syscalls of this architecture a resolved profile allows (any rule that lets the name
 * through, with or without arguments; the default action ERRNO/KILL assumed). */
size_t seccomp_profile_count_allowed(const struct spec_seccomp *sc);

/* The native architecture's libseccomp name ("SCMP_ARCH_X86_64"). */
const char *seccomp_profile_native_arch(void);

#endif
