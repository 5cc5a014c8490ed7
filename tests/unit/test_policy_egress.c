/* policy/egress: the rule syntax (and its errors), wildcard matching (subdomains, never the
 * apex), deny wins, CIDR rules on IPv4, IPv6 and IPv4-mapped addresses, the SSRF guard's ranges,
 * the annotation (added under the default profile, only narrowing under a hardening one), and
 * the port list Landlock gets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka.h needs the four above first. */
#include <cmocka.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "policy/egress.h"
#include "spec/json_util.h"

static struct egress_policy policy_of(const char *const *rules) {
  struct egress_policy p = {0};
  for (size_t i = 0; rules[i]; i++) {
    const char *flag = rules[i];
    const char *value = rules[++i];
    struct egress_rule r;
    struct cm_error *err = NULL;
    if (egress_rule_parse(flag, value, &r, &err) < 0) {
      print_error("%s %s: %s\n", flag, value, err->msg);
      fail();
    }
    egress_policy_add(&p, &r);
    egress_rule_clear(&r);
  }
  return p;
}

static void expect_parse_error(const char *flag, const char *value, const char *fragment) {
  struct egress_rule r;
  struct cm_error *err = NULL;
  assert_int_equal(egress_rule_parse(flag, value, &r, &err), -1);
  assert_non_null(err);
  if (strstr(err->msg, fragment) == NULL || strstr(err->msg, value) == NULL) {
    print_error("error \"%s\" lacks \"%s\" or the value\n", err->msg, fragment);
    fail();
  }
  cm_error_free(err);
}

static void test_rule_syntax(void **state) {
  (void)state;
  struct egress_rule r;
  struct cm_error *err = NULL;
  assert_int_equal(egress_rule_parse("--allow-host", "API.GitHub.com.", &r, &err), 0);
  assert_string_equal(r.text, "allow-host api.github.com:443"); /* default port, lower case, no dot */
  egress_rule_clear(&r);
  assert_int_equal(egress_rule_parse("--allow-host", "*.example.com:8443", &r, &err), 0);
  assert_string_equal(r.text, "allow-host *.example.com:8443");
  egress_rule_clear(&r);
  assert_int_equal(egress_rule_parse("--allow-cidr", "10.1.2.3/24:5432", &r, &err), 0);
  assert_string_equal(r.text, "allow-cidr 10.1.2.0/24:5432"); /* host bits cleared */
  egress_rule_clear(&r);
  assert_int_equal(egress_rule_parse("--allow-cidr", "fd00::1/64:443", &r, &err), 0);
  assert_string_equal(r.text, "allow-cidr fd00::/64:443");
  egress_rule_clear(&r);
  assert_int_equal(egress_rule_parse("--deny-host", "evil.example.com", &r, &err), 0);
  assert_string_equal(r.text, "deny-host evil.example.com"); /* every port */
  egress_rule_clear(&r);

  expect_parse_error("--allow-host", "1.2.3.4", "--allow-cidr");
  expect_parse_error("--allow-host", "*", "leading");
  expect_parse_error("--allow-host", "a.*.com", "leading");
  expect_parse_error("--allow-host", "*.com", "two labels");
  expect_parse_error("--allow-host", "host:0", "port");
  expect_parse_error("--allow-host", "host:65536", "port");
  expect_parse_error("--allow-host", "bad host", "valid host name");
  expect_parse_error("--allow-cidr", "10.0.0.0/8", "port is missing");
  expect_parse_error("--allow-cidr", "10.0.0.0:80", "ADDR/PREFIX");
  expect_parse_error("--allow-cidr", "10.0.0.0/33:80", "prefix");
  expect_parse_error("--allow-cidr", "nope/8:80", "address");
}

