/* The exec trampoline's runtime side: a sealed memfd of src/trampoline/'s program, and the exec
 * through it. See exec_trampoline.h for why. */
#include "linux/exec_trampoline.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
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
  if (geteuid() == 0)
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

static int sealed_trampoline(struct cm_error **err) {
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
  if (sealed_memfd_seal(fd, err) < 0)
    return cm_error_prefix(err, "exec trampoline");
  return fd;
}

int exec_trampoline_prepare(struct exec_trampoline *t, const char *exe, char *const *argv,
                            struct cm_error **err) {
  t->fd = sealed_trampoline(err);
  if (t->fd < 0)
    return -1;
  size_t argc = 0;
  while (argv[argc])
    argc++;
  t->argv = calloc(argc + 2, sizeof(char *));
  if (t->argv == NULL)
    abort();
  t->argv[0] = (char *)exe;
  memcpy(t->argv + 1, argv, argc * sizeof(char *));
  snprintf(t->path, sizeof(t->path), "/proc/self/fd/%d", t->fd);
  return 0;
}

void exec_trampoline_exec(const struct exec_trampoline *t, char *const *envp) {
  /* execve first: a seccomp filter that let the container start allows execve, not always
   * execveat. Through /proc/self/fd (the container's procfs), the kernel opens the memfd itself;
   * close-on-exec does not matter for an ELF file. Without that procfs, execveat on the fd. */
  execve(t->path, t->argv, envp);
  if (errno != ENOENT && errno != ENOTDIR)
    return;
  syscall(SYS_execveat, t->fd, "", t->argv, envp, AT_EMPTY_PATH);
}
