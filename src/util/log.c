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
#include "util/sync.h"

static struct {
  int fd; /* -1: stderr */
  enum cm_log_format format;
  bool debug;
  int sync_fd;     /* >= 0: a container-side process; lines go to the runtime over it */
  const char *who; /* their prefix ("init", "stage1", "exec") */
} logger = {-1, CM_LOG_TEXT, false, -1, NULL};

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

void cm_log_route_to_sync(int sync_fd, const char *who) {
  logger.sync_fd = sync_fd;
  logger.who = who;
  /* Unrouted again (the socket closed): debug lines have nowhere to go but the container's
   * stdio, which is the program's, not ours. */
  if (sync_fd < 0)
    logger.debug = false;
}

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

/* Go's strconv.Quote as logrus uses it for a text line's msg: '"' and '\\' escaped, \n \r \t
 * by name, other control bytes and DEL as \xNN; UTF-8 as it is. */
static void put_go_quoted(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    switch (*p) {
    case '"': fputs("\\\"", f); break;
    case '\\': fputs("\\\\", f); break;
    case '\n': fputs("\\n", f); break;
    case '\r': fputs("\\r", f); break;
    case '\t': fputs("\\t", f); break;
    default:
      if (*p < 0x20 || *p == 0x7f)
        fprintf(f, "\\x%02x", *p);
      else
        fputc(*p, f);
    }
  }
  fputc('"', f);
}

/* The line as runc's logrus writes it: text `time="…" level=… msg="…"`, or JSON
 * {"level":…,"msg":…,"time":…}; the time to the second, as logrus' default RFC 3339. */
void cm_log_line(enum cm_log_level level, const char *msg) {
  char *line = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&line, &len);
  if (f == NULL)
    return;
  char when[CM_RFC3339_LEN];
  cm_now_rfc3339(when);
  char *frac = strchr(when, '.'); /* "….123456789Z" → "…Z" */
  if (frac)
    strcpy(frac, "Z");
  if (logger.format == CM_LOG_JSON) {
    fprintf(f, "{\"level\":\"%s\",\"msg\":\"", level_name(level));
    json_put_escaped(f, msg);
    fprintf(f, "\",\"time\":\"%s\"}\n", when);
  } else {
    fprintf(f, "time=\"%s\" level=%s msg=", when, level_name(level));
    put_go_quoted(f, msg);
    fputc('\n', f);
  }
  fclose(f);
  /* One write per line so concurrent writers (runtime and container init) never interleave. */
  if (write(logger.fd >= 0 ? logger.fd : STDERR_FILENO, line, len) < 0) {
    /* nowhere left to report it */
  }
  free(line);
}

void cm_log(enum cm_log_level level, const char *fmt, ...) {
  int saved = errno;
  char *msg = NULL;
  va_list ap;
  va_start(ap, fmt);
  if (vasprintf(&msg, fmt, ap) < 0)
    msg = NULL;
  va_end(ap);
  if (msg == NULL)
    goto out;
  if (logger.sync_fd >= 0) {
    /* In the container's processes: the runtime writes the line (its --log, its stderr), never
     * our stdio, which may be the container's already. */
    char *text = NULL;
    if (asprintf(&text, "%s[%d]: %s", logger.who ? logger.who : "child", (int)getpid(), msg) >= 0 &&
        sync_send(logger.sync_fd, SYNC_LOG, level, text, -1, NULL) == 0) {
      free(text);
      goto out;
    }
    free(text);
  }
  cm_log_line(level, msg);
out:
  free(msg);
  errno = saved;
}
