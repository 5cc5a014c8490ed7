#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "util/log.h"

static const char help[] =
    "usage: codemode exec [options] ID [COMMAND [ARG...]]\n"
    "\n"
    "Run a new process in a running container. It joins the container's namespaces, cgroup,\n"
    "seccomp filter and LSM label and is built from the container's own process (env, user,\n"
    "capabilities, rlimits, no_new_privs...), changed by the options below; with --process the\n"
    "whole process comes from a process.json file. Exits with the process's status (128+N if\n"
    "killed by signal N) unless --detach; its own failures exit 255 (usage errors 1), as runc.\n"
    "\n"
    "Options:\n"
    "  -p, --process FILE        process.json (the process options below are then ignored)\n"
    "  -t, --tty                 allocate a pseudo-terminal\n"
    "  --cwd DIR                 working directory (absolute, in the container)\n"
    "  -e, --env K=V             set an environment variable (repeatable)\n"
    "  -u, --user UID[:GID]      numeric user (and group)\n"
    "  -g, --additional-gids N   an additional group (repeatable)\n"
    "  -c, --cap CAP             add a capability, e.g. CAP_NET_ADMIN (repeatable)\n"
    "  --no-new-privs            set no_new_privs\n"
    "  --apparmor PROFILE        AppArmor profile\n"
    "  --process-label LABEL     SELinux label\n"
    "  -d, --detach              return once the process runs\n"
    "  --pid-file FILE           write the process's host pid to FILE\n"
    "  --console-socket PATH     send the pty master over this unix socket\n"
    "  --preserve-fds N          pass N extra fds (3 .. 3+N-1) to the process\n"
    "  --ignore-paused           exec even if the container is paused (the process runs once\n"
    "                            it is resumed)\n"
    "  --cgroup [CTRL[,CTRL]:]PATH  run in PATH, an existing sub-cgroup of the container's: in\n"
    "                            every hierarchy (PATH alone, once), or in the named cgroup v1\n"
    "                            controllers' (repeatable)\n"
    "  -h, --help                this help\n";

struct growing {
  char **items;
  size_t count;
};

static void push(struct growing *g, char *s) {
  g->items = realloc(g->items, (g->count + 1) * sizeof(char *));
  if (g->items == NULL)
    abort();
  g->items[g->count++] = s;
}

/* Digits only (strtoull alone would take " 12", "+12" and "-1" as 2^64-1), and a real id:
 * 4294967295 is (uid_t)-1, which setresuid reads as "unchanged", so the process would stay root
 * (crun CVE-2026-30892 class: `exec -u` parsing yielding the wrong user). */
static int parse_u32(const char *flag, const char *s, uint32_t *out) {
  bool digits = *s != '\0';
  for (const char *p = s; *p; p++)
    digits &= *p >= '0' && *p <= '9';
  char *end;
  errno = 0;
  unsigned long long v = digits ? strtoull(s, &end, 10) : 0;
  if (!digits || errno || v >= UINT32_MAX)
    return cli_usage_error("exec", "%s: \"%s\" is not a uid or gid (a number below 4294967295)", flag, s), -1;
  *out = (uint32_t)v;
  return 0;
}

static int parse_user(const char *s, struct exec_options *o) {
  char *copy = strdup(s);
  char *colon = strchr(copy, ':');
  if (colon)
    *colon = '\0';
  int r = parse_u32("--user", copy, &o->uid);
  if (r == 0 && colon)
    r = parse_u32("--user", colon + 1, &o->gid);
  o->has_user = true;
  o->has_gid = colon != NULL;
  free(copy);
  return r;
}

/* The policy/ side of exec's hardening hook: the profile recorded at create (or a stricter
 * --profile) tightens the process as it tightened init's. */
struct exec_policy {
  const char *requested;
  struct policy_result result;
};

static int exec_harden(void *arg, const char *recorded, struct spec_process *p,
                       const struct spec_seccomp **stacked, struct cm_error **err) {
  struct exec_policy *ep = arg;
  if (policy_apply_exec(ep->requested, recorded, p, &ep->result, err) < 0)
    return -1;
  for (size_t i = 0; i < ep->result.report.count; i++)
    cm_debug("exec: profile %s: %s", policy_profile_name(ep->result.profile), ep->result.report.lines[i]);
  *stacked = ep->result.stacked_seccomp.present ? &ep->result.stacked_seccomp : NULL;
  return 0;
}

/* exec's own failures exit 255, as runc's, so a caller can tell them from the command's status
 * (which passes through); a flag the parser does not take, or no container id, is a usage
 * error (1), as there. */
#define EXEC_FAILED 255

