/* Global options and command dispatch. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/criu_tool.h"
#include "linux/exec_trampoline.h"
#include "runtime/rootless.h"
#include "spec/json_util.h"
#include "util/log.h"

static const char usage[] =
    "usage: codemode [global options] COMMAND [options] [ID]\n"
    "\n"
    "An OCI container runtime (runc-compatible command line).\n"
    "\n"
    "Commands:\n"
    "  create    create a container from a bundle (init waits for start)\n"
    "  start     start a created container\n"
    "  run       create and start a container, wait for it, delete it\n"
    "  state     print the state of a container (JSON)\n"
    "  kill      send a signal to a container's init\n"
    "  delete    delete a container\n"
    "  exec      run a new process in a running container\n"
    "  pause     freeze every process of a container\n"
    "  resume    thaw a paused container\n"
    "  ps        list the processes of a container\n"
    "  update    change a running container's resource limits\n"
    "  events    resource statistics (--stats) and OOM notifications (JSON)\n"
    "  list      list containers\n"
    "  spec      write a default config.json\n"
    "  features  print the features this runtime implements (JSON)\n"
    "  policy    policy explain: what the hardening profile changes in a config;\n"
    "            policy diff OLD NEW: what changed between two learned policies\n"
    "  learn     learn a bundle's own policy (seccomp, Landlock, egress) from a run; --merge runs\n"
    "  pull      bring an image into the store (oci:DIR, docker-archive:FILE, a registry)\n"
    "  images    list the store's images (--prune: remove what no name needs)\n"
    "  rmi       remove images from the store\n"
    "  mcp       mcp wrap FILE: run every stdio server of an MCP client's config under\n"
    "            codemode-run (mcp unwrap FILE: back as they were)\n"
    "  doctor    what this machine can do for codemode (user namespaces, cgroups, Landlock…)\n"
    "  checkpoint  checkpoint a running container with CRIU\n"
    "  restore   restore a container from a checkpoint\n"
    "\n"
    "Global options:\n"
    "  --root DIR                state directory (default /run/codemode; not root:\n"
    "                            $XDG_RUNTIME_DIR/codemode)\n"
    "  --log FILE                log file (default stderr)\n"
    "  --log-format text|json    log line format (default text)\n"
    "  --debug                   debug logging\n"
    "  --systemd-cgroup          use the systemd cgroup driver\n"
    "  --cgroup-manager cgroupfs|systemd|disabled\n"
    "  --profile NAME            hardening profile: default, ci, mcp, mcp-audit (= mcp here; learn\n"
    "                            mode under codemode-run) (codemode-profiles(5));\n"
    "                            `codemode policy explain` shows what it changes; run as\n"
    "                            codemode-mcp (a link to codemode), mcp is the least it gets\n"
    "  --allow-host HOST[:PORT]  egress allowlist (repeatable): the container may reach HOST\n"
    "                            (port 443 by default; *.DOMAIN: its subdomains) through a\n"
    "                            per-container broker; nothing allowed: loopback only\n"
    "  --allow-cidr CIDR:PORT    ... and addresses of CIDR on PORT\n"
    "  --deny-host HOST[:PORT], --deny-cidr CIDR[:PORT]   refused even when allowed\n"
    "  --dns-upstream IP[:PORT]  the resolver the broker asks (default: the host's)\n"
    "  --audit-log FILE          the broker's decisions, JSON Lines (codemode-profiles(5))\n"
    "  -v, --version             print the version\n"
    "  -h, --help                this help; COMMAND --help for a command's\n";

int cli_parse_uint(const char *cmd, const char *flag, const char *value) {
  char *end;
  long v = strtol(value, &end, 10);
  if (*value == '\0' || *end != '\0' || v < 0 || v > 1 << 20) {
    cli_usage_error(cmd, "%s: \"%s\" is not a non-negative integer", flag, value);
    return -1;
  }
  return (int)v;
}

static const struct {
  const char *name;
  int (*fn)(struct cli_globals *, int, char **);
} commands[] = {
    {"create", cmd_create}, {"start", cmd_start}, {"run", cmd_run},   {"state", cmd_state},
    {"kill", cmd_kill},     {"delete", cmd_delete}, {"list", cmd_list}, {"spec", cmd_spec},
    {"features", cmd_features}, {"exec", cmd_exec}, {"policy", cmd_policy},
    {"pause", cmd_pause},       {"resume", cmd_resume}, {"ps", cmd_ps},     {"update", cmd_update},
    {"events", cmd_events}, {"learn", cmd_learn}, {"pull", cmd_pull},         {"images", cmd_images}, {"rmi", cmd_rmi},
    {"mcp", cmd_mcp}, {"doctor", cmd_doctor},
    {"checkpoint", cmd_checkpoint}, {"restore", cmd_restore},
};

/* The profile a program name selects: installed (or linked) as codemode-mcp, the binary is the
 * mcp runtime. This is how an engine that cannot pass runtime arguments reaches the profile:
 * containerd's runc shim (a Kubernetes RuntimeClass handler) has only BinaryName, and it uses
 * that path, as argv[0], for every command it runs (create, start, exec, kill, delete…), as
 * Docker, podman and `ctr --runc-binary` do. No wrapper process, nothing in the environment or
 * the config (which the pod's author writes) that could drop it. NULL: the plain name. */
