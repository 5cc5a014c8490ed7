#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "cli/simple_flags.h"

static const char help[] =
    "usage: codemode state ID\n\nPrint the OCI state of a container as JSON (status created, running, paused or\n"
    "stopped).\n";

int cmd_state(struct cli_globals *g, int argc, char **argv) {
  int r = simple_flags_parse("state", help, argc, argv, "h", NULL, NULL, NULL);
  if (r != 0)
    return r < 0 ? 1 : 0;
  if (optind != argc - 1)
    return cli_usage_error("state", "expects exactly one container ID");
  struct cm_error *err = NULL;
  char *json = runtime_state_json(&g->ctx, argv[optind], &err);
  if (json == NULL)
    return cli_fail(err);
  puts(json);
  free(json);
  return 0;
}
