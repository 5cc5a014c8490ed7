/* The SSRF / DNS-rebinding guard: the one test of an address the broker is about to hand out
 * (the DNS stub's answers) or connect to (a resolved name, a transparent destination). An
 * address is refused unless a CIDR rule names it when it is
 *   - internal (policy/egress.c: loopback, private, link-local, metadata, unspecified,
 *     broadcast, multicast, and the IPv4-mapped, NAT64, 6to4 and IPv4-compatible IPv6 forms
 *     of each), or
 *   - one of this machine's own: an address (local, peer or broadcast, and the subnet's
 *     broadcast) of any interface of the broker's network namespace, and of the host's initial
 *     namespace when the broker runs in another one (a root broker opens a netlink socket there,
 *     through pid 1's or kthreadd's namespace link, before it drops its privileges). A public name answering with one of them (a wildcard
 *     DNS entry, a rebind) would reach services the machine binds to 0.0.0.0.
 * The lists are re-read whenever the kernel says an address changed: each namespace has a
 * socket subscribed to the address groups, drained (without blocking) before every check. A
 * rootless broker cannot enter the initial namespace; it runs in its user's own, which is the
 * one its connections leave from. */
#include <errno.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "supervisor/broker/broker.h"

#define GUARD_MAX_ADDRS 65536 /* more: the list is not trusted, every check refuses */
#define GUARD_MAX_NS 2

struct guard_ns {
  struct mnl_socket *dump, *events;
  bool stale;
};

struct guard {
  struct guard_ns ns[GUARD_MAX_NS];
  size_t n_ns;
  struct addr *addrs;
  size_t n_addrs, cap;
  bool overflow;
};

static void add_addr(struct guard *g, int family, const void *bytes) {
  if (g->n_addrs == g->cap) {
    size_t cap = g->cap ? g->cap * 2 : 64;
    struct addr *grown = cap <= GUARD_MAX_ADDRS ? realloc(g->addrs, cap * sizeof(*grown)) : NULL;
    if (grown == NULL) {
      g->overflow = true; /* an address we could not keep: fail closed */
      return;
    }
    g->addrs = grown;
    g->cap = cap;
  }
  struct addr *a = &g->addrs[g->n_addrs++];
  memset(a, 0, sizeof(*a));
  a->family = family;
  memcpy(a->bytes, bytes, family == AF_INET ? 4 : 16);
}

static int addr_attr(const struct nlattr *attr, void *data) {
  const struct nlattr **tb = data;
  if (mnl_attr_type_valid(attr, IFA_MAX) >= 0)
    tb[mnl_attr_get_type(attr)] = attr;
  return MNL_CB_OK;
}

static int on_addr(const struct nlmsghdr *nlh, void *data) {
  struct guard *g = data;
  if (nlh->nlmsg_type != RTM_NEWADDR)
    return MNL_CB_OK;
  const struct ifaddrmsg *ifa = mnl_nlmsg_get_payload(nlh);
  if (ifa->ifa_family != AF_INET && ifa->ifa_family != AF_INET6)
    return MNL_CB_OK;
  size_t alen = ifa->ifa_family == AF_INET ? 4 : 16;
  const struct nlattr *tb[IFA_MAX + 1] = {0};
  mnl_attr_parse(nlh, sizeof(*ifa), addr_attr, tb);
  static const int kinds[] = {IFA_LOCAL, IFA_ADDRESS, IFA_BROADCAST};
  for (size_t k = 0; k < 3; k++)
    if (tb[kinds[k]] && mnl_attr_get_payload_len(tb[kinds[k]]) == alen)
      add_addr(g, ifa->ifa_family, mnl_attr_get_payload(tb[kinds[k]]));
  /* The subnet's broadcast address, whether or not the interface was given one. */
  const struct nlattr *local = tb[IFA_LOCAL] ? tb[IFA_LOCAL] : tb[IFA_ADDRESS];
  if (ifa->ifa_family == AF_INET && local && mnl_attr_get_payload_len(local) == 4 && ifa->ifa_prefixlen < 31) {
    uint8_t v4[4];
    memcpy(v4, mnl_attr_get_payload(local), 4);
    uint32_t host = ifa->ifa_prefixlen == 0 ? 0xffffffffu : (0xffffffffu >> ifa->ifa_prefixlen);
    for (int i = 0; i < 4; i++)
      v4[i] |= (uint8_t)(host >> (24 - 8 * i));
    add_addr(g, AF_INET, v4);
  }
  return MNL_CB_OK;
}

/* Dump every address of one namespace into g. */
static int dump_ns(struct guard *g, struct mnl_socket *nl) {
  char buf[MNL_SOCKET_BUFFER_SIZE];
  struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = RTM_GETADDR;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  unsigned seq = (unsigned)time(NULL);
  nlh->nlmsg_seq = seq;
  struct ifaddrmsg *ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
  ifa->ifa_family = AF_UNSPEC;
  if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
    return -1;
  unsigned portid = mnl_socket_get_portid(nl);
  for (;;) {
    ssize_t n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
    if (n <= 0)
      return -1;
    int r = mnl_cb_run(buf, (size_t)n, seq, portid, on_addr, g);
    if (r <= MNL_CB_STOP)
      return r < 0 ? -1 : 0;
  }
}

