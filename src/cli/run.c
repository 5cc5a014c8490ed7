#include <stdio.h>

#include "cli/cli.h"
#include "cli/create_flags.h"

static const char help[] =
    "usage: codemode run [options] ID\n"
    "\n"
    "Create and start a container; wait for it, exit with its status (128+N if killed by signal N)\n"
    "and delete it. Signals are forwarded to the container; with process.terminal and no\n"
    "--console-socket the terminal is proxied.\n"
    CREATE_FLAGS_HELP
    "  -d, --detach             return once the container runs\n"
    "  --keep                   do not delete the container after it exits\n";

int cmd_run(struct cli_globals *g, int argc, char **argv) {
  struct create_options o = {0};
  struct run_flags rf = {0};
  int r = create_flags_parse("run", help, argc, argv, &o, &rf);
  if (r != 0)
    return r < 0 ? 1 : 0;
  struct cm_error *err = NULL;
  int status = 0;
  struct cli_policy pol;
  if (cli_policy_prepare(g, &o, &pol, &err) < 0 || runtime_apply_profile_at_create(pol.spec, &err) < 0) {
    cli_policy_free(&pol);
    return cli_fail(err);
  }
  int rc = runtime_run(&g->ctx, &o, rf.detach, rf.keep, &status, &err);
  cli_policy_free(&pol);
  return rc < 0 ? cli_fail(err) : status;
}
