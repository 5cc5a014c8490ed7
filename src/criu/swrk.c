/* The CRIU RPC session (src/criu/swrk.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "criu/swrk.h"
#include "util/cleanup.h"

/* CRIU's messages are small (no page data goes over the socket); a response past this is not one. */
#define CRIU_MSG_MAX (64 * 1024)

int criu_swrk_start(struct criu_swrk *s, const char *criu_path, const int *keep_fds, size_t n_keep,
                    struct cm_error **err) {
  int sp[2];
  s->pid = -1;
  s->sock = -1;
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
    return cm_error_set(err, errno, "criu: socketpair");
  const char *bin = criu_path ? criu_path : "criu";
  pid_t pid = fork();
  if (pid < 0) {
    close(sp[0]);
    close(sp[1]);
    return cm_error_set(err, errno, "criu: fork");
  }
  if (pid == 0) {
    /* Only the fds the request names reach criu: it runs as root with the dump of a container in
     * hand, and an fd of ours it does not need (a state dir lock, a log) has no business there. */
    int keep_sock = sp[1];
    for (int fd = 3; fd < 1024; fd++) {
      bool keep = fd == keep_sock;
      for (size_t i = 0; i < n_keep && !keep; i++)
        keep = keep_fds[i] == fd;
      if (keep)
        fcntl(fd, F_SETFD, 0);
      else if (fd != keep_sock)
        close(fd);
    }
    char fdarg[16];
    snprintf(fdarg, sizeof(fdarg), "%d", keep_sock);
    /* stdio stays ours: a restore hands it to the restored container (inherit_fd). */
    execlp(bin, bin, "swrk", fdarg, (char *)NULL);
    dprintf(2, "codemode: criu: exec %s: %s (apt-get install criu)\n", bin, strerror(errno));
    _exit(127);
  }
  close(sp[1]);
  s->pid = pid;
  s->sock = sp[0];
  return 0;
}

static int send_req(struct criu_swrk *s, const CriuReq *req, struct cm_error **err) {
  size_t len = criu_req__get_packed_size(req);
  cleanup_free uint8_t *buf = malloc(len ? len : 1);
  if (buf == NULL)
    abort();
  criu_req__pack(req, buf);
  if (send(s->sock, buf, len, MSG_NOSIGNAL) != (ssize_t)len)
    return cm_error_set(err, errno ? errno : EPIPE, "criu: send request (criu exited?)");
  return 0;
}

/* One response, and the fd CRIU may pass with it. */
static CriuResp *recv_resp(struct criu_swrk *s, int *fd_out, struct cm_error **err) {
  cleanup_free uint8_t *buf = malloc(CRIU_MSG_MAX);
  if (buf == NULL)
    abort();
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } ctl;
  struct iovec iov = {.iov_base = buf, .iov_len = CRIU_MSG_MAX};
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf)};
  *fd_out = -1;
  ssize_t n;
  do
    n = recvmsg(s->sock, &msg, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  if (n < 0) {
    cm_error_set(err, errno, "criu: read response");
    return NULL;
  }
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len >= CMSG_LEN(sizeof(int)))
      memcpy(fd_out, CMSG_DATA(c), sizeof(int));
  if (n == 0) {
    cm_error_set(err, EPIPE, "criu: exited without a response");
    return NULL;
  }
  if (msg.msg_flags & MSG_TRUNC) {
    cm_error_set(err, EMSGSIZE, "criu: response larger than %d bytes", CRIU_MSG_MAX);
    return NULL;
  }
  CriuResp *r = criu_resp__unpack(NULL, (size_t)n, buf);
  if (r == NULL)
    cm_error_set(err, EBADMSG, "criu: unreadable response (%zd bytes)", n);
  return r;
}

int criu_swrk_call(struct criu_swrk *s, const CriuReq *req, criu_notify_fn notify, void *arg, CriuResp **out,
                   struct cm_error **err) {
  *out = NULL;
  if (send_req(s, req, err) < 0)
    return -1;
  for (;;) {
    int fd = -1;
    CriuResp *r = recv_resp(s, &fd, err);
    if (r == NULL) {
      if (fd >= 0)
        close(fd);
      return -1;
    }
    if (r->type != CRIU_REQ_TYPE__NOTIFY) {
      if (fd >= 0)
        close(fd);
      *out = r;
      return 0;
    }
    const char *script = r->notify && r->notify->script ? r->notify->script : "";
    pid_t pid = r->notify && r->notify->has_pid ? r->notify->pid : 0;
    struct cm_error *nerr = NULL;
    int rc = notify ? notify(arg, script, pid, fd, &nerr) : (fd >= 0 ? close(fd), 0 : 0);
    criu_resp__free_unpacked(r, NULL);
    CriuReq ack = CRIU_REQ__INIT;
    ack.type = CRIU_REQ_TYPE__NOTIFY;
    ack.has_notify_success = true;
    ack.notify_success = rc == 0;
    if (send_req(s, &ack, rc == 0 ? err : &nerr) < 0 && rc == 0)
      return -1;
    if (rc < 0) {
      /* CRIU undoes its work and answers; our reason is the one to report. */
      CriuResp *last = NULL;
      int fd2 = -1;
      struct cm_error *ignored = NULL;
      last = recv_resp(s, &fd2, &ignored);
      if (last)
        criu_resp__free_unpacked(last, NULL);
      if (fd2 >= 0)
        close(fd2);
      cm_error_free(ignored);
      *err = nerr;
      return cm_error_prefix(err, "criu notification \"%s\"", script);
    }
  }
}