static void test_host_matching(void **state) {
  (void)state;
  assert_true(egress_host_matches("*.example.com", "a.example.com"));
  assert_true(egress_host_matches("*.example.com", "a.b.EXAMPLE.com."));
  assert_false(egress_host_matches("*.example.com", "example.com")); /* not the apex */
  assert_false(egress_host_matches("*.example.com", "badexample.com"));
  assert_true(egress_host_matches("api.github.com", "API.github.com."));
  assert_false(egress_host_matches("api.github.com", "api.github.com.evil.test"));

  const char *rules[] = {"--allow-host", "*.allowed.test", "--allow-host", "plain.test:80",
                         "--deny-host",  "bad.allowed.test", NULL};
  struct egress_policy p = policy_of(rules);
  struct egress_verdict v = egress_check_host(&p, "api.allowed.test", 443);
  assert_true(v.allowed);
  assert_string_equal(v.rule->text, "allow-host *.allowed.test:443");
  assert_false(egress_check_host(&p, "api.allowed.test", 80).allowed); /* only its port */
  assert_false(egress_check_host(&p, "allowed.test", 443).allowed);
  v = egress_check_host(&p, "bad.allowed.test", 443); /* deny wins */
  assert_false(v.allowed);
  assert_string_equal(v.rule->text, "deny-host bad.allowed.test");
  assert_true(egress_check_host(&p, "plain.test", 80).allowed);
  assert_true(egress_check_host(&p, "plain.test", 0).allowed); /* "any port": the DNS question */
  v = egress_check_host(&p, "evil.test", 443);
  assert_false(v.allowed);
  assert_null(v.rule);
  egress_policy_free(&p);
}

static void test_cidr_matching(void **state) {
  (void)state;
  const char *rules[] = {"--allow-cidr", "10.1.0.0/16:5432", "--allow-cidr", "2001:db8::/32:443",
                         "--deny-cidr",  "10.1.99.0/24",     NULL};
  struct egress_policy p = policy_of(rules);
  uint8_t a[16];
  inet_pton(AF_INET, "10.1.2.3", a);
  assert_true(egress_check_addr(&p, AF_INET, a, 5432).allowed);
  assert_false(egress_check_addr(&p, AF_INET, a, 443).allowed);
  inet_pton(AF_INET6, "::ffff:10.1.2.3", a); /* as a dual-stack listener sees it */
  assert_true(egress_check_addr(&p, AF_INET6, a, 5432).allowed);
  inet_pton(AF_INET, "10.1.99.7", a);
  struct egress_verdict v = egress_check_addr(&p, AF_INET, a, 5432);
  assert_false(v.allowed);
  assert_string_equal(v.rule->text, "deny-cidr 10.1.99.0/24");
  inet_pton(AF_INET6, "2001:db8:1::5", a);
  assert_true(egress_check_addr(&p, AF_INET6, a, 443).allowed);
  inet_pton(AF_INET6, "2001:db9::5", a);
  assert_false(egress_check_addr(&p, AF_INET6, a, 443).allowed);
  egress_policy_free(&p);
}

static bool internal(const char *text) {
  uint8_t a[16];
  int fam = strchr(text, ':') ? AF_INET6 : AF_INET;
  assert_int_equal(inet_pton(fam, text, a), 1);
  const char *why = NULL;
  bool r = egress_addr_is_internal(fam, a, &why);
  if (r)
    assert_non_null(why);
  return r;
}

static void test_guard(void **state) {
  (void)state;
  const char *bad[] = {"127.0.0.1", "127.3.4.5", "10.9.8.7", "172.16.0.1", "172.31.255.255", "192.168.1.1",
                       "169.254.169.254", "169.254.1.1", "100.64.0.1", "100.100.100.200", "0.0.0.0", "224.0.0.1",
                       "255.255.255.255", "::1", "::", "fe80::1", "fd00::1", "fd00:ec2::254", "ff02::1",
                       "::ffff:127.0.0.1", "::ffff:10.0.0.1", "64:ff9b::a9fe:a9fe", "2002:a00:1::1", "::7f00:1",
                       "198.18.0.1", NULL};
  for (size_t i = 0; bad[i]; i++)
    if (!internal(bad[i])) {
      print_error("%s should be internal\n", bad[i]);
      fail();
    }
  const char *good[] = {"8.8.8.8", "203.0.113.10", "198.51.100.7", "172.32.0.1", "2001:4860::8888",
                        "::ffff:8.8.8.8", "2606:4700::1111", NULL};
  for (size_t i = 0; good[i]; i++)
    if (internal(good[i])) {
      print_error("%s should be public\n", good[i]);
      fail();
    }
  uint8_t a[4] = {169, 254, 169, 254};
  const char *why;
  assert_true(egress_addr_is_internal(AF_INET, a, &why));
  assert_string_equal(why, "cloud metadata address");
}

