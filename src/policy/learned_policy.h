/* The learned policy: what one observed run of a server used (codemode-run --learn FILE), as
 * three policies in one human-readable JSON file that `codemode-run --policy FILE` applies on
 * top of the mcp profile (never instead of it):
 *
 *   {"codemodePolicy": 1,
 *    "comment": "...",
 *    "runs": [{"run": 1, "started": "...", "seconds": 4.2, "source": "...", "command": "...",
 *              "kernel": "6.18.44", "landlockAbi": 7, "notifications": 5120,
 *              "mounts": ["/data", "/tmp", …],
 *              "seccompDenialsUnseen": "why" (only when the kernel's seccomp records could not
 *              be read, rootless: what the profile denied is then missing from
 *              deniedDuringLearning)}],
 *    "seccomp": {Docker's seccomp profile format: defaultAction SCMP_ACT_ERRNO, the baseline,
 *                one entry per syscall seen (argument rules where the run showed a small set
 *                of clone flags, socket families/types, ioctl requests, prctl options), each
 *                with a "comment" saying when it was seen},
 *    "landlock": {the landlockconfig format of the run.codemode.landlock annotation: every
 *                 filesystem right of the ABI handled, one pathBeneath per rule, with its
 *                 "comment"},
 *    "egress": {"allow": [{"rule": "allow-host api.example.com:443", "comment": "…"}]},
 *    "deniedDuringLearning": [{"what": "syscall ptrace", "comment": "…"}]}
 *
 * Comments carry when a rule was seen in a fixed form ("seen N times, first TIME (run R)") that
 * merge reads back. Each section stands alone: `seccomp` loads with `docker run --security-opt
 * seccomp=` or `codemode-run --seccomp`, `landlock` as the run.codemode.landlock annotation. */
#ifndef CM_POLICY_LEARNED_POLICY_H
#define CM_POLICY_LEARNED_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/profile.h"
#include "spec/landlock_config.h"
#include "spec/spec.h"
#include "util/error.h"

#define LEARNED_POLICY_FORMAT 1

/* Syscalls every process needs, allowed while learning without a notification (so the hot paths
 * cost nothing) and therefore always allowed by a learned policy. */
extern const char *const learned_baseline_syscalls[];

/* Files libc reads on its own when it pleases (the number of CPUs when a thread makes a new
 * malloc arena, the loader's cache, the time zone) and the harmless devices: always allowed,
 * because whether a run happens to read them depends on timing, not on what the server does. */
struct learned_baseline_path {
  const char *path;
  uint64_t access;
};
extern const struct learned_baseline_path learned_baseline_paths[];

/* When a rule was seen. count 0: unknown (a hand-written rule). */
struct learned_seen {
  uint64_t count;
  char first[32]; /* RFC 3339 UTC, ms; "" unknown */
  int run;        /* the run (1…) of the first sighting; 0 unknown */
  bool baseline;  /* allowed without being seen (learned_baseline_*) */
};

/* The arguments that matter of one call, as seccomp argument conditions (all must hold). */
#define LEARNED_KEY_ARGS 3
struct learned_key {
  int n; /* 0: none (any arguments) */
  struct spec_seccomp_arg args[LEARNED_KEY_ARGS];
};

/* One entry of seccomp.syscalls: name allowed, with key's arguments only (key.n > 0) or any. */
struct learned_rule {
  char *name;
  struct learned_key key;
  struct learned_seen seen;
};
/* One pathBeneath: the rights allowed at and beneath path (a file: on it). */
struct learned_path {
  char *path;
  uint64_t access;
  struct learned_seen seen;
  size_t paths;  /* how many distinct paths it stands for (collapsed); 0: unknown */
  char *example; /* one of them; NULL: none */
  bool file;     /* seen on a file (not a directory) by this run: the collapse may move it */
};
/* An egress rule in the flag syntax ("allow-host api.example.com:443"), or a note. */
struct learned_entry {
  char *text;
  struct learned_seen seen;
};
struct learned_run {
  int run;
  char *started, *source, *command, *kernel;
  double seconds;
  int landlock_abi;
  uint64_t notifications;
  struct spec_strv mounts; /* the container's mount destinations: paths do not collapse above them */
  /* Why the kernel's seccomp records were not read (no CAP_AUDIT_READ: a rootless run), so what
   * the profile denied while learning is not in deniedDuringLearning; NULL when they were. */
  char *seccomp_unseen;
};

