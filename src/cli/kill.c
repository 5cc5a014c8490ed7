#include <stdbool.h>

#include "cli/cli.h"
#include "cli/simple_flags.h"

static const char help[] =
    "usage: codemode kill [--all] ID [SIGNAL]\n"
    "\n"
    "Send SIGNAL (default TERM; a number, or a name with or without SIG) to the container's init.\n"
    "  -a, --all   signal every process in the container's cgroup\n";

static int on_opt(int c, const char *arg, void *data) {
  (void)arg;
  if (c != 'a')
    return -1;
  *(bool *)data = true;
  return 0;
}

int cmd_kill(struct cli_globals *g, int argc, char **argv) {
  static const struct option opts[] = {
      {"all", no_argument, NULL, 'a'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  bool all = false;
  int r = simple_flags_parse("kill", help, argc, argv, "ah", opts, on_opt, &all);
  if (r != 0)
    return r < 0 ? 1 : 0;
  int npos = argc - optind;
  if (npos < 1 || npos > 2)
    return cli_usage_error("kill", "expects a container ID and an optional signal");
  struct cm_error *err = NULL;
  int sig = signal_parse(npos == 2 ? argv[optind + 1] : "TERM", &err);
  if (sig < 0)
    return cli_fail(err);
  if (runtime_kill(&g->ctx, argv[optind], sig, all, &err) < 0)
    return cli_fail(err);
  return 0;
}
