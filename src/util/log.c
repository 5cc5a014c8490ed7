#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/json_escape.h"

static struct {
  int fd; /* -1: stderr */
  enum cm_log_format format;
  bool debug;
} logger = {-1, CM_LOG_TEXT, false};

int cm_log_init(const char *path, enum cm_log_format format, bool debug) {
  logger.format = format;
  logger.debug = debug;
  if (path && *path) {
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0)
      return -1;
    logger.fd = fd;
  }
  return 0;
}

bool cm_log_debug_enabled(void) { return logger.debug; }
bool cm_log_is_file(void) { return logger.fd >= 0; }
int cm_log_fd(void) { return logger.fd; }

static const char *level_name(enum cm_log_level l) {
  switch (l) {
  case CM_LOG_ERROR: return "error";
  case CM_LOG_WARN: return "warning";
  case CM_LOG_INFO: return "info";
  default: return "debug";
  }
}

/* The date computed here: glibc's gmtime_r loads /etc/localtime first (four syscalls per create,
 * issue 7). Days since 1970-01-01 to a proleptic Gregorian date, in 400-year eras from
 * 0000-03-01. */
void cm_now_rfc3339(char *buf) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  int64_t days = ts.tv_sec / 86400, secs = ts.tv_sec % 86400;
  int64_t z = days + 719468;
  int64_t era = z / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  int64_t day = doy - (153 * mp + 2) / 5 + 1;
  int64_t month = mp < 10 ? mp + 3 : mp - 9;
  int64_t year = yoe + era * 400 + (month <= 2);
  snprintf(buf, CM_RFC3339_LEN, "%04d-%02d-%02dT%02d:%02d:%02d.%09ldZ", (int)year, (int)month, (int)day,
           (int)(secs / 3600), (int)(secs / 60 % 60), (int)(secs % 60), ts.tv_nsec);
}

void cm_log(enum cm_log_level level, const char *fmt, ...) {
  int saved = errno;
  char *msg = NULL, *line = NULL;
  size_t len = 0;
  va_list ap;
  va_start(ap, fmt);
  if (vasprintf(&msg, fmt, ap) < 0)
    msg = NULL;
  va_end(ap);
  if (msg == NULL)
    goto out;
  FILE *f = open_memstream(&line, &len);
  if (f == NULL)
    goto out;
  char when[CM_RFC3339_LEN];
  cm_now_rfc3339(when);
  if (logger.format == CM_LOG_JSON) {
    fprintf(f, "{\"level\":\"%s\",\"msg\":\"", level_name(level));
    json_put_escaped(f, msg);
    fprintf(f, "\",\"time\":\"%s\"}\n", when);
  } else {
    fprintf(f, "%s %s: %s\n", when, level_name(level), msg);
  }
  fclose(f);
  /* One write per line so concurrent writers (runtime and container init) never interleave. */
  if (write(logger.fd >= 0 ? logger.fd : STDERR_FILENO, line, len) < 0) {
    /* nowhere left to report it */
  }
out:
  free(msg);
  free(line);
  errno = saved;
}
