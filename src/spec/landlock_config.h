/* Landlock rulesets as typed structs, in the landlockconfig JSON format
 * (github.com/landlock-lsm/landlockconfig, schema/landlockconfig.json): `abi`, `variable`,
 * `ruleset` (handledAccessFs / handledAccessNet / scoped), `pathBeneath`, `netPort`.
 *
 * Where a ruleset comes from:
 *   - the run.codemode.landlock annotation, for any caller (Docker, containerd, Kubernetes pod
 *     annotations): parsed with spec_load into spec.landlock, refused at create when the kernel
 *     lacks a right it names (fail closed);
 *   - the mcp profiles (src/policy/profile_landlock.c), derived from the mounts: best effort, the
 *     rights this kernel lacks are dropped;
 *   - the run.codemode.landlock.deny annotation and codemode-run --deny: paths with no access at
 *     all, carved out of the trees the rules allow (src/linux/landlock.c).
 * The runtime keeps the layers it applied in the state directory (landlock.json) so `exec`
 * applies exactly the same ones. The same struct is ready to take a runtime-spec
 * `process.landlock` field if one is adopted.
 *
 * The access bits are the kernel's UAPI values, defined here: Debian 12's <linux/landlock.h>
 * stops at ABI 2. */
#ifndef CM_SPEC_LANDLOCK_CONFIG_H
#define CM_SPEC_LANDLOCK_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spec/spec.h"
#include "util/error.h"

#define SPEC_LANDLOCK_ANNOTATION "run.codemode.landlock"
#define SPEC_LANDLOCK_DENY_ANNOTATION "run.codemode.landlock.deny"
/* Set by the runtime in the state's annotations: the ABI the container's layers were enforced
 * at (their rules are in the state directory's landlock.json, which exec then requires). */
#define SPEC_LANDLOCK_ABI_ANNOTATION "run.codemode.landlock.abi"
/* The newest Landlock ABI whose rights codemode knows by name (ABI 7 added only log flags). */
#define SPEC_LANDLOCK_ABI_KNOWN 7

/* Filesystem rights (LANDLOCK_ACCESS_FS_*), with the ABI that introduced them. */
#define LL_FS_EXECUTE (1ULL << 0)     /* ABI 1 */
#define LL_FS_WRITE_FILE (1ULL << 1)  /* ABI 1 */
#define LL_FS_READ_FILE (1ULL << 2)   /* ABI 1 */
#define LL_FS_READ_DIR (1ULL << 3)    /* ABI 1 */
#define LL_FS_REMOVE_DIR (1ULL << 4)  /* ABI 1 */
#define LL_FS_REMOVE_FILE (1ULL << 5) /* ABI 1 */
#define LL_FS_MAKE_CHAR (1ULL << 6)   /* ABI 1 */
#define LL_FS_MAKE_DIR (1ULL << 7)    /* ABI 1 */
#define LL_FS_MAKE_REG (1ULL << 8)    /* ABI 1 */
#define LL_FS_MAKE_SOCK (1ULL << 9)   /* ABI 1 */
#define LL_FS_MAKE_FIFO (1ULL << 10)  /* ABI 1 */
#define LL_FS_MAKE_BLOCK (1ULL << 11) /* ABI 1 */
#define LL_FS_MAKE_SYM (1ULL << 12)   /* ABI 1 */
#define LL_FS_REFER (1ULL << 13)      /* ABI 2 */
#define LL_FS_TRUNCATE (1ULL << 14)   /* ABI 3 */
#define LL_FS_IOCTL_DEV (1ULL << 15)  /* ABI 5 */
/* Network rights (LANDLOCK_ACCESS_NET_*), ABI 4. */
#define LL_NET_BIND_TCP (1ULL << 0)
#define LL_NET_CONNECT_TCP (1ULL << 1)
/* Scopes (LANDLOCK_SCOPE_*), ABI 6. */
#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LL_SCOPE_SIGNAL (1ULL << 1)

/* The rights that apply to a file itself (the only ones a rule on a non-directory may hold);
 * the others are checked on the directory holding the entry. */
#define LL_FS_FILE_RIGHTS                                                                                    \
  (LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE | LL_FS_TRUNCATE | LL_FS_IOCTL_DEV)

enum spec_landlock_kind { SPEC_LANDLOCK_FS, SPEC_LANDLOCK_NET, SPEC_LANDLOCK_SCOPE, SPEC_LANDLOCK_KINDS };

