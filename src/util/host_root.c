/* Root of the host's user namespace, or not (host_root.h). */
#include "util/host_root.h"

#include <stdio.h>
#include <unistd.h>

static int cached = -1;

int cm_self_id_map(const char *file, struct cm_id_range *out, size_t max) {
  FILE *f = fopen(file, "re");
  if (f == NULL)
    return -1;
  size_t n = 0;
  unsigned long inside, outside, count;
  while (n < max && fscanf(f, "%lu %lu %lu", &inside, &outside, &count) == 3)
    out[n++] = (struct cm_id_range){(uint32_t)inside, (uint32_t)outside, (uint32_t)count};
  fclose(f);
  return (int)n;
}

static bool initial_userns(void) {
  struct cm_id_range r[2];
  int n = cm_self_id_map("/proc/self/uid_map", r, 2);
  if (n <= 0)
    return true; /* no /proc: nothing says otherwise, and geteuid() decided already */
  /* One line mapping every id to itself. */
  return n == 1 && r[0].inside == 0 && r[0].outside == 0 && r[0].count == 4294967295U;
}

bool cm_host_root(void) {
  if (geteuid() != 0)
    return false;
  if (cached < 0)
    cached = initial_userns();
  return cached == 1;
}

void cm_host_root_forget(void) {
  cached = -1;
}

unsigned cm_host_uid(void) {
  uint32_t self = (uint32_t)geteuid();
  struct cm_id_range r[340];
  int n = cm_self_id_map("/proc/self/uid_map", r, 340);
  for (int i = 0; i < n; i++)
    if (self >= r[i].inside && self - r[i].inside < r[i].count)
      return r[i].outside + (self - r[i].inside);
  return self;
}
