/* Networking inside a new network namespace: only loopback, brought up over rtnetlink.
 * Anything richer (veth, bridges) is the job of CNI/Docker, not of the runtime. */
#include "linux/net.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <net/if.h> /* before linux/ headers: glibc and uapi both define struct ifreq */
#include <linux/rtnetlink.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/log.h"

/* One RTM_NEWLINK for "lo" by name, IFF_UP in ifi_change so nothing else is touched, and its
 * ACK. Plain rtnetlink, no library: the message is 40 bytes, and a library linked in is one more
 * to load at every start (the binary is static, issue 7). */
int net_loopback_up(struct cm_error **err) {
  struct {
    struct nlmsghdr nh;
    struct ifinfomsg ifi;
    struct rtattr name_attr;
    char name[4]; /* "lo\0", padded to the 4-byte alignment netlink wants */
  } req;
  memset(&req, 0, sizeof(req)); /* the padding goes out too */
  uint32_t seq = (uint32_t)time(NULL);
  req.nh.nlmsg_len = sizeof(req);
  req.nh.nlmsg_type = RTM_NEWLINK;
  req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  req.nh.nlmsg_seq = seq;
  req.ifi.ifi_family = AF_UNSPEC;
  req.ifi.ifi_flags = IFF_UP;
  req.ifi.ifi_change = IFF_UP;
  req.name_attr.rta_type = IFLA_IFNAME;
  req.name_attr.rta_len = RTA_LENGTH(sizeof("lo"));
  memcpy(req.name, "lo", sizeof("lo"));

  /* CLOEXEC: this socket must not survive into the container's process. */
  cleanup_close int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0)
    return cm_error_set(err, errno, "bring up loopback: open rtnetlink socket");
  struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
  if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
    return cm_error_set(err, errno, "bring up loopback: send RTM_NEWLINK");

  /* The ACK is an NLMSG_ERROR carrying 0, or the negated errno of the refusal. */
  char buf[4096] __attribute__((aligned(NLMSG_ALIGNTO)));
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return cm_error_set(err, errno, "bring up loopback: receive rtnetlink reply");
    }
    size_t left = (size_t)n;
    for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
      if (h->nlmsg_seq != seq || h->nlmsg_type != NLMSG_ERROR)
        continue;
      if (h->nlmsg_len < NLMSG_LENGTH(sizeof(struct nlmsgerr)))
        return cm_error_set(err, EPROTO, "bring up loopback: short rtnetlink reply");
      int refused = -((const struct nlmsgerr *)NLMSG_DATA(h))->error;
      if (refused != 0)
        return cm_error_set(err, refused, "bring up loopback: RTM_NEWLINK lo refused");
      return 0;
    }
  }
}

int net_loopback_up_in(pid_t pid, struct cm_error **err) {
  /* Our own netns first, so we can always come back; our hooks and cleanup run in it. */
  int ours = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (ours < 0)
    return cm_error_set(err, errno, "bring up loopback: open our network namespace");
  /* A pidfd names exactly the process we cloned (no pid reuse); /proc/PID where it cannot. */
  int theirs = (int)syscall(SYS_pidfd_open, pid, 0);
  int kind = CLONE_NEWNET;
  if (theirs < 0) {
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
    theirs = open(path, O_RDONLY | O_CLOEXEC);
    kind = 0;
  }
  if (theirs < 0 || setns(theirs, kind) < 0) {
    int e = errno;
    if (theirs >= 0)
      close(theirs);
    close(ours);
    return cm_error_set(err, e, "bring up loopback: enter the container's network namespace");
  }
  close(theirs);
  int rc = net_loopback_up(err);
  if (setns(ours, CLONE_NEWNET) < 0) {
    /* Nothing more may run here, hooks least of all: the caller fails the create. */
    int e = errno;
    close(ours);
    cm_error_freep(err);
    cm_error_set(err, e, "return to our network namespace after bringing up the container's loopback");
    return -2;
  }
  close(ours);
  return rc;
}