struct spec_landlock_path_rule {
  char *path; /* as written: absolute, or relative to process.cwd */
  uint64_t access;
};
struct spec_landlock_port_rule {
  uint64_t port; /* 0-65535 */
  uint64_t access;
};

/* One ruleset: one landlock_restrict_self layer. */
struct spec_landlock {
  bool present;
  int abi; /* the document's "abi" (it fixes what abi.* groups mean); 0: not given */
  /* abi.* groups were used with an "abi" newer than SPEC_LANDLOCK_ABI_KNOWN: resolved as the
   * known groups, so the ruleset may say less than its author meant; refused at create. */
  bool groups_beyond_known;
  uint64_t handled[SPEC_LANDLOCK_KINDS]; /* handledAccessFs, handledAccessNet, scoped */
  struct spec_landlock_path_rule *paths;
  size_t n_paths;
  struct spec_landlock_port_rule *ports;
  size_t n_ports;
  /* codemode: no access at all at or beneath these (absolute, cleaned), whatever the rules above
   * them allow. Not part of landlockconfig. */
  struct spec_strv deny;
  /* The profile's rules: drop what the kernel lacks (and report the ABI) instead of refusing. */
  bool best_effort;
  /* Where it comes from, for messages and `policy explain` ("profile mcp", "annotation"). */
  char *source;
};

/* Parse a landlockconfig document. `label` prefixes errors, which name the JSON path inside the
 * document: `config.json: .annotations["run.codemode.landlock"]: .pathBeneath[0].allowedAccess[1]:
 * unknown filesystem access right "rd" (known: …)`. Beyond the schema, an access item may be a raw
 * UAPI bit mask (an integer), as landlockconfig plans for rights newer than the parser. Relative
 * `parent` paths are resolved against process.cwd when applied. */
int spec_landlock_parse(const char *json, size_t len, const char *label, struct spec_landlock *out,
                        struct cm_error **err);
/* run.codemode.landlock.deny: a JSON array of absolute paths, appended (cleaned) to *out. */
int spec_landlock_parse_deny(const char *json, size_t len, const char *label, struct spec_strv *out,
                             struct cm_error **err);
void spec_landlock_clear(struct spec_landlock *l);
void spec_landlock_copy(struct spec_landlock *dst, const struct spec_landlock *src);

/* Building rulesets (policy/). Rules on the same path merge; adding a right also handles it. */
void spec_landlock_add_path(struct spec_landlock *l, const char *path, uint64_t access);
void spec_landlock_add_port(struct spec_landlock *l, uint64_t port, uint64_t access);
/* false when the path is not absolute or has a ".." component. */
bool spec_landlock_add_deny(struct spec_landlock *l, const char *path);

/* Rights by ABI. */
uint64_t spec_landlock_supported(enum spec_landlock_kind k, int abi); /* every right of `abi` */
uint64_t spec_landlock_read_execute(int abi);                         /* abi.read_execute */
uint64_t spec_landlock_read_write(int abi);                           /* abi.read_write */
/* The ABI that introduced a known right (one bit); 0 when codemode does not know it. */
int spec_landlock_right_abi(enum spec_landlock_kind k, uint64_t bit);
const char *spec_landlock_right_name(enum spec_landlock_kind k, uint64_t bit); /* NULL: unknown */
/* "execute read_file read_dir" (unknown bits as 0x…); malloc'd, "none" for 0. */
char *spec_landlock_access_names(enum spec_landlock_kind k, uint64_t mask);
const char *spec_landlock_kind_field(enum spec_landlock_kind k); /* "handledAccessFs", … */

/* Fail closed: every right the ruleset names must exist in ABI `kernel_abi` (0: no Landlock),
 * and its "abi" must not be newer. The error names the right and the ABI it needs. */
int spec_landlock_check_abi(const struct spec_landlock *l, int kernel_abi, struct cm_error **err);
/* Best effort: drop what ABI `kernel_abi` lacks from the handled sets and the rules. */
void spec_landlock_mask_abi(struct spec_landlock *l, int kernel_abi);

/* The layers a container runs under, as kept in its state directory (landlock.json): the ABI they
 * were enforced at and each layer as a landlockconfig document with codemode's extras. */
char *spec_landlock_kept_json(const struct spec_landlock *layers, size_t n, int abi);
int spec_landlock_kept_parse(const char *json, size_t len, const char *label, struct spec_landlock **layers,
                             size_t *n, int *abi, struct cm_error **err);
/* One ruleset as a landlockconfig document (explicit rights, no groups); malloc'd. */
char *spec_landlock_config_json(const struct spec_landlock *l, bool pretty);

#endif
