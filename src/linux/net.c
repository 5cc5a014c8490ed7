/* Networking inside a new network namespace: only loopback, brought up over rtnetlink.
 * Anything richer (veth, bridges) is the job of CNI/Docker, not of the runtime. */
#include "linux/net.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <net/if.h> /* before linux/ headers: glibc and uapi both define struct ifreq */
#include <linux/rtnetlink.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util/cleanup.h"

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
