#include "cli/simple_flags.h"

#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

int simple_flags_parse(const char *cmd, const char *help, int argc, char **argv, const char *shortopts,
                       const struct option *opts, int (*on_opt)(int c, const char *arg, void *data), void *data) {
  static const struct option help_only[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, shortopts, opts ? opts : help_only, NULL)) != -1) {
    if (c == 'h') {
      fputs(help, stdout);
      return 1;
    }
    if (c == '?' || on_opt == NULL || on_opt(c, optarg, data) < 0)
      return cli_usage_error(cmd, "unknown or incomplete option \"%s\"", argv[optind - 1]), -1;
  }
  return 0;
}
