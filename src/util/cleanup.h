/* __attribute__((cleanup)) helpers so error paths cannot leak. */
#ifndef CM_UTIL_CLEANUP_H
#define CM_UTIL_CLEANUP_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <errno.h>

static inline void cm_freep(void *p) {
  free(*(void **)p);
}
static inline void cm_closep(int *fd) {
  if (*fd >= 0) {
    int saved = errno;
    close(*fd);
    errno = saved;
  }
  *fd = -1;
}
static inline void cm_fclosep(FILE **f) {
  if (*f)
    fclose(*f);
  *f = NULL;
}
#define cleanup_free __attribute__((cleanup(cm_freep)))
#define cleanup_close __attribute__((cleanup(cm_closep)))
#define cleanup_fclose __attribute__((cleanup(cm_fclosep)))

/* Hand ownership out of a cleanup variable. */
static inline int cm_steal_fd(int *fd) {
  int r = *fd;
  *fd = -1;
  return r;
}
static inline void *cm_steal_ptr(void *pp) {
  void **p = (void **)pp;
  void *r = *p;
  *p = NULL;
  return r;
}

#include <fcntl.h>
#include "util/error.h"
/* Keep our own fds out of 3 .. min-1: with --preserve-fds those numbers are the caller's fds,
 * handed to the container as they are. Returns the fd (moved, close-on-exec) or -1. */
static inline int fd_move_above(int fd, int min, struct cm_error **err) {
  if (fd < 0 || fd >= min)
    return fd;
  int moved = fcntl(fd, F_DUPFD_CLOEXEC, min);
  int e = errno;
  close(fd);
  if (moved < 0)
    return cm_error_set(err, e, "move fd above %d", min);
  return moved;
}

#endif
