/* codemode-run: one command that creates, starts, waits, propagates the exit status and always
 * cleans up. Made for MCP clients launching stdio servers ("command": "codemode-run") and CI.
 *
 *   codemode-run [OPTIONS] BUNDLE [-- CMD ARGS…]
 *   codemode-run [OPTIONS] --rootfs DIR [-- CMD ARGS…]
 *   codemode-run [OPTIONS] --image REF [-- CMD ARGS…]
 *   codemode-run [OPTIONS] --host -- CMD ARGS…
 *
 * stdio is the container's, untouched (no tty; codemode-run writes nothing to stdout, its
 * diagnostics go to stderr) unless --idle-timeout asks us to watch the bytes. Profile mcp by
 * default. This file is the flags; the container's life (watcher, wait loop, timeouts, cleanup)
 * is src/supervisor/. man/codemode-run.1. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linux/exec_trampoline.h"
#include "spec/json_util.h"
#include "supervisor/supervisor.h"

static const char usage[] =
    "usage: codemode-run [OPTIONS] BUNDLE [-- CMD ARGS...]\n"
    "       codemode-run [OPTIONS] --rootfs DIR [-- CMD ARGS...]\n"
    "       codemode-run [OPTIONS] --image REF [-- CMD ARGS...]\n"
    "       codemode-run [OPTIONS] --host -- CMD ARGS...\n"
    "\n"
    "Create, start and wait for a container; exit with its status (128+N if killed by signal N,\n"
    "124 on timeout, 125 if it could not run); always delete it. stdio is passed through untouched.\n"
    "\n"
    "Options:\n"
    "  --profile NAME          default, ci, mcp or mcp-audit (default: mcp; mcp-audit is mcp in\n"
    "                          learn mode, the policy on stderr unless --learn FILE; ci: a CI job,\n"
    "                          root in its own user namespace, nested containers); codemode-profiles(5)\n"
    "  --explain               print what the profile changes in the config, then exit\n"
    "  --seccomp FILE|NAME     Docker-format seccomp profile for linux.seccomp (replaces the\n"
    "                          config's; built in: default, mcp); the profile's own\n"
    "                          filter is still stacked on top\n"
    "  --rootfs DIR            run DIR with a generated config (needs -- CMD ARGS)\n"
    "  --image REF             run an image: oci:DIR[:TAG], docker-archive:FILE or\n"
    "                          [REGISTRY/]NAME[:TAG][@DIGEST], pulled into the store once;\n"
    "                          its Entrypoint/Cmd/Env/WorkingDir/User are the process\n"
    "                          (-- CMD replaces Cmd); root: a throwaway overlay\n"
    "  --host                  run CMD from the host's own /usr, /bin, /lib* (read-only) and\n"
    "                          an allow-list of /etc (no shadow, no ssh keys); HOME and /tmp\n"
    "                          empty; none of your files unless --mount gives them\n"
    "  --entrypoint CMD        with --image: replaces the image's Entrypoint (and Cmd)\n"
    "  --pull missing|always|never  with --image: when to pull (default missing)\n"
    "  --no-init               the server is pid 1 itself (default: a minimal init forwards\n"
    "                          signals to it and reaps zombies, as docker run --init)\n"
    "  --store DIR             the image store (default /var/lib/codemode, rootless\n"
    "                          $XDG_DATA_HOME/codemode)\n"
    "  --timeout SECONDS       wall clock limit: SIGTERM, then SIGKILL after the grace period\n"
    "  --idle-timeout SECONDS  stop after SECONDS without a byte on stdin or stdout\n"
    "  --grace SECONDS         between SIGTERM and SIGKILL (default 5)\n"
    "  --ephemeral             writable root: an overlay with a tmpfs upper layer over the\n"
    "                          rootfs, thrown away at exit (the rootfs itself is never written)\n"
    "  --mount SRC:DST[:ro|rw|cow]  bind SRC at DST (read-only unless :rw; ~ is $HOME);\n"
    "                          cow: writable, the writes thrown away at exit (SRC unchanged)\n"
    "  --state DIR[:DST]       a host directory the server keeps data in, read-write at DST\n"
    "                          (default /state), made if missing: writes there survive\n"
    "  --deny PATH             no access at or beneath PATH in the container (repeatable),\n"
    "                          enforced by Landlock even inside an allowed mount\n"
    "  --env K=V | --env K     set an environment variable, or pass K from codemode-run's\n"
    "                          environment (an mcpServers entry's env block); repeatable\n"
    "  --cwd DIR               working directory in the container\n"
    "  --memory SIZE           memory limit (e.g. 256m, 1g; ci default 4g, mcp at most 512m)\n"
    "  --pids N                process limit\n"
    "  --cpus N                CPU limit (e.g. 0.5)\n"
    "  --net none|host         none: a new network namespace with only lo, up (default);\n"
    "                          host: the host's (refused by the mcp profiles)\n"
    "  --allow-host HOST[:PORT] let the container reach HOST (default port 443; *.DOMAIN for\n"
    "                          its subdomains); repeatable. Nothing allowed: loopback only\n"
    "  --allow-cidr CIDR:PORT  let it reach addresses of CIDR on PORT (non-HTTP services)\n"
    "  --deny-host HOST[:PORT], --deny-cidr CIDR[:PORT]  refuse these even if allowed\n"
    "  --dns-upstream IP[:PORT] the resolver the egress broker asks (default: the host's)\n"
    "  --audit-log FILE        one JSON line per decision: egress, and denied syscalls and\n"
    "                          files (codemode-profiles(5), AUDIT LOG)\n"
    "  --secret NAME=@FILE | --secret NAME\n"
    "                          put a secret in $NAME, read from FILE or from NAME in\n"
    "                          codemode-run's environment (never from the command line)\n"
    "  --secret-host NAME=HOST[,HEADER]\n"
    "                          keep secret NAME from the server: $NAME is the placeholder\n"
    "                          CODEMODE_SECRET_NAME, replaced by the broker in the\n"
    "                          Authorization (or HEADER) header of HTTPS requests to HOST\n"
    "  --learn FILE            learn mode: every syscall (with the arguments that matter), file\n"
    "                          and host the server uses is recorded; FILE gets the policy of\n"
    "                          what it did (seccomp, Landlock, egress), with when each was seen\n"
    "  --policy FILE           apply a learned policy on top of the profile (never looser than mcp)\n"
    "  --audit-summary         on exit, list this run's denials and the policy line allowing each\n"
    "  --id ID                 container id (default codemode-run-PID)\n"
    "  --root DIR              state directory (default /run/codemode; not root:\n"
    "                          $XDG_RUNTIME_DIR/codemode)\n"
    "  --debug                 debug log on stderr (with each change the profile makes)\n"
    "  -h, --help              this help;  -v, --version  the version\n";

static void die_usage(const char *fmt, const char *arg) {
  fprintf(stderr, "codemode-run: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, " (see codemode-run --help)\n");
  exit(EXIT_RUN_ERROR);
}

static double parse_seconds(const char *flag, const char *v) {
  char *end;
  double d = strtod(v, &end);
  if (*v == '\0' || *end != '\0' || !(d > 0) || d > 1e7)
    die_usage("%s: expects a positive number of seconds", flag);
  return d;
}

/* "512m", "1g", "65536k", "1048576" → bytes. */
static int64_t parse_size(const char *v) {
  char *end;
  double n = strtod(v, &end);
  double mult = 1;
  switch (*end) {
  case 'k':
  case 'K':
    mult = 1024.0;
    end++;
    break;
  case 'm':
  case 'M':
    mult = 1024.0 * 1024;
    end++;
    break;
  case 'g':
  case 'G':
    mult = 1024.0 * 1024 * 1024;
    end++;
    break;
  default: break;
  }
  if (*end == 'b' || *end == 'B')
    end++;
  if (end == v || *end != '\0' || !(n > 0) || n * mult > 9e18)
    die_usage("--memory: \"%s\" is not a size like 256m", v);
  return (int64_t)(n * mult);
}

