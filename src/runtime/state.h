/* The state directory <root>/<id>/ and the state file in it.
 *
 *   state.json   what later commands need (pid + its start time, bundle, cgroup, …), written
 *                atomically (temp file, rename): never half-written.
 *   exec.fifo    exists from create until start: init blocks reading it.
 *   creating.json  written by create as soon as each thing it makes exists (cgroup, then the pid
 *                of stage1 or init with its start time), same format as state.json, each
 *                version whole (see state_progress_write): if create is killed before
 *                state.json exists, `delete --force` still finds the process and the cgroup to
 *                remove. At the end it is completed and renamed to state.json.
 *   config.json  a copy of the config as it was at create (exec and the hooks read it).
 *
 * The status is derived, not stored: init's pid alive (same start time, not a zombie) and the
 * fifo present → created; alive and frozen → paused; alive → running; otherwise stopped. */
#ifndef CM_RUNTIME_STATE_H
#define CM_RUNTIME_STATE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "spec/spec.h"
#include "util/error.h"

struct container_state {
  char *id;
  pid_t pid;
  uint64_t pid_start_time; /* /proc/PID/stat field 22: detects a reused pid */
  char *bundle;
  char *rootfs;
  char *created; /* RFC 3339 */
  char *owner;
  char *cgroup;  /* cgroup_serialize() or NULL */
  struct spec_kv_list annotations;
};

enum container_status {
  STATUS_CREATING,
  STATUS_CREATED,
  STATUS_RUNNING,
  STATUS_PAUSED,
  STATUS_STOPPED,
};
const char *container_status_name(enum container_status s);

/* Reject "", ".", "..", anything with '/' or control characters, and > 1024 bytes. */
int container_id_validate(const char *id, struct cm_error **err);

/* <root>/<id>; malloc'd. */
char *state_dir_path(const char *root, const char *id);
/* mkdir <root> (0700) and <root>/<id>; EEXIST → "container with given ID already exists: \"ID\"" (runc's words, which engines match). Returns the dir fd. */
int state_dir_create(const char *root, const char *id, struct cm_error **err);
/* How a command opens an existing state dir. The rule that keeps commands from waiting on each
 * other forever: whoever holds the lock never waits, while holding it, for anything a container,
 * a hook or another command decides (see create, start, exec and delete).
 *   STATE_DIR_READ   no lock (state, list, ps, events): state.json is only ever replaced whole,
 *                    by rename, so a reader needs none and never waits.
 *   STATE_DIR_WRITE  the exclusive flock, serialising the commands that change the container;
 *                    refused at once while a create is still at work on it. */
/* STATE_DIR_WRITE_AFTER_CREATE: a writer that waits for a create at work instead of refusing
 * (start, which scripts issue while `create --detach`… is finishing; runc's waits too), unless the
 * create is one of its ancestors (its hook), which would deadlock. */
enum state_dir_access { STATE_DIR_READ, STATE_DIR_WRITE, STATE_DIR_WRITE_AFTER_CREATE };
/* Missing → `container "ID" does not exist`. Returns the dir fd (locked for STATE_DIR_WRITE). */
int state_dir_open(const char *root, const char *id, enum state_dir_access access, struct cm_error **err);
int state_dir_remove(const char *root, const char *id, struct cm_error **err);
/* Whether <root>/<id> is there at all (a valid id is the caller's business). */
bool state_dir_exists(const char *root, const char *id);

int state_write(int dirfd, const struct container_state *st, struct cm_error **err);
/* Returns 0, or 1 when state.json does not exist yet (container still creating). */
int state_read(int dirfd, const char *id, struct container_state *st, struct cm_error **err);
/* delete --force of a container whose state.json is empty or unparsable (cut short by a system
 * crash, since it is not fsynced; no process it named survived that): remove its directory.
 * 1 removed, 0 not corrupt or not removable (the caller reports its own error). */
int state_remove_if_corrupt(const char *root, const char *id);
/* creating.json, the progress record of a create: pid may be 0 (not forked yet). Written first
 * by temp file + rename, then rewritten in place (one page, padded), and at the end completed and
 * renamed to state.json: one new file for the whole create. Initialise fd to -1. */
struct state_progress {
  int fd;
};
int state_progress_write(int dirfd, struct state_progress *p, const struct container_state *st,
                         struct cm_error **err);
/* The final state: creating.json becomes state.json (closes p). */
int state_progress_commit(int dirfd, struct state_progress *p, const struct container_state *st,
                          struct cm_error **err);
void state_progress_close(struct state_progress *p);
/* creating.json: 1 when it does not exist. */
int state_read_creating(int dirfd, const char *id, struct container_state *st, struct cm_error **err);
void container_state_clear(struct container_state *st);

enum container_status state_status(int dirfd, const struct container_state *st);
/* true when pid is alive with that start time and not a zombie. */
bool state_pid_alive(pid_t pid, uint64_t start_time);
uint64_t proc_pid_start_time(pid_t pid);

/* The OCI state JSON for hooks and `state`. */
char *state_oci_json(const struct container_state *st, const char *status);

/* --pid-file: the pid written atomically, so a reader never sees a partial number. */
int pid_file_write(const char *path, pid_t pid, struct cm_error **err);

/* Atomic write of a small file (temp + rename; no fsync, see state.c). */
int write_file_atomic(int dirfd, const char *name, const char *data, size_t len, mode_t mode,
                      struct cm_error **err);

#endif
