/* The observer thread (supervisor/observe.h): the supervisor's seccomp listener and the kernel's
 * audit records, read beside codemode-run's wait loop.
 *
 * The kernel's records: a filter loaded with SECCOMP_FILTER_FLAG_LOG makes the kernel report
 * every action it takes other than ALLOW (for ERRNO: the syscall, the process, the errno) to the
 * audit subsystem, which sends each record to the readers of its multicast group whether or not
 * an auditd runs (measured on 6.18 with audit disabled: records arrive; nothing goes to dmesg).
 * Joining the group needs CAP_AUDIT_READ in the initial user namespace: a rootless codemode-run
 * gets no records (the kernel still enforces; the audit log says once that it cannot show
 * them). The records of other processes on the machine are skipped: ours carry the container's
 * audit session (init writes its loginuid, which starts a session only its processes share) or,
 * when the session was inherited, come from a process in the container's pid namespace. */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/netlink.h>
#include <poll.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "supervisor/observe.h"
#include "util/audit_log.h"
#include "util/log.h"

#ifndef AUDIT_NLGRP_READLOG
#define AUDIT_NLGRP_READLOG 1
#endif
#ifndef AUDIT_SECCOMP
#define AUDIT_SECCOMP 1326
#endif
#define RET_ACTION_FULL 0xffff0000U
#define RET_DATA 0x0000ffffU
#define RET_ERRNO 0x00050000U

static void wake(struct observer *o) {
  uint64_t one = 1;
  ssize_t n = write(o->wake_fd, &one, sizeof(one));
  (void)n;
}

/* --- the kernel's audit records ------------------------------------------------------------- */

/* The value of " key=" in an audit record: "quoted", or hex (audit's form for a value that
 * holds spaces or quotes), or a bare word. */
static bool field(const char *msg, const char *key, char *out, size_t size) {
  char pat[32];
  snprintf(pat, sizeof(pat), " %s=", key);
  const char *p = strstr(msg, pat);
  if (p == NULL || size == 0)
    return false;
  p += strlen(pat);
  size_t n = 0;
  if (*p == '"') {
    for (p++; *p && *p != '"' && n + 1 < size; p++)
      out[n++] = *p;
  } else {
    const char *e = p;
    while (*e && *e != ' ')
      e++;
    bool hex = (e - p) % 2 == 0 && e > p;
    for (const char *q = p; q < e && hex; q++)
      hex = (*q >= '0' && *q <= '9') || (*q >= 'A' && *q <= 'F');
    /* Decode hex only for the string fields (comm, exe): pid=1234 is all digits. */
    if (hex && (strcmp(key, "comm") == 0 || strcmp(key, "exe") == 0)) {
      for (const char *q = p; q + 1 < e && n + 1 < size; q += 2) {
        unsigned v;
        sscanf(q, "%2x", &v);
        out[n++] = (char)v;
      }
    } else {
      for (; p < e && n + 1 < size; p++)
        out[n++] = *p;
    }
  }
  out[n] = '\0';
  return true;
}

static bool ours(struct observer *o, pid_t pid, const char *ses) {
  if (o->session)
    return strtoul(ses, NULL, 10) == o->session;
  if (o->ns_pid == 0)
    return false;
  char link[64];
  snprintf(link, sizeof(link), "/proc/%d/ns/pid", (int)pid);
  struct stat st;
  return stat(link, &st) == 0 && (uint64_t)st.st_ino == o->ns_pid;
}

