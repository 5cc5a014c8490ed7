/* process.rlimits → setrlimit, one by one, in the container before execve. */
#include "linux/process_attrs.h"

#include <errno.h>
#include <stdio.h>
#include <sys/resource.h>

static void format_limit(char *buf, size_t size, uint64_t v) {
  if (v == (uint64_t)RLIM_INFINITY)
    snprintf(buf, size, "unlimited");
  else
    snprintf(buf, size, "%llu", (unsigned long long)v);
}

int rlimits_apply(const struct spec_process *p, struct cm_error **err) {
  for (size_t i = 0; i < p->n_rlimits; i++) {
    const struct spec_rlimit *r = &p->rlimits[i];
    const char *name = r->type ? r->type : "rlimit";
    struct rlimit lim = {.rlim_cur = (rlim_t)r->soft, .rlim_max = (rlim_t)r->hard};
    if (setrlimit((__rlimit_resource_t)r->resource, &lim) == 0)
      continue;
    int e = errno;
    char soft[24], hard[24];
    format_limit(soft, sizeof(soft), r->soft);
    format_limit(hard, sizeof(hard), r->hard);
    if (e == EPERM) {
      struct rlimit cur = {0};
      getrlimit((__rlimit_resource_t)r->resource, &cur);
      char cur_hard[24];
      format_limit(cur_hard, sizeof(cur_hard), (uint64_t)cur.rlim_max);
      return cm_error_set(err, e,
                          "process.rlimits: set %s to soft %s, hard %s: raising the hard limit above %s needs "
                          "CAP_SYS_RESOURCE",
                          name, soft, hard, cur_hard);
    }
    return cm_error_set(err, e, "process.rlimits: set %s to soft %s, hard %s", name, soft, hard);
  }
  return 0;
}
