/* The one piece of global mutable state: the logger.
 * runc's (logrus) line shapes, text `time="…Z" level=… msg="…"` or JSON {"level":…,"msg":…,
 * "time":…}, to the --log file (stderr by default); in a container-side process, over the sync
 * socket to the runtime (cm_log_route_to_sync).
 * Errors are also printed to stderr by the CLI; the log file is what containerd's shim reads. */
#ifndef CM_UTIL_LOG_H
#define CM_UTIL_LOG_H

#include <stdbool.h>

enum cm_log_level { CM_LOG_ERROR, CM_LOG_WARN, CM_LOG_INFO, CM_LOG_DEBUG };
enum cm_log_format { CM_LOG_TEXT, CM_LOG_JSON };

/* path == NULL: stderr. Returns -1 with errno if the file cannot be opened. */
int cm_log_init(const char *path, enum cm_log_format format, bool debug);
void cm_log(enum cm_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* One line as it is (no routing): the runtime writing what a container-side process sent. */
void cm_log_line(enum cm_log_level level, const char *msg);
/* In a process on the container's side of the sync socket (stage1, init, an exec'd process):
 * every line goes to the runtime as SYNC_LOG ("WHO[pid]: msg"), which logs it. -1: no longer
 * (the socket is closed): debug lines are dropped from then on. */
void cm_log_route_to_sync(int sync_fd, const char *who);
bool cm_log_debug_enabled(void);
/* true when the log goes to a file (not stderr): the CLI then prints errors to stderr too. */
bool cm_log_is_file(void);
/* The fd of the log file, or -1; children that must not inherit it close it. */
int cm_log_fd(void);

/* Now in UTC, RFC 3339 with nanoseconds ("2026-11-30T01:56:00.123456789Z"): the log lines' time
 * and the state's "created". buf needs CM_RFC3339_LEN bytes (room for any int, to satisfy
 * -Wformat-truncation; the text is 30). */
#define CM_RFC3339_LEN 96
void cm_now_rfc3339(char *buf);

#define cm_debug(...) \
  do { \
    if (cm_log_debug_enabled()) \
      cm_log(CM_LOG_DEBUG, __VA_ARGS__); \
  } while (0)
#define cm_warn(...) cm_log(CM_LOG_WARN, __VA_ARGS__)
#define cm_info(...) cm_log(CM_LOG_INFO, __VA_ARGS__)

#endif