struct learned_policy {
  struct learned_run *runs;
  size_t n_runs;
  struct learned_rule *rules;
  size_t n_rules;
  int landlock_abi; /* every filesystem right of this ABI is handled; 0: no Landlock section */
  struct learned_path *paths;
  size_t n_paths;
  struct learned_entry *hosts; /* egress.allow */
  size_t n_hosts;
  struct learned_entry *denied; /* deniedDuringLearning: "syscall ptrace", "host evil.test:443" */
  size_t n_denied;
  /* Directories the run made itself (not in the file): their names are the run's (a temporary
   * directory, a per-request one), so what was done in them is a right of the directory they
   * were made in. */
  struct spec_strv made_dirs;
};

/* Building (learn.c adds what it saw, then normalizes). Adding merges with what is there: the
 * same rule or path sums its counts and keeps the earliest sighting. */
void learned_policy_add_rule(struct learned_policy *p, const char *name, const struct learned_key *key,
                             const struct learned_seen *seen);
/* file: the rights are the file's own (not a directory's), as the run saw it. */
void learned_policy_add_path(struct learned_policy *p, const char *path, uint64_t access,
                             const struct learned_seen *seen, size_t paths, const char *example, bool file);
void learned_policy_add_host(struct learned_policy *p, const char *rule, const struct learned_seen *seen);
void learned_policy_add_denied(struct learned_policy *p, const char *what, const struct learned_seen *seen);
/* Sort, drop what another rule covers, turn argument sets larger than the small-set limits into
 * one unconditional rule, and collapse paths to directories (policy/learned_paths.c). */
void learned_policy_normalize(struct learned_policy *p);
void learned_policy_free(struct learned_policy *p);
void learned_run_copy(struct learned_run *dst, const struct learned_run *src, int run);
void learned_run_clear(struct learned_run *r);

/* The file (learned_policy_json.c). */
char *learned_policy_json(const struct learned_policy *p);
int learned_policy_parse(const char *json, size_t len, const char *label, struct learned_policy *out,
                         struct cm_error **err);
int learned_policy_load_file(const char *path, struct learned_policy *out, struct cm_error **err);
/* The seccomp section alone, as a Docker-format profile (malloc'd). */
char *learned_policy_seccomp_json(const struct learned_policy *p);
/* "seen 12 times, first 2026-…Z (run 1)" ↔ struct learned_seen. */
void learned_seen_format(const struct learned_seen *s, char *buf, size_t size);
void learned_seen_parse(const char *comment, struct learned_seen *out);

/* merge: `from`'s runs renumbered after `into`'s, every rule added, then normalized. */
void learned_policy_merge(struct learned_policy *into, const struct learned_policy *from);
/* What changed from old to new, one line each ("seccomp: + inotify_init1", "landlock: + /data/b:
 * read_file read_dir", "egress: - allow-host x:443"); none: the same policy. */
void learned_policy_diff(const struct learned_policy *old, const struct learned_policy *new_,
                         struct policy_report *out);

/* Applying it. */
int learned_policy_seccomp(const struct learned_policy *p, struct spec_seccomp *out, struct cm_error **err);
/* present == false when the policy has no Landlock section. */
void learned_policy_landlock(const struct learned_policy *p, struct spec_landlock *out);

/* The policy line that would allow a denial (audit summaries): a JSON fragment, malloc'd. */
char *learned_policy_allow_syscall(const char *name);
char *learned_policy_allow_path(const char *path, uint64_t access);
char *learned_policy_allow_host(const char *host, unsigned port);

/* Is the syscall allowed by the policy's seccomp section at all (any rule for its name)? With
 * arguments only? */
bool learned_policy_has_syscall(const struct learned_policy *p, const char *name, bool *only_with_args);

#endif
