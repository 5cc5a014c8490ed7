#include "cli/cli.h"
#include "cli/simple_flags.h"

static const char pause_help[] =
    "usage: codemode pause ID\n"
    "\n"
    "Freeze every process of the container (cgroup freezer).\n";
static const char resume_help[] =
    "usage: codemode resume ID\n"
    "\n"
    "Thaw a paused container.\n";

static int pause_or_resume(struct cli_globals *g, int argc, char **argv, bool pause) {
  const char *cmd = pause ? "pause" : "resume";
  int r = simple_flags_parse(cmd, pause ? pause_help : resume_help, argc, argv, "h", NULL, NULL, NULL);
  if (r != 0)
    return r < 0 ? 1 : 0;
  if (argc - optind != 1)
    return cli_usage_error(cmd, "expects exactly one container ID");
  struct cm_error *err = NULL;
  int rc = pause ? runtime_pause(&g->ctx, argv[optind], &err) : runtime_resume(&g->ctx, argv[optind], &err);
  return rc < 0 ? cli_fail(err) : 0;
}

int cmd_pause(struct cli_globals *g, int argc, char **argv) {
  return pause_or_resume(g, argc, argv, true);
}

int cmd_resume(struct cli_globals *g, int argc, char **argv) {
  return pause_or_resume(g, argc, argv, false);
}
