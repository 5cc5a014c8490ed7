/* One error convention for all of codemode.
 *
 * A fallible function takes `struct cm_error **err`, returns a negative value (or NULL) after
 * filling *err with an errno and a message; callers add context with cm_error_prefix() and pass
 * it up. The CLI prints "codemode: <message>: <strerror>" and frees it. */
#ifndef CM_UTIL_ERROR_H
#define CM_UTIL_ERROR_H

#include <stdarg.h>
#include <stddef.h>

struct cm_error {
  int errnum;   /* 0 when the error has no errno (a validation error) */
  char *msg;
};

/* Fill *err (if err != NULL and *err is still NULL) and return -1. */
int cm_error_set(struct cm_error **err, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int cm_error_setv(struct cm_error **err, int errnum, const char *fmt, va_list ap);
/* Prepend "context: " to an existing error's message; returns -1. */
int cm_error_prefix(struct cm_error **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cm_error_free(struct cm_error *err);
/* "<msg>: <strerror(errnum)>" or just "<msg>"; caller frees. */
char *cm_error_format(const struct cm_error *err);

static inline void cm_error_freep(struct cm_error **err) {
  if (*err)
    cm_error_free(*err);
  *err = NULL;
}
#define cleanup_error __attribute__((cleanup(cm_error_freep)))

#endif