static int open_ns(struct guard *g) {
  struct guard_ns *ns = &g->ns[g->n_ns];
  ns->dump = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
  ns->events = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (ns->dump == NULL || ns->events == NULL || mnl_socket_bind(ns->dump, 0, MNL_SOCKET_AUTOPID) < 0 ||
      mnl_socket_bind(ns->events, RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR, MNL_SOCKET_AUTOPID) < 0) {
    if (ns->dump)
      mnl_socket_close(ns->dump);
    if (ns->events)
      mnl_socket_close(ns->events);
    return -1;
  }
  ns->stale = true;
  g->n_ns++;
  return 0;
}

/* False when a namespace's list could not be read: the caller refuses (fails closed). */
static bool refresh(struct guard *g) {
  bool stale = false;
  for (size_t i = 0; i < g->n_ns; i++) {
    char buf[8192];
    /* Any address event (or an overflow: ENOBUFS) means: read the lists again. */
    for (;;) {
      ssize_t n = recv(mnl_socket_get_fd(g->ns[i].events), buf, sizeof(buf), MSG_DONTWAIT);
      if (n < 0 && errno == EAGAIN)
        break;
      g->ns[i].stale = true;
      if (n <= 0)
        break;
    }
    stale |= g->ns[i].stale;
  }
  if (!stale)
    return true;
  g->n_addrs = 0;
  g->overflow = false;
  bool ok = true;
  for (size_t i = 0; i < g->n_ns; i++) {
    g->ns[i].stale = dump_ns(g, g->ns[i].dump) < 0;
    ok &= !g->ns[i].stale;
  }
  return ok && !g->overflow;
}

/* The host's initial network namespace: pid 1's, or where pid 1 may not be inspected (seen on
 * this project's machines: its /proc/1/ns links are EACCES even to root) a kernel thread's:
 * kthreadd, pid 2 in the initial pid namespace, and every kernel thread live in the initial
 * namespaces. Not pid 2 under another name (inside a pid namespace it is someone's process). */
static int open_initial_netns(void) {
  int fd = open("/proc/1/ns/net", O_RDONLY | O_CLOEXEC);
  if (fd >= 0)
    return fd;
  char comm[32] = "";
  int cfd = open("/proc/2/comm", O_RDONLY | O_CLOEXEC);
  if (cfd < 0)
    return -1;
  ssize_t n = read(cfd, comm, sizeof(comm) - 1);
  close(cfd);
  if (n <= 0 || strncmp(comm, "kthreadd\n", 9) != 0)
    return -1;
  return open("/proc/2/ns/net", O_RDONLY | O_CLOEXEC);
}

int guard_init(struct broker *b, char *why, size_t why_len) {
  struct guard *g = calloc(1, sizeof(*g));
  if (g == NULL || open_ns(g) < 0) {
    snprintf(why, why_len, "the address guard: netlink: %s", strerror(errno));
    free(g);
    return -1;
  }
  /* The host's initial namespace, when ours is another and we may enter it (root): the
   * socket stays there after we come back. */
  struct stat self, init;
  int initfd = open_initial_netns();
  int selffd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  if (initfd >= 0 && selffd >= 0 && fstat(initfd, &init) == 0 && fstat(selffd, &self) == 0 &&
      (init.st_ino != self.st_ino || init.st_dev != self.st_dev) && setns(initfd, CLONE_NEWNET) == 0) {
    int rc = open_ns(g);
    int e = errno;
    if (setns(selffd, CLONE_NEWNET) < 0) {
      snprintf(why, why_len, "the address guard: back to our network namespace: %s", strerror(errno));
      return -1;
    }
    if (rc < 0) {
      snprintf(why, why_len, "the address guard: netlink in the host's namespace: %s", strerror(e));
      return -1;
    }
  }
  if (initfd >= 0)
    close(initfd);
  if (selffd >= 0)
    close(selffd);
  b->guard = g;
  if (!refresh(g)) {
    snprintf(why, why_len, "the address guard: cannot list this machine's addresses: %s", strerror(errno));
    return -1;
  }
  return 0;
}

static bool is_own(struct guard *g, const struct addr *a) {
  /* Compare the IPv4 address an IPv4-mapped IPv6 address carries as the IPv4 one. */
  static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  struct addr x = *a;
  if (x.family == AF_INET6 && memcmp(x.bytes, mapped, 12) == 0) {
    x.family = AF_INET;
    memmove(x.bytes, x.bytes + 12, 4);
  }
  size_t len = x.family == AF_INET ? 4 : 16;
  for (size_t i = 0; i < g->n_addrs; i++)
    if (g->addrs[i].family == x.family && memcmp(g->addrs[i].bytes, x.bytes, len) == 0)
      return true;
  return false;
}

bool guard_refuses(struct broker *b, const struct addr *a, uint16_t port, const char **why) {
  /* A CIDR rule naming the address is the user's word: it wins (a deny rule is decided by
   * the caller, before). */
  if (egress_check_addr(&b->policy, a->family, a->bytes, port).allowed)
    return false;
  if (egress_addr_is_internal(a->family, a->bytes, why))
    return true;
  if (b->guard) {
    if (!refresh(b->guard)) {
      *why = "this machine's addresses could not be read (netlink)";
      return true;
    }
    /* Prevents reaching the machine's own services (bound to 0.0.0.0) through a public name. */
    if (is_own(b->guard, a)) {
      *why = "an address of this machine";
      return true;
    }
  }
  return false;
}

void guard_free(struct broker *b) {
  struct guard *g = b->guard;
  if (g == NULL)
    return;
  for (size_t i = 0; i < g->n_ns; i++) {
    mnl_socket_close(g->ns[i].dump);
    mnl_socket_close(g->ns[i].events);
  }
  free(g->addrs);
  free(g);
  b->guard = NULL;
}
