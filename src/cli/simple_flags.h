/* Shared parsing for commands that take a few flags and one ID. */
#ifndef CM_CLI_SIMPLE_FLAGS_H
#define CM_CLI_SIMPLE_FLAGS_H
#include <getopt.h>
/* Parse argv with `opts`/`shortopts`; each option found is passed to on_opt (return -1 to fail).
 * Handles -h/--help (prints help, returns 1). Positional args are left in argv[optind..]. */
int simple_flags_parse(const char *cmd, const char *help, int argc, char **argv, const char *shortopts,
                       const struct option *opts, int (*on_opt)(int c, const char *arg, void *data), void *data);
#endif
