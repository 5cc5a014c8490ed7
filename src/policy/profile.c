/* Profile names, the annotation, the change report and dispatch to the rule sets. */
#include "policy/profile.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/profile_rules.h"
#include "spec/json_util.h"

static const char *const profile_names[] = {
    [POLICY_PROFILE_DEFAULT] = "default",
    [POLICY_PROFILE_CI] = "ci",
    [POLICY_PROFILE_MCP_AUDIT] = "mcp-audit",
    [POLICY_PROFILE_MCP] = "mcp",
};

int policy_profile_from_name(const char *name, enum policy_profile *out, struct cm_error **err) {
  for (size_t i = 0; i < sizeof(profile_names) / sizeof(profile_names[0]); i++) {
    if (strcmp(profile_names[i], name) == 0) {
      *out = (enum policy_profile)i;
      return 0;
    }
  }
  return cm_error_set(err, 0, "unknown profile \"%s\" (known: default, ci, mcp, mcp-audit)", name);
}

const char *policy_profile_name(enum policy_profile p) {
  return (size_t)p < sizeof(profile_names) / sizeof(profile_names[0]) ? profile_names[p] : "?";
}

int policy_effective_profile(const struct spec *s, const char *requested, enum policy_profile *out,
                             struct cm_error **err) {
  enum policy_profile asked = POLICY_PROFILE_DEFAULT, annotated = POLICY_PROFILE_DEFAULT;
  if (requested && policy_profile_from_name(requested, &asked, err) < 0)
    return cm_error_prefix(err, "--profile");
  const char *a = s ? spec_kv_get(&s->annotations, POLICY_PROFILE_ANNOTATION) : NULL;
  if (a && policy_profile_from_name(a, &annotated, err) < 0)
    return cm_error_prefix(err, "config.json: .annotations[\"%s\"]", POLICY_PROFILE_ANNOTATION);
  /* An annotation comes with the config, which may be the untrusted party's: it may ask for
   * more hardening than the command line, never for less. */
  *out = asked > annotated ? asked : annotated;
  return 0;
}

void policy_report_add(struct policy_report *r, const char *fmt, ...) {
  char *line = NULL;
  va_list ap;
  va_start(ap, fmt);
  if (vasprintf(&line, fmt, ap) < 0)
    abort();
  va_end(ap);
  char **grown = realloc(r->lines, (r->count + 1) * sizeof(char *));
  if (grown == NULL)
    abort();
  r->lines = grown;
  r->lines[r->count++] = line;
}

/* Record the profile in the config's annotations: `state` shows it, and exec can apply the same
 * profile to processes started later. */
static void set_annotation(struct spec *s, const char *value, struct policy_report *r) {
  struct spec_kv_list *l = &s->annotations;
  for (size_t i = 0; i < l->count; i++) {
    if (strcmp(l->items[i].key, POLICY_PROFILE_ANNOTATION) == 0) {
      if (strcmp(l->items[i].value, value) != 0) {
        policy_report_add(r, "annotations[%s]: \"%s\" -> \"%s\"", POLICY_PROFILE_ANNOTATION,
                          l->items[i].value, value);
        free(l->items[i].value);
        l->items[i].value = xstrdup(value);
      }
      return;
    }
  }
  struct spec_kv *grown = realloc(l->items, (l->count + 1) * sizeof(*grown));
  if (grown == NULL)
    abort();
  l->items = grown;
  l->items[l->count++] = (struct spec_kv){xstrdup(POLICY_PROFILE_ANNOTATION), xstrdup(value)};
  policy_report_add(r, "annotations[%s]: set to \"%s\"", POLICY_PROFILE_ANNOTATION, value);
}

int policy_apply(struct spec *s, enum policy_profile p, const char *bundle, struct policy_result *out,
                 struct cm_error **err) {
  memset(out, 0, sizeof(*out));
  out->profile = p;
  if (p == POLICY_PROFILE_DEFAULT) {
    policy_landlock_derive(s, false, &out->landlock, &out->report); /* the deny list, if any */
    return 0;
  }
  int rc = p == POLICY_PROFILE_CI ? policy_ci_apply(s, bundle, out, err)
                                  : policy_mcp_apply(s, p == POLICY_PROFILE_MCP_AUDIT, bundle, out, err);
  if (rc < 0) {
    cm_error_prefix(err, "profile %s", policy_profile_name(p));
    policy_result_free(out);
    return -1;
  }
  /* Last: from the mounts as the profile left them. Not under ci: a Landlock domain forbids
   * mount(2) and pivot_root(2) to every process in it, and nested containers need both; the
   * job's reach is its mounts, in its own mount namespace (only --deny paths, as for default). */
  policy_landlock_derive(s, p != POLICY_PROFILE_CI, &out->landlock, &out->report);
  set_annotation(s, policy_profile_name(p), &out->report);
  return 0;
}

