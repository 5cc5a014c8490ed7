/* codemode-criu: `codemode checkpoint` and `codemode restore` (issue 28). codemode execs this
 * binary with its own command line, so that protobuf-c and the CRIU code are never on the
 * container start path (codemode stays one static binary without them), as codemode-image is
 * for images. Global options are codemode's; those that do not concern CRIU are accepted and
 * ignored here (codemode checked them already). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/report.h"
#include "criu/criu.h"
#include "util/log.h"

static const char checkpoint_help[] =
    "usage: codemode checkpoint [options] ID\n"
    "\n"
    "Checkpoint a running container with CRIU (its processes are dumped into the image path;\n"
    "unless --leave-running or --pre-dump, the container is then gone).\n"
    "  --image-path DIR          where the images go (default ./checkpoint; made if missing)\n"
    "  --work-path DIR           CRIU's log (dump.log) and work files (default: the image path)\n"
    "  --leave-running           keep the container running after the dump\n"
    "  --tcp-established         dump established TCP connections\n"
    "  --ext-unix-sk             allow external unix sockets\n"
    "  --shell-job               allow a shell job (a tty from outside the container)\n"
    "  --file-locks              dump file locks\n"
    "  --pre-dump                dump memory only, keep running (the first links of a chain)\n"
    "  --parent-path DIR         the previous (pre-)dump, relative to the image path\n"
    "  --manage-cgroups-mode soft|full|strict|ignore   how CRIU handles the cgroups\n"
    "  --page-server ADDR:PORT   send the memory to a `criu page-server` there\n"
    "  --lazy-pages              leave the memory with a page server of the dump's own on\n"
    "                            --page-server's PORT, served to `criu lazy-pages` (restore\n"
    "                            --lazy-pages); returns once every page is fetched\n"
    "  --status-fd FD            with --lazy-pages: one \\0 written to FD when that server listens\n"
    "  --auto-dedup              punch what this dump re-saves out of the parent's images\n"
    "  --empty-ns network        dump the network namespace without its devices, addresses,\n"
    "                            routes and rules (restored empty)\n";

static const char restore_help[] =
    "usage: codemode restore [options] ID\n"
    "\n"
    "Restore a checkpoint as container ID, from the bundle's config.json.\n"
    "  -b, --bundle DIR          the bundle (default .)\n"
    "  --image-path DIR          the checkpoint (default ./checkpoint)\n"
    "  --work-path DIR           CRIU's log (restore.log) (default: the image path)\n"
    "  -d, --detach              return once it runs (otherwise wait for it, then delete it)\n"
    "  --pid-file FILE           write the restored init's pid\n"
    "  --console-socket PATH     where the pty master goes (a terminal container)\n"
    "  --tcp-established, --ext-unix-sk, --shell-job, --file-locks, --manage-cgroups-mode MODE\n"
    "                            as for checkpoint\n"
    "  --lazy-pages              restore without the memory: pages come on demand from a\n"
    "                            `criu lazy-pages` daemon on the work path\n"
    "  --auto-dedup              punch restored pages out of the images\n"
    "  --empty-ns network        make the network namespace empty (lo down, nothing restored)\n"
    "  --no-subreaper, --no-pivot   accepted (runc's), no effect\n";

enum {
  O_IMAGE = 300,
  O_WORK,
  O_LEAVE,
  O_TCP,
  O_EXTUNIX,
  O_SHELL,
  O_LOCKS,
  O_PREDUMP,
  O_PARENT,
  O_CGMODE,
  O_LAZY,
  O_PIDFILE,
  O_CONSOLE,
  O_NOOP,
  O_DEDUP,
  O_EMPTYNS,
  O_PAGESERVER,
  O_STATUSFD,
};

/* A flag the command shares; 1 if it was one, 0 if not, -1 on a bad value. */
static int common_flag(const char *cmd, int c, const char *arg, struct criu_common_options *o) {
  struct cm_error *err = NULL;
  switch (c) {
  case O_IMAGE: o->image_path = arg; return 1;
  case O_WORK: o->work_path = arg; return 1;
  case O_TCP: o->tcp_established = true; return 1;
  case O_EXTUNIX: o->ext_unix_sk = true; return 1;
  case O_SHELL: o->shell_job = true; return 1;
  case O_LOCKS: o->file_locks = true; return 1;
  case O_LAZY: o->lazy_pages = true; return 1;
  case O_DEDUP: o->auto_dedup = true; return 1;
  case O_CGMODE:
  case O_EMPTYNS:
    if ((c == O_CGMODE ? criu_cgroup_mode_parse(arg, &o->cgroup_mode, &err)
                       : criu_empty_ns_parse(arg, &o->empty_ns, &err)) < 0) {
      fprintf(stderr, "codemode: %s: %s\n", cmd, err->msg);
      cm_error_free(err);
      return -1;
    }
    return 1;
  }
  return 0;
}

