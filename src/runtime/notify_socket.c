/* NOTIFY_SOCKET: see notify_socket.h. */
#include "runtime/notify_socket.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "spec/json_util.h" /* spec_mount_decode_options */
#include "util/cleanup.h"
#include "util/log.h"

#define NOTIFY_DIR "notify"
#define NOTIFY_NAME "notify.sock"
#define NOTIFY_IN_CONTAINER "/run/notify"

static void strv_append(struct spec_strv *v, char *owned) {
  v->items = realloc(v->items, (v->count + 2) * sizeof(char *));
  if (v->items == NULL)
    abort();
  v->items[v->count++] = owned;
  v->items[v->count] = NULL;
}

int notify_socket_prepare(struct spec *s, int state_dirfd, const char *state_dir, struct cm_error **err) {
  if (mkdirat(state_dirfd, NOTIFY_DIR, 0755) < 0 && errno != EEXIST)
    return cm_error_set(err, errno, "NOTIFY_SOCKET: create %s/%s", state_dir, NOTIFY_DIR);
  char real[PATH_MAX];
  if (realpath(state_dir, real) == NULL)
    return cm_error_set(err, errno, "NOTIFY_SOCKET: %s", state_dir);
  s->mounts = realloc(s->mounts, (s->n_mounts + 1) * sizeof(*s->mounts));
  if (s->mounts == NULL)
    abort();
  struct spec_mount *m = &s->mounts[s->n_mounts++];
  memset(m, 0, sizeof(*m));
  m->destination = xstrdup(NOTIFY_IN_CONTAINER);
  m->type = xstrdup("bind");
  if (asprintf(&m->source, "%s/%s", real, NOTIFY_DIR) < 0)
    abort();
  /* As runc: the directory read-only (a socket in it still takes datagrams), no devices,
   * setuid programs or executables. */
  static const char *const options[] = {"bind", "nosuid", "noexec", "nodev", "ro"};
  for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++)
    strv_append(&m->options, xstrdup(options[i]));
  spec_mount_decode_options(m);
  if (s->process)
    strv_append(&s->process->env, xstrdup("NOTIFY_SOCKET=" NOTIFY_IN_CONTAINER "/" NOTIFY_NAME));
  return 0;
}

/* A unix address for `path` ("@name": the abstract namespace, as systemd writes it). */
static socklen_t unix_addr(const char *path, struct sockaddr_un *addr) {
  memset(addr, 0, sizeof(*addr));
  addr->sun_family = AF_UNIX;
  size_t len = strlen(path);
  if (len >= sizeof(addr->sun_path))
    return 0;
  memcpy(addr->sun_path, path, len);
  if (path[0] == '@')
    addr->sun_path[0] = '\0';
  return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (path[0] == '@' ? 0 : 1));
}

int notify_socket_listen(int state_dirfd, struct cm_error **err) {
  /* The state dir's path may be longer than sun_path: bind through /proc/self/fd. */
  char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
  int n = snprintf(path, sizeof(path), "/proc/self/fd/%d/%s/%s", state_dirfd, NOTIFY_DIR, NOTIFY_NAME);
  struct sockaddr_un addr;
  socklen_t len = n > 0 && (size_t)n < sizeof(path) ? unix_addr(path, &addr) : 0;
  if (len == 0)
    return cm_error_set(err, ENAMETOOLONG, "NOTIFY_SOCKET: socket path");
  cleanup_close int dir = openat(state_dirfd, NOTIFY_DIR, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir < 0)
    return cm_error_set(err, errno, "NOTIFY_SOCKET: the container was created without it (no %s directory)",
                        NOTIFY_DIR);
  unlinkat(dir, NOTIFY_NAME, 0); /* a previous listener's */
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return cm_error_set(err, errno, "NOTIFY_SOCKET: socket");
  if (bind(fd, (struct sockaddr *)&addr, len) < 0 || fchmodat(dir, NOTIFY_NAME, 0777, 0) < 0) {
    int e = errno;
    close(fd);
    return cm_error_set(err, e, "NOTIFY_SOCKET: bind %s/%s", NOTIFY_DIR, NOTIFY_NAME);
  }
  return fd;
}

int notify_socket_handle(int sock, const char *host, pid_t mainpid) {
  char buf[4097];
  ssize_t n;
  while ((n = recv(sock, buf, sizeof(buf) - 1, 0)) >= 0) {
    buf[n] = '\0';
    /* As runc: the container's READY is what the host hears about, with the pid to watch;
     * STATUS= and the others stay inside. */
    if (strncmp(buf, "READY=", 6) != 0)
      continue;
    buf[strcspn(buf, "\n")] = '\0';
    struct sockaddr_un addr;
    socklen_t len = unix_addr(host, &addr);
    cleanup_close int out = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    char msg[4200];
    int m = snprintf(msg, sizeof(msg), "%s\nMAINPID=%d\n", buf, (int)mainpid);
    if (len == 0 || out < 0 || sendto(out, msg, (size_t)m, 0, (struct sockaddr *)&addr, len) < 0)
      cm_warn("NOTIFY_SOCKET %s: could not forward %s: %s", host, buf, strerror(errno));
    return 1;
  }
  return 0;
}

void notify_socket_relay(int sock, const char *host, pid_t init, pid_t mainpid) {
  cleanup_close int pidfd = (int)pidfd_open(init, 0);
  for (;;) {
    struct pollfd p[2] = {{.fd = sock, .events = POLLIN}, {.fd = pidfd, .events = POLLIN}};
    int r = poll(p, pidfd >= 0 ? 2 : 1, pidfd >= 0 ? -1 : 100);
    if (r < 0 && errno != EINTR)
      return;
    if ((p[0].revents & POLLIN) && notify_socket_handle(sock, host, mainpid))
      return;
    /* Init gone: nobody will say READY any more. */
    if (p[1].revents & POLLIN)
      return;
    if (pidfd < 0 && kill(init, 0) < 0 && errno == ESRCH)
      return;
  }
}
