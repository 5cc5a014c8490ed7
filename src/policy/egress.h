/* The egress allowlist: which host names and address ranges a container may reach, through the
 * broker that serves its network namespace from outside (src/supervisor/broker/). Nothing listed
 * means what it always meant: loopback only. The rules come from the trusted command line
 * (codemode-run --allow-host, or `codemode --allow-host` in a registered runtime's runtimeArgs)
 * and from the config's run.codemode.net.allow annotation; under a hardening profile the
 * annotation may only narrow what the command line allows. Deny rules win over allow rules.
 *
 * The checks themselves (a name against the rules, an address against the rules and against
 * the internal ranges a resolved name must never lead to) live here too, so that the broker,
 * `policy explain` and the unit tests share one implementation. man/codemode-profiles.5. */
#ifndef CM_POLICY_EGRESS_H
#define CM_POLICY_EGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spec/spec.h"
#include "util/error.h"

#define EGRESS_ALLOW_ANNOTATION "run.codemode.net.allow"
#define EGRESS_AUDIT_ANNOTATION "run.codemode.audit-log"
#define EGRESS_DEFAULT_PORT 443

/* The broker's listeners inside the container's network namespace. The HTTP proxy and SOCKS5
 * listen on 127.0.0.1; the DNS stub on port 53 of every address (so a resolver configured with
 * any server reaches it); the transparent listeners on every address of each allowed port
 * (a `local 0.0.0.0/0 dev lo` route makes every address local, src/supervisor/broker/route.c). */
#define EGRESS_HTTP_PROXY_PORT 3128
#define EGRESS_SOCKS_PORT 1080
#define EGRESS_DNS_PORT 53
#define EGRESS_MAX_PORTS 64

enum egress_rule_kind { EGRESS_RULE_HOST, EGRESS_RULE_CIDR };

struct egress_rule {
  enum egress_rule_kind kind;
  bool deny;
  char *host;       /* HOST: lower case, no trailing dot; "*.example.com" for subdomains */
  int family;       /* CIDR: AF_INET or AF_INET6 */
  uint8_t addr[16]; /* CIDR: network address (4 bytes used for AF_INET) */
  unsigned prefix;  /* CIDR: prefix length */
  uint16_t port;    /* 0: every port */
  char *text;       /* canonical form: "allow-host api.github.com:443", "deny-cidr 10.0.0.0/8" */
  char *origin;     /* where it came from: "--allow-host", "annotation" */
};

struct egress_policy {
  struct egress_rule *rules;
  size_t n;
};

/* The trusted side: the command line's rules, in the flag syntax. */
struct egress_flags {
  struct spec_strv allow_host; /* HOST[:PORT], *.DOMAIN[:PORT] */
  struct spec_strv allow_cidr; /* CIDR:PORT (PORT may be "*") */
  struct spec_strv deny_host;  /* HOST[:PORT] */
  struct spec_strv deny_cidr;  /* CIDR[:PORT] */
};

/* Parse one rule in the flag syntax; `flag` ("--allow-host") names it in errors. */
int egress_rule_parse(const char *flag, const char *value, struct egress_rule *out, struct cm_error **err);
void egress_rule_clear(struct egress_rule *r);

/* The effective policy: the flags, then the config's annotation (a JSON list of strings in the
 * flag syntax: "HOST[:PORT]", "CIDR:PORT", and "!…" for a deny rule). With `hardened` (a
 * hardening profile) every allow entry of the annotation must already be allowed by the flags,
 * and the annotation's allow entries then replace the flags' (a narrowing); otherwise they are
 * added. Errors name the flag or the annotation entry. */
int egress_policy_build(const struct egress_flags *flags, const struct spec *s, bool hardened,
                        struct egress_policy *out, struct cm_error **err);
void egress_policy_free(struct egress_policy *p);
static inline bool egress_policy_active(const struct egress_policy *p) {
  for (size_t i = 0; p && i < p->n; i++)
    if (!p->rules[i].deny)
      return true;
  return false;
}
/* Add a rule (copied) to a policy. */
void egress_policy_add(struct egress_policy *p, const struct egress_rule *r);

/* --- the checks (what the broker asks for every connection and every DNS question) ---------- */

struct egress_verdict {
  bool allowed;
  const struct egress_rule *rule; /* the rule that decided; NULL: no rule matched (deny) */
};

/* Is `name` (any case, trailing dot ignored) matched by a host pattern? "*.example.com" matches
 * "a.example.com" and "a.b.example.com", never "example.com" itself. */
bool egress_host_matches(const char *pattern, const char *name);
/* A connection to name:port. Deny rules win; port 0 asks "on any port" (the DNS stub). */
struct egress_verdict egress_check_host(const struct egress_policy *p, const char *name, uint16_t port);
/* A connection to an address (family AF_INET/AF_INET6, 4 or 16 bytes) on port, by CIDR rule. */
struct egress_verdict egress_check_addr(const struct egress_policy *p, int family, const uint8_t *addr,
                                        uint16_t port);

/* The SSRF and DNS-rebinding guard: is this an address a name from outside must never lead to
 * (loopback, unspecified, private, shared/CGNAT, link-local with the cloud metadata address,
 * multicast, reserved, and their IPv4-mapped/NAT64 forms)? *why gets a short reason. A CIDR allow
 * rule for the address still lets a connection through (the caller's explicit choice). */
bool egress_addr_is_internal(int family, const uint8_t *addr, const char **why);

/* Is `name` a syntactically valid host name (letters, digits, '-', '_', labels of 1-63, at most
 * 253 bytes)? */
bool egress_hostname_valid(const char *name);

/* The TCP ports the container may connect to when the policy is active (the proxy, SOCKS5 and
 * DNS ports, and every port a rule names, 80 and 443 always): what Landlock's TCP-connect rule
 * allows (issue 18). Returns how many were written (at most max). Every other port is refused
 * by the kernel at once (nothing listens on it). */
size_t egress_tcp_ports(const struct egress_policy *p, uint16_t *out, size_t max);

/* One line per rule for `policy explain` and --explain ("egress: loopback only" when empty). */
void egress_policy_explain(const struct egress_policy *p, void (*line)(void *arg, const char *text), void *arg);

#endif
