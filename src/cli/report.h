/* How the command-line tools report a failure: one wording for codemode and codemode-criu (which
 * carries codemode's checkpoint and restore), so a user and the shim see the same lines. */
#ifndef CM_CLI_REPORT_H
#define CM_CLI_REPORT_H

#include "util/error.h"

/* Report err (stderr, and the log file when --log is set), free it; returns exit status 1. */
int cli_fail(struct cm_error *err);
/* For usage errors: "codemode: <cmd>: <message>" + a hint to --help; returns 1. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
