/* The CLI: parse flags, call the runtime, print. No mechanism lives here. */
#ifndef CM_CLI_CLI_H
#define CM_CLI_CLI_H

#include <stdbool.h>
#include "runtime/runtime.h"
#include "util/error.h"

#include "policy/egress.h"
#include "runtime/egress.h"

struct cli_globals {
  struct runtime_context ctx;
  const char *profile; /* --profile NAME, or NULL */
  /* The egress allowlist (issue 16), global so that a registered runtime's runtimeArgs carry it
   * to every call the shim makes: --allow-host, --allow-cidr, --deny-host, --deny-cidr. */
  struct egress_flags egress;
  const char *dns_upstream; /* --dns-upstream */
  const char *audit_log;    /* --audit-log */
  bool explain_only;        /* `policy explain`: nothing is started, no log opened */
  bool root_given;          /* --root was on the command line (mcp wrap passes it on) */
};

/* A config loaded and tightened by the effective profile (--profile, run.codemode.profile). */
#include "policy/profile.h"
struct cli_policy {
  struct spec *spec;
  struct policy_result result;
  struct egress_config egress; /* what create's broker gets, when result.egress is active */
};
/* Load o's config, apply the profile (changes logged with --debug), point o->spec and
 * o->stacked_seccomp at the result. Free with cli_policy_free after the runtime call. */
int cli_policy_prepare(const struct cli_globals *g, struct create_options *o, struct cli_policy *out,
                       struct cm_error **err);
void cli_policy_free(struct cli_policy *p);

/* cli_fail, cli_usage_error */
#include "cli/report.h"
/* Parse a non-negative integer flag value; on error prints and returns -1. */
int cli_parse_uint(const char *cmd, const char *flag, const char *value);

int cmd_create(struct cli_globals *g, int argc, char **argv);
int cmd_start(struct cli_globals *g, int argc, char **argv);
int cmd_run(struct cli_globals *g, int argc, char **argv);
int cmd_state(struct cli_globals *g, int argc, char **argv);
int cmd_kill(struct cli_globals *g, int argc, char **argv);
int cmd_delete(struct cli_globals *g, int argc, char **argv);
int cmd_list(struct cli_globals *g, int argc, char **argv);
int cmd_spec(struct cli_globals *g, int argc, char **argv);
int cmd_features(struct cli_globals *g, int argc, char **argv);
int cmd_exec(struct cli_globals *g, int argc, char **argv);
int cmd_pause(struct cli_globals *g, int argc, char **argv);
int cmd_resume(struct cli_globals *g, int argc, char **argv);
int cmd_ps(struct cli_globals *g, int argc, char **argv);
int cmd_update(struct cli_globals *g, int argc, char **argv);
int cmd_policy(struct cli_globals *g, int argc, char **argv);
int cmd_events(struct cli_globals *g, int argc, char **argv);
/* checkpoint.c: run codemode-criu */
int cmd_checkpoint(struct cli_globals *g, int argc, char **argv);
int cmd_restore(struct cli_globals *g, int argc, char **argv);
/* image_exec.c: run codemode-image */
int cmd_learn(struct cli_globals *g, int argc, char **argv);
int cmd_pull(struct cli_globals *g, int argc, char **argv);
int cmd_images(struct cli_globals *g, int argc, char **argv);
int cmd_rmi(struct cli_globals *g, int argc, char **argv);
int cmd_mcp(struct cli_globals *g, int argc, char **argv);
int cmd_doctor(struct cli_globals *g, int argc, char **argv);

#endif