void criu_swrk_end(struct criu_swrk *s) {
  if (s->sock >= 0)
    close(s->sock);
  s->sock = -1;
  if (s->pid > 0) {
    int status;
    while (waitpid(s->pid, &status, 0) < 0 && errno == EINTR)
      ;
  }
  s->pid = -1;
}

char *criu_log_errors(int work_fd, const char *log_name) {
  cleanup_close int fd = openat(work_fd, log_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return NULL;
  cleanup_fclose FILE *f = fdopen(fd, "r");
  if (f == NULL)
    return NULL;
  fd = -1;
  /* The last few "Error" lines: CRIU's own chain of reasons, innermost first. */
  enum { KEEP = 4 };
  char *lines[KEEP] = {0};
  size_t n = 0;
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  while ((len = getline(&line, &cap, f)) > 0) {
    if (strstr(line, "Error") == NULL)
      continue;
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
      line[--len] = '\0';
    /* "(00.012345) Error (criu/vdso.c:381): vdso: …": from "Error" on. */
    char *from = strstr(line, "Error");
    free(lines[n % KEEP]);
    lines[n % KEEP] = strndup(from, 300);
    n++;
  }
  free(line);
  if (n == 0)
    return NULL;
  char *out = NULL;
  size_t first = n > KEEP ? n - KEEP : 0;
  for (size_t i = first; i < n; i++) {
    char *next = NULL;
    if (asprintf(&next, "%s%s%s", out ? out : "", out ? "; " : "", lines[i % KEEP]) < 0)
      abort();
    free(out);
    out = next;
  }
  for (size_t i = 0; i < KEEP; i++)
    free(lines[i]);
  return out;
}

int criu_fail(struct cm_error **err, const char *what, const CriuResp *resp, int work_fd, const char *work_path,
              const char *log_name) {
  cleanup_free char *log = work_fd >= 0 ? criu_log_errors(work_fd, log_name) : NULL;
  int e = resp && resp->has_cr_errno ? resp->cr_errno : 0;
  cleanup_free char *msg = resp && resp->cr_errmsg ? strdup(resp->cr_errmsg) : NULL;
  if (msg) {
    size_t l = strlen(msg);
    while (l > 0 && (msg[l - 1] == '\n' || msg[l - 1] == ' '))
      msg[--l] = '\0';
  }
  /* CRIU's message is its first error line: the log quote says it already. */
  if (msg && (msg[0] == '\0' || (log && strstr(log, msg)))) {
    free(msg);
    msg = NULL;
  }
  /* CRIU's start-up probe of the kernel failed: nothing this container did, say what it is. */
  char kernel[160] = "";
  if (log && strstr(log, "kerndat")) {
    struct utsname u;
    if (uname(&u) == 0)
      snprintf(kernel, sizeof(kernel), " (this CRIU cannot work on kernel %s: a CRIU release that supports it is "
                                       "needed)",
               u.release);
  }
  if (log)
    return cm_error_set(err, e, "criu %s failed%s%s: CRIU's log %s/%s says: %s%s", what, msg ? ": " : "",
                        msg ? msg : "", work_path, log_name, log, kernel);
  return cm_error_set(err, e, "criu %s failed%s%s (see %s/%s)", what, msg ? ": " : "", msg ? msg : "", work_path,
                      log_name);
}

void criu_opts_common(CriuOpts *opts, const struct criu_common_options *c, const struct spec *s, int images_fd,
                      int work_fd, const char *log_file, const char *root) {
  opts->images_dir_fd = images_fd;
  opts->has_work_dir_fd = true;
  opts->work_dir_fd = work_fd;
  opts->log_file = (char *)log_file;
  opts->has_log_level = true;
  opts->log_level = 4;
  opts->root = (char *)root;
  opts->has_notify_scripts = true;
  opts->notify_scripts = true;
  opts->has_manage_cgroups = true;
  opts->manage_cgroups = true;
  if (c->cgroup_mode != CRIU_CG_UNSET) {
    opts->has_manage_cgroups_mode = true;
    opts->manage_cgroups_mode = (CriuCgMode)c->cgroup_mode;
  }
#define FLAG(f) \
  if (c->f) { \
    opts->has_##f = true; \
    opts->f = true; \
  }
  FLAG(tcp_established)
  FLAG(ext_unix_sk)
  FLAG(shell_job)
  FLAG(file_locks)
  FLAG(auto_dedup)
  FLAG(lazy_pages)
#undef FLAG
  if (c->empty_ns) {
    opts->has_empty_ns = true;
    opts->empty_ns = c->empty_ns;
  }
  /* A terminal: the pty master is the caller's (the shim's), outside the container; CRIU dumps
   * the slave side as an orphan and hands a new master over at restore. */
  if (s->process && s->process->terminal) {
    opts->has_orphan_pts_master = true;
    opts->orphan_pts_master = true;
  }
}
