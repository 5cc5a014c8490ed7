/* libFuzzer target: process.json (exec --process) → spec_process_load_file.
 * The loader takes a path, so the input goes through a memfd opened as /proc/self/fd/N. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "spec/spec.h"

static int memfd = -1;
static char memfd_path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (memfd < 0) {
    memfd = memfd_create("process.json", MFD_CLOEXEC);
    if (memfd < 0)
      abort();
    snprintf(memfd_path, sizeof(memfd_path), "/proc/self/fd/%d", memfd);
  }
  if (ftruncate(memfd, 0) < 0 || pwrite(memfd, data, size, 0) != (ssize_t)size)
    abort();
  struct cm_error *err = NULL;
  struct spec_process *p = spec_process_load_file(memfd_path, &err);
  if ((p == NULL) == (err == NULL))
    __builtin_trap();
  spec_process_free(p);
  cm_error_free(err);
  return 0;
}
