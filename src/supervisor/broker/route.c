/* The capture routes, through the rtnetlink socket init opened inside the container's network
 * namespace (libmnl over that fd: the messages go to that namespace, wherever we run).
 *
 * `local 0.0.0.0/0 dev lo` and `local ::/0 dev lo` in the local table make every address local
 * to the container (the AnyIP trick): a connect() to 203.0.113.10:443 is delivered on lo to
 * whatever listens on port 443 of any address, our transparent listener, and getsockname() on
 * the accepted socket is the address the client asked for. No NAT, no conntrack, no nftables,
 * no privilege outside the namespace. Measured (issue 16): SO_ORIGINAL_DST has nothing to return
 * (ENOENT: no NAT happened) and IP_TRANSPARENT is not needed (the address is local, not foreign);
 * a connect to a port nobody listens on is refused at once (RST on lo, ECONNREFUSED), and UDP
 * to anything but port 53 gets port-unreachable (ECONNREFUSED): nothing leaves the namespace,
 * which has no other interface.
 *
 * Before that, the namespace is checked to have nothing but lo: a joined namespace with a real
 * interface (a CNI or Docker bridge network) would give the container a way around the broker. */
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/if.h>
#include <linux/rtnetlink.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "supervisor/broker/broker.h"

struct links {
  int lo_index;
  bool lo_up;
  char other[IFNAMSIZ + 1];
};

static int link_attr(const struct nlattr *attr, void *data) {
  const struct nlattr **tb = data;
  if (mnl_attr_type_valid(attr, IFLA_MAX) >= 0)
    tb[mnl_attr_get_type(attr)] = attr;
  return MNL_CB_OK;
}

static int on_link(const struct nlmsghdr *nlh, void *data) {
  struct links *l = data;
  const struct ifinfomsg *ifm = mnl_nlmsg_get_payload(nlh);
  const struct nlattr *tb[IFLA_MAX + 1] = {0};
  mnl_attr_parse(nlh, sizeof(*ifm), link_attr, tb);
  const char *name = tb[IFLA_IFNAME] ? mnl_attr_get_str(tb[IFLA_IFNAME]) : "?";
  if (ifm->ifi_flags & IFF_LOOPBACK) {
    l->lo_index = ifm->ifi_index;
    l->lo_up = ifm->ifi_flags & IFF_UP;
  }
  else if (l->other[0] == '\0')
    snprintf(l->other, sizeof(l->other), "%s", name);
  return MNL_CB_OK;
}

/* Send one request, run cb over the replies until the ACK or the dump's end. */
static int talk(struct mnl_socket *nl, struct nlmsghdr *req, mnl_cb_t cb, void *data) {
  if (mnl_socket_sendto(nl, req, req->nlmsg_len) < 0)
    return -1;
  char buf[MNL_SOCKET_BUFFER_SIZE];
  for (;;) {
    ssize_t n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
    if (n < 0)
      return -1;
    int r = mnl_cb_run(buf, (size_t)n, req->nlmsg_seq, 0, cb, data);
    if (r <= MNL_CB_STOP)
      return r;
  }
}

/* lo up (an IPv6 route to a device that is down is refused): whoever else brings it up meanwhile
 * (create, or init) does the same, harmlessly. */
static int lo_up(struct mnl_socket *nl, int lo_index, uint32_t seq) {
  char buf[MNL_SOCKET_BUFFER_SIZE];
  struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = RTM_NEWLINK;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  nlh->nlmsg_seq = seq;
  struct ifinfomsg *ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
  ifm->ifi_family = AF_UNSPEC;
  ifm->ifi_index = lo_index;
  ifm->ifi_flags = IFF_UP;
  ifm->ifi_change = IFF_UP;
  return talk(nl, nlh, NULL, NULL);
}

static int add_local_default(struct mnl_socket *nl, int family, int lo_index, uint32_t seq) {
  char buf[MNL_SOCKET_BUFFER_SIZE];
  struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = RTM_NEWROUTE;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_REPLACE | NLM_F_ACK;
  nlh->nlmsg_seq = seq;
  struct rtmsg *rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
  rtm->rtm_family = (unsigned char)family;
  rtm->rtm_dst_len = 0; /* every address */
  rtm->rtm_table = RT_TABLE_LOCAL;
  rtm->rtm_protocol = RTPROT_STATIC;
  rtm->rtm_scope = RT_SCOPE_HOST;
  rtm->rtm_type = RTN_LOCAL;
  mnl_attr_put_u32(nlh, RTA_TABLE, RT_TABLE_LOCAL);
  mnl_attr_put_u32(nlh, RTA_OIF, (uint32_t)lo_index);
  return talk(nl, nlh, NULL, NULL);
}

int route_setup(int nlfd, char *why, size_t why_len) {
  struct mnl_socket *nl = mnl_socket_fdopen(nlfd);
  if (nl == NULL || mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
    snprintf(why, why_len, "netlink socket: %s", strerror(errno));
    return -1;
  }
  uint32_t seq = (uint32_t)time(NULL);
  char buf[MNL_SOCKET_BUFFER_SIZE];
  struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = RTM_GETLINK;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  nlh->nlmsg_seq = seq;
  struct rtgenmsg *rt = mnl_nlmsg_put_extra_header(nlh, sizeof(*rt));
  rt->rtgen_family = AF_PACKET;
  struct links l = {0};
  int rc = -1;
  if (talk(nl, nlh, on_link, &l) < 0) {
    snprintf(why, why_len, "list the container's interfaces: %s", strerror(errno));
    goto out;
  }
  /* Another interface would be a way out that does not pass through us. */
  if (l.other[0]) {
    snprintf(why, why_len,
             "the container's network namespace has interface %s: an egress allowlist needs a namespace with "
             "only lo (a new one, or Docker's --network none)",
             l.other);
    goto out;
  }
  if (l.lo_index == 0) {
    snprintf(why, why_len, "the container's network namespace has no lo");
    goto out;
  }
  if (!l.lo_up && lo_up(nl, l.lo_index, seq + 3) < 0) {
    snprintf(why, why_len, "bring up lo in the container: %s", strerror(errno));
    goto out;
  }
  if (add_local_default(nl, AF_INET, l.lo_index, seq + 1) < 0) {
    snprintf(why, why_len, "add route local 0.0.0.0/0 dev lo in the container: %s", strerror(errno));
    goto out;
  }
  /* A kernel without IPv6, or a namespace where it is disabled (Docker sets
   * net.ipv6.conf.all.disable_ipv6 for networks without IPv6: the route is then refused with
   * EACCES), has nothing to capture there: no IPv6 socket can leave it either. */
  if (add_local_default(nl, AF_INET6, l.lo_index, seq + 2) < 0 && errno != EAFNOSUPPORT && errno != EOPNOTSUPP &&
      errno != EACCES) {
    snprintf(why, why_len, "add route local ::/0 dev lo in the container: %s", strerror(errno));
    goto out;
  }
  rc = 0;
out:
  mnl_socket_close(nl); /* closes nlfd too: we need it no more */
  return rc;
}
