#include "cli/cli.h"
#include "cli/simple_flags.h"

static const char help[] = "usage: codemode start ID\n\nStart a created container: its init execs the process.\n";

int cmd_start(struct cli_globals *g, int argc, char **argv) {
  int r = simple_flags_parse("start", help, argc, argv, "h", NULL, NULL, NULL);
  if (r != 0)
    return r < 0 ? 1 : 0;
  if (optind != argc - 1)
    return cli_usage_error("start", "expects exactly one container ID");
  struct cm_error *err = NULL;
  if (runtime_start(&g->ctx, argv[optind], &err) < 0)
    return cli_fail(err);
  return 0;
}
