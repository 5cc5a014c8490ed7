/* What codemode itself (not codemode-criu) knows of CRIU: src/cli/checkpoint.c. */
#ifndef CM_CLI_CRIU_TOOL_H
#define CM_CLI_CRIU_TOOL_H
#include "spec/spec.h"

/* `codemode-criu probe` run: the features annotations run.codemode.checkpoint.enabled
 * ("true"/"false"), .criu.version and, when not enabled, .reason (CRIU's own words). */
int criu_tool_probe(struct spec_kv_list *out);
/* criu found in $PATH (no process started: for --version), or NULL. */
const char *criu_tool_binary_path(void);
#endif
