/* The audit log's writer (util/audit_log.h). */
#include "util/audit_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "util/json_escape.h"

int audit_log_open(const char *path, struct cm_error **err) {
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC | O_NONBLOCK, 0600);
  if (fd < 0)
    return cm_error_set(err, errno, "--audit-log %s", path);
  struct stat st;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
    close(fd);
    return cm_error_set(err, EINVAL, "--audit-log %s: not a regular file of its own (a hard link?)", path);
  }
  if (st.st_size > 0) {
    char head[8] = "";
    int rfd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    ssize_t n = rfd >= 0 ? pread(rfd, head, 7, 0) : -1;
    if (rfd >= 0)
      close(rfd);
    if (n != 7 || memcmp(head, "{\"v\":1,", 7) != 0) {
      close(fd);
      return cm_error_set(
          err, EINVAL, "--audit-log %s: exists and is not a codemode audit log (JSON Lines, \"v\":1)", path);
    }
  }
  fcntl(fd, F_SETFL, O_WRONLY | O_APPEND);
  return fd;
}

void audit_time_format(time_t sec, long ms, char buf[32]) {
  struct tm tm;
  gmtime_r(&sec, &tm);
  /* Each field within its range (gmtime's), so the text is always 24 bytes. */
  snprintf(buf, 32, "%04u-%02u-%02uT%02u:%02u:%02u.%03uZ", (unsigned)(tm.tm_year + 1900) % 10000u,
           (unsigned)(tm.tm_mon + 1) % 100u, (unsigned)tm.tm_mday % 100u, (unsigned)tm.tm_hour % 100u,
           (unsigned)tm.tm_min % 100u, (unsigned)tm.tm_sec % 100u, (unsigned)ms % 1000u);
}

static void put_str(FILE *f, const char *key, const char *v) {
  if (v == NULL || *v == '\0')
    return;
  fprintf(f, ",\"%s\":", key);
  json_put_string(f, v);
}

void audit_log_write(int fd, const char *id, const struct audit_log_record *r) {
  if (fd < 0)
    return;
  char now[32];
  if (r->time == NULL) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    audit_time_format(tv.tv_sec, tv.tv_usec / 1000, now);
  }
  char *line = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&line, &len);
  if (f == NULL)
    return;
  fprintf(f, "{\"v\":1");
  put_str(f, "time", r->time ? r->time : now);
  put_str(f, "id", id);
  put_str(f, "event", r->event);
  put_str(f, "decision", r->decision);
  put_str(f, "by", r->by);
  put_str(f, "via", r->via);
  put_str(f, "host", r->host);
  if (r->port)
    fprintf(f, ",\"port\":%u", r->port);
  put_str(f, "sni", r->sni);
  put_str(f, "http_host", r->http_host);
  put_str(f, "addr", r->addr);
  put_str(f, "qtype", r->qtype);
  put_str(f, "answers", r->answers);
  put_str(f, "syscall", r->syscall);
  if (r->nr >= 0 && r->syscall)
    fprintf(f, ",\"nr\":%d", r->nr);
  if (r->pid > 0)
    fprintf(f, ",\"pid\":%d", (int)r->pid);
  put_str(f, "comm", r->comm);
  put_str(f, "exe", r->exe);
  if (r->errnum > 0)
    fprintf(f, ",\"errno\":%d", r->errnum);
  put_str(f, "path", r->path);
  put_str(f, "access", r->access);
  put_str(f, "layer", r->layer);
  put_str(f, "rule", r->rule);
  put_str(f, "reason", r->reason);
  put_str(f, "allow_with", r->allow_with);
  if (r->intercepted)
    fputs(",\"intercepted\":true", f);
  put_str(f, "secret", r->secret);
  if (r->with_bytes && r->bytes_up >= 0)
    fprintf(f, ",\"bytes_up\":%lld", r->bytes_up);
  if (r->with_bytes && r->bytes_down >= 0)
    fprintf(f, ",\"bytes_down\":%lld", r->bytes_down);
  if (r->with_duration && r->duration_ms >= 0)
    fprintf(f, ",\"duration_ms\":%.1f", r->duration_ms);
  if (r->count > 1)
    fprintf(f, ",\"count\":%u", r->count);
  fputs("}\n", f);
  fclose(f);
  /* One write(2) of the whole line on an O_APPEND file: records of concurrent writers (the
   * broker's threads, codemode-run) never interleave. A full disk loses the record: the
   * container's traffic must not stop for it. */
  ssize_t n = write(fd, line, len);
  (void)n;
  free(line);
}
