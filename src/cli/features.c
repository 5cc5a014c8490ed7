#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "cli/criu_tool.h"
#include "cli/simple_flags.h"

static const char help[] =
    "usage: codemode features\n\nPrint what this runtime implements, as the OCI features document (JSON).\n";

int cmd_features(struct cli_globals *g, int argc, char **argv) {
  (void)g;
  int r = simple_flags_parse("features", help, argc, argv, "h", NULL, NULL, NULL);
  if (r != 0)
    return r < 0 ? 1 : 0;
  if (optind != argc)
    return cli_usage_error("features", "takes no arguments");
  /* Whether checkpoint/restore can work here: CRIU asked (codemode-criu probe). */
  struct spec_kv_list criu = {0};
  criu_tool_probe(&criu);
  char *json = spec_features_json_with(runtime_landlock_abi(), &criu);
  for (size_t i = 0; i < criu.count; i++) {
    free(criu.items[i].key);
    free(criu.items[i].value);
  }
  free(criu.items);
  puts(json);
  free(json);
  return 0;
}
