/* The flags create and run share (runc's, plus crun's --config). */
#ifndef CM_CLI_CREATE_FLAGS_H
#define CM_CLI_CREATE_FLAGS_H

#include <stdbool.h>
#include "runtime/runtime.h"

#define CREATE_FLAGS_HELP \
  "\n" \
  "Options:\n" \
  "  -b, --bundle DIR         bundle directory (default: current directory)\n" \
  "  -f, --config FILE        config file (default: BUNDLE/config.json)\n" \
  "  --pid-file FILE          write init's host pid to FILE\n" \
  "  --console-socket PATH    send the pty master over this unix socket (process.terminal)\n" \
  "  --no-pivot               MS_MOVE + chroot instead of pivot_root\n" \
  "  --no-new-keyring         keep the caller's session keyring\n" \
  "  --preserve-fds N         pass N extra fds (3 .. 3+N-1) to the container\n" \
  "  -h, --help               this help\n"

struct run_flags {
  bool detach, keep;
};

/* Returns 0 when o is filled, 1 after printing help, -1 after printing a usage error.
 * run_flags (may be NULL) enables run's --detach/-d and --keep. */
int create_flags_parse(const char *cmd, const char *help, int argc, char **argv, struct create_options *o,
                       struct run_flags *rf);

#endif
