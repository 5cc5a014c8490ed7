/* The egress broker's sockets, made inside the container's network namespace by init during
 * setup (a socket keeps the namespace it was made in, so the broker outside can serve the
 * container through it: no veth, no bridge, no privilege on the host) and sent to the runtime
 * over the sync channel, which hands them to the broker (runtime/egress.h). */
#ifndef CM_LINUX_EGRESS_SOCKETS_H
#define CM_LINUX_EGRESS_SOCKETS_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

enum egress_socket_role {
  EGRESS_SOCK_END = 0,     /* no socket: the last message of the series */
  EGRESS_SOCK_NETLINK = 1, /* NETLINK_ROUTE: the broker adds the capture routes through it */
  EGRESS_SOCK_HTTP_PROXY,  /* TCP 127.0.0.1:3128 */
  EGRESS_SOCK_SOCKS,       /* TCP 127.0.0.1:1080 */
  EGRESS_SOCK_DNS,         /* UDP port 53 of every address, IPv4 and IPv6 */
  EGRESS_SOCK_TRANSPARENT, /* TCP PORT of every address, IPv4 and IPv6 */
};
/* The sync message's value for a socket: its role and port. */
#define EGRESS_SOCK_VALUE(role, port) ((int64_t)(role) | ((int64_t)(port) << 8))
#define EGRESS_SOCK_ROLE(v) ((int)((v)&0xff))
#define EGRESS_SOCK_PORT(v) ((uint16_t)(((v) >> 8) & 0xffff))

/* Make them all in the current network namespace and send each as SYNC_EGRESS_SOCKET on
 * sync_fd: the netlink socket, the proxy listeners (http_port, socks_port), the DNS socket and
 * a transparent listener for every other port of `ports`; then EGRESS_SOCK_END. */
int egress_sockets_send(int sync_fd, const uint16_t *ports, size_t n_ports, uint16_t http_port,
                        uint16_t socks_port, struct cm_error **err);

#endif
