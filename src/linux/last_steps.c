/* The last-steps program: building it (the steps themselves come from user.c, caps.c and
 * seccomp.c) and running it in place. See last_steps.h. */
#include "linux/last_steps.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "linux/caps.h"
#include "linux/user.h"
#include "util/sync.h"

static long ls_syscall6(long nr, long a, long b, long c, long d, long e, long f) {
  long r = syscall(nr, a, b, c, d, e, f);
  return r < 0 ? -errno : r;
}
#include "trampoline/last_steps_run.h"

_Static_assert(offsetof(struct sync_msg, value) == LS_SYNC_VALUE_OFF, "sync_msg layout");
_Static_assert(offsetof(struct sync_msg, text) == LS_SYNC_TEXT_OFF, "sync_msg layout");

static void *grow(void *p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap)
    return p;
  size_t n = *cap ? *cap : 16;
  while (n < need)
    n *= 2;
  p = realloc(p, n * elem);
  if (p == NULL)
    abort();
  *cap = n;
  return p;
}

void last_steps_init(struct last_steps *ls, int report_fd, bool sync) {
  memset(ls, 0, sizeof(*ls));
  ls->report = sync ? LS_REPORT_SYNC : LS_REPORT_TEXT;
  ls->report_fd = report_fd;
}

void last_steps_free(struct last_steps *ls) {
  free(ls->steps);
  free(ls->relocs);
  free(ls->data);
  memset(ls, 0, sizeof(*ls));
}

uint32_t last_steps_data(struct last_steps *ls, const void *p, size_t n) {
  size_t off = (ls->data_len + 7) & ~(size_t)7; /* 8-aligned: fprogs, capset data */
  ls->data = grow(ls->data, &ls->data_cap, off + n + 1, 1);
  memset(ls->data + ls->data_len, 0, off - ls->data_len);
  if (n)
    memcpy(ls->data + off, p, n);
  ls->data_len = off + n;
  return (uint32_t)off;
}

void last_steps_reloc(struct last_steps *ls, uint32_t data_off) {
  ls->relocs = grow(ls->relocs, &ls->cap_relocs, ls->n_relocs + 1, sizeof(uint32_t));
  ls->relocs[ls->n_relocs++] = data_off;
}

static struct ls_step *add_step(struct last_steps *ls, uint16_t op, long nr, unsigned data_args,
                                const uint64_t args[6], const char *label) {
  ls->steps = grow(ls->steps, &ls->cap_steps, ls->n_steps + 1, sizeof(struct ls_step));
  struct ls_step *s = &ls->steps[ls->n_steps++];
  memset(s, 0, sizeof(*s));
  s->op = op;
  s->nr = (uint32_t)nr;
  s->flags = (uint16_t)data_args;
  if (args)
    memcpy(s->args, args, sizeof(s->args));
  s->label = last_steps_data(ls, label, strlen(label) + 1);
  return s;
}

struct ls_step *last_steps_syscall(struct last_steps *ls, long nr, unsigned data_args, const uint64_t args[6],
                                   const char *label_fmt, ...) {
  char label[512];
  va_list ap;
  va_start(ap, label_fmt);
  vsnprintf(label, sizeof(label), label_fmt, ap);
  va_end(ap);
  return add_step(ls, LS_OP_SYSCALL, nr, data_args, args, label);
}

struct ls_step *last_steps_check_cwd(struct last_steps *ls) {
  return add_step(ls, LS_OP_CHECK_CWD, 0, 0, NULL, "current working directory is outside the container root");
}

void *last_steps_serialize(const struct last_steps *ls, size_t *len) {
  size_t head = sizeof(struct ls_header) + ls->n_steps * sizeof(struct ls_step) + ls->n_relocs * sizeof(uint32_t);
  size_t data_off = (head + 15) & ~(size_t)15;
  *len = data_off + ls->data_len;
  unsigned char *p = calloc(1, *len);
  if (p == NULL)
    abort();
  struct ls_header h = {.magic = LS_MAGIC,
                        .size = (uint32_t)*len,
                        .n_steps = (uint32_t)ls->n_steps,
                        .n_relocs = (uint32_t)ls->n_relocs,
                        .data_off = (uint32_t)data_off,
                        .report = (uint32_t)ls->report,
                        .report_fd = ls->report_fd,
                        .report_type = SYNC_ERROR};
  memcpy(p, &h, sizeof(h));
  if (ls->n_steps)
    memcpy(p + sizeof(h), ls->steps, ls->n_steps * sizeof(struct ls_step));
  if (ls->n_relocs)
    memcpy(p + sizeof(h) + ls->n_steps * sizeof(struct ls_step), ls->relocs, ls->n_relocs * sizeof(uint32_t));
  if (ls->data_len)
    memcpy(p + data_off, ls->data, ls->data_len);
  return p;
}

