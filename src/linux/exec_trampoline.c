/* The exec trampoline's runtime side: a sealed memfd of src/trampoline/'s program, and the exec
 * through it. See exec_trampoline.h for why. */
#include "linux/exec_trampoline.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The trampoline binary, embedded at build time (Makefile). .incbin paths are relative to the
 * repository root, where the compiler runs. */
__asm__(".section .rodata\n"
        ".global cm_exec_trampoline_image\n"
        ".type cm_exec_trampoline_image, @object\n"
        ".balign 16\ncm_exec_trampoline_image:\n"
        ".incbin \"build/codemode-exec-trampoline\"\n"
        ".global cm_exec_trampoline_image_end\ncm_exec_trampoline_image_end:\n"
        ".previous\n");
extern const char cm_exec_trampoline_image[], cm_exec_trampoline_image_end[];

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U /* Linux 6.3: executable even where vm.memfd_noexec defaults to noexec */
#endif
/* Nothing may write, grow or shrink the copy, and nobody may lift the seals again: a container
 * that grabs it through /proc/PID/exe gets a file it cannot change. */
#define TRAMPOLINE_SEALS (F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)

void exec_guard_make_nondumpable(void) {
  /* A forked container process inherits it: until its execve, /proc/PID/exe (the host binary)
   * opens only for CAP_SYS_PTRACE over our user namespace. */
  if (geteuid() == 0)
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

static int sealed_trampoline(struct cm_error **err) {
  /* "codemode" in the name: whoever lists /proc sees what it is. */
  static const char name[] = "codemode-exec-trampoline";
  int fd = (int)syscall(SYS_memfd_create, name, MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
  if (fd < 0 && errno == EINVAL) /* before 6.3 */
    fd = (int)syscall(SYS_memfd_create, name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0)
    return cm_error_set(err, errno, "memfd_create for the exec trampoline");
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
  if (fcntl(fd, F_ADD_SEALS, TRAMPOLINE_SEALS) < 0) {
    int e = errno;
    close(fd);
    return cm_error_set(err, e, "seal the exec trampoline");
  }
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
