/* The last steps before a container process's execve, built as one program
 * (src/trampoline/last_steps.h has the format and why) that the exec trampoline runs after its
 * own execve, or that the runtime runs in place (last_steps_exec_here) when it execs directly.
 *
 * Order (last_steps_for_process): keep-fds back to close-on-exec, bounding set, groups, gid, uid
 * (capabilities kept), umask, cwd (when only the user may enter it) and its check, permitted/
 * effective/inheritable, ambient, no_new_privs, Landlock, seccomp filters, then execve. Without
 * no_new_privs, landlock_restrict_self and seccomp(2) need CAP_SYS_ADMIN: when the process keeps
 * none, the capability sets are first set with CAP_SYS_ADMIN still effective and set exactly
 * after the filters, so that one capset is the only syscall between them and execve (runc, for
 * comparison, makes every step from the user switch on under the filter in that case). */
#ifndef CM_LINUX_LAST_STEPS_H
#define CM_LINUX_LAST_STEPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "linux/landlock.h"
#include "linux/seccomp.h"
#include "trampoline/last_steps.h"
#include "spec/spec.h"
#include "util/error.h"

struct last_steps {
  struct ls_step *steps;
  size_t n_steps, cap_steps;
  uint32_t *relocs;
  size_t n_relocs, cap_relocs;
  unsigned char *data;
  size_t data_len, data_cap;
  int report; /* enum ls_report */
  int report_fd;
};

/* Failures go to `report_fd`: as a text line (the container's stderr), or with `sync` as a
 * SYNC_ERROR message to the runtime that waits on that socket. */
void last_steps_init(struct last_steps *ls, int report_fd, bool sync);
void last_steps_free(struct last_steps *ls);

/* Building blocks for the files that own each step (user.c, caps.c, seccomp.c). */
uint32_t last_steps_data(struct last_steps *ls, const void *p, size_t n); /* a copy; its offset */
void last_steps_reloc(struct last_steps *ls, uint32_t data_off);          /* see the format */
/* One syscall; arguments whose bit is in data_args are last_steps_data offsets. Returns the step
 * so the caller can set ok_errno or LS_IGNORE_FAILURE. */
struct ls_step *last_steps_syscall(struct last_steps *ls, long nr, unsigned data_args, const uint64_t args[6],
                                   const char *label_fmt, ...) __attribute__((format(printf, 5, 6)));
struct ls_step *last_steps_check_cwd(struct last_steps *ls);

/* The serialized program (malloc'd) and its length. */
void *last_steps_serialize(const struct last_steps *ls, size_t *len);

struct last_steps_process {
  const struct spec_process *process;
  /* chdir to process.cwd here, as the user: the runtime (root) could not enter it. */
  bool cwd_as_user;
  /* Filters to load, in order (the policy's, then the config's); NULL entries are skipped. Not
   * a NOTIFY filter: its listener must reach the runtime, so it is loaded before (runc too). */
  const struct seccomp_program *filters[2];
  /* Fds that stay open across the trampoline's execve (exec.fifo, the sync socket: the runtime
   * waits for them to close at the user's execve) and are made close-on-exec again here. */
  int keep_fds[2];
  size_t n_keep_fds;
  /* Landlock rulesets (linux/landlock.h) to enforce just before the filters, then close; they
   * stay open across the trampoline's execve. NULL: none (or already enforced, with NOTIFY). */
  const struct landlock_prepared *landlock;
};
/* The whole tail for one process; -1 with err on a config the kernel cannot have (logged
 * warnings aside, as caps.c and user.c say). */
int last_steps_for_process(struct last_steps *ls, const struct last_steps_process *in, struct cm_error **err);

/* Run the program in this process: 0, or -1 with err naming the failed step. */
int last_steps_run_here(const struct last_steps *ls, struct cm_error **err);
/* Run it, then execve(path, argv, envp); on any failure, report as the program says and exit
 * 127. For a runtime that runs from its sealed copy (no trampoline needed). */
__attribute__((noreturn)) void last_steps_exec_here(const struct last_steps *ls, const char *path, char *const argv[],
                                                    char *const envp[]);

#endif
