/* libFuzzer target: a container's state.json → state_read. state.json is the one file a later
 * command trusts from disk (pid, bundle, cgroup path), so a corrupt one must give an error, never
 * a crash. The input is written into a private temp dir and read back through its dir fd. */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/state.h"

static int dirfd_state = -1;

static void remove_temp_dir(void) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/fd/%d", dirfd_state);
  char dir[4096];
  ssize_t n = readlink(path, dir, sizeof(dir) - 1);
  unlinkat(dirfd_state, "state.json", 0);
  if (n > 0) {
    dir[n] = '\0';
    rmdir(dir);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (dirfd_state < 0) {
    const char *base = getenv("TMPDIR");
    char tmpl[4096];
    snprintf(tmpl, sizeof(tmpl), "%s/cm-fuzz-state.XXXXXX", base && *base ? base : "/tmp");
    if (mkdtemp(tmpl) == NULL)
      abort();
    dirfd_state = open(tmpl, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd_state < 0)
      abort();
    atexit(remove_temp_dir);
  }
  int fd = openat(dirfd_state, "state.json", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || write(fd, data, size) != (ssize_t)size)
    abort();
  close(fd);
  struct cm_error *err = NULL;
  struct container_state st;
  int rc = state_read(dirfd_state, "fuzz", &st, &err);
  if ((rc < 0) != (err != NULL))
    __builtin_trap();
  if (rc == 0) {
    /* What later commands rely on after a successful read. */
    if (st.id == NULL || st.bundle == NULL || st.pid <= 0)
      __builtin_trap();
    free(state_oci_json(&st, "stopped"));
  }
  container_state_clear(&st);
  cm_error_free(err);
  return 0;
}
