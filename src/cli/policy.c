/* Hardening profiles on the command line: the global --profile, the run.codemode.profile
 * annotation, and `codemode policy explain`, which shows what a profile changes in a config. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "policy/learned_policy.h"
#include "policy/profile.h"
#include "runtime/rootless.h"
#include "spec/json_util.h"
#include "supervisor/egress_setup.h"
#include "util/cleanup.h"
#include "util/log.h"
#include "util/host_root.h"

int cli_policy_prepare(const struct cli_globals *g, struct create_options *o, struct cli_policy *out,
                       struct cm_error **err) {
  memset(out, 0, sizeof(*out));
  out->egress.audit_fd = -1;
  cleanup_free char *cfg = NULL;
  const char *bundle = o->bundle ? o->bundle : ".";
  const char *path = o->config_path;
  if (path == NULL) {
    if (asprintf(&cfg, "%s/config.json", bundle) < 0)
      abort();
    path = cfg;
  }
  out->spec = spec_load_file(path, "config.json", err);
  if (out->spec == NULL)
    return -1;
  cm_debug("config %s: parsed (ociVersion %s)", path, out->spec->oci_version ? out->spec->oci_version : "-");
  enum policy_profile p;
  char abs_bundle[PATH_MAX];
  if (policy_effective_profile(out->spec, g->profile, &p, err) < 0)
    goto fail;
  if (realpath(bundle, abs_bundle) == NULL) {
    cm_error_set(err, errno, "--bundle %s", bundle);
    goto fail;
  }
  if (policy_apply(out->spec, p, abs_bundle, &out->result, err) < 0 ||
      policy_apply_egress(out->spec, &g->egress, &out->result, err) < 0)
    goto fail;
  if (p == POLICY_PROFILE_CI && !g->explain_only && !cm_host_root() && geteuid() != 0) {
    /* A normal user's job with fewer ids than it needs: said now, not as a late EINVAL. */
    cleanup_free char *warning = rootless_ci_subid_warning();
    if (warning)
      fprintf(stderr, "codemode: warning: %s\n", warning);
  }
  for (size_t i = 0; i < out->result.report.count; i++)
    cm_debug("profile %s: %s", policy_profile_name(p), out->result.report.lines[i]);
  o->spec = out->spec;
  o->stacked_seccomp = out->result.stacked_seccomp.present ? &out->result.stacked_seccomp : NULL;
  o->landlock = out->result.landlock.present ? &out->result.landlock : NULL;
  if (egress_policy_active(&out->result.egress) && !g->explain_only) {
    const char *audit = g->audit_log;
    const char *annotated = spec_kv_get(&out->spec->annotations, EGRESS_AUDIT_ANNOTATION);
    if (annotated && audit == NULL) {
      /* Where a root process appends is the runtime's call, not the config's: under a hardening
       * profile a hostile config must not name a file for us to create. */
      if (p != POLICY_PROFILE_DEFAULT) {
        cm_error_set(err, EPERM,
                     "config.json: .annotations[\"%s\"]: under profile %s the audit log is set by the runtime's "
                     "own --audit-log only",
                     EGRESS_AUDIT_ANNOTATION, policy_profile_name(p));
        goto fail;
      }
      if (annotated[0] != '/') {
        cm_error_set(err, 0, "config.json: .annotations[\"%s\"]: \"%s\" must be an absolute path",
                     EGRESS_AUDIT_ANNOTATION, annotated);
        goto fail;
      }
      audit = annotated;
    }
    struct egress_setup_options eo = {.dns_upstream = g->dns_upstream, .audit_log = audit};
    if (egress_setup_build(&out->result.egress, &eo, &out->egress, err) < 0)
      goto fail;
    o->egress = &out->egress;
  }
  return 0;
fail:
  policy_result_free(&out->result);
  spec_free(out->spec);
  out->spec = NULL;
  return -1;
}

void cli_policy_free(struct cli_policy *p) {
  egress_setup_free(&p->egress);
  policy_result_free(&p->result);
  spec_free(p->spec);
  p->spec = NULL;
}