static void read_audit(struct observer *o) {
  char buf[9000];
  for (;;) {
    ssize_t n = recv(o->audit_fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
    if (n < 0 && errno == ENOBUFS)
      continue; /* the socket overflowed: records lost, go on with the next */
    if (n <= 0)
      return;
    buf[n] = '\0';
    for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
      if (h->nlmsg_type != AUDIT_SECCOMP)
        continue;
      char *msg = NLMSG_DATA(h);
      size_t mlen = h->nlmsg_len - NLMSG_HDRLEN;
      char text[4096];
      if (mlen >= sizeof(text))
        mlen = sizeof(text) - 1;
      memcpy(text, msg, mlen);
      text[mlen] = '\0';
      char pid_s[24], ses[24], sys_s[24], code_s[24], arch_s[24];
      if (!field(text, "pid", pid_s, sizeof(pid_s)) || !field(text, "ses", ses, sizeof(ses)) ||
          !field(text, "syscall", sys_s, sizeof(sys_s)) || !field(text, "code", code_s, sizeof(code_s)) ||
          !field(text, "arch", arch_s, sizeof(arch_s)))
        continue;
      struct kernel_denial d = {.pid = (pid_t)strtol(pid_s, NULL, 10), .nr = (int)strtol(sys_s, NULL, 10)};
      pthread_mutex_lock(&o->lock);
      bool mine = ours(o, d.pid, ses);
      pthread_mutex_unlock(&o->lock);
      if (!mine)
        continue;
      uint32_t code = (uint32_t)strtoul(code_s, NULL, 16);
      d.action = code & RET_ACTION_FULL;
      d.errnum = d.action == RET_ERRNO ? (int)(code & RET_DATA) : 0;
      field(text, "comm", d.comm, sizeof(d.comm));
      field(text, "exe", d.exe, sizeof(d.exe));
      /* "audit(1796120507.311:170): …" */
      long sec = 0, ms = 0;
      if (sscanf(text, "audit(%ld.%ld:", &sec, &ms) == 2)
        audit_time_format((time_t)sec, ms, d.time);
      uint32_t arch = (uint32_t)strtoul(arch_s, NULL, 16);
      char *name = seccomp_syscall_resolve_num_arch(arch, d.nr);
      d.name = name;
      pthread_mutex_lock(&o->lock);
      o->kernel_records++;
      if (o->sink.denial)
        o->sink.denial(o->sink.arg, &d);
      pthread_mutex_unlock(&o->lock);
      free(name);
    }
  }
}

/* --- the thread ------------------------------------------------------------------------------ */

static void read_notifications(struct observer *o) {
  struct observed_call c;
  int r = notify_receive(o->decoder, o->notify_fd, &c);
  if (r < 0) {
    close(o->notify_fd);
    o->notify_fd = -1;
    return;
  }
  pthread_mutex_lock(&o->lock);
  o->notifications++;
  if (r == 1 && o->sink.call)
    o->sink.call(o->sink.arg, &c);
  pthread_mutex_unlock(&o->lock);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *observer_main(void *arg) {
  struct observer *o = arg;
  double deadline = 0;
  for (;;) {
    struct pollfd p[3] = {{.fd = o->wake_fd, .events = POLLIN}, {.fd = -1}, {.fd = -1}};
    pthread_mutex_lock(&o->lock);
    p[1].fd = o->notify_fd;
    p[1].events = POLLIN;
    bool stopping = o->stop;
    pthread_mutex_unlock(&o->lock);
    p[2].fd = o->audit_fd;
    p[2].events = POLLIN;
    /* Stopping: the container is gone; its listener reports POLLHUP at once, and the kernel's
     * last records come within a moment: wait while they still arrive (at most ~2 s). */
    if (stopping && deadline == 0)
      deadline = now_s() + 2;
    if (stopping && now_s() > deadline)
      break;
    int n = poll(p, 3, stopping ? 150 : -1);
    if (n < 0 && errno != EINTR)
      break;
    if (n == 0 && stopping)
      break;
    if (p[0].revents & POLLIN) {
      uint64_t v;
      ssize_t r = read(o->wake_fd, &v, sizeof(v));
      (void)r;
    }
    if (p[1].fd >= 0 && (p[1].revents & POLLIN))
      read_notifications(o);
    else if (p[1].fd >= 0 && (p[1].revents & (POLLHUP | POLLERR | POLLNVAL))) {
      /* Every process of the filter is gone. */
      pthread_mutex_lock(&o->lock);
      close(o->notify_fd);
      o->notify_fd = -1;
      pthread_mutex_unlock(&o->lock);
    }
    if (p[2].fd >= 0 && (p[2].revents & POLLIN))
      read_audit(o);
    pthread_mutex_lock(&o->lock);
    bool idle = o->notify_fd < 0 && o->audit_fd < 0;
    pthread_mutex_unlock(&o->lock);
    if (stopping && idle)
      break;
  }
  return NULL;
}

int observer_start(struct observer *o, const struct observer_sink *sink, bool with_kernel_records,
                   struct cm_error **err) {
  memset(o, 0, sizeof(*o));
  o->sink = *sink;
  o->notify_fd = o->audit_fd = -1;
  pthread_mutex_init(&o->lock, NULL);
  o->decoder = notify_decoder_new(err);
  if (o->decoder == NULL)
    return -1;
  o->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (o->wake_fd < 0)
    return cm_error_set(err, errno, "observer: eventfd");
  if (with_kernel_records) {
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_AUDIT);
    struct sockaddr_nl sa = {.nl_family = AF_NETLINK, .nl_groups = AUDIT_NLGRP_READLOG};
    if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
      int size = 4 << 20; /* a burst of denials must not overflow it */
      if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0 &&
          setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size)) < 0)
        cm_debug("audit socket: cannot raise its buffer: %s", strerror(errno));
      o->audit_fd = fd;
    } else {
      int e = errno;
      if (fd >= 0)
        close(fd);
      char why[160];
      snprintf(why, sizeof(why), "the kernel's seccomp records cannot be read (%s%s)", strerror(e),
               e == EPERM ? ": joining the audit multicast group needs CAP_AUDIT_READ" : "");
      if (o->sink.no_kernel_records)
        o->sink.no_kernel_records(o->sink.arg, why);
    }
  }
  return 0;
}