static struct spec *spec_with_annotation(const char *value_json) {
  char *json = NULL;
  char *escaped = calloc(strlen(value_json) * 2 + 1, 1);
  for (size_t i = 0, j = 0; value_json[i]; i++) {
    if (value_json[i] == '"')
      escaped[j++] = '\\';
    escaped[j++] = value_json[i];
  }
  if (asprintf(&json,
               "{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"rootfs\"},\"process\":{\"user\":{\"uid\":0,\"gid\":0},\"args\":[\"sh\"],\"cwd\":\"/\"},"
               "\"annotations\":{\"%s\":\"%s\"}}",
               EGRESS_ALLOW_ANNOTATION, escaped) < 0)
    abort();
  free(escaped);
  struct cm_error *err = NULL;
  struct spec *s = spec_load_string(json, strlen(json), "config.json", &err);
  if (s == NULL) {
    print_error("%s: %s\n", json, err ? err->msg : "?");
    fail();
  }
  free(json);
  return s;
}

static void test_annotation(void **state) {
  (void)state;
  struct egress_flags flags = {0};
  spec_strv_push(&flags.allow_host, "*.allowed.test");
  spec_strv_push(&flags.allow_host, "other.test");
  struct cm_error *err = NULL;
  struct egress_policy p;

  /* Hardened: the annotation narrows the flags. */
  struct spec *s = spec_with_annotation("[\"api.allowed.test\", \"!bad.allowed.test\"]");
  assert_int_equal(egress_policy_build(&flags, s, true, &p, &err), 0);
  assert_true(egress_check_host(&p, "api.allowed.test", 443).allowed);
  assert_false(egress_check_host(&p, "other.test", 443).allowed);
  assert_false(egress_check_host(&p, "bad.allowed.test", 443).allowed);
  egress_policy_free(&p);
  spec_free(s);

  /* Hardened: reaching further than the flags is refused, naming the entry. */
  s = spec_with_annotation("[\"evil.test\"]");
  assert_int_equal(egress_policy_build(&flags, s, true, &p, &err), -1);
  assert_non_null(strstr(err->msg, "evil.test"));
  assert_non_null(strstr(err->msg, EGRESS_ALLOW_ANNOTATION));
  cm_error_freep(&err);
  /* ...and so is a wider wildcard than the flags'. */
  spec_free(s);
  s = spec_with_annotation("[\"*.test\"]");
  assert_int_equal(egress_policy_build(&flags, s, true, &p, &err), -1);
  cm_error_freep(&err);
  spec_free(s);
  s = spec_with_annotation("[\"*.x.allowed.test\"]");
  assert_int_equal(egress_policy_build(&flags, s, true, &p, &err), 0);
  egress_policy_free(&p);

  /* The default profile trusts the config: the annotation adds. */
  spec_free(s);
  s = spec_with_annotation("[\"evil.test:8443\", \"10.0.0.0/8:5432\"]");
  assert_int_equal(egress_policy_build(&flags, s, false, &p, &err), 0);
  assert_true(egress_check_host(&p, "evil.test", 8443).allowed);
  assert_true(egress_check_host(&p, "other.test", 443).allowed);
  uint16_t ports[EGRESS_MAX_PORTS];
  size_t n = egress_tcp_ports(&p, ports, EGRESS_MAX_PORTS);
  assert_int_equal(n, 6); /* 3128 1080 80 443 8443 5432 */
  assert_int_equal(ports[0], EGRESS_HTTP_PROXY_PORT);
  assert_int_equal(ports[4], 8443);
  assert_int_equal(ports[5], 5432);
  egress_policy_free(&p);
  spec_free(s);

  /* Malformed annotations name the path. */
  s = spec_with_annotation("{\"a\":1}");
  assert_int_equal(egress_policy_build(&flags, s, false, &p, &err), -1);
  assert_non_null(strstr(err->msg, "JSON list"));
  cm_error_freep(&err);
  spec_free(s);
  s = spec_with_annotation("[\"1.2.3.4\"]");
  assert_int_equal(egress_policy_build(&flags, s, false, &p, &err), -1);
  assert_non_null(strstr(err->msg, "[0]"));
  cm_error_freep(&err);
  spec_free(s);

  /* Nothing anywhere: not active (loopback only). */
  struct egress_flags none = {0};
  assert_int_equal(egress_policy_build(&none, NULL, true, &p, &err), 0);
  assert_false(egress_policy_active(&p));
  assert_int_equal(egress_tcp_ports(&p, ports, EGRESS_MAX_PORTS), 0);
  egress_policy_free(&p);
  spec_strv_free(&flags.allow_host);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rule_syntax), cmocka_unit_test(test_host_matching), cmocka_unit_test(test_cidr_matching),
      cmocka_unit_test(test_guard),       cmocka_unit_test(test_annotation),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
