#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

static void json_escape(FILE *f, const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c == '\n')
      fputs("\\n", f);
    else if (c == '\t')
      fputs("\\t", f);
    else if (c < 0x20)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
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
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  char when[64];
  snprintf(when, sizeof(when), "%04d-%02d-%02dT%02d:%02d:%02d.%09ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
           tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec);
  if (logger.format == CM_LOG_JSON) {
    fprintf(f, "{\"level\":\"%s\",\"msg\":\"", level_name(level));
    json_escape(f, msg);
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
