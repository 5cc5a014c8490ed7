/* Addresses: from and to sockaddrs, as text, loopback. */
#include <arpa/inet.h>
#include <string.h>

#include "supervisor/broker/broker.h"

void addr_from_sockaddr(struct addr *a, const struct sockaddr *sa, uint16_t *port) {
  memset(a, 0, sizeof(*a));
  if (sa->sa_family == AF_INET) {
    const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
    a->family = AF_INET;
    memcpy(a->bytes, &s4->sin_addr, 4);
    *port = ntohs(s4->sin_port);
    return;
  }
  const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
  static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  *port = ntohs(s6->sin6_port);
  /* A dual-stack listener reports IPv4 clients as ::ffff:a.b.c.d: keep them IPv4. */
  if (memcmp(&s6->sin6_addr, mapped, 12) == 0) {
    a->family = AF_INET;
    memcpy(a->bytes, (const uint8_t *)&s6->sin6_addr + 12, 4);
    return;
  }
  a->family = AF_INET6;
  memcpy(a->bytes, &s6->sin6_addr, 16);
}

void addr_to_sockaddr(const struct addr *a, uint16_t port, struct sockaddr_storage *ss, socklen_t *len) {
  memset(ss, 0, sizeof(*ss));
  if (a->family == AF_INET) {
    struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
    s4->sin_family = AF_INET;
    s4->sin_port = htons(port);
    memcpy(&s4->sin_addr, a->bytes, 4);
    *len = sizeof(*s4);
    return;
  }
  struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
  s6->sin6_family = AF_INET6;
  s6->sin6_port = htons(port);
  memcpy(&s6->sin6_addr, a->bytes, 16);
  *len = sizeof(*s6);
}

const char *addr_text(const struct addr *a, char buf[static 64]) {
  inet_ntop(a->family, a->bytes, buf, 64);
  return buf;
}

bool addr_is_loopback(const struct addr *a) {
  static const uint8_t v6lo[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  return (a->family == AF_INET && a->bytes[0] == 127) ||
         (a->family == AF_INET6 && memcmp(a->bytes, v6lo, 16) == 0);
}