static const char *profile_from_program_name(const char *argv0) {
  const char *base = argv0 ? strrchr(argv0, '/') : NULL;
  base = base ? base + 1 : argv0;
  if (base && strcmp(base, "codemode-mcp") == 0)
    return "mcp";
  if (base && strcmp(base, "codemode-mcp-audit") == 0)
    return "mcp-audit";
  /* A CI runner's engine (docker run --runtime=codemode-ci, a GitLab or Actions runner). */
  if (base && strcmp(base, "codemode-ci") == 0)
    return "ci";
  return NULL;
}

static void print_version(void) {
  printf("codemode version %s\nspec: %s\n", CODEMODE_VERSION, SPEC_OCI_VERSION);
  /* Found or not, without starting it (`features` asks CRIU whether it works on this kernel). */
  const char *criu = criu_tool_binary_path();
  printf("criu: %s\n", criu ? criu : "not installed (checkpoint/restore need it: apt-get install criu)");
}

int main(int argc, char **argv) {
  exec_guard_make_nondumpable(); /* CVE-2019-5736: before anything forks */
  struct cli_globals g = {.ctx = {.root = "/run/codemode", .cgroup_manager = CGROUP_MANAGER_CGROUPFS}};
  const char *log_path = NULL;
  bool root_given = false;
  enum cm_log_format log_format = CM_LOG_TEXT;
  bool debug = false;
  enum {
    OPT_ROOT = 256,
    OPT_LOG,
    OPT_LOG_FORMAT,
    OPT_DEBUG,
    OPT_SYSTEMD,
    OPT_CGMGR,
    OPT_ROOTLESS,
    OPT_CRIU,
    OPT_PROFILE,
    OPT_ALLOW_HOST,
    OPT_ALLOW_CIDR,
    OPT_DENY_HOST,
    OPT_DENY_CIDR,
    OPT_DNS_UPSTREAM,
    OPT_AUDIT_LOG
  };
  static const struct option opts[] = {
      {"root", required_argument, NULL, OPT_ROOT},
      {"log", required_argument, NULL, OPT_LOG},
      {"log-format", required_argument, NULL, OPT_LOG_FORMAT},
      {"debug", no_argument, NULL, OPT_DEBUG},
      {"systemd-cgroup", no_argument, NULL, OPT_SYSTEMD},
      {"cgroup-manager", required_argument, NULL, OPT_CGMGR},
      {"rootless", required_argument, NULL, OPT_ROOTLESS}, /* runc's; accepted, only "auto"/"false" mean anything */
      {"criu", required_argument, NULL, OPT_CRIU},         /* runc's: the criu binary (codemode-criu reads it) */
      {"profile", required_argument, NULL, OPT_PROFILE},
      {"allow-host", required_argument, NULL, OPT_ALLOW_HOST},
      {"allow-cidr", required_argument, NULL, OPT_ALLOW_CIDR},
      {"deny-host", required_argument, NULL, OPT_DENY_HOST},
      {"deny-cidr", required_argument, NULL, OPT_DENY_CIDR},
      {"dns-upstream", required_argument, NULL, OPT_DNS_UPSTREAM},
      {"audit-log", required_argument, NULL, OPT_AUDIT_LOG},
      {"version", no_argument, NULL, 'v'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  int c;
  /* "+": stop at the command name; its own options are parsed by the command. */
  opterr = 0; /* our own messages, in the one "codemode: …" shape */
  while ((c = getopt_long(argc, argv, "+vh", opts, NULL)) != -1) {
    switch (c) {
    case OPT_ROOT:
      g.ctx.root = optarg;
      root_given = true;
      g.root_given = true;
      break;
    case OPT_LOG: log_path = optarg; break;
    case OPT_LOG_FORMAT:
      if (strcmp(optarg, "json") == 0)
        log_format = CM_LOG_JSON;
      else if (strcmp(optarg, "text") == 0)
        log_format = CM_LOG_TEXT;
      else {
        fprintf(stderr, "codemode: --log-format: \"%s\" must be text or json\n", optarg);
        return 1;
      }
      break;
    case OPT_DEBUG: debug = true; break;
    case OPT_SYSTEMD:
      g.ctx.cgroup_manager = CGROUP_MANAGER_SYSTEMD;
      g.ctx.cgroup_manager_explicit = true;
      break;
    case OPT_CGMGR:
      g.ctx.cgroup_manager_explicit = true;
      if (strcmp(optarg, "cgroupfs") == 0)
        g.ctx.cgroup_manager = CGROUP_MANAGER_CGROUPFS;
      else if (strcmp(optarg, "systemd") == 0)
        g.ctx.cgroup_manager = CGROUP_MANAGER_SYSTEMD;
      else if (strcmp(optarg, "disabled") == 0)
        g.ctx.cgroup_manager = CGROUP_MANAGER_DISABLED;
      else {
        fprintf(stderr, "codemode: --cgroup-manager: \"%s\" must be cgroupfs, systemd or disabled\n", optarg);
        return 1;
      }
      break;
    case OPT_ROOTLESS:
    case OPT_CRIU: break;
    case OPT_PROFILE: {
      enum policy_profile ignored;
      struct cm_error *perr = NULL;
      /* Docker passes runtimeArgs to every command: accept it everywhere, check it once. */
      if (policy_profile_from_name(optarg, &ignored, &perr) < 0) {
        cm_error_prefix(&perr, "--profile");
        return cli_fail(perr);
      }
      g.profile = optarg;
      break;
    }
    case OPT_ALLOW_HOST: spec_strv_push(&g.egress.allow_host, optarg); break;
    case OPT_ALLOW_CIDR: spec_strv_push(&g.egress.allow_cidr, optarg); break;
    case OPT_DENY_HOST: spec_strv_push(&g.egress.deny_host, optarg); break;
    case OPT_DENY_CIDR: spec_strv_push(&g.egress.deny_cidr, optarg); break;
    case OPT_DNS_UPSTREAM: g.dns_upstream = optarg; break;
    case OPT_AUDIT_LOG: g.audit_log = optarg; break;
    case 'v': print_version(); return 0;
    case 'h': fputs(usage, stdout); return 0;
    default:
      fprintf(stderr, "codemode: unknown or incomplete global option \"%s\" (see 'codemode --help')\n",
              argv[optind - 1]);
      return 1;
    }
  }
  /* The name sets a floor: --profile may ask for more, never for less (the stricter wins). */
  const char *named = profile_from_program_name(argv[0]);
  if (named) {
    enum policy_profile by_name, by_flag = POLICY_PROFILE_DEFAULT;
    struct cm_error *perr = NULL;
    if (policy_profile_from_name(named, &by_name, &perr) < 0)
      return cli_fail(perr);
    if (g.profile)
      (void)policy_profile_from_name(g.profile, &by_flag, NULL); /* checked when parsed */
    if (by_name > by_flag)
      g.profile = named;
  }
  /* Not root: the user's own state directory, as runc and crun do (runtime/rootless.h). */
  char *rootless_root = NULL;
  if (!root_given && geteuid() != 0) {
    struct cm_error *rerr = NULL;
    rootless_root = rootless_state_root(&rerr);
    if (rootless_root == NULL)
      return cli_fail(rerr);
    g.ctx.root = rootless_root;
  }
  if (g.ctx.root[0] != '/') {
    fprintf(stderr, "codemode: --root: \"%s\" must be an absolute path\n", g.ctx.root);
    return 1;
  }
  if (cm_log_init(log_path, log_format, debug) < 0) {
    fprintf(stderr, "codemode: --log %s: %m\n", log_path);
    return 1;
  }
  if (optind >= argc) {
    fputs(usage, stderr);
    return 1;
  }
  const char *name = argv[optind];
  for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
    if (strcmp(commands[i].name, name) == 0) {
      int first = optind;
      optind = 0; /* each command re-runs getopt on its own argv (0: full reinitialisation) */
      return commands[i].fn(&g, argc - first, argv + first);
    }
  }
  fprintf(stderr, "codemode: unknown command \"%s\" (see 'codemode --help')\n", name);
  return 1;
}
