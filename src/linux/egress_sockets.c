/* The broker's sockets in the container's network namespace (linux/egress_sockets.h). */
#include "linux/egress_sockets.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/netlink.h>

#include "util/sync.h"

static int bind_listen(int type, bool loopback_only, uint16_t port, struct cm_error **err) {
  const int one = 1, zero = 0;
  int fd = -1;
  if (!loopback_only) {
    /* One dual-stack socket: IPv4 clients arrive as ::ffff:a.b.c.d. */
    fd = socket(AF_INET6, type | SOCK_CLOEXEC, 0);
    if (fd >= 0) {
      struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons(port), .sin6_addr = in6addr_any};
      setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
      if (type == SOCK_DGRAM) {
        /* The DNS stub answers from the address each question was sent to (any address is
         * local here), or the resolver drops the answer. */
        setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof(one));
        setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one));
      }
      if (bind(fd, (struct sockaddr *)&a6, sizeof(a6)) == 0)
        goto bound;
      close(fd);
      fd = -1;
    }
    /* No IPv6 in this kernel: IPv4 only. */
  }
  fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return cm_error_set(err, errno, "egress: socket");
  struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons(port)};
  a4.sin_addr.s_addr = loopback_only ? htonl(INADDR_LOOPBACK) : htonl(INADDR_ANY);
  /* lo may not be up yet (the runtime brings it up meanwhile): 127.0.0.1 is bound regardless. */
  setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one));
  if (type == SOCK_DGRAM)
    setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one));
  if (bind(fd, (struct sockaddr *)&a4, sizeof(a4)) < 0) {
    int e = errno;
    close(fd);
    return cm_error_set(err, e, "egress: bind %s port %u in the container's network namespace",
                        type == SOCK_DGRAM ? "UDP" : "TCP", port);
  }
bound:
  if (type == SOCK_STREAM && listen(fd, 1024) < 0) {
    int e = errno;
    close(fd);
    return cm_error_set(err, e, "egress: listen on port %u", port);
  }
  return fd;
}

static int send_one(int sync_fd, int role, uint16_t port, int fd, struct cm_error **err) {
  int rc = sync_send(sync_fd, SYNC_EGRESS_SOCKET, EGRESS_SOCK_VALUE(role, port), NULL, fd, err);
  close(fd);
  return rc;
}

int egress_sockets_send(int sync_fd, const uint16_t *ports, size_t n_ports, uint16_t http_port,
                        uint16_t socks_port, struct cm_error **err) {
  /* Opened by the namespace's root: the broker's messages on it are checked against both the
   * opener's capabilities and its own (netlink_net_capable), so it can add routes here and
   * nowhere else. */
  int nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (nl < 0)
    return cm_error_set(err, errno, "egress: open rtnetlink socket");
  if (send_one(sync_fd, EGRESS_SOCK_NETLINK, 0, nl, err) < 0)
    return -1;
  int fd = bind_listen(SOCK_STREAM, true, http_port, err);
  if (fd < 0 || send_one(sync_fd, EGRESS_SOCK_HTTP_PROXY, http_port, fd, err) < 0)
    return -1;
  fd = bind_listen(SOCK_STREAM, true, socks_port, err);
  if (fd < 0 || send_one(sync_fd, EGRESS_SOCK_SOCKS, socks_port, fd, err) < 0)
    return -1;
  fd = bind_listen(SOCK_DGRAM, false, 53, err);
  if (fd < 0 || send_one(sync_fd, EGRESS_SOCK_DNS, 53, fd, err) < 0)
    return -1;
  for (size_t i = 0; i < n_ports; i++) {
    if (ports[i] == http_port || ports[i] == socks_port)
      continue;
    fd = bind_listen(SOCK_STREAM, false, ports[i], err);
    if (fd < 0 || send_one(sync_fd, EGRESS_SOCK_TRANSPARENT, ports[i], fd, err) < 0)
      return -1;
  }
  return sync_send(sync_fd, SYNC_EGRESS_SOCKET, EGRESS_SOCK_VALUE(EGRESS_SOCK_END, 0), NULL, -1, err);
}