#define COMMON_OPTS \
  {"image-path", required_argument, NULL, O_IMAGE}, {"work-path", required_argument, NULL, O_WORK}, \
      {"tcp-established", no_argument, NULL, O_TCP}, {"ext-unix-sk", no_argument, NULL, O_EXTUNIX}, \
      {"shell-job", no_argument, NULL, O_SHELL}, {"file-locks", no_argument, NULL, O_LOCKS}, \
      {"manage-cgroups-mode", required_argument, NULL, O_CGMODE}, {"lazy-pages", no_argument, NULL, O_LAZY}, \
      {"auto-dedup", no_argument, NULL, O_DEDUP}, {"empty-ns", required_argument, NULL, O_EMPTYNS}, \
      {"help", no_argument, NULL, 'h'}

static int cmd_checkpoint(struct runtime_context *ctx, const char *criu_path, int argc, char **argv) {
  static const struct option opts[] = {
      COMMON_OPTS,
      {"leave-running", no_argument, NULL, O_LEAVE},
      {"pre-dump", no_argument, NULL, O_PREDUMP},
      {"parent-path", required_argument, NULL, O_PARENT},
      {"page-server", required_argument, NULL, O_PAGESERVER},
      {"status-fd", required_argument, NULL, O_STATUSFD},
      {NULL, 0, NULL, 0},
  };
  struct checkpoint_options o = {.c = {.criu_path = criu_path, .cgroup_mode = CRIU_CG_UNSET}, .status_fd = -1};
  struct cm_error *err = NULL;
  char *end;
  int c;
  optind = 0;
  opterr = 0;
  /* _only: "-leave-running" is "--leave-running", as runc (urfave/cli) takes it. */
  while ((c = getopt_long_only(argc, argv, "+h", opts, NULL)) != -1) {
    int r = common_flag("checkpoint", c, optarg, &o.c);
    if (r < 0)
      return 1;
    if (r > 0)
      continue;
    switch (c) {
    case O_LEAVE: o.leave_running = true; break;
    case O_PREDUMP: o.pre_dump = true; break;
    case O_PARENT: o.parent_path = optarg; break;
    case O_PAGESERVER:
      if (criu_page_server_parse(optarg, &o, &err) < 0) {
        cli_usage_error("checkpoint", "%s", err->msg);
        cm_error_free(err);
        free(o.page_server_addr);
        return 1;
      }
      break;
    case O_STATUSFD:
      errno = 0;
      o.status_fd = (int)strtol(optarg, &end, 10);
      if (errno || end == optarg || *end || o.status_fd < 0) {
        free(o.page_server_addr);
        return cli_usage_error("checkpoint", "--status-fd \"%s\": expected a file descriptor number", optarg);
      }
      break;
    case 'h': fputs(checkpoint_help, stdout); return 0;
    default: return cli_usage_error("checkpoint", "unknown or incomplete option \"%s\"", argv[optind - 1]);
    }
  }
  if (optind != argc - 1)
    return cli_usage_error("checkpoint", "expects exactly one container ID");
  if (o.pre_dump && o.leave_running)
    cm_debug("checkpoint: --leave-running with --pre-dump: a pre-dump always leaves it running");
  o.id = argv[optind];
  int rc = criu_checkpoint(ctx, &o, &err) < 0 ? cli_fail(err) : 0;
  free(o.page_server_addr);
  return rc;
}

static int cmd_restore(struct runtime_context *ctx, const char *criu_path, const char *profile, int argc,
                       char **argv) {
  static const struct option opts[] = {
      COMMON_OPTS,
      {"bundle", required_argument, NULL, 'b'},
      {"detach", no_argument, NULL, 'd'},
      {"pid-file", required_argument, NULL, O_PIDFILE},
      {"console-socket", required_argument, NULL, O_CONSOLE},
      {"no-subreaper", no_argument, NULL, O_NOOP},
      {"no-pivot", no_argument, NULL, O_NOOP},
      {NULL, 0, NULL, 0},
  };
  struct restore_options o = {.c = {.criu_path = criu_path, .cgroup_mode = CRIU_CG_UNSET}, .profile = profile};
  int c;
  optind = 0;
  opterr = 0;
  /* _only: containerd's shim passes "-no-subreaper" (one dash), which runc (urfave/cli) takes. */
  while ((c = getopt_long_only(argc, argv, "+hb:d", opts, NULL)) != -1) {
    int r = common_flag("restore", c, optarg, &o.c);
    if (r < 0)
      return 1;
    if (r > 0)
      continue;
    switch (c) {
    case 'b': o.bundle = optarg; break;
    case 'd': o.detach = true; break;
    case O_PIDFILE: o.pid_file = optarg; break;
    case O_CONSOLE: o.console_socket = optarg; break;
    case O_NOOP: break;
    case 'h': fputs(restore_help, stdout); return 0;
    default: return cli_usage_error("restore", "unknown or incomplete option \"%s\"", argv[optind - 1]);
    }
  }
  if (optind != argc - 1)
    return cli_usage_error("restore", "expects exactly one container ID");
  o.id = argv[optind];
  struct cm_error *err = NULL;
  int status = 0;
  if (criu_restore(ctx, &o, &status, &err) < 0)
    return cli_fail(err);
  return status;
}

