/* libFuzzer target: the run.codemode.landlock annotation (a landlockconfig document: it comes
 * with the config, which may be the attacker's) → spec_landlock_parse; and the state's
 * landlock.json → spec_landlock_kept_parse. A document that parses must survive the round trip
 * through the kept form with the same handled sets and rules. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "spec/landlock_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct cm_error *err = NULL;
  struct spec_landlock l;
  int r = spec_landlock_parse((const char *)data, size, "annotation", &l, &err);
  if ((r < 0) != (err != NULL))
    __builtin_trap();
  cm_error_free(err);
  err = NULL;
  /* A document may resolve to no right at all (abi.all of scopes at ABI 3): the runtime keeps no
   * such layer, and the kept form needs a right to say anything. */
  if (r == 0 && !(l.handled[0] | l.handled[1] | l.handled[2]))
    spec_landlock_clear(&l);
  else if (r == 0) {
    char *json = spec_landlock_kept_json(&l, 1, 7);
    struct spec_landlock *back;
    size_t n;
    int abi;
    if (spec_landlock_kept_parse(json, strlen(json), "landlock.json", &back, &n, &abi, &err) < 0 || n != 1 ||
        memcmp(back[0].handled, l.handled, sizeof(l.handled)) != 0 || back[0].n_paths != l.n_paths ||
        back[0].n_ports != l.n_ports)
      __builtin_trap();
    spec_landlock_clear(&back[0]);
    free(back);
    free(json);
    spec_landlock_clear(&l);
  }
  struct spec_landlock *layers;
  size_t n;
  int abi;
  r = spec_landlock_kept_parse((const char *)data, size, "landlock.json", &layers, &n, &abi, &err);
  if ((r < 0) != (err != NULL))
    __builtin_trap();
  cm_error_free(err);
  for (size_t i = 0; r == 0 && i < n; i++)
    spec_landlock_clear(&layers[i]);
  if (r == 0)
    free(layers);
  return 0;
}