static void parse_args(int argc, char **argv, struct run_options *o) {
  enum {
    O_PROFILE = 256,
    O_EXPLAIN,
    O_SECCOMP,
    O_ROOTFS,
    O_IMAGE,
    O_ENTRYPOINT,
    O_PULL,
    O_STORE,
    O_NO_INIT,
    O_STATE,
    O_HOST,
    O_TIMEOUT,
    O_IDLE,
    O_GRACE,
    O_EPHEMERAL,
    O_MOUNT,
    O_DENY,
    O_ENV,
    O_CWD,
    O_MEMORY,
    O_PIDS,
    O_CPUS,
    O_NET,
    O_ID,
    O_ROOT,
    O_DEBUG,
    O_ALLOW_HOST,
    O_ALLOW_CIDR,
    O_DENY_HOST,
    O_DENY_CIDR,
    O_DNS_UPSTREAM,
    O_AUDIT_LOG,
    O_SECRET,
    O_SECRET_HOST,
    O_LEARN,
    O_POLICY,
    O_AUDIT_SUMMARY
  };
  static const struct option opts[] = {
      {"profile", required_argument, NULL, O_PROFILE},
      {"explain", no_argument, NULL, O_EXPLAIN},
      {"seccomp", required_argument, NULL, O_SECCOMP},
      {"rootfs", required_argument, NULL, O_ROOTFS},
      {"image", required_argument, NULL, O_IMAGE},
      {"entrypoint", required_argument, NULL, O_ENTRYPOINT},
      {"pull", required_argument, NULL, O_PULL},
      {"store", required_argument, NULL, O_STORE},
      {"no-init", no_argument, NULL, O_NO_INIT},
      {"state", required_argument, NULL, O_STATE},
      {"host", no_argument, NULL, O_HOST},
      {"timeout", required_argument, NULL, O_TIMEOUT},
      {"idle-timeout", required_argument, NULL, O_IDLE},
      {"grace", required_argument, NULL, O_GRACE},
      {"ephemeral", no_argument, NULL, O_EPHEMERAL},
      {"mount", required_argument, NULL, O_MOUNT},
      {"deny", required_argument, NULL, O_DENY},
      {"env", required_argument, NULL, O_ENV},
      {"cwd", required_argument, NULL, O_CWD},
      {"memory", required_argument, NULL, O_MEMORY},
      {"pids", required_argument, NULL, O_PIDS},
      {"cpus", required_argument, NULL, O_CPUS},
      {"net", required_argument, NULL, O_NET},
      {"network", required_argument, NULL, O_NET},
      {"id", required_argument, NULL, O_ID},
      {"root", required_argument, NULL, O_ROOT},
      {"debug", no_argument, NULL, O_DEBUG},
      {"allow-host", required_argument, NULL, O_ALLOW_HOST},
      {"allow-cidr", required_argument, NULL, O_ALLOW_CIDR},
      {"deny-host", required_argument, NULL, O_DENY_HOST},
      {"deny-cidr", required_argument, NULL, O_DENY_CIDR},
      {"dns-upstream", required_argument, NULL, O_DNS_UPSTREAM},
      {"audit-log", required_argument, NULL, O_AUDIT_LOG},
      {"secret", required_argument, NULL, O_SECRET},
      {"secret-host", required_argument, NULL, O_SECRET_HOST},
      {"learn", required_argument, NULL, O_LEARN},
      {"policy", required_argument, NULL, O_POLICY},
      {"audit-summary", no_argument, NULL, O_AUDIT_SUMMARY},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'v'},
      {NULL, 0, NULL, 0},
  };
  int c;
  /* "+": stop at the bundle, so the container command's own options are never ours. */
  while ((c = getopt_long(argc, argv, "+hv", opts, NULL)) != -1) {
    char *end;
    switch (c) {
    case O_PROFILE: o->profile = optarg; break;
    case O_EXPLAIN: o->explain = true; break;
    case O_SECCOMP: o->seccomp = optarg; break;
    case O_ROOTFS: o->rootfs = optarg; break;
    case O_IMAGE: o->image = optarg; break;
    case O_ENTRYPOINT: o->entrypoint = optarg; break;
    case O_PULL:
      if (strcmp(optarg, "missing") != 0 && strcmp(optarg, "always") != 0 && strcmp(optarg, "never") != 0)
        die_usage("--pull: \"%s\" must be missing, always or never", optarg);
      o->pull = optarg;
      break;
    case O_NO_INIT: o->no_init = true; break;
    case O_STATE: spec_strv_push(&o->states, optarg); break;
    case O_HOST: o->host = true; break;
    case O_STORE:
      if (optarg[0] != '/')
        die_usage("--store: \"%s\" must be absolute", optarg);
      o->store = optarg;
      break;
    case O_TIMEOUT: o->timeout = parse_seconds("--timeout", optarg); break;
    case O_IDLE: o->idle_timeout = parse_seconds("--idle-timeout", optarg); break;
    case O_GRACE: o->grace = parse_seconds("--grace", optarg); break;
    case O_EPHEMERAL: o->ephemeral = true; break;
    case O_MOUNT: spec_strv_push(&o->mounts, optarg); break;
    case O_DENY:
      if (optarg[0] != '/')
        die_usage("--deny: \"%s\" must be an absolute path in the container", optarg);
      spec_strv_push(&o->deny, optarg);
      break;
    case O_ENV:
      if (optarg[0] == '=' || optarg[0] == '\0')
        die_usage("--env: \"%s\" is not K=V or K", optarg);
      spec_strv_push(&o->env, optarg);
      break;
    case O_ALLOW_HOST: spec_strv_push(&o->egress.allow_host, optarg); break;
    case O_ALLOW_CIDR: spec_strv_push(&o->egress.allow_cidr, optarg); break;
    case O_DENY_HOST: spec_strv_push(&o->egress.deny_host, optarg); break;
    case O_DENY_CIDR: spec_strv_push(&o->egress.deny_cidr, optarg); break;
    case O_DNS_UPSTREAM: o->dns_upstream = optarg; break;
    case O_AUDIT_LOG: o->audit_log = optarg; break;
    case O_SECRET: spec_strv_push(&o->secrets, optarg); break;
    case O_SECRET_HOST: spec_strv_push(&o->secret_hosts, optarg); break;
    case O_CWD:
      if (optarg[0] != '/')
        die_usage("--cwd: \"%s\" must be absolute", optarg);
      o->cwd = optarg;
      break;
    case O_MEMORY: o->memory = parse_size(optarg); break;
    case O_PIDS:
      o->pids = strtoll(optarg, &end, 10);
      if (*optarg == '\0' || *end != '\0' || o->pids <= 0)
        die_usage("--pids: \"%s\" is not a positive integer", optarg);
      break;
    case O_CPUS:
      o->cpus = strtod(optarg, &end);
      if (*optarg == '\0' || *end != '\0' || !(o->cpus > 0) || o->cpus > 4096)
        die_usage("--cpus: \"%s\" is not a positive number", optarg);
      break;
    case O_NET:
      if (strcmp(optarg, "none") != 0 && strcmp(optarg, "host") != 0)
        die_usage("--net: \"%s\" must be none or host", optarg);
      o->net = optarg;
      break;
    case O_ID: o->id = optarg; break;
    case O_ROOT:
      if (optarg[0] != '/')
        die_usage("--root: \"%s\" must be absolute", optarg);
      o->root = optarg;
      break;
    case O_DEBUG: o->debug = true; break;
    case O_LEARN: o->learn = optarg; break;
    case O_POLICY: o->policy = optarg; break;
    case O_AUDIT_SUMMARY: o->audit_summary = true; break;
    case 'h': fputs(usage, stdout); exit(0);
    case 'v': printf("codemode-run version %s\nspec: %s\n", CODEMODE_VERSION, SPEC_OCI_VERSION); exit(0);
    default: fputs(usage, stderr); exit(EXIT_RUN_ERROR);
    }
  }
  if ((o->image != NULL) + (o->rootfs != NULL) + o->host > 1)
    die_usage("%s", "--image, --rootfs and --host: give one of them");
  if ((o->entrypoint || o->pull) && !o->image)
    die_usage("%s", "--entrypoint and --pull go with --image");
  /* getopt consumes a "--" that directly follows our options (the --rootfs and --image forms). */
  bool dashdash = optind > 1 && strcmp(argv[optind - 1], "--") == 0;
  if (dashdash && !o->rootfs && !o->image && !o->host)
    die_usage("%s", "missing BUNDLE before --");
  if (dashdash) {
    o->cmd = argv + optind;
    o->n_cmd = argc - optind;
    if (o->n_cmd == 0)
      die_usage("%s", "-- must be followed by a command");
    return;
  }
  if (!o->rootfs && !o->image && !o->host) {
    if (optind >= argc || strcmp(argv[optind], "--") == 0)
      die_usage("%s", "missing BUNDLE (or --rootfs DIR, --image REF, --host)");
    o->bundle = argv[optind++];
  }
  if (optind < argc) {
    if (strcmp(argv[optind], "--") != 0)
      die_usage("unexpected argument \"%s\" (the command goes after --)", argv[optind]);
    o->cmd = argv + optind + 1;
    o->n_cmd = argc - optind - 1;
    if (o->n_cmd == 0)
      die_usage("%s", "-- must be followed by a command");
  }
  if (o->rootfs && o->cmd == NULL)
    die_usage("%s", "--rootfs needs the command after --");
  if (o->host && o->cmd == NULL)
    die_usage("%s", "--host needs the command after --");
}

int main(int argc, char **argv) {
  exec_guard_make_nondumpable(); /* CVE-2019-5736: before anything forks */
  struct run_options o = {.profile = "mcp", .grace = 5}; /* root: runtime/rootless.h's default */
  parse_args(argc, argv, &o);
  return supervisor_run_standalone(&o);
}
