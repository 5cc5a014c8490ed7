/* libFuzzer target: a learned policy file (codemode-run --policy FILE, codemode learn --merge,
 * codemode policy diff read it; it may come from anywhere) → learned_policy_parse. A file that
 * parses must be written back and read again to the same text, turn into a Docker-format seccomp
 * profile the profile loader accepts and a Landlock layer, merge into itself without change, and
 * differ from itself in nothing. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/learned_policy.h"
#include "policy/seccomp_profile.h"

/* policy/profile.c's report helpers: the rest of that file (the profiles) is not linked here. */
void policy_report_add(struct policy_report *r, const char *fmt, ...) {
  va_list ap;
  char *line = NULL;
  va_start(ap, fmt);
  if (vasprintf(&line, fmt, ap) < 0)
    abort();
  va_end(ap);
  r->lines = realloc(r->lines, (r->count + 1) * sizeof(char *));
  r->lines[r->count++] = line;
}
void policy_report_free(struct policy_report *r) {
  for (size_t i = 0; i < r->count; i++)
    free(r->lines[i]);
  free(r->lines);
  memset(r, 0, sizeof(*r));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct cm_error *err = NULL;
  struct learned_policy p;
  int r = learned_policy_parse((const char *)data, size, "policy", &p, &err);
  if ((r < 0) != (err != NULL))
    __builtin_trap();
  cm_error_free(err);
  err = NULL;
  if (r < 0)
    return 0;
  char *a = learned_policy_json(&p);
  struct learned_policy q;
  if (learned_policy_parse(a, strlen(a), "written", &q, &err) < 0)
    __builtin_trap();
  char *b = learned_policy_json(&q);
  if (strcmp(a, b) != 0)
    __builtin_trap();
  struct spec_seccomp sc;
  if (learned_policy_seccomp(&p, &sc, &err) == 0)
    seccomp_profile_free(&sc);
  else
    cm_error_free(err);
  struct spec_landlock ll;
  learned_policy_landlock(&p, &ll);
  spec_landlock_clear(&ll);
  struct policy_report d = {0};
  learned_policy_diff(&p, &q, &d);
  if (d.count)
    __builtin_trap();
  struct learned_policy m = {0};
  learned_policy_merge(&m, &p);
  learned_policy_diff(&p, &m, &d);
  if (d.count)
    __builtin_trap();
  learned_policy_free(&m);
  free(a);
  free(b);
  learned_policy_free(&p);
  learned_policy_free(&q);
  return 0;
}
