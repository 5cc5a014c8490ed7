#include "cli/report.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "util/log.h"

int cli_fail(struct cm_error *err) {
  char *msg = cm_error_format(err);
  if (cm_log_is_file())
    cm_log(CM_LOG_ERROR, "%s", msg);
  fprintf(stderr, "codemode: %s\n", msg);
  free(msg);
  cm_error_free(err);
  return 1;
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
  char *msg = NULL;
  va_list ap;
  va_start(ap, fmt);
  if (vasprintf(&msg, fmt, ap) < 0)
    msg = NULL;
  va_end(ap);
  if (cm_log_is_file())
    cm_log(CM_LOG_ERROR, "%s: %s", cmd, msg ? msg : "");
  fprintf(stderr, "codemode: %s: %s (see 'codemode %s --help')\n", cmd, msg ? msg : "", cmd);
  free(msg);
  return 1;
}
