#include "util/error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cm_error_setv(struct cm_error **err, int errnum, const char *fmt, va_list ap) {
  if (err == NULL || *err != NULL)
    return -1;
  struct cm_error *e = calloc(1, sizeof(*e));
  if (e == NULL)
    abort();
  e->errnum = errnum;
  if (vasprintf(&e->msg, fmt, ap) < 0)
    abort();
  *err = e;
  return -1;
}

int cm_error_set(struct cm_error **err, int errnum, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cm_error_setv(err, errnum, fmt, ap);
  va_end(ap);
  return -1;
}

int cm_error_prefix(struct cm_error **err, const char *fmt, ...) {
  if (err == NULL || *err == NULL)
    return -1;
  char *prefix = NULL, *joined = NULL;
  va_list ap;
  va_start(ap, fmt);
  if (vasprintf(&prefix, fmt, ap) < 0)
    abort();
  va_end(ap);
  if (asprintf(&joined, "%s: %s", prefix, (*err)->msg) < 0)
    abort();
  free(prefix);
  free((*err)->msg);
  (*err)->msg = joined;
  return -1;
}

void cm_error_free(struct cm_error *err) {
  if (err == NULL)
    return;
  free(err->msg);
  free(err);
}

char *cm_error_format(const struct cm_error *err) {
  char *out = NULL;
  if (err->errnum != 0) {
    if (asprintf(&out, "%s: %s", err->msg, strerror(err->errnum)) < 0)
      abort();
  } else {
    out = strdup(err->msg);
    if (out == NULL)
      abort();
  }
  return out;
}
