/* Filters whose listener is the supervisor: compiled by the runtime, loaded by the container's
 * last steps, handed over without sendmsg (linux/seccomp_listener.h). */
/* libseccomp first: its seccomp_load prototype must be seen before anything of ours. */
#include <seccomp.h>

#include "linux/seccomp_listener.h"

#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "linux/last_steps.h"

#ifndef SECCOMP_FILTER_FLAG_NEW_LISTENER
#define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#endif
#include "util/sync.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

static void release(scmp_filter_ctx *ctx) {
  if (*ctx)
    seccomp_release(*ctx);
}

int seccomp_listener_compile(bool notify_by_default, const char *const *names, struct seccomp_program *out,
                             struct cm_error **err) {
  *out = (struct seccomp_program){0};
  uint32_t dflt = notify_by_default ? SCMP_ACT_NOTIFY : SCMP_ACT_ALLOW;
  uint32_t rule = notify_by_default ? SCMP_ACT_ALLOW : SCMP_ACT_NOTIFY;
  /* Only the native architecture: another ABI's syscalls hit the bad-architecture action (kill),
   * which the mcp filter below this one applies to them anyway. */
  __attribute__((cleanup(release))) scmp_filter_ctx ctx = seccomp_init(dflt);
  if (ctx == NULL)
    return cm_error_set(err, EINVAL, "the supervisor's seccomp filter: seccomp_init");
  for (size_t i = 0; names && names[i]; i++) {
    int nr = seccomp_syscall_resolve_name(names[i]);
    if (nr == __NR_SCMP_ERROR)
      continue; /* not a syscall of this architecture (open on aarch64) */
    int rc = seccomp_rule_add(ctx, rule, nr, 0);
    if (rc < 0)
      return cm_error_set(err, -rc, "the supervisor's seccomp filter: rule for %s", names[i]);
  }
  if (seccomp_program_export(ctx, out, err) < 0)
    return cm_error_prefix(err, "the supervisor's seccomp filter");
  out->notify = true;
  return 0;
}

int seccomp_supervised_emit(struct last_steps *ls, const struct seccomp_program *policy,
                            const struct seccomp_program *listener, int sync_fd, struct cm_error **err) {
  if (listener) {
    struct seccomp_program l = *listener;
    l.flags |= SECCOMP_FILTER_FLAG_NEW_LISTENER;
    seccomp_emit_load(ls, &l, "the supervisor's filter: ");
  }
  /* From here on, a syscall outside the listener filter's baseline waits for the supervisor. */
  if (policy)
    seccomp_emit_load(ls, policy, "the learned policy's filter: ");
  if (listener) {
    struct sync_msg ready = {.type = SYNC_LISTENER_READY, .value = -1};
    size_t len = offsetof(struct sync_msg, text) + 1;
    uint32_t msg = last_steps_data(ls, &ready, len);
    /* The answer lands in the program's own data (the interpreter keeps it writable). */
    struct sync_msg answer_buf = {0};
    uint32_t answer = last_steps_data(ls, &answer_buf, len);
    last_steps_syscall(ls, SYS_write, LS_ARG_DATA(1), (uint64_t[6]){(uint64_t)sync_fd, msg, len},
                       "hand the seccomp listener to the supervisor");
    /* EOF (the runtime died) ends the wait too: the program's syscalls then fail with ENOSYS,
     * the kernel's answer for a filter whose listener is gone, and the runtime's death takes the
     * container with it. */
    last_steps_syscall(ls, SYS_read, LS_ARG_DATA(1), (uint64_t[6]){(uint64_t)sync_fd, answer, len},
                       "wait for the supervisor to take the seccomp listener");
  }
  size_t total;
  void *prog = last_steps_serialize(ls, &total);
  free(prog);
  if (total > LS_MAX_SIZE)
    return cm_error_set(err, E2BIG, "the container's last steps (%zu bytes with the supervisor's filters) exceed %d",
                        total, LS_MAX_SIZE);
  return 0;
}

int seccomp_listener_take(pid_t init, struct cm_error **err) {
  char dir[64];
  snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)init);
  DIR *d = opendir(dir);
  if (d == NULL)
    return cm_error_set(err, errno, "seccomp listener: %s", dir);
  int fdnum = -1;
  for (struct dirent *e; fdnum < 0 && (e = readdir(d)) != NULL;) {
    char link[384], target[64];
    snprintf(link, sizeof(link), "%s/%s", dir, e->d_name);
    ssize_t n = readlink(link, target, sizeof(target) - 1);
    if (n > 0) {
      target[n] = '\0';
      if (strcmp(target, "anon_inode:seccomp notify") == 0)
        fdnum = atoi(e->d_name);
    }
  }
  closedir(d);
  if (fdnum < 0)
    return cm_error_set(err, ENOENT, "seccomp listener: none in %s", dir);
  int pidfd = (int)syscall(SYS_pidfd_open, init, 0);
  if (pidfd < 0)
    return cm_error_set(err, errno, "seccomp listener: pidfd_open(%d)", (int)init);
  /* pidfd_getfd needs ptrace access to init: ours (root, or the owner of its user namespace). */
  int fd = (int)syscall(SYS_pidfd_getfd, pidfd, fdnum, 0);
  int e = errno;
  close(pidfd);
  if (fd < 0)
    return cm_error_set(err, e, "seccomp listener: pidfd_getfd(%d, fd %d)", (int)init, fdnum);
  return fd;
}
