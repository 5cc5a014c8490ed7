/* The exec trampoline's runtime side: a sealed memfd of src/trampoline/'s program, and the exec
 * through it. See exec_trampoline.h for why. */
#include "linux/exec_trampoline.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "linux/sealed_memfd.h"
#include "util/embed.h"

/* The trampoline binary (Makefile). */
CM_EMBED_BYTES(cm_exec_trampoline_image, "build/codemode-exec-trampoline");
extern const char cm_exec_trampoline_image[], cm_exec_trampoline_image_end[];

void exec_guard_make_nondumpable(void) {
  /* A forked container process inherits it: until its execve, /proc/PID/exe (the host binary)
   * opens only for CAP_SYS_PTRACE over our user namespace. */
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

static int trampoline_copy(struct cm_error **err) {
  int fd = sealed_memfd_create("codemode-exec-trampoline", err);
  if (fd < 0)
    return -1;
  size_t size = (size_t)(cm_exec_trampoline_image_end - cm_exec_trampoline_image);
  for (size_t done = 0; done < size;) {
    ssize_t n = write(fd, cm_exec_trampoline_image + done, size - done);
    if (n <= 0) {
      int e = n < 0 ? errno : EIO;
      close(fd);
      return cm_error_set(err, e, "write the exec trampoline");
    }
    done += (size_t)n;
  }
  return fd; /* sealed once its program is written after it */
}

int exec_trampoline_prepare(struct exec_trampoline *t, const void *prog, size_t prog_len, struct cm_error **err) {
  t->fd = trampoline_copy(err);
  if (t->fd < 0)
    return -1;
  /* The program goes after the image, 16-aligned; the trampoline reads it from this fd. */
  size_t image = (size_t)(cm_exec_trampoline_image_end - cm_exec_trampoline_image);
  t->offset = (image + 15) & ~(size_t)15;
  if (pwrite(t->fd, prog, prog_len, (off_t)t->offset) != (ssize_t)prog_len) {
    int e = errno ? errno : EIO;
    close(t->fd);
    return cm_error_set(err, e, "write the exec trampoline's program");
  }
  /* Exec-only: its execve then cannot be read by us, so the kernel makes the trampoline
   * non-dumpable from its first instruction (exec_trampoline_exec drops the DAC capabilities
   * that would let root read it anyway). Nothing in the container can ptrace or open /proc of a
   * process that still has root's capabilities and no filter. */
  if (fchmod(t->fd, 0111) < 0) {
    int e = errno;
    close(t->fd);
    return cm_error_set(err, e, "exec trampoline: fchmod");
  }
  if (sealed_memfd_seal(t->fd, err) < 0)
    return cm_error_prefix(err, "exec trampoline");
  return 0;
}

/* Without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH effective, root cannot read the exec-only
 * copy, which is what makes the kernel mark the execve non-dumpable. The trampoline gets every
 * capability of the bounding set back at its execve (it is root), so nothing is lost. */
static int drop_dac_effective(void) {
  struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
  struct __user_cap_data_struct data[2];
  if (syscall(SYS_capget, &hdr, data) < 0)
    return -1;
  data[0].effective &= ~((1u << CAP_DAC_OVERRIDE) | (1u << CAP_DAC_READ_SEARCH));
  return (int)syscall(SYS_capset, &hdr, data);
}

int exec_trampoline_exec(const struct exec_trampoline *t, const char *path, char *const argv[], const int *keep_fds,
                         size_t n_keep, char *const envp[]) {
  size_t argc = 0;
  while (argv[argc])
    argc++;
  char **targv = calloc(argc + 3, sizeof(char *));
  if (targv == NULL)
    return errno = ENOMEM, -1;
  char where[48], self[32];
  snprintf(where, sizeof(where), "%d:%zu", t->fd, t->offset);
  snprintf(self, sizeof(self), "/proc/self/fd/%d", t->fd);
  targv[0] = where;
  targv[1] = (char *)path;
  memcpy(targv + 2, argv, argc * sizeof(char *));
  /* The trampoline reads its program from t->fd; the runtime waits for keep_fds to close at the
   * user's execve (the trampoline makes them close-on-exec again). */
  if (fcntl(t->fd, F_SETFD, 0) < 0)
    goto out;
  for (size_t i = 0; i < n_keep; i++)
    if (keep_fds[i] >= 0 && fcntl(keep_fds[i], F_SETFD, 0) < 0)
      goto out;
  if (drop_dac_effective() < 0)
    goto out;
  /* execve first: a seccomp filter already loaded (NOTIFY) allows execve, not always execveat.
   * Through /proc/self/fd (the container's procfs), the kernel opens the memfd itself. Without
   * that procfs, execveat on the fd. */
  execve(self, targv, envp);
  if (errno == ENOENT || errno == ENOTDIR)
    syscall(SYS_execveat, t->fd, "", targv, envp, AT_EMPTY_PATH);
out:;
  int e = errno;
  free(targv);
  errno = e;
  return -1;
}