int observer_run(struct observer *o, struct cm_error **err) {
  if (o->running)
    return 0;
  int e = pthread_create(&o->thread, NULL, observer_main, o);
  if (e != 0)
    return cm_error_set(err, e, "observer: start its thread");
  o->running = true;
  return 0;
}

void observer_set_container(struct observer *o, pid_t init) {
  char path[64], buf[32] = "", self[32] = "";
  uint32_t session = 0;
  snprintf(path, sizeof(path), "/proc/%d/sessionid", (int)init);
  FILE *f = fopen(path, "re");
  if (f && fgets(buf, sizeof(buf), f))
    session = (uint32_t)strtoul(buf, NULL, 10);
  if (f)
    fclose(f);
  f = fopen("/proc/self/sessionid", "re");
  if (f && fgets(self, sizeof(self), f) == NULL)
    self[0] = '\0';
  if (f)
    fclose(f);
  /* The container's own session only if init started it (loginuid written by init): an
   * inherited one is shared with whatever else runs in the caller's login. */
  if (session == 4294967295U || session == (uint32_t)strtoul(self, NULL, 10))
    session = 0;
  struct stat st;
  snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)init);
  pthread_mutex_lock(&o->lock);
  o->init = init;
  o->session = session;
  o->ns_pid = stat(path, &st) == 0 ? (uint64_t)st.st_ino : 0;
  pthread_mutex_unlock(&o->lock);
}

int observer_attach_listener(void *arg, int fd, struct cm_error **err) {
  struct observer *o = arg;
  pthread_mutex_lock(&o->lock);
  if (o->notify_fd >= 0)
    close(o->notify_fd);
  o->notify_fd = fd;
  pthread_mutex_unlock(&o->lock);
  wake(o);
  return 0;
}

void observer_stop(struct observer *o) {
  if (o->running) {
    pthread_mutex_lock(&o->lock);
    o->stop = true;
    pthread_mutex_unlock(&o->lock);
    wake(o);
    pthread_join(o->thread, NULL);
    o->running = false;
  }
  if (o->notify_fd >= 0)
    close(o->notify_fd);
  if (o->audit_fd >= 0)
    close(o->audit_fd);
  if (o->wake_fd > 0)
    close(o->wake_fd);
  o->notify_fd = o->audit_fd = o->wake_fd = -1;
  notify_decoder_free(o->decoder);
  o->decoder = NULL;
  pthread_mutex_destroy(&o->lock);
}
