/* libFuzzer target: config.json → spec_load_string (parse + validate + free).
 * Finds crashes, leaks on error paths and UB in src/spec. */
#include <stddef.h>
#include <stdint.h>

#include "spec/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct cm_error *err = NULL;
  struct spec *s = spec_load_string((const char *)data, size, "config.json", &err);
  /* Exactly one of the two must be set: a NULL result without an error would make the CLI
   * print nothing; both set would leak. */
  if ((s == NULL) == (err == NULL))
    __builtin_trap();
  spec_free(s);
  cm_error_free(err);
  return 0;
}
