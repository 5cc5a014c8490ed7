/* Watching a container from outside while it runs (codemode-run --learn, --policy with an audit
 * log or --audit-summary): what its processes ask of the kernel, from two sources that need no
 * auditd, no eBPF and no ptrace:
 *   - the supervisor's seccomp listener (linux/seccomp_listener.h): every notified syscall with
 *     the arguments that matter and the files it reaches, read from the target's memory and
 *     answered CONTINUE (notify_decode.c);
 *   - the kernel's own records of the seccomp denials it made (SECCOMP_FILTER_FLAG_LOG), read
 *     from the audit multicast group (needs CAP_AUDIT_READ; without it, denials by seccomp are
 *     enforced but not recorded, and the audit log says so once) (observer.c).
 * One thread (observer.c) reads both beside codemode-run's wait loop and hands each event to a
 * sink: learn.c records them into a policy, audit.c turns denials into audit log records. */
#ifndef CM_SUPERVISOR_OBSERVE_H
#define CM_SUPERVISOR_OBSERVE_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "policy/learned_policy.h"
#include "spec/landlock_config.h"
#include "spec/spec.h"
#include "util/error.h"

/* --- notify_decode.c: one notification, decoded --------------------------------------------- */

/* A file the call reaches, in the container's view, and the Landlock rights it needs there
 * (on a directory for what creates or removes an entry, on the file itself otherwise). */
struct observed_file {
  char path[PATH_MAX];
  uint64_t access;
};
#define OBSERVED_FILES_MAX 6
struct observed_call {
  pid_t pid; /* in codemode-run's pid namespace */
  int nr;
  const char *name;       /* valid while the decoder is */
  struct learned_key key; /* the arguments that matter for the seccomp rule (learned_policy.h) */
  int n_files;
  struct observed_file files[OBSERVED_FILES_MAX];
  char made_dir[PATH_MAX]; /* the directory a mkdir makes (its name is the run's, not the server's) */
};

struct notify_decoder;
/* The syscalls whose files are decoded: the audit filter notifies exactly these. */
extern const char *const notify_file_syscalls[];
struct notify_decoder *notify_decoder_new(struct cm_error **err);
void notify_decoder_free(struct notify_decoder *d);
/* Receive one notification from `fd`, decode it, answer CONTINUE (always: the listener never
 * decides anything). Returns 1 with *out filled, 0 when there was nothing to decode (the target
 * died meanwhile: its memory was not read, or its notification id was no longer valid after the
 * reads, so what was read may belong to another process), -1 when fd is dead (errno). */
int notify_receive(struct notify_decoder *d, int fd, struct observed_call *out);

/* --- observer.c: the thread ------------------------------------------------------------------ */

/* A seccomp denial the kernel reported (an AUDIT_SECCOMP record). */
struct kernel_denial {
  char time[32]; /* the record's own time, RFC 3339 UTC with ms */
  pid_t pid;     /* host pid */
  char comm[64];
  char exe[PATH_MAX];
  int nr;
  const char *name; /* NULL: not a syscall libseccomp knows */
  uint32_t action;  /* SECCOMP_RET_* (ERRNO, KILL_*…) */
  int errnum;       /* for ERRNO */
};

struct observer_sink {
  void (*call)(void *arg, const struct observed_call *c);
  void (*denial)(void *arg, const struct kernel_denial *d);
  /* No kernel records (reason): once, at start. */
  void (*no_kernel_records)(void *arg, const char *reason);
  void *arg;
};

struct observer {
  struct observer_sink sink;
  int notify_fd; /* the listener, -1 until attached (observer_attach_listener) */
  int audit_fd;  /* the audit multicast socket, -1: none */
  int wake_fd;   /* eventfd: a listener arrived, or stop */
  bool stop;
  pid_t init;       /* the container's init (host pid) */
  uint32_t session; /* its audit session id, when it is the container's own; 0: none */
  uint64_t ns_pid;  /* inode of init's pid namespace (the records' other filter) */
  struct notify_decoder *decoder;
  pthread_t thread;
  bool running;
  pthread_mutex_t lock; /* sink calls and stats */
  uint64_t notifications, kernel_records;
};
/* Open the audit socket (before the container exists, so no record is missed: they wait in its
 * buffer). with_kernel_records false: the listener only. */
int observer_start(struct observer *o, const struct observer_sink *sink, bool with_kernel_records,
                   struct cm_error **err);
/* Start the thread: only once the container's init is forked, because init is a raw clone of
 * this process (no atfork handlers) and must not inherit a lock the thread might hold. */
int observer_run(struct observer *o, struct cm_error **err);
/* Once init exists: whose records are the container's (its session id, its pid namespace). */
void observer_set_container(struct observer *o, pid_t init);
/* runtime_listener.attach: the thread starts reading fd at once. */
int observer_attach_listener(void *observer, int fd, struct cm_error **err);
/* After the container is gone: drain what is left (the kernel's last records come a moment
 * later), stop the thread, close everything. */
void observer_stop(struct observer *o);

/* --- learn.c: --learn ------------------------------------------------------------------------ */

struct learn_session;
struct learn_session *learn_session_new(void);
/* The container's mount destinations as it ran (paths are not collapsed above them). */
void learn_session_mounts(struct learn_session *l, const struct spec *s);
void learn_session_sink(struct learn_session *l, struct observer_sink *out);
/* The container is gone: turn what was seen into the policy file at `path` ("-": stderr), with
 * the run's description. `audit_log`: the broker's audit log to read the hosts from (-1: none). */
int learn_session_write(struct learn_session *l, const char *path, const struct learned_run *run,
                        int audit_log_fd, off_t audit_log_start, struct cm_error **err);
void learn_session_free(struct learn_session *l);

/* --- audit.c: denials of a run ---------------------------------------------------------------- */

struct audit_session;
/* log_fd: the audit log (util/audit_log.h), -1: none (summary only). The layers are those the
 * container runs under (the profile's, the config's, the policy's), checked in user space to
 * name the file a Landlock denial hit; policy: the learned policy applied (NULL: none), to say
 * which line would allow a denial. */
struct audit_session *audit_session_new(const char *id, int log_fd, const struct spec_landlock *const *layers,
                                        const char *const *layer_names, size_t n_layers,
                                        const struct learned_policy *policy);
void audit_session_sink(struct audit_session *a, struct observer_sink *out);
/* The kernel's Landlock ABI: rights it lacks are not enforced, so not reported either. */
void audit_session_set_abi(struct audit_session *a, int abi);
/* The egress broker's refusals in the audit log since `start` (its own records), for the
 * summary. */
void audit_session_read_log(struct audit_session *a, int log_fd, off_t start);
/* --audit-summary: the run's denials with the policy line that would allow each, on `to`. */
void audit_session_summary(struct audit_session *a, int to);
size_t audit_session_denials(const struct audit_session *a);
void audit_session_free(struct audit_session *a);

#endif
