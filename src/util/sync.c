#include "util/sync.h"

#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/un.h>
#include "util/cleanup.h"
#include "util/log.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <stddef.h>
#include <unistd.h>

static int send_with_fd(int sock, const void *buf, size_t len, int fd) {
  struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } ctrl;
  struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
  if (fd >= 0) {
    memset(&ctrl, 0, sizeof(ctrl));
    mh.msg_control = ctrl.buf;
    mh.msg_controllen = sizeof(ctrl.buf);
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  ssize_t n;
  do
    n = sendmsg(sock, &mh, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  return n < 0 ? -1 : 0;
}

int sync_send(int sock, uint32_t type, int64_t value, const char *text, int fd, struct cm_error **err) {
  struct sync_msg m = {.type = type, .value = value};
  size_t textlen = 0;
  if (text) {
    textlen = strnlen(text, sizeof(m.text) - 1);
    memcpy(m.text, text, textlen);
  }
  m.text[textlen] = '\0';
  size_t len = offsetof(struct sync_msg, text) + textlen + 1;
  if (send_with_fd(sock, &m, len, fd) < 0)
    return cm_error_set(err, errno, "sync: send message %u", type);
  return 0;
}

static int sync_recv_one(int sock, struct sync_msg *msg, int *fd_out, struct cm_error **err);

int sync_recv(int sock, struct sync_msg *msg, int *fd_out, struct cm_error **err) {
  for (;;) {
    int r = sync_recv_one(sock, msg, fd_out, err);
    if (r != 0 || msg->type != SYNC_LOG)
      return r;
    /* A container-side process's log line (util/log.h): written, and on to what was asked for. */
    if (fd_out && *fd_out >= 0) {
      close(*fd_out);
      *fd_out = -1;
    }
    enum cm_log_level level = msg->value >= CM_LOG_ERROR && msg->value <= CM_LOG_DEBUG ? (enum cm_log_level)msg->value
                                                                                        : CM_LOG_DEBUG;
    cm_log_line(level, msg->text);
  }
}

static int sync_recv_one(int sock, struct sync_msg *msg, int *fd_out, struct cm_error **err) {
  if (fd_out)
    *fd_out = -1;
  memset(msg, 0, sizeof(*msg));
  struct iovec iov = {.iov_base = msg, .iov_len = sizeof(*msg)};
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } ctrl;
  struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctrl.buf,
                      .msg_controllen = sizeof(ctrl.buf)};
  ssize_t n;
  do
    n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  if (n < 0)
    return cm_error_set(err, errno, "sync: receive");
  if (n == 0)
    return 1;
  if ((size_t)n < offsetof(struct sync_msg, text))
    return cm_error_set(err, EPROTO, "sync: short message (%zd bytes)", n);
  msg->text[sizeof(msg->text) - 1] = '\0';
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      int fd;
      memcpy(&fd, CMSG_DATA(c), sizeof(int));
      if (fd_out && *fd_out < 0)
        *fd_out = fd;
      else
        close(fd);
    }
  }
  return 0;
}

void sync_send_error(int sock, const struct cm_error *e) {
  sync_send(sock, SYNC_ERROR, e ? e->errnum : 0, e ? e->msg : "unknown error", -1, NULL);
}

int fd_send(int sock, int fd, const char *payload, struct cm_error **err) {
  const char *p = payload ? payload : "";
  size_t len = payload ? strlen(payload) : 1; /* one byte at least: a message must carry data */
  if (send_with_fd(sock, p, len, fd) < 0)
    return cm_error_set(err, errno, "send fd over unix socket");
  return 0;
}

/* sun_path holds 108 bytes; a longer socket path is reached through an O_PATH fd on its
 * directory (/proc/self/fd/N/name), so deep state directories still work. */
static int connect_unix(int sock, const char *path, struct cm_error **err) {
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  cleanup_close int dirfd = -1;
  if (strlen(path) < sizeof(addr.sun_path)) {
    strcpy(addr.sun_path, path);
  } else {
    cleanup_free char *dir_copy = strdup(path);
    cleanup_free char *base_copy = strdup(path);
    if (!dir_copy || !base_copy)
      return cm_error_set(err, ENOMEM, "%s", path);
    dirfd = open(dirname(dir_copy), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0)
      return cm_error_set(err, errno, "%s: open its directory", path);
    int n = snprintf(addr.sun_path, sizeof(addr.sun_path), "/proc/self/fd/%d/%s", dirfd, basename(base_copy));
    if (n < 0 || (size_t)n >= sizeof(addr.sun_path))
      return cm_error_set(err, ENAMETOOLONG, "%s", path);
  }
  int r;
  do
    r = connect(sock, (struct sockaddr *)&addr, sizeof(addr));
  while (r < 0 && errno == EINTR);
  if (r < 0)
    return cm_error_set(err, errno, "connect to %s", path);
  return 0;
}

int unix_path_send_fd(const char *path, int fd, const char *payload, struct cm_error **err) {
  cleanup_close int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (sock < 0)
    return cm_error_set(err, errno, "%s: socket", path);
  if (connect_unix(sock, path, err) < 0 || fd_send(sock, fd, payload, err) < 0)
    return -1;
  return 0;
}
