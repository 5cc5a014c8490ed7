/* Per-container host id ranges for the user namespace the mcp profiles add when codemode runs
 * as root (like podman's --userns=auto): each container's uids and gids 0..65535 map to a range
 * of unprivileged host ids no other running container holds, so one container's files,
 * processes and per-uid kernel budgets are nobody else's.
 *
 * The pool: the `codemode` entries of /etc/subuid and /etc/subgid when present (an admin's
 * reservation, e.g. "codemode:2147483648:268435456"); otherwise IDRANGE_DEFAULT_START..+COUNT,
 * less any range /etc/subuid or /etc/subgid gives to someone else. The registry: one file per
 * held slot in IDRANGE_DIR, naming the state directory of its container, which records the slot
 * in its own `userns-range` file. A slot is free when its file is missing, or when the state
 * directory it names no longer records it (a crash between the two): taking one happens under
 * an flock on the registry, so two creates never get the same range, and a slot is released by
 * `delete` (or a failed create), never while its container's state directory holds it. */
#ifndef CM_RUNTIME_IDRANGE_H
#define CM_RUNTIME_IDRANGE_H

#include <stdbool.h>
#include <stdint.h>

#include "util/error.h"

#define IDRANGE_SIZE 65536u
#define IDRANGE_DIR "/run/codemode-userns"
#define IDRANGE_DEFAULT_START 2147483648u        /* 2^31 */
#define IDRANGE_DEFAULT_COUNT (4096u * 65536u)   /* 4096 containers */
#define IDRANGE_STATE_FILE "userns-range"

struct idrange {
  uint32_t slot;     /* the first of n_slots consecutive slots */
  uint32_t n_slots;  /* 1 for mcp; more for a profile whose containers nest ranges of their own (ci) */
  uint32_t uid, gid; /* first host uid and gid; n_slots * IDRANGE_SIZE of each */
};

/* Take n_slots (>= 1) consecutive free slots for the container whose state directory is
 * `state_dir` (absolute; dirfd is it, open): recorded in both places before returning. */
int idrange_allocate(const char *state_dir, int dirfd, uint32_t n_slots, struct idrange *out, struct cm_error **err);
/* Give back the range the state directory records, if any (delete, failed create). */
void idrange_release(const char *state_dir, int dirfd);
/* The pool as a human-readable line for `policy explain` and errors. */
int idrange_pool_describe(char *buf, size_t size);

/* The owner (uid and gid) of the directories ci jobs share across runs: a --state directory
 * codemode-run makes under --profile ci as root. A job's root writes a writable bind as its
 * owner (runtime/userns_setup.c), so every job, whatever its range, reads and writes it as its
 * own root, and what one leaves there belongs to this id on the host: never host root (whose
 * setuid programs would be real ones), never an id of the pool (some later job's processes run
 * as it: a setuid program left there would reach them), never nobody (the egress broker runs as
 * nobody and holds the secrets). The id just below the default pool, 2^31 - 1. */
#define IDRANGE_SHARED_OWNER 2147483647u
/* Refuse when `id` is not free for that: in the pool, in anyone's /etc/subuid or /etc/subgid
 * range, or the id of an account or group in /etc/passwd or /etc/group. */
int idrange_check_shared_owner(uint32_t id, struct cm_error **err);

#endif
