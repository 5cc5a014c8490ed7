/* The egress allowlist: rule syntax, the effective policy of flags + annotation, and the checks
 * the broker makes on names and addresses (policy/egress.h). */
#include "policy/egress.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <yajl/yajl_tree.h>

#include "spec/json_util.h"
#include "util/cleanup.h"

static void asprintf_or_die(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void asprintf_or_die(char **out, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (vasprintf(out, fmt, ap) < 0)
    abort();
  va_end(ap);
}

void egress_rule_clear(struct egress_rule *r) {
  free(r->host);
  free(r->text);
  free(r->origin);
  memset(r, 0, sizeof(*r));
}

void egress_policy_free(struct egress_policy *p) {
  if (p == NULL)
    return;
  for (size_t i = 0; i < p->n; i++)
    egress_rule_clear(&p->rules[i]);
  free(p->rules);
  p->rules = NULL;
  p->n = 0;
}

void egress_policy_add(struct egress_policy *p, const struct egress_rule *r) {
  struct egress_rule *grown = realloc(p->rules, (p->n + 1) * sizeof(*grown));
  if (grown == NULL)
    abort();
  p->rules = grown;
  struct egress_rule *c = &p->rules[p->n++];
  *c = *r;
  c->host = r->host ? xstrdup(r->host) : NULL;
  c->text = xstrdup(r->text);
  c->origin = xstrdup(r->origin ? r->origin : "");
}

bool egress_hostname_valid(const char *name) {
  size_t len = strlen(name);
  if (len == 0 || len > 253)
    return false;
  size_t label = 0;
  for (const char *c = name;; c++) {
    if (*c == '.' || *c == '\0') {
      if (label == 0 || label > 63)
        return false;
      if (*c == '\0')
        return true;
      label = 0;
      continue;
    }
    if (!isalnum((unsigned char)*c) && *c != '-' && *c != '_')
      return false;
    label++;
  }
}

/* "443" → 443; 0 and anything past 65535 refused. */
static int parse_port(const char *s, uint16_t *out) {
  char *end;
  errno = 0;
  unsigned long v = strtoul(s, &end, 10);
  if (*s == '\0' || *end != '\0' || errno || v == 0 || v > 65535 || !isdigit((unsigned char)*s))
    return -1;
  *out = (uint16_t)v;
  return 0;
}

static void lower_in_place(char *s) {
  for (; *s; s++)
    *s = (char)tolower((unsigned char)*s);
}

static int parse_host_rule(const char *flag, const char *value, bool deny, struct egress_rule *out,
                           struct cm_error **err) {
  cleanup_free char *copy = xstrdup(value);
  char *colon = strrchr(copy, ':');
  uint16_t port = deny ? 0 : EGRESS_DEFAULT_PORT;
  if (colon) {
    *colon = '\0';
    if (parse_port(colon + 1, &port) < 0)
      return cm_error_set(err, 0, "%s %s: \"%s\" is not a port (1-65535)", flag, value, colon + 1);
  }
  lower_in_place(copy);
  size_t len = strlen(copy);
  if (len && copy[len - 1] == '.')
    copy[--len] = '\0';
  const char *name = copy;
  bool wildcard = strncmp(copy, "*.", 2) == 0;
  if (wildcard)
    name = copy + 2;
  unsigned char probe[16];
  if (inet_pton(AF_INET, name, probe) == 1 || inet_pton(AF_INET6, name, probe) == 1 || strchr(copy, '[') != NULL)
    return cm_error_set(err, 0, "%s %s: an address, not a host name (use --%s-cidr ADDR/32:PORT)", flag, value,
                        deny ? "deny" : "allow");
  if (strcmp(copy, "*") == 0 || (strchr(name, '*') != NULL))
    return cm_error_set(err, 0, "%s %s: only a leading \"*.\" is allowed (\"*.example.com\" matches its subdomains)",
                        flag, value);
  if (!egress_hostname_valid(name))
    return cm_error_set(err, 0, "%s %s: \"%s\" is not a valid host name", flag, value, name);
  /* "*.com" would open a whole top-level domain: an allowlist must name what it allows. */
  if (wildcard && strchr(name, '.') == NULL)
    return cm_error_set(err, 0, "%s %s: a wildcard needs at least two labels after \"*.\"", flag, value);
  *out = (struct egress_rule){.kind = EGRESS_RULE_HOST, .deny = deny, .host = xstrdup(copy), .port = port};
  if (port)
    asprintf_or_die(&out->text, "%s-host %s:%u", deny ? "deny" : "allow", copy, port);
  else
    asprintf_or_die(&out->text, "%s-host %s", deny ? "deny" : "allow", copy);
  return 0;
}

static int parse_cidr_rule(const char *flag, const char *value, bool deny, struct egress_rule *out,
                           struct cm_error **err) {
  cleanup_free char *copy = xstrdup(value);
  char *slash = strchr(copy, '/');
  if (slash == NULL)
    return cm_error_set(err, 0, "%s %s: expects ADDR/PREFIX%s (e.g. 10.1.2.0/24:5432)", flag, value,
                        deny ? "[:PORT]" : ":PORT");
  *slash = '\0';
  char *prefix_s = slash + 1;
  char *colon = strchr(prefix_s, ':');
  uint16_t port = 0;
  if (colon) {
    *colon = '\0';
    if (parse_port(colon + 1, &port) < 0)
      return cm_error_set(err, 0, "%s %s: \"%s\" is not a port (1-65535)", flag, value, colon + 1);
  } else if (!deny) {
    return cm_error_set(err, 0, "%s %s: the port is missing (ADDR/PREFIX:PORT)", flag, value);
  }
  char *addr_s = copy;
  size_t alen = strlen(addr_s);
  if (alen > 2 && addr_s[0] == '[' && addr_s[alen - 1] == ']') {
    addr_s[alen - 1] = '\0';
    addr_s++;
  }
  struct egress_rule r = {.kind = EGRESS_RULE_CIDR, .deny = deny, .port = port};
  unsigned max;
  if (inet_pton(AF_INET, addr_s, r.addr) == 1) {
    r.family = AF_INET;
    max = 32;
  } else if (inet_pton(AF_INET6, addr_s, r.addr) == 1) {
    r.family = AF_INET6;
    max = 128;
  } else {
    return cm_error_set(err, 0, "%s %s: \"%s\" is not an IPv4 or IPv6 address", flag, value, addr_s);
  }
  char *end;
  unsigned long pl = strtoul(prefix_s, &end, 10);
  if (*prefix_s == '\0' || *end != '\0' || pl > max)
    return cm_error_set(err, 0, "%s %s: \"%s\" is not a prefix length (0-%u)", flag, value, prefix_s, max);
  r.prefix = (unsigned)pl;
  /* Host bits cleared: the rule is what it covers, whatever was written. */
  for (unsigned bit = r.prefix; bit < max; bit++)
    r.addr[bit / 8] &= (uint8_t) ~(0x80u >> (bit % 8));
  char net[INET6_ADDRSTRLEN];
  inet_ntop(r.family, r.addr, net, sizeof(net));
  if (port)
    asprintf_or_die(&r.text, "%s-cidr %s/%u:%u", deny ? "deny" : "allow", net, r.prefix, port);
  else
    asprintf_or_die(&r.text, "%s-cidr %s/%u", deny ? "deny" : "allow", net, r.prefix);
  *out = r;
  return 0;
}

int egress_rule_parse(const char *flag, const char *value, struct egress_rule *out, struct cm_error **err) {
  memset(out, 0, sizeof(*out));
  bool deny = strncmp(flag, "--deny", 6) == 0;
  bool cidr = strstr(flag, "cidr") != NULL;
  int rc = cidr ? parse_cidr_rule(flag, value, deny, out, err) : parse_host_rule(flag, value, deny, out, err);
  if (rc == 0)
    out->origin = xstrdup(flag);
  return rc;
}

/* --- matching -------------------------------------------------------------------------------- */

bool egress_host_matches(const char *pattern, const char *name) {
  size_t nlen = strlen(name);
  if (nlen && name[nlen - 1] == '.')
    nlen--;
  if (strncmp(pattern, "*.", 2) == 0) {
    const char *suffix = pattern + 1; /* ".example.com" */
    size_t slen = strlen(suffix);
    /* At least one label before the suffix: the apex is not a subdomain of itself. */
    return nlen > slen && strncasecmp(name + nlen - slen, suffix, slen) == 0;
  }
  return strlen(pattern) == nlen && strncasecmp(pattern, name, nlen) == 0;
}

static bool port_matches(uint16_t rule_port, uint16_t port) {
  return rule_port == 0 || port == 0 || rule_port == port;
}

struct egress_verdict egress_check_host(const struct egress_policy *p, const char *name, uint16_t port) {
  struct egress_verdict v = {0};
  /* Deny first: a name both allowed and denied is denied. A deny rule for one port leaves the
   * name resolvable (port 0, the DNS question) for the others. */
  for (size_t i = 0; i < p->n; i++) {
    const struct egress_rule *r = &p->rules[i];
    if (r->deny && r->kind == EGRESS_RULE_HOST && egress_host_matches(r->host, name) &&
        (r->port == 0 || r->port == port))
      return (struct egress_verdict){false, r};
  }
  for (size_t i = 0; i < p->n; i++) {
    const struct egress_rule *r = &p->rules[i];
    if (!r->deny && r->kind == EGRESS_RULE_HOST && egress_host_matches(r->host, name) && port_matches(r->port, port))
      return (struct egress_verdict){true, r};
  }
  return v;
}

static bool in_prefix(const uint8_t *net, unsigned prefix, const uint8_t *addr) {
  unsigned full = prefix / 8, rest = prefix % 8;
  if (memcmp(net, addr, full) != 0)
    return false;
  if (rest == 0)
    return true;
  uint8_t mask = (uint8_t)(0xff00u >> rest);
  return (net[full] & mask) == (addr[full] & mask);
}

/* An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is the IPv4 address: a dual-stack listener sees
 * IPv4 clients that way, and rules written for 10.0.0.0/8 must match them. */
static int unmap(int family, const uint8_t *addr, uint8_t v4[4]) {
  static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (family == AF_INET6 && memcmp(addr, mapped, 12) == 0) {
    memcpy(v4, addr + 12, 4);
    return AF_INET;
  }
  if (family == AF_INET)
    memcpy(v4, addr, 4);
  return family;
}

struct egress_verdict egress_check_addr(const struct egress_policy *p, int family, const uint8_t *addr,
                                        uint16_t port) {
  uint8_t v4[4];
  int fam = unmap(family, addr, v4);
  const uint8_t *a = fam == AF_INET ? v4 : addr;
  for (int pass = 0; pass < 2; pass++) {
    bool want_deny = pass == 0; /* deny rules first */
    for (size_t i = 0; i < p->n; i++) {
      const struct egress_rule *r = &p->rules[i];
      if (r->kind != EGRESS_RULE_CIDR || r->deny != want_deny || r->family != fam)
        continue;
      if (!in_prefix(r->addr, r->prefix, a))
        continue;
      if (want_deny && (r->port == 0 || r->port == port))
        return (struct egress_verdict){false, r};
      if (!want_deny && port_matches(r->port, port))
        return (struct egress_verdict){true, r};
    }
  }
  return (struct egress_verdict){0};
}

/* --- the SSRF / DNS-rebinding guard ------------------------------------------------------------ */

struct range {
  uint8_t net[16];
  unsigned prefix;
  const char *why;
};

/* What a public name must never resolve to. The documentation ranges (192.0.2.0/24,
 * 198.51.100.0/24, 203.0.113.0/24) are not listed: no router forwards them, and the test suite's
 * own internet lives there. */
static const struct range v4_internal[] = {
    {{169, 254, 169, 254}, 32, "cloud metadata address"},
    {{100, 100, 100, 200}, 32, "cloud metadata address"},
    {{0}, 8, "unspecified (0.0.0.0/8)"},
    {{10}, 8, "private (10.0.0.0/8)"},
    {{100, 64}, 10, "shared address space (100.64.0.0/10)"},
    {{127}, 8, "loopback (127.0.0.0/8)"},
    {{169, 254}, 16, "link-local (169.254.0.0/16)"},
    {{172, 16}, 12, "private (172.16.0.0/12)"},
    {{192, 0, 0}, 24, "IETF protocol assignments (192.0.0.0/24)"},
    {{192, 168}, 16, "private (192.168.0.0/16)"},
    {{198, 18}, 15, "benchmarking (198.18.0.0/15)"},
    {{224}, 4, "multicast (224.0.0.0/4)"},
    {{240}, 4, "reserved (240.0.0.0/4)"},
};
static const struct range v6_internal[] = {
    {{0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54}, 128, "cloud metadata address"},
    {{0}, 128, "unspecified (::)"},
    {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 128, "loopback (::1)"},
    {{0x00, 0x64, 0xff, 0x9b, 0x00, 0x01}, 48, "local-use NAT64 (64:ff9b:1::/48)"},
    {{0x01, 0x00}, 64, "discard (100::/64)"},
    {{0xfc}, 7, "unique local (fc00::/7)"},
    {{0xfe, 0x80}, 10, "link-local (fe80::/10)"},
    {{0xfe, 0xc0}, 10, "site-local (fec0::/10)"},
    {{0xff}, 8, "multicast (ff00::/8)"},
};

bool egress_addr_is_internal(int family, const uint8_t *addr, const char **why) {
  const char *dummy;
  if (why == NULL)
    why = &dummy;
  uint8_t v4[4];
  int fam = unmap(family, addr, v4);
  if (fam == AF_INET6) {
    static const uint8_t nat64[12] = {0x00, 0x64, 0xff, 0x9b};
    static const uint8_t compat[12] = {0};
    /* Forms that carry an IPv4 address: NAT64 (64:ff9b::/96), 6to4 (2002::/16) and the old
     * IPv4-compatible ::a.b.c.d. Each is judged by the address it carries. */
    if (memcmp(addr, nat64, 12) == 0 || (memcmp(addr, compat, 12) == 0 && (addr[12] | addr[13]) != 0)) {
      memcpy(v4, addr + 12, 4);
      fam = AF_INET;
    } else if (addr[0] == 0x20 && addr[1] == 0x02) {
      memcpy(v4, addr + 2, 4);
      fam = AF_INET;
    }
  }
  if (fam == AF_INET) {
    for (size_t i = 0; i < sizeof(v4_internal) / sizeof(v4_internal[0]); i++)
      if (in_prefix(v4_internal[i].net, v4_internal[i].prefix, v4)) {
        *why = v4_internal[i].why;
        return true;
      }
    if (v4[0] == 255 && v4[1] == 255 && v4[2] == 255 && v4[3] == 255) {
      *why = "broadcast";
      return true;
    }
    return false;
  }
  for (size_t i = 0; i < sizeof(v6_internal) / sizeof(v6_internal[0]); i++)
    if (in_prefix(v6_internal[i].net, v6_internal[i].prefix, addr)) {
      *why = v6_internal[i].why;
      return true;
    }
  return false;
}

/* --- the effective policy ----------------------------------------------------------------------- */

/* Is the annotation's allow rule `a` already allowed by the trusted rules? */
static bool covered_by(const struct egress_policy *trusted, const struct egress_rule *a) {
  if (a->kind == EGRESS_RULE_HOST) {
    const char *name = a->host;
    bool wild = strncmp(name, "*.", 2) == 0;
    for (size_t i = 0; i < trusted->n; i++) {
      const struct egress_rule *t = &trusted->rules[i];
      if (t->deny || t->kind != EGRESS_RULE_HOST || t->port != a->port)
        continue;
      if (wild) {
        /* "*.a.example.com" is inside "*.example.com" and inside itself. */
        if (strncmp(t->host, "*.", 2) == 0 && egress_host_matches(t->host, name + 2))
          return true;
        if (strcmp(t->host, name) == 0)
          return true;
      } else if (egress_host_matches(t->host, name)) {
        return true;
      }
    }
    return false;
  }
  for (size_t i = 0; i < trusted->n; i++) {
    const struct egress_rule *t = &trusted->rules[i];
    if (t->deny || t->kind != EGRESS_RULE_CIDR || t->family != a->family || t->prefix > a->prefix ||
        t->port != a->port)
      continue;
    if (in_prefix(t->addr, t->prefix, a->addr))
      return true;
  }
  return false;
}

static int add_flag_rules(struct egress_policy *p, const struct spec_strv *v, const char *flag,
                          struct cm_error **err) {
  for (size_t i = 0; i < v->count; i++) {
    struct egress_rule r;
    if (egress_rule_parse(flag, v->items[i], &r, err) < 0)
      return -1;
    egress_policy_add(p, &r);
    egress_rule_clear(&r);
  }
  return 0;
}

/* The annotation's entries: "HOST[:PORT]", "CIDR:PORT", with a leading "!" for a deny rule. */
static int parse_annotation(const char *json, struct egress_policy *out, struct cm_error **err) {
  char where[96];
  snprintf(where, sizeof(where), "config.json: .annotations[\"%s\"]", EGRESS_ALLOW_ANNOTATION);
  yajl_val root = json_parse(json, strlen(json), where, err);
  if (root == NULL)
    return -1;
  int rc = -1;
  if (!YAJL_IS_ARRAY(root)) {
    cm_error_set(err, 0, "%s: expects a JSON list of strings, like [\"api.github.com\", \"10.0.0.0/8:5432\"]", where);
    goto out;
  }
  for (size_t i = 0; i < root->u.array.len; i++) {
    yajl_val e = root->u.array.values[i];
    if (!YAJL_IS_STRING(e)) {
      cm_error_set(err, 0, "%s[%zu]: expects a string", where, i);
      goto out;
    }
    const char *v = YAJL_GET_STRING(e);
    bool deny = v[0] == '!';
    if (deny)
      v++;
    bool cidr = strchr(v, '/') != NULL;
    const char *flag = deny ? (cidr ? "--deny-cidr" : "--deny-host") : (cidr ? "--allow-cidr" : "--allow-host");
    struct egress_rule r;
    if (egress_rule_parse(flag, v, &r, err) < 0) {
      cm_error_prefix(err, "%s[%zu]", where, i);
      goto out;
    }
    free(r.origin);
    r.origin = xstrdup("annotation");
    egress_policy_add(out, &r);
    egress_rule_clear(&r);
  }
  rc = 0;
out:
  yajl_tree_free(root);
  return rc;
}

int egress_policy_build(const struct egress_flags *flags, const struct spec *s, bool hardened,
                        struct egress_policy *out, struct cm_error **err) {
  memset(out, 0, sizeof(*out));
  struct egress_policy trusted = {0}, annotated = {0};
  int rc = -1;
  if (flags && (add_flag_rules(&trusted, &flags->allow_host, "--allow-host", err) < 0 ||
                add_flag_rules(&trusted, &flags->allow_cidr, "--allow-cidr", err) < 0 ||
                add_flag_rules(&trusted, &flags->deny_host, "--deny-host", err) < 0 ||
                add_flag_rules(&trusted, &flags->deny_cidr, "--deny-cidr", err) < 0))
    goto out;
  const char *a = s ? spec_kv_get(&s->annotations, EGRESS_ALLOW_ANNOTATION) : NULL;
  if (a && parse_annotation(a, &annotated, err) < 0)
    goto out;
  bool annotation_allows = false;
  for (size_t i = 0; i < annotated.n; i++) {
    const struct egress_rule *r = &annotated.rules[i];
    if (r->deny)
      continue;
    annotation_allows = true;
    /* Under a hardening profile the config may be the untrusted party's: it may narrow what
     * the runtime's own flags allow, never reach further (a server granting itself egress). */
    if (hardened && !covered_by(&trusted, r)) {
      cm_error_set(err, EPERM,
                   "config.json: .annotations[\"%s\"]: \"%s\" is not allowed by the runtime's own rules (%s); "
                   "under a hardening profile the annotation can only narrow --allow-host/--allow-cidr",
                   EGRESS_ALLOW_ANNOTATION, r->text, trusted.n ? "add it to --allow-host/--allow-cidr" : "there are none");
      goto out;
    }
  }
  for (size_t i = 0; i < trusted.n; i++)
    if (trusted.rules[i].deny || !(hardened && annotation_allows))
      egress_policy_add(out, &trusted.rules[i]);
  for (size_t i = 0; i < annotated.n; i++)
    egress_policy_add(out, &annotated.rules[i]);
  rc = 0;
out:
  egress_policy_free(&trusted);
  egress_policy_free(&annotated);
  if (rc < 0)
    egress_policy_free(out);
  return rc;
}

static void add_port(uint16_t *out, size_t *n, size_t max, uint16_t port) {
  for (size_t i = 0; i < *n; i++)
    if (out[i] == port)
      return;
  if (*n < max)
    out[(*n)++] = port;
}

size_t egress_tcp_ports(const struct egress_policy *p, uint16_t *out, size_t max) {
  size_t n = 0;
  if (!egress_policy_active(p))
    return 0;
  add_port(out, &n, max, EGRESS_HTTP_PROXY_PORT);
  add_port(out, &n, max, EGRESS_SOCKS_PORT);
  add_port(out, &n, max, 80);
  add_port(out, &n, max, 443);
  for (size_t i = 0; i < p->n; i++)
    if (!p->rules[i].deny && p->rules[i].port)
      add_port(out, &n, max, p->rules[i].port);
  return n;
}

void egress_policy_explain(const struct egress_policy *p, void (*line)(void *arg, const char *text), void *arg) {
  if (!egress_policy_active(p)) {
    line(arg, "egress: loopback only (no --allow-host / --allow-cidr)");
    return;
  }
  for (size_t i = 0; i < p->n; i++) {
    cleanup_free char *l = NULL;
    asprintf_or_die(&l, "egress: %s (%s)", p->rules[i].text, p->rules[i].origin);
    line(arg, l);
  }
  uint16_t ports[EGRESS_MAX_PORTS];
  size_t n = egress_tcp_ports(p, ports, EGRESS_MAX_PORTS);
  char list[EGRESS_MAX_PORTS * 7] = "";
  size_t off = 0;
  for (size_t i = 2; i < n; i++)
    off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%u", i > 2 ? ", " : "", ports[i]);
  cleanup_free char *l = NULL;
  asprintf_or_die(&l,
                  "egress: broker on 127.0.0.1:%d (HTTP proxy), 127.0.0.1:%d (SOCKS5), port %d (DNS, names "
                  "above only), every address on ports %s (transparent); everything else refused",
                  EGRESS_HTTP_PROXY_PORT, EGRESS_SOCKS_PORT, EGRESS_DNS_PORT, list);
  line(arg, l);
}
