/* linux/net.c: loopback comes up in a fresh network namespace. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <sys/capability.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>

#include "linux/net.h"
#include "test_linux_child.h"

static int lo_flags(void) {
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0)
    return -1;
  struct ifreq ifr = {0};
  strcpy(ifr.ifr_name, "lo");
  int r = ioctl(s, SIOCGIFFLAGS, &ifr);
  close(s);
  return r < 0 ? -1 : ifr.ifr_flags;
}

static int loopback_child(void *arg) {
  CHILD_CHECK(unshare(CLONE_NEWNET) == 0);
  int flags = lo_flags();
  CHILD_CHECK(flags >= 0 && !(flags & IFF_UP));
  CHILD_OK(net_loopback_up(&err));
  flags = lo_flags();
  CHILD_CHECK(flags >= 0 && (flags & IFF_UP));
  /* Idempotent: asking again is fine. */
  CHILD_OK(net_loopback_up(&err));

  /* And it carries traffic: a datagram to ourselves over 127.0.0.1. */
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  CHILD_CHECK(s >= 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  CHILD_CHECK(bind(s, (struct sockaddr *)&a, sizeof(a)) == 0);
  socklen_t len = sizeof(a);
  CHILD_CHECK(getsockname(s, (struct sockaddr *)&a, &len) == 0);
  CHILD_CHECK(sendto(s, "ping", 4, 0, (struct sockaddr *)&a, sizeof(a)) == 4);
  char buf[8];
  CHILD_CHECK(recv(s, buf, sizeof(buf), 0) == 4 && memcmp(buf, "ping", 4) == 0);
  close(s);
  return 0;
}

static void test_loopback_up(void **state) {
  assert_int_equal(run_in_child(loopback_child, NULL), 0);
}

/* Without CAP_NET_ADMIN the kernel's netlink error must come back with its errno. */
static int loopback_denied_child(void *arg) {
  CHILD_CHECK(unshare(CLONE_NEWNET) == 0);
  cap_t caps = cap_get_proc();
  cap_value_t net_admin = CAP_NET_ADMIN;
  CHILD_CHECK(caps && cap_set_flag(caps, CAP_EFFECTIVE, 1, &net_admin, CAP_CLEAR) == 0);
  CHILD_CHECK(cap_set_proc(caps) == 0);
  cap_free(caps);
  struct cm_error *err = NULL;
  CHILD_CHECK(net_loopback_up(&err) < 0);
  CHILD_CHECK(err && err->errnum == EPERM && strstr(err->msg, "RTM_NEWLINK lo"));
  cm_error_free(err);
  return 0;
}

static void test_loopback_error_has_errno(void **state) {
  assert_int_equal(run_in_child(loopback_denied_child, NULL), 0);
}

/* A profile's "loopback only" for a joined network namespace: one that holds a veth pair is
 * dropped for a new one, one with only lo is kept, nothing happens unless asked. */
static int loopback_only_child(void *arg) {
  CHILD_CHECK(unshare(CLONE_NEWNET) == 0);
  CHILD_CHECK(system("ip link add cmtest0 type veth peer name cmtest1 2>/dev/null") == 0);
  int with_veth = open("/proc/thread-self/ns/net", O_RDONLY);
  CHILD_CHECK(with_veth >= 0);
  CHILD_CHECK(unshare(CLONE_NEWNET) == 0); /* now in one with only lo */
  char veth_path[64];
  snprintf(veth_path, sizeof(veth_path), "/proc/self/fd/%d", with_veth);

  struct spec_namespace ns = {.present = true, .path = strdup("/proc/thread-self/ns/net"), .loopback_only = true};
  CHILD_OK(net_enforce_loopback_only(&ns, &err));
  CHILD_CHECK(ns.path != NULL);
  free(ns.path);

  ns = (struct spec_namespace){.present = true, .path = strdup(veth_path), .loopback_only = false};
  CHILD_OK(net_enforce_loopback_only(&ns, &err));
  CHILD_CHECK(ns.path != NULL);
  ns.loopback_only = true;
  CHILD_OK(net_enforce_loopback_only(&ns, &err));
  CHILD_CHECK(ns.path == NULL);
  /* Still in our own namespace afterwards: only lo here. */
  CHILD_CHECK(if_nametoindex("cmtest0") == 0);

  ns = (struct spec_namespace){.present = true, .path = strdup("/nonexistent/netns"), .loopback_only = true};
  struct cm_error *e = NULL;
  CHILD_CHECK(net_enforce_loopback_only(&ns, &e) < 0);
  CHILD_CHECK(e && e->errnum == ENOENT && strstr(e->msg, "/nonexistent/netns"));
  cm_error_free(e);
  free(ns.path);
  close(with_veth);
  return 0;
}

static void test_loopback_only_namespace(void **state) {
  assert_int_equal(run_in_child(loopback_only_child, NULL), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_loopback_up),
      cmocka_unit_test(test_loopback_error_has_errno),
      cmocka_unit_test(test_loopback_only_namespace),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
