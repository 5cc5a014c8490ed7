/* libFuzzer target: `update --resources` JSON → spec_resources_load_string. */
#include <stddef.h>
#include <stdint.h>

#include "spec/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct cm_error *err = NULL;
  struct spec_resources r;
  int rc = spec_resources_load_string((const char *)data, size, "resources", &r, &err);
  if ((rc < 0) != (err != NULL))
    __builtin_trap();
  spec_resources_free(&r);
  cm_error_free(err);
  return 0;
}
