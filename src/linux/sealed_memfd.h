/* Executable in-memory copies that nobody may change once sealed (CVE-2019-5736): the runtime's
 * own copy (selfclone.c) and the exec trampoline's (exec_trampoline.c). A container that grabs
 * one through /proc/PID/exe gets a file it can neither write, grow, shrink nor unseal. */
#ifndef CM_LINUX_SEALED_MEMFD_H
#define CM_LINUX_SEALED_MEMFD_H
#include <stdbool.h>
#include "util/error.h"

/* A new memfd named `name` ("codemode…": whoever lists /proc sees what it is), close-on-exec
 * (execveat of an ELF file works with such an fd), executable, sealable. -1 with err set. */
int sealed_memfd_create(const char *name, struct cm_error **err);
/* Apply every seal; on failure close fd and return -1 with err set. */
int sealed_memfd_seal(int fd, struct cm_error **err);
/* Does fd carry every seal? */
bool sealed_memfd_is_sealed(int fd);
#endif