int policy_apply_exec(const char *requested, const char *recorded, struct spec_process *p,
                      struct policy_result *out, struct cm_error **err) {
  memset(out, 0, sizeof(*out));
  enum policy_profile asked = POLICY_PROFILE_DEFAULT, at_create = POLICY_PROFILE_DEFAULT;
  if (requested && policy_profile_from_name(requested, &asked, err) < 0)
    return cm_error_prefix(err, "--profile");
  /* An unknown recorded name is refused rather than read as "default": the state says the
   * container was hardened, and guessing less would let exec loosen it. */
  if (recorded && policy_profile_from_name(recorded, &at_create, err) < 0)
    return cm_error_prefix(err, "state: annotations[\"%s\"]", POLICY_PROFILE_ANNOTATION);
  out->profile = asked > at_create ? asked : at_create;
  if (out->profile == POLICY_PROFILE_DEFAULT)
    return 0;
  /* The same process rules and the same filter as init: exec'd code is as untrusted as the
   * server itself (an exec must not be a way around the profile). */
  bool ci = out->profile == POLICY_PROFILE_CI;
  if (ci)
    policy_ci_tighten_process(p, &out->report);
  else
    policy_mcp_tighten_process(p, &out->report);
  int rc = ci ? policy_ci_load_seccomp(p->capabilities.bounding, &out->stacked_seccomp, err)
              : policy_mcp_load_seccomp(p->capabilities.bounding, &out->stacked_seccomp, err);
  if (rc < 0) {
    cm_error_prefix(err, "profile %s", policy_profile_name(out->profile));
    policy_result_free(out);
    return -1;
  }
  policy_report_add(&out->report, "seccomp: %s.json stacked on top of the container's filter", ci ? "ci" : "mcp");
  return 0;
}

int policy_apply_update(const char *requested, const char *recorded, struct spec_resources *r,
                        struct policy_report *report, struct cm_error **err) {
  memset(report, 0, sizeof(*report));
  enum policy_profile asked = POLICY_PROFILE_DEFAULT, at_create = POLICY_PROFILE_DEFAULT;
  if (requested && policy_profile_from_name(requested, &asked, err) < 0)
    return cm_error_prefix(err, "--profile");
  /* As for exec: an unknown recorded name must not read as "default". */
  if (recorded && policy_profile_from_name(recorded, &at_create, err) < 0)
    return cm_error_prefix(err, "state: annotations[\"%s\"]", POLICY_PROFILE_ANNOTATION);
  enum policy_profile p = asked > at_create ? asked : at_create;
  if (p == POLICY_PROFILE_DEFAULT)
    return 0;
  if ((p == POLICY_PROFILE_CI ? policy_ci_tighten_update(r, report, err) : policy_mcp_tighten_update(r, report, err)) < 0) {
    policy_report_free(report);
    return cm_error_prefix(err, "profile %s: update", policy_profile_name(p));
  }
  return 0;
}

void policy_report_free(struct policy_report *r) {
  for (size_t i = 0; i < r->count; i++)
    free(r->lines[i]);
  free(r->lines);
  memset(r, 0, sizeof(*r));
}

static void report_line(void *arg, const char *text) { policy_report_add(arg, "%s", text); }

int policy_apply_egress(struct spec *s, const struct egress_flags *flags, struct policy_result *out,
                        struct cm_error **err) {
  if (egress_policy_build(flags, s, out->profile != POLICY_PROFILE_DEFAULT, &out->egress, err) < 0)
    return -1;
  if (!egress_policy_active(&out->egress)) {
    egress_policy_explain(&out->egress, report_line, &out->report);
    return 0;
  }
  const struct spec_namespace *net = &s->linux_.namespaces[SPEC_NS_NETWORK];
  /* The broker serves a namespace of the container's own; the host's has real interfaces that
   * would bypass it. (A joined one is checked for interfaces other than lo when it starts.) */
  if (!net->present) {
    egress_policy_free(&out->egress);
    return cm_error_set(err, 0,
                        "--allow-host/--allow-cidr: the container shares the host's network namespace; an egress "
                        "allowlist needs its own (linux.namespaces: network; codemode-run --net none)");
  }
  egress_policy_explain(&out->egress, report_line, &out->report);
  /* ci: the job's network namespace now holds the broker's capture rules and routes, which
   * CAP_NET_ADMIN could remove. */
  if (out->profile == POLICY_PROFILE_CI && s->process) {
    struct spec_capabilities *c = &s->process->capabilities;
    uint64_t bit = 1ULL << 12; /* CAP_NET_ADMIN */
    if ((c->bounding | c->effective | c->permitted | c->ambient) & bit) {
      c->bounding &= ~bit;
      c->effective &= ~bit;
      c->permitted &= ~bit;
      c->ambient &= ~bit;
      policy_report_add(&out->report, "process.capabilities: CAP_NET_ADMIN dropped (the egress broker's capture "
                                      "rules are in the job's network namespace)");
    }
  }
  /* Where the kernel has Landlock ABI >= 4 (the hardening profiles' layer), TCP connect is
   * limited to the broker's ports as well: a connect anywhere else fails with EACCES even if
   * the capture routes were removed. */
  if (out->landlock.present) {
    uint16_t ports[EGRESS_MAX_PORTS];
    struct policy_landlock_tcp tcp = {.connect = ports, .n_connect = egress_tcp_ports(&out->egress, ports, EGRESS_MAX_PORTS)};
    if (policy_landlock_restrict_tcp(out, &tcp, err) < 0) {
      egress_policy_free(&out->egress);
      return -1;
    }
  }
  return 0;
}

void policy_result_free(struct policy_result *r) {
  if (r == NULL)
    return;
  egress_policy_free(&r->egress);
  spec_seccomp_clear(&r->stacked_seccomp);
  spec_landlock_clear(&r->landlock);
  for (size_t i = 0; i < r->report.count; i++)
    free(r->report.lines[i]);
  free(r->report.lines);
  memset(r, 0, sizeof(*r));
}
