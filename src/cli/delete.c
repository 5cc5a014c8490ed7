#include <stdbool.h>

#include "cli/cli.h"
#include "cli/simple_flags.h"

static const char help[] =
    "usage: codemode delete [--force] ID\n"
    "\n"
    "Delete a stopped (or created) container and everything it made.\n"
    "  -f, --force   kill it first if it is running\n";

static int on_opt(int c, const char *arg, void *data) {
  (void)arg;
  if (c != 'f')
    return -1;
  *(bool *)data = true;
  return 0;
}

int cmd_delete(struct cli_globals *g, int argc, char **argv) {
  static const struct option opts[] = {
      {"force", no_argument, NULL, 'f'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  bool force = false;
  int r = simple_flags_parse("delete", help, argc, argv, "fh", opts, on_opt, &force);
  if (r != 0)
    return r < 0 ? 1 : 0;
  if (optind != argc - 1)
    return cli_usage_error("delete", "expects exactly one container ID");
  struct cm_error *err = NULL;
  if (runtime_delete(&g->ctx, argv[optind], force, &err) < 0)
    return cli_fail(err);
  return 0;
}
