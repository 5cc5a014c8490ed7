/* libFuzzer target: one image layer (a tar stream, maybe compressed) → unpack_layer_buffer into a
 * fresh rootfs. A layer is an attacker's input: it must give an error or a tree, never a crash,
 * a hang, or an entry outside the rootfs. Beside the rootfs lies a canary directory; every run
 * checks that nothing appeared next to the rootfs or in the canary, then removes the rootfs.
 * Odd-sized inputs unpack as rootless (no devices, no owners), even ones as root. */
#include <dirent.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/image.h"
#include "image/unpack_internal.h"

static char base[4096];
static int base_fd = -1;

static void remove_base(void) {
  if (base_fd >= 0) {
    unpack_remove_tree_at(base_fd, "r");
    unpack_remove_tree_at(base_fd, "outside");
    close(base_fd);
    rmdir(base);
  }
}

static int count_entries(int dirfd, const char *name) {
  int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  DIR *d = fdopendir(fd);
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL)
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
      n++;
  closedir(d);
  return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (base_fd < 0) {
    const char *t = getenv("TMPDIR");
    snprintf(base, sizeof(base), "%s/cm-fuzz-unpack.XXXXXX", t && *t ? t : "/tmp");
    if (mkdtemp(base) == NULL)
      abort();
    base_fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (base_fd < 0 || mkdirat(base_fd, "outside", 0755) < 0)
      abort();
    int c = openat(base_fd, "outside/canary", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (c < 0 || write(c, "canary", 6) != 6)
      abort();
    close(c);
    atexit(remove_base);
  }
  if (mkdirat(base_fd, "r", 0755) < 0)
    abort();
  int root = openat(base_fd, "r", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0)
    abort();
  struct unpack_options o = {.rootless = size & 1};
  unpack_limits_default(&o.limits); /* a bomb in the corpus must not fill the disk */
  struct cm_error *err = NULL;
  unpack_layer_buffer(root, data, size, &o, "fuzz", &err);
  cm_error_freep(&err);
  close(root);
  /* Nothing beside the rootfs, nothing new in the canary, the canary's bytes unchanged. */
  struct stat st;
  if (count_entries(base_fd, ".") != 2 || count_entries(base_fd, "outside") != 1 ||
      fstatat(base_fd, "outside/canary", &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) || st.st_size != 6) {
    fprintf(stderr, "fuzz_unpack: an entry escaped the rootfs\n");
    abort();
  }
  if (unpack_remove_tree_at(base_fd, "r") < 0) {
    /* A tree we cannot remove would poison the next input. */
    fprintf(stderr, "fuzz_unpack: the rootfs could not be removed\n");
    abort();
  }
  return 0;
}