static const char help[] =
    "usage: codemode [--profile NAME] policy explain [options]\n"
    "       codemode policy diff OLD.json NEW.json\n"
    "\n"
    "Print what the effective profile (the stricter of --profile and the config's\n"
    "run.codemode.profile annotation) changes in a bundle's config, one line per change,\n"
    "then the Landlock layers the container would run under and the ABI they are enforced at.\n"
    "Exits 1 with the reason when the profile refuses the config.\n"
    "\n"
    "Options:\n"
    "  -b, --bundle DIR   bundle directory (default: current directory)\n"
    "  -f, --config FILE  config file (default: BUNDLE/config.json)\n"
    "  -h, --help         this help\n"
    "\n"
    "\n"
    "diff: what a server update started (+) or stopped (-) needing, between two learned\n"
    "policies (codemode-run --learn): one line per syscall rule, Landlock rule (~: its rights\n"
    "changed) and egress rule. Exits 0 when they allow the same, 1 when they differ, 2 on error.\n"
    "\n"
    "Profiles: default, mcp-audit, mcp (see codemode-profiles(5)).\n";

static int policy_diff(int argc, char **argv) {
  if (argc != 2) {
    cli_usage_error("policy", "diff expects OLD.json NEW.json");
    return 2;
  }
  struct learned_policy a, b;
  struct cm_error *err = NULL;
  if (learned_policy_load_file(argv[0], &a, &err) < 0) {
    cli_fail(err);
    return 2;
  }
  if (learned_policy_load_file(argv[1], &b, &err) < 0) {
    learned_policy_free(&a);
    cli_fail(err);
    return 2;
  }
  struct policy_report r = {0};
  learned_policy_diff(&a, &b, &r);
  for (size_t i = 0; i < r.count; i++)
    printf("%s\n", r.lines[i]);
  int rc = r.count ? 1 : 0;
  policy_report_free(&r);
  learned_policy_free(&a);
  learned_policy_free(&b);
  return rc;
}

int cmd_policy(struct cli_globals *g, int argc, char **argv) {
  static const struct option opts[] = {
      {"bundle", required_argument, NULL, 'b'},
      {"config", required_argument, NULL, 'f'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  struct create_options o = {0};
  int c;
  while ((c = getopt_long(argc, argv, "+b:f:h", opts, NULL)) != -1) {
    switch (c) {
    case 'b': o.bundle = optarg; break;
    case 'f': o.config_path = optarg; break;
    case 'h': fputs(help, stdout); return 0;
    default: return cli_usage_error("policy", "unknown or incomplete option \"%s\"", argv[optind - 1]);
    }
  }
  if (optind < argc && strcmp(argv[optind], "diff") == 0)
    return policy_diff(argc - optind - 1, argv + optind + 1);
  /* Options may also follow the subcommand: `policy explain -b DIR`. */
  if (optind >= argc || strcmp(argv[optind], "explain") != 0)
    return cli_usage_error("policy", "expects the subcommand \"explain\" or \"diff\"");
  optind++;
  while ((c = getopt_long(argc, argv, "b:f:h", opts, NULL)) != -1) {
    switch (c) {
    case 'b': o.bundle = optarg; break;
    case 'f': o.config_path = optarg; break;
    case 'h': fputs(help, stdout); return 0;
    default: return cli_usage_error("policy", "unknown or incomplete option \"%s\"", argv[optind - 1]);
    }
  }
  if (optind != argc)
    return cli_usage_error("policy", "unexpected argument \"%s\"", argv[optind]);
  struct cli_policy p;
  struct cm_error *err = NULL;
  g->explain_only = true;
  if (cli_policy_prepare(g, &o, &p, &err) < 0)
    return cli_fail(err);
  printf("profile: %s\n", policy_profile_name(p.result.profile));
  if (p.result.report.count == 0)
    printf("(no changes)\n");
  for (size_t i = 0; i < p.result.report.count; i++)
    printf("%s\n", p.result.report.lines[i]);
  struct policy_report landlock = {0};
  policy_landlock_describe(p.spec, &p.result, runtime_landlock_abi(), &landlock);
  for (size_t i = 0; i < landlock.count; i++)
    printf("%s\n", landlock.lines[i]);
  policy_report_free(&landlock);
  /* Not root: where the limits will (or will not) be enforced (runtime/rootless.h). */
  if (!cm_host_root()) {
    char line[1024];
    if (rootless_cgroup_explain(&g->ctx, p.spec, "ID", line, sizeof(line), &err) < 0) {
      cli_policy_free(&p);
      return cli_fail(err);
    }
    printf("%s\n", line);
  }
  cli_policy_free(&p);
  return 0;
}
