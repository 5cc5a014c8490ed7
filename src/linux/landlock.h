/* Landlock (landlock(7)): the kernel confines what the container's processes may open, create,
 * remove, connect to or signal, whatever the mounts allow. Applied by init (and by every exec'd
 * process, from the layers kept at create) after every mount, pivot_root and read-only remount,
 * just before the seccomp filters, so a strict filter need not allow the landlock syscalls.
 * Each layer (struct spec_landlock: the profile's rules, the run.codemode.landlock annotation) is
 * one landlock_restrict_self: an access must be allowed by every layer.
 * Audit: ABI 7 logs denials through the audit subsystem with the kernel's default flags (until
 * the first execve); codemode passes no log_* flag yet. */
#ifndef CM_LINUX_LANDLOCK_H
#define CM_LINUX_LANDLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "spec/landlock_config.h"
#include "util/error.h"

/* The running kernel's Landlock ABI version; 0 when Landlock is not available. */
int landlock_abi(void);

/* At most this many layers per container (the kernel's limit is 16 per process, nesting included). */
#define LANDLOCK_MAX_LAYERS 4

/* The rulesets of a container's layers, made but not yet enforced. */
struct landlock_prepared {
  int fds[LANDLOCK_MAX_LAYERS]; /* close-on-exec */
  size_t n;
};

/* Make one ruleset per layer (rights already masked or checked for this kernel:
 * spec_landlock_mask_abi / spec_landlock_check_abi) and add its rules. Rule paths are resolved
 * now, in the caller's root, relative ones against `cwd`; a path that does not exist gives no
 * rule (it grants nothing). Done while still root, before the user switch, so a rule path the
 * process's user could not open still names what the config meant. */
int landlock_prepare(const struct spec_landlock *layers, size_t n, const char *cwd,
                     struct landlock_prepared *out, struct cm_error **err);
/* landlock_restrict_self for each prepared ruleset, in order, then close them. Needs
 * no_new_privs or CAP_SYS_ADMIN in the caller's user namespace (as seccomp does). Nothing to do
 * when nothing was prepared. */
int landlock_enforce(struct landlock_prepared *p, struct cm_error **err);
/* Free prepared rulesets without enforcing them. */
void landlock_prepared_close(struct landlock_prepared *p);

/* The rules of one layer as the kernel gets them: an O_PATH fd and the rights, after the
 * layer's deny list is carved out (below) and rights a non-directory cannot hold are dropped.
 * Exposed for the unit tests; free with landlock_rules_free.
 *
 * Landlock only adds rights (a file gets the union of the rules on its path's directories), so a
 * denied path D inside an allowed tree T is carved out: the rule on T is replaced by a listing
 * right (read_dir) on each directory from T down to D's parent and T's rights on every other
 * entry of those directories. Any other rule landing on one of those directories (the same
 * directory mounted twice) keeps only read_dir; one on D itself, or beneath D, is dropped. */
struct landlock_rule {
  char *path; /* as opened (for messages) */
  int fd;
  uint64_t access;
  dev_t dev;
  ino_t ino;
  bool typed; /* dev, ino read and access fitted to the file type (always with a deny list) */
};
int landlock_rules_resolve(const struct spec_landlock *l, const char *cwd, struct landlock_rule **out,
                           size_t *n, struct cm_error **err);
void landlock_rules_free(struct landlock_rule *r, size_t n);

#endif
