#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/create_flags.h"

static const char help[] =
    "usage: codemode create [options] ID\n"
    "\n"
    "Create a container from a bundle. Its init waits until `codemode start ID`.\n"
    CREATE_FLAGS_HELP;

int cmd_create(struct cli_globals *g, int argc, char **argv) {
  struct create_options o = {0};
  int r = create_flags_parse("create", help, argc, argv, &o, NULL);
  if (r != 0)
    return r < 0 ? 1 : 0;
  struct cm_error *err = NULL;
  struct cli_policy pol;
  if (cli_policy_prepare(g, &o, &pol, &err) < 0 || runtime_apply_profile_at_create(pol.spec, &err) < 0) {
    cli_policy_free(&pol);
    return cli_fail(err);
  }
  int rc = runtime_create(&g->ctx, &o, NULL, &err);
  cli_policy_free(&pol);
  return rc < 0 ? cli_fail(err) : 0;
}
