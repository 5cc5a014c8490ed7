/* Networking inside a new network namespace: only loopback, brought up over rtnetlink.
 * Anything richer (veth, bridges) is the job of CNI/Docker, not of the runtime. */
#include "linux/net.h"

#include <errno.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <sched.h>
#include <stdio.h>
#include <net/if.h> /* before linux/ headers: glibc and uapi both define struct ifreq */
#include <linux/rtnetlink.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static void mnl_closep(struct mnl_socket **nl) {
  if (*nl)
    mnl_socket_close(*nl);
  *nl = NULL;
}

int net_loopback_up(struct cm_error **err) {
  /* Zeroed: libmnl leaves an attribute's alignment padding as it finds it, and it goes out. */
  char req[128] = {0};
  struct nlmsghdr *nlh = mnl_nlmsg_put_header(req);
  nlh->nlmsg_type = RTM_NEWLINK;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  uint32_t seq = (uint32_t)time(NULL);
  nlh->nlmsg_seq = seq;
  struct ifinfomsg *ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
  ifm->ifi_family = AF_UNSPEC;
  ifm->ifi_index = 0; /* by name: no if_nametoindex (a socket and an ioctl) first */
  ifm->ifi_flags = IFF_UP;
  ifm->ifi_change = IFF_UP; /* touch only the UP bit */
  mnl_attr_put_strz(nlh, IFLA_IFNAME, "lo");

  /* CLOEXEC: this socket must not survive into the container's process. */
  __attribute__((cleanup(mnl_closep))) struct mnl_socket *nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
  if (!nl)
    return cm_error_set(err, errno, "bring up loopback: open rtnetlink socket");
  if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0)
    return cm_error_set(err, errno, "bring up loopback: bind rtnetlink socket");
  unsigned int portid = mnl_socket_get_portid(nl);
  if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
    return cm_error_set(err, errno, "bring up loopback: send RTM_NEWLINK");

  /* Wait for the ACK; a NLMSG_ERROR carrying a non-zero error makes mnl_cb_run fail with it. */
  char buf[MNL_SOCKET_BUFFER_SIZE];
  for (;;) {
    ssize_t n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return cm_error_set(err, errno, "bring up loopback: receive rtnetlink reply");
    }
    int r = mnl_cb_run(buf, (size_t)n, seq, portid, NULL, NULL);
    if (r < 0)
      return cm_error_set(err, errno, "bring up loopback: RTM_NEWLINK lo refused");
    if (r == MNL_CB_STOP)
      return 0;
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
