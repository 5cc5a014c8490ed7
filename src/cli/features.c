#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
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
  char *json = spec_features_json(runtime_landlock_abi());
  puts(json);
  free(json);
  return 0;
}
