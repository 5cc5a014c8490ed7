#include "cli/create_flags.h"

#include <getopt.h>
#include <stdio.h>

#include "cli/cli.h"

int create_flags_parse(const char *cmd, const char *help, int argc, char **argv, struct create_options *o,
                       struct run_flags *rf) {
  enum { OPT_PID_FILE = 256, OPT_CONSOLE, OPT_NO_PIVOT, OPT_NO_KEYRING, OPT_PRESERVE, OPT_KEEP, OPT_NO_SUBREAPER };
  static const struct option opts[] = {
      {"bundle", required_argument, NULL, 'b'},
      {"config", required_argument, NULL, 'f'},
      {"pid-file", required_argument, NULL, OPT_PID_FILE},
      {"console-socket", required_argument, NULL, OPT_CONSOLE},
      {"no-pivot", no_argument, NULL, OPT_NO_PIVOT},
      {"no-new-keyring", no_argument, NULL, OPT_NO_KEYRING},
      {"preserve-fds", required_argument, NULL, OPT_PRESERVE},
      {"detach", no_argument, NULL, 'd'},
      {"keep", no_argument, NULL, OPT_KEEP},
      {"no-subreaper", no_argument, NULL, OPT_NO_SUBREAPER}, /* runc's; init is our child anyway */
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  int c;
  while ((c = getopt_long(argc, argv, rf ? "b:f:dh" : "b:f:h", opts, NULL)) != -1) {
    switch (c) {
    case 'b': o->bundle = optarg; break;
    case 'f': o->config_path = optarg; break;
    case OPT_PID_FILE: o->pid_file = optarg; break;
    case OPT_CONSOLE: o->console_socket = optarg; break;
    case OPT_NO_PIVOT: o->no_pivot = true; break;
    case OPT_NO_KEYRING: o->no_new_keyring = true; break;
    case OPT_PRESERVE:
      o->preserve_fds = cli_parse_uint(cmd, "--preserve-fds", optarg);
      if (o->preserve_fds < 0)
        return -1;
      break;
    case 'd':
      if (!rf)
        return cli_usage_error(cmd, "unknown option --detach"), -1;
      rf->detach = true;
      break;
    case OPT_KEEP:
      if (!rf)
        return cli_usage_error(cmd, "unknown option --keep"), -1;
      rf->keep = true;
      break;
    case OPT_NO_SUBREAPER: break;
    case 'h': fputs(help, stdout); return 1;
    default: return cli_usage_error(cmd, "unknown or incomplete option \"%s\"", argv[optind - 1]), -1;
    }
  }
  if (optind != argc - 1)
    return cli_usage_error(cmd, optind >= argc ? "missing container ID" : "expects exactly one container ID"), -1;
  o->id = argv[optind];
  return 0;
}