/* The interfaces of the network namespace at `path`, other than lo, as "a b c" in `names`:
 * an rtnetlink socket made inside that namespace (a socket keeps the namespace it was made
 * in) and one RTM_GETLINK dump, read from our own namespace. Returns their number. */
static int foreign_links(const char *path, char *names, size_t size, struct cm_error **err) {
  names[0] = '\0';
  cleanup_close int ours = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (ours < 0)
    return cm_error_set(err, errno, "open our network namespace");
  cleanup_close int theirs = open(path, O_RDONLY | O_CLOEXEC);
  if (theirs < 0)
    return cm_error_set(err, errno, "open %s", path);
  if (setns(theirs, CLONE_NEWNET) < 0)
    return cm_error_set(err, errno, "enter %s", path);
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  int socket_errno = errno;
  if (setns(ours, CLONE_NEWNET) < 0) {
    /* The caller fails the create: nothing of the container may go on from here. */
    int e = errno;
    if (fd >= 0)
      close(fd);
    return cm_error_set(err, e, "return to our network namespace from %s", path);
  }
  if (fd < 0)
    return cm_error_set(err, socket_errno, "rtnetlink socket in %s", path);
  cleanup_close int nl = fd;
  struct {
    struct nlmsghdr nh;
    struct ifinfomsg ifi;
  } req;
  memset(&req, 0, sizeof(req));
  uint32_t seq = (uint32_t)time(NULL);
  req.nh.nlmsg_len = sizeof(req);
  req.nh.nlmsg_type = RTM_GETLINK;
  req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  req.nh.nlmsg_seq = seq;
  req.ifi.ifi_family = AF_UNSPEC;
  struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
  if (sendto(nl, &req, sizeof(req), 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
    return cm_error_set(err, errno, "RTM_GETLINK in %s", path);
  int count = 0;
  size_t used = 0;
  char buf[16384] __attribute__((aligned(NLMSG_ALIGNTO)));
  for (;;) {
    ssize_t n = recv(nl, buf, sizeof(buf), 0);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return cm_error_set(err, errno, "RTM_GETLINK in %s: receive", path);
    }
    size_t left = (size_t)n;
    for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
      if (h->nlmsg_seq != seq)
        continue;
      if (h->nlmsg_type == NLMSG_DONE)
        return count;
      if (h->nlmsg_type == NLMSG_ERROR)
        return cm_error_set(err, -((const struct nlmsgerr *)NLMSG_DATA(h))->error, "RTM_GETLINK in %s", path);
      if (h->nlmsg_type != RTM_NEWLINK || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct ifinfomsg)))
        continue;
      const struct ifinfomsg *ifi = NLMSG_DATA(h);
      int attrs = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(*ifi)));
      for (const struct rtattr *a = IFLA_RTA(ifi); RTA_OK(a, attrs); a = RTA_NEXT(a, attrs)) {
        if (a->rta_type != IFLA_IFNAME)
          continue;
        const char *name = RTA_DATA(a);
        size_t len = strnlen(name, RTA_PAYLOAD(a));
        if ((ifi->ifi_flags & IFF_LOOPBACK) && len == 2 && memcmp(name, "lo", 2) == 0)
          break;
        count++;
        if (used + len + 2 < size) {
          used += (size_t)snprintf(names + used, size - used, "%s%.*s", used ? " " : "", (int)len, name);
        }
        break;
      }
    }
  }
}

int net_enforce_loopback_only(struct spec_namespace *ns, struct cm_error **err) {
  if (!ns->loopback_only || ns->path == NULL)
    return 0;
  char names[256];
  int n = foreign_links(ns->path, names, sizeof(names), err);
  if (n < 0)
    return cm_error_prefix(err, "linux.namespaces: network namespace %s (loopback only)", ns->path);
  if (n == 0)
    return 0;
  /* The joined namespace has a way out (a CNI's eth0): the container gets a namespace of its
   * own instead, with only lo. Processes that join this container's namespace later (the other
   * containers of a pod join the pause container's) then share that one. */
  cm_info("network namespace %s holds %s: the container gets a new one with loopback only", ns->path, names);
  free(ns->path);
  ns->path = NULL;
  return 0;
}