int last_steps_for_process(struct last_steps *ls, const struct last_steps_process *in, struct cm_error **err) {
  const struct spec_process *p = in->process;
  /* Until our execve, nothing in the container may attach to a process holding root's
   * capabilities and no filter (the trampoline's own execve already made it non-dumpable). */
  last_steps_syscall(ls, SYS_prctl, 0, (uint64_t[6]){PR_SET_DUMPABLE, 0}, "prctl(PR_SET_DUMPABLE)");
  for (size_t i = 0; i < in->n_keep_fds; i++)
    last_steps_syscall(ls, SYS_fcntl, 0, (uint64_t[6]){(uint64_t)in->keep_fds[i], F_SETFD, FD_CLOEXEC},
                       "fcntl(%d, F_SETFD)", in->keep_fds[i])
        ->flags |= LS_IGNORE_FAILURE; /* not open here (a hook's process): nothing to do */

  bool filters = (in->filters[0] && in->filters[0]->n_insns) || (in->filters[1] && in->filters[1]->n_insns) ||
                 (in->landlock && in->landlock->n);
  struct caps_plan plan;
  if (caps_plan(&p->capabilities, &plan, err) < 0)
    return -1;
  /* seccomp(2) and landlock_restrict_self without no_new_privs need CAP_SYS_ADMIN in effective. */
  bool admin_for_filters = filters && !p->no_new_privileges && !(plan.effective & (1ULL << CAP_SYS_ADMIN));

  caps_emit_bounding(ls, &plan);
  if (user_emit_switch(ls, &p->user, err) < 0)
    return -1;
  if (in->cwd_as_user)
    last_steps_syscall(ls, SYS_chdir, LS_ARG_DATA(0), (uint64_t[6]){last_steps_data(ls, p->cwd, strlen(p->cwd) + 1)},
                       "chdir to cwd \"%s\"", p->cwd);
  /* A cwd outside the container's root is a leaked host directory (CVE-2024-21626 class). */
  last_steps_check_cwd(ls);
  caps_emit_sets(ls, &plan, admin_for_filters ? 1ULL << CAP_SYS_ADMIN : 0);
  if (p->no_new_privileges)
    last_steps_syscall(ls, SYS_prctl, 0, (uint64_t[6]){PR_SET_NO_NEW_PRIVS, 1}, "prctl(PR_SET_NO_NEW_PRIVS)");
  /* Landlock: after the credentials, before the filters (they may deny its syscalls). */
  for (size_t i = 0; in->landlock && i < in->landlock->n; i++)
    last_steps_syscall(ls, SYS_landlock_restrict_self, 0, (uint64_t[6]){(uint64_t)in->landlock->fds[i], 0},
                       "landlock: restrict self");
  for (size_t i = 0; in->landlock && i < in->landlock->n; i++)
    last_steps_syscall(ls, SYS_close, 0, (uint64_t[6]){(uint64_t)in->landlock->fds[i]}, "landlock: close ruleset");
  for (int i = 0; i < 2; i++)
    if (in->filters[i] && in->filters[i]->n_insns)
      seccomp_emit_load(ls, in->filters[i], i == 0 && in->filters[1] ? "policy profile: " : "");
  if (admin_for_filters)
    caps_emit_exact(ls, &plan);
  return 0;
}

static int run_copy(const struct last_steps *ls, unsigned char **prog_out, struct cm_error **err) {
  size_t len;
  unsigned char *prog = last_steps_serialize(ls, &len);
  if (ls_load(prog, len) < 0) {
    free(prog);
    return cm_error_set(err, EINVAL, "last steps: malformed program");
  }
  *prog_out = prog;
  return ls_run(prog);
}

int last_steps_run_here(const struct last_steps *ls, struct cm_error **err) {
  /* Report failures to a pipe we read back, to turn them into err. */
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0)
    return cm_error_set(err, errno, "last steps: pipe");
  struct last_steps copy = *ls;
  copy.report = LS_REPORT_SYNC;
  copy.report_fd = p[1];
  unsigned char *prog = NULL;
  int rc = run_copy(&copy, &prog, err);
  free(prog);
  close(p[1]);
  if (rc < 0 && err && *err == NULL) {
    struct sync_msg m = {0};
    ssize_t n = read(p[0], &m, sizeof(m) - 1);
    if (n > (ssize_t)LS_SYNC_TEXT_OFF)
      cm_error_set(err, (int)m.value, "%s", m.text);
    else
      cm_error_set(err, EIO, "last steps failed");
  }
  close(p[0]);
  return rc;
}

void last_steps_exec_here(const struct last_steps *ls, const char *path, char *const argv[], char *const envp[]) {
  struct cm_error *err = NULL;
  unsigned char *prog = NULL;
  if (run_copy(ls, &prog, &err) == 0) {
    execve(path, argv, envp);
    ls_report_failure((const struct ls_header *)prog, "exec ", path, errno);
  } else if (err) {
    struct ls_header h = {.report = (uint32_t)ls->report, .report_fd = ls->report_fd, .report_type = SYNC_ERROR};
    ls_report_failure(&h, err->msg, NULL, err->errnum);
  }
  _exit(127);
}
