#include "util/sibling.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *cm_sibling_binary(const char *name, const char *env_name, const char *install_dir) {
  char *p;
  const char *env = env_name ? getenv(env_name) : NULL;
  if (env && *env) {
    if ((p = strdup(env)) == NULL)
      abort();
    return p;
  }
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    /* A sealed copy (memfd, linux/selfclone.h) has no directory of its own. */
    if (slash && self[0] == '/') {
      if (asprintf(&p, "%.*s/%s", (int)(slash - self), self, name) < 0)
        abort();
      if (access(p, X_OK) == 0)
        return p;
      free(p);
    }
  }
  if (asprintf(&p, "%s/%s", install_dir, name) < 0)
    abort();
  return p;
}