/* `codemode-criu probe`: key=value lines for `codemode features` (its annotations). */
static int cmd_probe(const char *criu_path) {
  char *version = NULL;
  struct cm_error *err = NULL;
  int rc = criu_probe(criu_path, &version, &err);
  printf("version=%s\n", version ? version : "");
  printf("enabled=%s\n", rc == 0 ? "true" : "false");
  if (rc < 0) {
    char *msg = cm_error_format(err);
    for (char *p = msg; *p; p++)
      if (*p == '\n')
        *p = ' ';
    printf("reason=%s\n", msg);
    free(msg);
    cm_error_free(err);
  } else {
    /* Lazy pages need more of the kernel than a dump does (userfaultfd): asked on their own. */
    const char *why = NULL;
    int lazy = criu_lazy_pages_probe(criu_path, &why, &err);
    printf("lazy_pages=%s\n", lazy > 0 ? "true" : "false");
    if (lazy <= 0)
      printf("lazy_pages_reason=%s\n", lazy == 0 ? why : err->msg);
    cm_error_free(err);
  }
  free(version);
  return 0;
}

int main(int argc, char **argv) {
  struct runtime_context ctx = {.root = "/run/codemode", .cgroup_manager = CGROUP_MANAGER_CGROUPFS};
  const char *log_path = NULL, *criu_path = NULL, *profile;
  enum cm_log_format log_format = CM_LOG_TEXT;
  bool debug = false;
  enum { G_ROOT = 256, G_LOG, G_LOGFMT, G_DEBUG, G_SYSTEMD, G_CGMGR, G_CRIU, G_PROFILE, G_IGNORED };
  static const struct option opts[] = {
      {"root", required_argument, NULL, G_ROOT},
      {"log", required_argument, NULL, G_LOG},
      {"log-format", required_argument, NULL, G_LOGFMT},
      {"debug", no_argument, NULL, G_DEBUG},
      {"systemd-cgroup", no_argument, NULL, G_SYSTEMD},
      {"cgroup-manager", required_argument, NULL, G_CGMGR},
      {"criu", required_argument, NULL, G_CRIU},
      {"profile", required_argument, NULL, G_PROFILE},
      {"rootless", required_argument, NULL, G_IGNORED},
      {"allow-host", required_argument, NULL, G_IGNORED},
      {"allow-cidr", required_argument, NULL, G_IGNORED},
      {"deny-host", required_argument, NULL, G_IGNORED},
      {"deny-cidr", required_argument, NULL, G_IGNORED},
      {"dns-upstream", required_argument, NULL, G_IGNORED},
      {"audit-log", required_argument, NULL, G_IGNORED},
      {NULL, 0, NULL, 0},
  };
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
    switch (c) {
    case G_ROOT: ctx.root = optarg; break;
    case G_LOG: log_path = optarg; break;
    case G_LOGFMT: log_format = strcmp(optarg, "json") == 0 ? CM_LOG_JSON : CM_LOG_TEXT; break;
    case G_DEBUG: debug = true; break;
    case G_SYSTEMD: ctx.cgroup_manager = CGROUP_MANAGER_SYSTEMD; break;
    case G_CGMGR:
      ctx.cgroup_manager = strcmp(optarg, "systemd") == 0    ? CGROUP_MANAGER_SYSTEMD
                           : strcmp(optarg, "disabled") == 0 ? CGROUP_MANAGER_DISABLED
                                                              : CGROUP_MANAGER_CGROUPFS;
      break;
    case G_CRIU: criu_path = optarg; break;
    case G_PROFILE: break; /* codemode resolved it (with its program name): the environment below */
    case G_IGNORED: break;
    default:
      fprintf(stderr, "codemode-criu: unknown global option \"%s\"\n", argv[optind - 1]);
      return 1;
    }
  }
  /* The profile codemode resolved (--profile, or codemode-mcp as its name: the stricter). */
  profile = getenv("CODEMODE_CRIU_PROFILE");
  if (cm_log_init(log_path, log_format, debug) < 0) {
    fprintf(stderr, "codemode: --log %s: %s\n", log_path, strerror(errno));
    return 1;
  }
  if (optind >= argc) {
    fprintf(stderr, "usage: codemode-criu [global options] checkpoint|restore|probe …\n");
    return 1;
  }
  const char *cmd = argv[optind];
  int n = argc - optind;
  char **args = argv + optind;
  if (strcmp(cmd, "checkpoint") == 0)
    return cmd_checkpoint(&ctx, criu_path, n, args);
  if (strcmp(cmd, "restore") == 0)
    return cmd_restore(&ctx, criu_path, profile, n, args);
  if (strcmp(cmd, "probe") == 0)
    return cmd_probe(criu_path);
  fprintf(stderr, "codemode-criu: unknown command \"%s\"\n", cmd);
  return 1;
}
