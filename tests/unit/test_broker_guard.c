/* supervisor/broker/guard.c: the one SSRF guard. Internal ranges and their IPv6 forms
 * (IPv4-mapped, NAT64), unspecified and broadcast are refused unless a CIDR rule names them;
 * the machine's own addresses are refused, in a network namespace made here (an address on
 * lo, its subnet's broadcast, its IPv4-mapped form), and one added or removed after the
 * guard started is seen at the next check (netlink address events). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka.h needs the four above first. */
#include <cmocka.h>

#include <arpa/inet.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "supervisor/broker/broker.h"

static struct addr parse(const char *text) {
  struct addr a = {.family = strchr(text, ':') ? AF_INET6 : AF_INET};
  assert_int_equal(inet_pton(a.family, text, a.bytes), 1);
  return a;
}

static bool refused(struct broker *b, const char *text, const char **why) {
  struct addr a = parse(text);
  const char *dummy;
  return guard_refuses(b, &a, 443, why ? why : &dummy);
}

static void add_rule(struct broker *b, const char *flag, const char *value) {
  struct egress_rule r;
  struct cm_error *err = NULL;
  assert_int_equal(egress_rule_parse(flag, value, &r, &err), 0);
  egress_policy_add(&b->policy, &r);
  egress_rule_clear(&r);
}

static void test_internal_forms_refused(void **state) {
  struct broker b = {0};
  static const char *const inside[] = {"10.0.0.1", "::ffff:10.0.0.1", "::ffff:127.0.0.1", "::ffff:169.254.169.254",
                                       "0.0.0.0", "::", "::ffff:0.0.0.0", "255.255.255.255", "::ffff:255.255.255.255",
                                       "64:ff9b::a00:1", "::1", "fe80::1", "::ffff:192.168.1.1", "224.0.0.1"};
  for (size_t i = 0; i < sizeof(inside) / sizeof(inside[0]); i++)
    assert_true(refused(&b, inside[i], NULL));
  assert_false(refused(&b, "203.0.113.10", NULL));
  assert_false(refused(&b, "::ffff:203.0.113.10", NULL));
  /* A CIDR rule naming the address is the user's word, in either form. */
  add_rule(&b, "allow-cidr", "10.0.0.0/8:443");
  assert_false(refused(&b, "10.0.0.1", NULL));
  assert_false(refused(&b, "::ffff:10.0.0.1", NULL));
  assert_true(refused(&b, "192.168.1.1", NULL));
  egress_policy_free(&b.policy);
}

static void test_own_addresses_refused(void **state) {
  if (geteuid() != 0 || unshare(CLONE_NEWNET) < 0) {
    skip(); /* needs a network namespace of its own (root: make check) */
    return;
  }
  assert_int_equal(system("ip link set lo up && ip addr add 203.0.113.99/24 dev lo"), 0);
  struct broker b = {0};
  char why[256];
  assert_int_equal(guard_init(&b, why, sizeof(why)), 0);
  const char *w = NULL;
  assert_true(refused(&b, "203.0.113.99", &w));
  assert_string_equal(w, "an address of this machine");
  assert_true(refused(&b, "::ffff:203.0.113.99", NULL));
  assert_true(refused(&b, "203.0.113.255", NULL)); /* the subnet's broadcast */
  assert_false(refused(&b, "203.0.113.98", NULL));
  assert_false(refused(&b, "198.51.100.77", NULL));
  /* Added after the guard started: the next check knows it; removed: no longer. */
  assert_int_equal(system("ip addr add 198.51.100.77/32 dev lo"), 0);
  assert_true(refused(&b, "198.51.100.77", NULL));
  assert_int_equal(system("ip addr del 198.51.100.77/32 dev lo"), 0);
  assert_false(refused(&b, "198.51.100.77", NULL));
  guard_free(&b);
}

/* The host's own addresses, seen from a broker in another network namespace: guard_init also
 * reads the initial namespace's (through /proc/1/ns/net, as a root broker does before it drops
 * its privileges). Each address of the host's that is not internal anyway (this machine kind's
 * eth0 is in 192.0.2.0/24, which the internal ranges leave out) must be refused as the
 * machine's own from inside the new namespace, where no interface has it. */
static void test_host_addresses_refused_from_another_netns(void **state) {
  char host[16][128];
  size_t n = 0;
  FILE *f = geteuid() == 0 ? popen("ip -o addr show 2>/dev/null | awk '{print $4}'", "r") : NULL;
  char line[128];
  while (f && n < 16 && fgets(line, sizeof(line), f)) {
    line[strcspn(line, "/\n")] = '\0';
    struct addr a = {.family = strchr(line, ':') ? AF_INET6 : AF_INET};
    const char *why;
    if (inet_pton(a.family, line, a.bytes) == 1 && !egress_addr_is_internal(a.family, a.bytes, &why))
      snprintf(host[n++], sizeof(host[0]), "%s", line);
  }
  if (f)
    pclose(f);
  if (n == 0 || unshare(CLONE_NEWNET) < 0) {
    skip(); /* root, and a host address outside the internal ranges, are needed */
    return;
  }
  struct broker b = {0};
  char why[256];
  assert_int_equal(guard_init(&b, why, sizeof(why)), 0);
  for (size_t i = 0; i < n; i++) {
    const char *w = NULL;
    assert_true(refused(&b, host[i], &w));
    assert_string_equal(w, "an address of this machine");
  }
  assert_false(refused(&b, "198.51.100.77", NULL));
  guard_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_internal_forms_refused),
      /* First: it reads the addresses of the namespace the test starts in (the host's); the
       * next one leaves the process in a namespace of its own. */
      cmocka_unit_test(test_host_addresses_refused_from_another_netns),
      cmocka_unit_test(test_own_addresses_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
