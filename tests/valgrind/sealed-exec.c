/* sealed-exec BINARY PROG ARG…: copy BINARY into a sealed memfd (the seals codemode's
 * CVE-2019-5736 self-protection checks for), then exec PROG ARG… with every "@EXE@" argument
 * replaced by /proc/self/fd/N of that copy. Lets valgrind run codemode as a client that is
 * already sealed, so codemode does not re-exec itself (valgrind cannot follow that execveat). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: sealed-exec BINARY PROG ARG...\n");
    return 2;
  }
  int src = open(argv[1], O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (src < 0 || fstat(src, &st) < 0) {
    perror(argv[1]);
    return 1;
  }
  /* No MFD_CLOEXEC: the exec'd program opens the copy by its /proc/self/fd path. */
  int memfd = memfd_create("codemode", MFD_ALLOW_SEALING);
  if (memfd < 0) {
    perror("memfd_create");
    return 1;
  }
  off_t off = 0;
  while (off < st.st_size)
    if (sendfile(memfd, src, &off, (size_t)(st.st_size - off)) <= 0) {
      perror("sendfile");
      return 1;
    }
  if (fcntl(memfd, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) < 0) {
    perror("F_ADD_SEALS");
    return 1;
  }
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
  for (int i = 2; i < argc; i++)
    if (strcmp(argv[i], "@EXE@") == 0)
      argv[i] = path;
  execvp(argv[2], argv + 2);
  perror(argv[2]);
  return 127;
}
