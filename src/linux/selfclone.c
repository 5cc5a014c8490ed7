/* CVE-2019-5736 self-protection where the exec trampoline is not enough: run from a sealed memfd
 * copy of our own binary. See selfclone.h for when, the alternatives weighed and the cost. */
#include "linux/selfclone.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "linux/sealed_memfd.h"
#include "util/cleanup.h"

extern char **environ;


/* Set across the re-exec only: if the new image still does not see itself sealed (a kernel
 * that loses the seals?), fail instead of re-executing forever. */
static const char reexec_marker[] = "_CODEMODE_SELFCLONED";

static bool has_label(const char *label) { return label != NULL && label[0] != '\0'; }

static bool may_hold_ptrace(const struct spec_process *p) {
  if (p == NULL)
    return false;
  const struct spec_capabilities *c = &p->capabilities;
  uint64_t any = c->bounding | c->effective | c->inheritable | c->permitted | c->ambient;
  return any & (UINT64_C(1) << CAP_SYS_PTRACE);
}

bool selfclone_required(const struct spec *s, const struct spec_process *p) {
  /* The label's domain transition must happen at the exec of the program the policy was written
   * for, not at the trampoline's (whose memfd no policy names as an entrypoint). */
  if (has_label(p->selinux_label) || has_label(p->apparmor_profile))
    return true;
  /* Another container sharing the pid namespace (a pod), or the host's processes, may hold
   * CAP_SYS_PTRACE, which opens a non-dumpable process's /proc/PID/exe. */
  if (!spec_ns_is_new(s, SPEC_NS_PID))
    return true;
  /* Without a user namespace, a container's CAP_SYS_PTRACE is ours too. */
  if (!s->linux_.namespaces[SPEC_NS_USER].present && (may_hold_ptrace(s->process) || may_hold_ptrace(p)))
    return true;
  return false;
}

bool selfclone_is_sealed(void) {
  cleanup_close int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  return sealed_memfd_is_sealed(fd);
}

/* argv of this process, as the kernel recorded it at execve. */
static char **read_cmdline(struct cm_error **err) {
  cleanup_close int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return cm_error_set(err, errno, "open /proc/self/cmdline"), NULL;
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  for (;;) {
    if (buf == NULL)
      abort();
    ssize_t n = read(fd, buf + len, cap - len - 1);
    if (n < 0) {
      free(buf);
      return cm_error_set(err, errno, "read /proc/self/cmdline"), NULL;
    }
    if (n == 0)
      break;
    len += (size_t)n;
    if (cap - len < 2)
      buf = realloc(buf, cap *= 2);
  }
  buf[len] = '\0';
  size_t argc = 0;
  for (size_t i = 0; i < len; i++)
    argc += buf[i] == '\0';
  /* One block: the pointer array followed by the strings. */
  char **argv = malloc((argc + 1) * sizeof(char *) + len + 1);
  if (argv == NULL)
    abort();
  char *strings = (char *)(argv + argc + 1);
  memcpy(strings, buf, len + 1);
  free(buf);
  for (size_t i = 0, at = 0; i < argc; i++) {
    argv[i] = strings + at;
    at += strlen(strings + at) + 1;
  }
  argv[argc] = NULL;
  return argv;
}

/* Bytes of our ELF file that execve and the dynamic loader read: the headers and every segment
 * (program headers only; the section headers and debug info after them are never loaded). A
 * -g build is ~1.4 MB of which ~350 kB is loaded: copying only that cuts the memfd copy (and its
 * pages) by three quarters. Returns the whole size when the file is not an ELF we understand. */
static off_t loaded_image_size(int fd, off_t file_size) {
  ElfW(Ehdr) eh;
  if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) ||
      eh.e_phentsize != sizeof(ElfW(Phdr)) || eh.e_phnum == 0 || eh.e_phnum > 256)
    return file_size;
  ElfW(Phdr) ph[256];
  size_t len = (size_t)eh.e_phnum * sizeof(ElfW(Phdr));
  if (pread(fd, ph, len, (off_t)eh.e_phoff) != (ssize_t)len)
    return file_size;
  uint64_t end = eh.e_phoff + len;
  if (end < eh.e_ehsize)
    end = eh.e_ehsize;
  for (size_t i = 0; i < eh.e_phnum; i++) {
    if (ph[i].p_offset + ph[i].p_filesz > end)
      end = ph[i].p_offset + ph[i].p_filesz;
  }
  return end < (uint64_t)file_size ? (off_t)end : file_size;
}

static int copy_self_to_sealed_memfd(struct cm_error **err) {
  cleanup_close int src = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  if (src < 0)
    return cm_error_set(err, errno, "open /proc/self/exe");
  struct stat st;
  if (fstat(src, &st) < 0)
    return cm_error_set(err, errno, "stat /proc/self/exe");
  int memfd = sealed_memfd_create("codemode", err);
  if (memfd < 0)
    return -1;
  off_t off = 0, size = loaded_image_size(src, st.st_size);
  while (off < size) {
    ssize_t n = sendfile(memfd, src, &off, (size_t)(size - off));
    if (n <= 0) {
      int e = n < 0 ? errno : EIO;
      close(memfd);
      return cm_error_set(err, e, "copy /proc/self/exe into a memfd");
    }
  }
  if (sealed_memfd_seal(memfd, err) < 0)
    return cm_error_prefix(err, "the copy of the runtime");
  return memfd;
}

int selfclone_ensure(struct cm_error **err) {
  if (selfclone_is_sealed()) {
    unsetenv(reexec_marker);
    return 0;
  }
  if (getenv(reexec_marker))
    return cm_error_set(err, 0, "re-executed from a sealed copy, but /proc/self/exe is not sealed");
  char **argv = read_cmdline(err);
  if (argv == NULL)
    return -1;
  int memfd = copy_self_to_sealed_memfd(err);
  if (memfd < 0) {
    free(argv);
    return -1;
  }
  if (setenv(reexec_marker, "1", 1) < 0)
    abort();
  syscall(SYS_execveat, memfd, "", argv, environ, AT_EMPTY_PATH);
  int e = errno;
  unsetenv(reexec_marker);
  close(memfd);
  free(argv);
  return cm_error_set(err, e, "re-execute from the sealed memfd copy of the runtime");
}
