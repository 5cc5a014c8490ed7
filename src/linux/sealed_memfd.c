/* Sealed executable memfds: see sealed_memfd.h. */
#include "linux/sealed_memfd.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U /* Linux 6.3: executable even where vm.memfd_noexec defaults to noexec */
#endif
/* Nothing may write, grow or shrink the copy, and nobody may lift the seals again. */
#define ALL_SEALS (F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)

int sealed_memfd_create(const char *name, struct cm_error **err) {
  int fd = (int)syscall(SYS_memfd_create, name, MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
  if (fd < 0 && errno == EINVAL) /* before 6.3 */
    fd = (int)syscall(SYS_memfd_create, name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0)
    return cm_error_set(err, errno, "memfd_create %s", name);
  return fd;
}

int sealed_memfd_seal(int fd, struct cm_error **err) {
  if (fcntl(fd, F_ADD_SEALS, ALL_SEALS) < 0) {
    int e = errno;
    close(fd);
    return cm_error_set(err, e, "seal the memfd");
  }
  return 0;
}

bool sealed_memfd_is_sealed(int fd) {
  int seals = fcntl(fd, F_GET_SEALS);
  return seals >= 0 && (seals & ALL_SEALS) == ALL_SEALS;
}
