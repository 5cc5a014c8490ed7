/* Copying a file's bytes between two fds (util/file_copy.h). */
#include <errno.h>
#include <stddef.h>
#include <sys/sendfile.h>

#include "util/file_copy.h"

int file_copy_bytes(int out, int in, off_t size) {
  for (off_t left = size; left > 0;) {
    /* sendfile moves at most ~2 GiB per call. */
    ssize_t n = sendfile(out, in, NULL, left > (1 << 30) ? (1 << 30) : (size_t)left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return -1;
    if (n == 0)
      break; /* shrank meanwhile */
    left -= n;
  }
  return 0;
}