int cmd_exec(struct cli_globals *g, int argc, char **argv) {
  enum {
    OPT_CWD = 256,
    OPT_NO_NEW_PRIVS,
    OPT_APPARMOR,
    OPT_LABEL,
    OPT_PID_FILE,
    OPT_CONSOLE,
    OPT_PRESERVE,
    OPT_IGNORE_PAUSED,
    OPT_CGROUP,
  };
  static const struct option opts[] = {
      {"process", required_argument, NULL, 'p'},
      {"tty", no_argument, NULL, 't'},
      {"cwd", required_argument, NULL, OPT_CWD},
      {"env", required_argument, NULL, 'e'},
      {"user", required_argument, NULL, 'u'},
      {"additional-gids", required_argument, NULL, 'g'},
      {"cap", required_argument, NULL, 'c'},
      {"no-new-privs", no_argument, NULL, OPT_NO_NEW_PRIVS},
      {"apparmor", required_argument, NULL, OPT_APPARMOR},
      {"process-label", required_argument, NULL, OPT_LABEL},
      {"detach", no_argument, NULL, 'd'},
      {"pid-file", required_argument, NULL, OPT_PID_FILE},
      {"console-socket", required_argument, NULL, OPT_CONSOLE},
      {"preserve-fds", required_argument, NULL, OPT_PRESERVE},
      {"ignore-paused", no_argument, NULL, OPT_IGNORE_PAUSED},
      {"cgroup", required_argument, NULL, OPT_CGROUP},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  struct exec_options o = {0};
  struct growing env = {0}, caps = {0}, cgroups = {0};
  uint32_t *gids = NULL;
  size_t n_gids = 0;
  int status = 1;
  int c;
  /* "+": the first non-option is the ID; everything after it is the command, untouched. */
  while ((c = getopt_long(argc, argv, "+p:te:u:g:c:dh", opts, NULL)) != -1) {
    switch (c) {
    case 'p': o.process_path = optarg; break;
    case 't': o.tty = true; break;
    case OPT_CWD: o.cwd = optarg; break;
    case 'e':
      if (strchr(optarg, '=') == NULL || optarg[0] == '=') {
        status = (cli_usage_error("exec", "--env: \"%s\" is not K=V", optarg), EXEC_FAILED);
        goto out;
      }
      push(&env, optarg);
      break;
    case 'u':
      if (parse_user(optarg, &o) < 0) {
        status = EXEC_FAILED;
        goto out;
      }
      break;
    case 'g': {
      uint32_t gid;
      if (parse_u32("--additional-gids", optarg, &gid) < 0)
        goto out;
      gids = realloc(gids, (n_gids + 1) * sizeof(*gids));
      if (gids == NULL)
        abort();
      gids[n_gids++] = gid;
      break;
    }
    case 'c': push(&caps, optarg); break;
    case OPT_NO_NEW_PRIVS: o.no_new_privs = true; break;
    case OPT_APPARMOR: o.apparmor = optarg; break;
    case OPT_LABEL: o.process_label = optarg; break;
    case 'd': o.detach = true; break;
    case OPT_PID_FILE: o.pid_file = optarg; break;
    case OPT_CONSOLE: o.console_socket = optarg; break;
    case OPT_PRESERVE:
      o.preserve_fds = cli_parse_uint("exec", "--preserve-fds", optarg);
      if (o.preserve_fds < 0)
        goto out;
      break;
    case OPT_IGNORE_PAUSED: o.ignore_paused = true; break;
    case OPT_CGROUP: push(&cgroups, optarg); break;
    case 'h':
      fputs(help, stdout);
      status = 0;
      goto out;
    default: cli_usage_error("exec", "unknown or incomplete option \"%s\"", argv[optind - 1]); goto out;
    }
  }
  if (optind >= argc) {
    cli_usage_error("exec", "missing container ID");
    goto out;
  }
  o.id = argv[optind];
  o.args = argv + optind + 1;
  o.n_args = (size_t)(argc - optind - 1);
  if (o.process_path == NULL && o.n_args == 0) {
    status = (cli_usage_error("exec", "a COMMAND or --process FILE is required"), EXEC_FAILED);
    goto out;
  }
  o.env = env.items;
  o.n_env = env.count;
  o.caps = caps.items;
  o.n_caps = caps.count;
  o.additional_gids = gids;
  o.n_additional_gids = n_gids;
  o.sub_cgroups = cgroups.items;
  o.n_sub_cgroups = cgroups.count;
  struct exec_policy policy = {.requested = g->profile};
  o.harden = exec_harden;
  o.harden_arg = &policy;
  struct cm_error *err = NULL;
  int exit_status = 0;
  if (runtime_exec(&g->ctx, &o, &exit_status, &err) < 0)
    status = (cli_fail(err), EXEC_FAILED);
  else
    status = exit_status;
  policy_result_free(&policy.result);
out:
  free(env.items);
  free(caps.items);
  free(cgroups.items);
  free(gids);
  return status;
}
