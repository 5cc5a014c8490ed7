/* codemode-run: one command that creates, starts, waits, propagates the exit status and always
 * cleans up. Made for MCP clients launching stdio servers ("command": "codemode-run") and CI.
 *
 *   codemode-run [OPTIONS] BUNDLE [-- CMD ARGS…]
 *   codemode-run [OPTIONS] --rootfs DIR [-- CMD ARGS…]
 *
 * stdio is the container's, untouched (no tty; codemode-run writes nothing to stdout, its
 * diagnostics go to stderr) unless --idle-timeout asks us to watch the bytes. Profile mcp by
 * default. Nothing is left behind, even when codemode-run is SIGKILLed: a watcher process forked
 * first (in its own session) waits on a pipe and deletes the container when we vanish without
 * saying goodbye; we die with our parent (PR_SET_PDEATHSIG), and the container's init is pid 1
 * of its own pid namespace, so its whole process tree goes with it. man/codemode-run.1. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "linux/exec_trampoline.h"
#include "linux/selfclone.h"
#include "policy/profile.h"
#include "policy/seccomp_profile.h"
#include "runtime/foreground.h"
#include "runtime/runtime.h"
#include "runtime/state.h"
#include "spec/json_util.h"
#include "util/cleanup.h"
#include "util/log.h"

/* Exit statuses of codemode-run itself (the container's own pass through; 128+N for a signal). */
#define EXIT_RUN_ERROR 125 /* codemode-run or the runtime failed: the container never ran */
#define EXIT_TIMEOUT 124   /* --timeout or --idle-timeout expired (as timeout(1)) */

static const char usage[] =
    "usage: codemode-run [OPTIONS] BUNDLE [-- CMD ARGS...]\n"
    "       codemode-run [OPTIONS] --rootfs DIR [-- CMD ARGS...]\n"
    "\n"
    "Create, start and wait for a container; exit with its status (128+N if killed by signal N,\n"
    "124 on timeout, 125 if it could not run); always delete it. stdio is passed through untouched.\n"
    "\n"
    "Options:\n"
    "  --profile NAME          default, mcp-audit or mcp (default: mcp); see codemode-profiles(5)\n"
    "  --explain               print what the profile changes in the config, then exit\n"
    "  --seccomp FILE|NAME     Docker-format seccomp profile for linux.seccomp (replaces the\n"
    "                          config's; built in: default, mcp, mcp-audit); the profile's own\n"
    "                          filter is still stacked on top\n"
    "  --rootfs DIR            run DIR with a generated config (needs -- CMD ARGS)\n"
    "  --timeout SECONDS       wall clock limit: SIGTERM, then SIGKILL after the grace period\n"
    "  --idle-timeout SECONDS  stop after SECONDS without a byte on stdin or stdout\n"
    "  --grace SECONDS         between SIGTERM and SIGKILL (default 5)\n"
    "  --ephemeral             writable root: an overlay with a tmpfs upper layer over the\n"
    "                          rootfs, thrown away at exit (the rootfs itself is never written)\n"
    "  --mount SRC:DST[:ro|rw] bind SRC at DST (read-only unless :rw)\n"
    "  --env K=V               set an environment variable (repeatable)\n"
    "  --cwd DIR               working directory in the container\n"
    "  --memory SIZE           memory limit (e.g. 256m, 1g)\n"
    "  --pids N                process limit\n"
    "  --cpus N                CPU limit (e.g. 0.5)\n"
    "  --net none|host         none: a new network namespace with only lo, up (default);\n"
    "                          host: the host's (refused by the mcp profiles)\n"
    "  --id ID                 container id (default codemode-run-PID)\n"
    "  --root DIR              state directory (default /run/codemode)\n"
    "  --debug                 debug log on stderr (with each change the profile makes)\n"
    "  -h, --help              this help;  -v, --version  the version\n";

struct run_options {
  const char *profile;
  bool explain;
  const char *seccomp;
  const char *rootfs;
  const char *bundle;
  double timeout, idle_timeout, grace;
  bool ephemeral;
  struct spec_strv mounts, env;
  const char *cwd;
  int64_t memory;
  int64_t pids;
  double cpus;
  const char *net;
  const char *id;
  const char *root;
  bool debug;
  char **cmd; /* after "--"; NULL: the config's */
  int n_cmd;
};

/* What must be undone at exit, also by the watcher if we are killed. Each path is sent to the
 * watcher as soon as it exists (one record per pipe write: atomic below PIPE_BUF). */
#define PLAN_PATH_MAX 200
struct cleanup_plan {
  char tmp_bundle[PLAN_PATH_MAX];    /* generated bundle dir (--rootfs), or "" */
  char ephemeral_dir[PLAN_PATH_MAX]; /* mount point dir of --ephemeral, or "" */
  int watcher_fd;                    /* our end of the watcher's pipe, or -1 */
};
struct plan_record {
  char kind; /* 'B' tmp_bundle, 'E' ephemeral_dir, 'D' done: we cleaned up ourselves */
  char path[PLAN_PATH_MAX];
};

static void plan_tell(const struct cleanup_plan *plan, char kind, const char *path) {
  if (plan->watcher_fd < 0)
    return;
  struct plan_record rec = {.kind = kind};
  if (path)
    snprintf(rec.path, sizeof(rec.path), "%s", path);
  ssize_t n;
  do
    n = write(plan->watcher_fd, &rec, sizeof(rec));
  while (n < 0 && errno == EINTR);
}

static void die_usage(const char *fmt, const char *arg) {
  fprintf(stderr, "codemode-run: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, " (see codemode-run --help)\n");
  exit(EXIT_RUN_ERROR);
}

static int fail(struct cm_error *err) {
  cleanup_free char *msg = cm_error_format(err);
  fprintf(stderr, "codemode-run: %s\n", msg);
  cm_error_free(err);
  return EXIT_RUN_ERROR;
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

static void strv_push(struct spec_strv *v, const char *s) {
  char **grown = realloc(v->items, (v->count + 2) * sizeof(char *));
  if (grown == NULL)
    abort();
  v->items = grown;
  v->items[v->count++] = xstrdup(s);
  v->items[v->count] = NULL;
}

static void parse_args(int argc, char **argv, struct run_options *o) {
  enum {
    O_PROFILE = 256,
    O_EXPLAIN,
    O_SECCOMP,
    O_ROOTFS,
    O_TIMEOUT,
    O_IDLE,
    O_GRACE,
    O_EPHEMERAL,
    O_MOUNT,
    O_ENV,
    O_CWD,
    O_MEMORY,
    O_PIDS,
    O_CPUS,
    O_NET,
    O_ID,
    O_ROOT,
    O_DEBUG
  };
  static const struct option opts[] = {
      {"profile", required_argument, NULL, O_PROFILE},
      {"explain", no_argument, NULL, O_EXPLAIN},
      {"seccomp", required_argument, NULL, O_SECCOMP},
      {"rootfs", required_argument, NULL, O_ROOTFS},
      {"timeout", required_argument, NULL, O_TIMEOUT},
      {"idle-timeout", required_argument, NULL, O_IDLE},
      {"grace", required_argument, NULL, O_GRACE},
      {"ephemeral", no_argument, NULL, O_EPHEMERAL},
      {"mount", required_argument, NULL, O_MOUNT},
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
    case O_TIMEOUT: o->timeout = parse_seconds("--timeout", optarg); break;
    case O_IDLE: o->idle_timeout = parse_seconds("--idle-timeout", optarg); break;
    case O_GRACE: o->grace = parse_seconds("--grace", optarg); break;
    case O_EPHEMERAL: o->ephemeral = true; break;
    case O_MOUNT: strv_push(&o->mounts, optarg); break;
    case O_ENV:
      if (strchr(optarg, '=') == NULL || optarg[0] == '=')
        die_usage("--env: \"%s\" is not K=V", optarg);
      strv_push(&o->env, optarg);
      break;
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
    case 'h': fputs(usage, stdout); exit(0);
    case 'v': printf("codemode-run version %s\nspec: %s\n", CODEMODE_VERSION, SPEC_OCI_VERSION); exit(0);
    default: fputs(usage, stderr); exit(EXIT_RUN_ERROR);
    }
  }
  /* getopt consumes a "--" that directly follows our options (the --rootfs form). */
  bool dashdash = optind > 1 && strcmp(argv[optind - 1], "--") == 0;
  if (dashdash && !o->rootfs)
    die_usage("%s", "missing BUNDLE before --");
  if (dashdash) {
    o->cmd = argv + optind;
    o->n_cmd = argc - optind;
    if (o->n_cmd == 0)
      die_usage("%s", "-- must be followed by a command");
    return;
  }
  if (!o->rootfs) {
    if (optind >= argc || strcmp(argv[optind], "--") == 0)
      die_usage("%s", "missing BUNDLE (or --rootfs DIR)");
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
}

/* --- building the spec ---------------------------------------------------------------------- */

/* --rootfs: a bundle dir holding the default config (written to disk: the runtime keeps a copy
 * of the config file for exec and hooks), root.path pointing at DIR. */
static int make_generated_bundle(const struct run_options *o, struct cleanup_plan *plan,
                                 struct cm_error **err) {
  char rootfs[PATH_MAX];
  if (realpath(o->rootfs, rootfs) == NULL)
    return cm_error_set(err, errno, "--rootfs %s", o->rootfs);
  snprintf(plan->tmp_bundle, sizeof(plan->tmp_bundle), "/tmp/codemode-run.XXXXXX");
  if (mkdtemp(plan->tmp_bundle) == NULL) {
    plan->tmp_bundle[0] = '\0';
    return cm_error_set(err, errno, "mkdtemp");
  }
  plan_tell(plan, 'B', plan->tmp_bundle);
  cleanup_free char *json = spec_default_json(false);
  /* Point root.path at DIR: the default config says "rootfs"; a symlink keeps the JSON as is. */
  char link[PATH_MAX + 16], cfg[PATH_MAX + 16];
  snprintf(link, sizeof(link), "%s/rootfs", plan->tmp_bundle);
  snprintf(cfg, sizeof(cfg), "%s/config.json", plan->tmp_bundle);
  if (symlink(rootfs, link) < 0)
    return cm_error_set(err, errno, "symlink %s", link);
  cleanup_close int fd = open(cfg, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 || write(fd, json, strlen(json)) != (ssize_t)strlen(json))
    return cm_error_set(err, errno, "write %s", cfg);
  return 0;
}

static void replace_env(struct spec_strv *env, const char *kv) {
  size_t klen = (size_t)(strchr(kv, '=') - kv) + 1;
  for (size_t i = 0; i < env->count; i++) {
    if (strncmp(env->items[i], kv, klen) == 0) {
      free(env->items[i]);
      env->items[i] = xstrdup(kv);
      return;
    }
  }
  strv_push(env, kv);
}

static int add_bind(struct spec *s, const char *arg, struct cm_error **err) {
  cleanup_free char *copy = xstrdup(arg);
  char *src = copy, *dst = strchr(copy, ':');
  if (dst == NULL)
    return cm_error_set(err, 0, "--mount %s: expects SRC:DST[:ro|rw]", arg);
  *dst++ = '\0';
  char *mode = strchr(dst, ':');
  if (mode)
    *mode++ = '\0';
  if (mode && strcmp(mode, "ro") != 0 && strcmp(mode, "rw") != 0)
    return cm_error_set(err, 0, "--mount %s: the mode must be ro or rw", arg);
  if (dst[0] != '/')
    return cm_error_set(err, 0, "--mount %s: DST must be absolute", arg);
  char real[PATH_MAX];
  if (realpath(src, real) == NULL)
    return cm_error_set(err, errno, "--mount %s", src);
  struct spec_mount *grown = realloc(s->mounts, (s->n_mounts + 1) * sizeof(*grown));
  if (grown == NULL)
    abort();
  s->mounts = grown;
  struct spec_mount *m = &s->mounts[s->n_mounts++];
  bool dotdot = false;
  char *clean = path_clean_absolute(dst, &dotdot);
  if (clean == NULL) {
    s->n_mounts--;
    return cm_error_set(err, 0, "--mount %s: DST must not contain ..", arg);
  }
  *m = (struct spec_mount){.destination = clean, .type = xstrdup("bind"), .source = xstrdup(real)};
  strv_push(&m->options, "rbind");
  strv_push(&m->options, mode && strcmp(mode, "rw") == 0 ? "rw" : "ro");
  strv_push(&m->options, "nosuid");
  strv_push(&m->options, "nodev");
  spec_mount_decode_options(m);
  return 0;
}

/* The command-line options, applied to the loaded config before the profile tightens it. */
static int apply_options(struct spec *s, const struct run_options *o, const char *bundle,
                         struct cm_error **err) {
  struct spec_process *p = s->process;
  if (p == NULL)
    return cm_error_set(err, 0, "config.json: .process: missing");
  /* stdio is the caller's pipes; a tty would need a console socket and mangle the bytes. */
  p->terminal = false;
  if (o->cmd) {
    spec_strv_free(&p->args);
    for (int i = 0; i < o->n_cmd; i++)
      strv_push(&p->args, o->cmd[i]);
  }
  for (size_t i = 0; i < o->env.count; i++)
    replace_env(&p->env, o->env.items[i]);
  if (o->cwd) {
    free(p->cwd);
    p->cwd = xstrdup(o->cwd);
  }
  for (size_t i = 0; i < o->mounts.count; i++)
    if (add_bind(s, o->mounts.items[i], err) < 0)
      return -1;
  struct spec_resources *res = &s->linux_.resources;
  if (o->memory) {
    res->present = res->memory.present = true;
    res->memory.limit = (struct spec_opt_i64){true, o->memory};
    if (res->memory.swap.set && res->memory.swap.value >= 0 && res->memory.swap.value < o->memory)
      res->memory.swap.value = o->memory;
  }
  if (o->pids) {
    res->present = res->has_pids = true;
    res->pids_limit = o->pids;
  }
  if (o->cpus > 0) {
    res->present = res->cpu.present = true;
    uint64_t period = res->cpu.period.set && res->cpu.period.value ? res->cpu.period.value : 100000;
    res->cpu.period = (struct spec_opt_u64){true, period};
    res->cpu.quota = (struct spec_opt_i64){true, (int64_t)ceil(o->cpus * (double)period)};
  }
  struct spec_namespace *net = &s->linux_.namespaces[SPEC_NS_NETWORK];
  if (o->net && strcmp(o->net, "host") == 0) {
    /* Sharing ours: the mcp profiles refuse this with an error naming them. */
    free(net->path);
    *net = (struct spec_namespace){0};
  } else {
    /* none (the default): a new namespace; the runtime brings lo up in it. */
    free(net->path);
    *net = (struct spec_namespace){.present = true};
  }
  s->has_linux = true;
  if (o->seccomp) {
    struct seccomp_profile_target target = {.capabilities = p->capabilities.bounding};
    struct spec_seccomp loaded;
    if (seccomp_profile_load(o->seccomp, &target, &loaded, err) < 0)
      return cm_error_prefix(err, "--seccomp");
    spec_seccomp_clear(&s->linux_.seccomp);
    s->linux_.seccomp = loaded;
  }
  (void)bundle;
  return 0;
}

/* --ephemeral: our own mount namespace (so every mount here vanishes with us, even on SIGKILL),
 * a size-limited tmpfs holding the overlay's upper and work dirs, the overlay over the rootfs.
 * The container's mount namespace is created from ours and sees it. */
static int make_ephemeral_root(struct spec *s, const char *bundle, struct cleanup_plan *plan,
                               struct cm_error **err) {
  char lower[PATH_MAX];
  cleanup_free char *joined = NULL;
  const char *root = s->root_path;
  if (root[0] != '/') {
    if (asprintf(&joined, "%s/%s", bundle, root) < 0)
      abort();
    root = joined;
  }
  if (realpath(root, lower) == NULL)
    return cm_error_set(err, errno, "--ephemeral: rootfs %s", root);
  if (unshare(CLONE_NEWNS) < 0)
    return cm_error_set(err, errno, "--ephemeral: unshare mount namespace");
  /* Slave, not shared: nothing mounted here may propagate back to the host. */
  if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
    return cm_error_set(err, errno, "--ephemeral: make / rslave");
  snprintf(plan->ephemeral_dir, sizeof(plan->ephemeral_dir), "/tmp/codemode-run-eph.XXXXXX");
  if (mkdtemp(plan->ephemeral_dir) == NULL) {
    plan->ephemeral_dir[0] = '\0';
    return cm_error_set(err, errno, "--ephemeral: mkdtemp");
  }
  plan_tell(plan, 'E', plan->ephemeral_dir);
  const char *d = plan->ephemeral_dir;
  if (mount("tmpfs", d, "tmpfs", MS_NOSUID | MS_NODEV, "size=256m,mode=0755") < 0)
    return cm_error_set(err, errno, "--ephemeral: mount tmpfs on %s", d);
  char upper[PATH_MAX + 8], work[PATH_MAX + 8], merged[PATH_MAX + 8];
  snprintf(upper, sizeof(upper), "%s/upper", d);
  snprintf(work, sizeof(work), "%s/work", d);
  snprintf(merged, sizeof(merged), "%s/merged", d);
  if (mkdir(upper, 0755) < 0 || mkdir(work, 0755) < 0 || mkdir(merged, 0755) < 0)
    return cm_error_set(err, errno, "--ephemeral: mkdir in %s", d);
  cleanup_free char *data = NULL;
  if (asprintf(&data, "lowerdir=%s,upperdir=%s,workdir=%s", lower, upper, work) < 0)
    abort();
  if (mount("overlay", merged, "overlay", 0, data) < 0)
    return cm_error_set(err, errno, "--ephemeral: mount overlay (%s)", data);
  free(s->root_path);
  s->root_path = xstrdup(merged);
  return 0;
}

/* --- the watcher ------------------------------------------------------------------------------ */

static void remove_leftovers(const struct cleanup_plan *plan) {
  if (plan->tmp_bundle[0]) {
    char p[PATH_MAX + 16];
    snprintf(p, sizeof(p), "%s/rootfs", plan->tmp_bundle);
    unlink(p);
    snprintf(p, sizeof(p), "%s/config.json", plan->tmp_bundle);
    unlink(p);
    rmdir(plan->tmp_bundle);
  }
  /* The mounts died with our mount namespace; only the empty directory is on the host. */
  if (plan->ephemeral_dir[0])
    rmdir(plan->ephemeral_dir);
}

/* Forked before anything exists. Reads records until EOF: 'D' means we cleaned up ourselves; EOF
 * without it means we were killed: delete the container (SIGKILL to its cgroup, state dir,
 * cgroup) and remove the paths we told it about. */
static int start_watcher(const struct runtime_context *ctx, const char *id) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0)
    return -1;
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid > 0) {
    close(p[0]);
    return p[1];
  }
  close(p[1]);
  /* Its own session: a kill of the caller's process group must not take the cleaner with it. */
  setsid();
  int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devnull >= 0) {
    /* The client waits for EOF on the server's stdout: never hold its pipes. */
    dup2(devnull, STDIN_FILENO);
    dup2(devnull, STDOUT_FILENO);
  }
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, NULL);
  struct cleanup_plan plan = {.watcher_fd = -1};
  for (;;) {
    struct plan_record rec;
    ssize_t n = read(p[0], &rec, sizeof(rec));
    if (n < 0 && errno == EINTR)
      continue;
    if (n != (ssize_t)sizeof(rec))
      break;
    rec.path[sizeof(rec.path) - 1] = '\0';
    if (rec.kind == 'D')
      _exit(0);
    if (rec.kind == 'B')
      memcpy(plan.tmp_bundle, rec.path, sizeof(rec.path));
    if (rec.kind == 'E')
      memcpy(plan.ephemeral_dir, rec.path, sizeof(rec.path));
  }
  struct cm_error *err = NULL;
  cleanup_free char *dir = state_dir_path(ctx->root, id);
  if (access(dir, F_OK) == 0 && runtime_delete(ctx, id, true, &err) < 0) {
    cm_error_freep(&err);
    /* Killed mid-create: init died with the sync socket; only the state dir is left. */
    state_dir_remove(ctx->root, id, &err);
    cm_error_freep(&err);
  }
  remove_leftovers(&plan);
  _exit(0);
}

/* --- waiting ---------------------------------------------------------------------------------- */

struct loop {
  pid_t init;
  const struct runtime_context *ctx;
  const char *id;
  int sigfd, timeout_fd, grace_fd, idle_fd;
  double grace, idle;
  /* --idle-timeout only: we sit between the caller's stdio and the container's pipes. */
  int in_from, in_to, out_from, out_to;
  bool timed_out;
  bool term_sent;
};

static int timer_arm(int fd, double seconds) {
  struct itimerspec its = {0};
  its.it_value.tv_sec = (time_t)seconds;
  its.it_value.tv_nsec = (long)((seconds - (double)(time_t)seconds) * 1e9);
  if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
    its.it_value.tv_nsec = 1;
  return timerfd_settime(fd, 0, &its, NULL);
}

static void stop_container(struct loop *l, int sig) {
  struct cm_error *err = NULL;
  /* Every process in the container, not only init: a double-forked child must not linger. */
  if (runtime_kill(l->ctx, l->id, sig, true, &err) < 0) {
    cm_error_freep(&err);
    kill(l->init, sig);
  }
  if (sig != SIGKILL && !l->term_sent) {
    l->term_sent = true;
    timer_arm(l->grace_fd, l->grace);
  }
}

static int exit_code_of(int status) {
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return EXIT_RUN_ERROR;
}

static int wait_loop(struct loop *l) {
  int status = 0;
  bool exited = false;
  while (!exited || l->out_from >= 0) {
    struct pollfd fds[6] = {
        {.fd = l->sigfd, .events = POLLIN},
        {.fd = l->timeout_fd, .events = POLLIN},
        {.fd = l->grace_fd, .events = POLLIN},
        {.fd = l->idle_fd, .events = POLLIN},
        {.fd = exited ? -1 : l->in_from, .events = POLLIN},
        {.fd = l->out_from, .events = POLLIN},
    };
    /* After init exited, only drain what its output pipe still holds (the pid namespace is gone,
     * so nobody else can keep it open for long). */
    int r = poll(fds, 6, exited ? 200 : -1);
    if (r < 0 && errno != EINTR)
      break;
    if (r == 0 && exited)
      break;
    if (fds[0].revents & POLLIN) {
      struct signalfd_siginfo si;
      while (read(l->sigfd, &si, sizeof(si)) == sizeof(si)) {
        if (si.ssi_signo == SIGCHLD) {
          pid_t p;
          int st;
          while ((p = waitpid(-1, &st, WNOHANG)) > 0)
            if (p == l->init) {
              status = st;
              exited = true;
            }
        } else if (!exited) {
          /* SIGTERM/SIGINT/SIGHUP (also our parent's death signal): pass it on, then SIGKILL
           * after the grace period if the server ignores it. */
          if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT || si.ssi_signo == SIGHUP)
            stop_container(l, (int)si.ssi_signo);
          else
            kill(l->init, (int)si.ssi_signo);
        }
      }
    }
    uint64_t ticks;
    if ((fds[1].revents & POLLIN) && read(l->timeout_fd, &ticks, sizeof(ticks)) > 0 && !exited) {
      fprintf(stderr, "codemode-run: --timeout expired; stopping the container\n");
      l->timed_out = true;
      stop_container(l, SIGTERM);
    }
    if ((fds[2].revents & POLLIN) && read(l->grace_fd, &ticks, sizeof(ticks)) > 0 && !exited)
      stop_container(l, SIGKILL);
    if ((fds[3].revents & POLLIN) && read(l->idle_fd, &ticks, sizeof(ticks)) > 0 && !exited) {
      fprintf(stderr, "codemode-run: --idle-timeout expired; stopping the container\n");
      l->timed_out = true;
      stop_container(l, SIGTERM);
    }
    bool activity = false;
    if (fds[4].revents & (POLLIN | POLLHUP | POLLERR)) {
      activity = true;
      if (!foreground_pump(l->in_from, l->in_to)) {
        /* EOF from the client: the server sees EOF too (MCP's "clean shutdown"). */
        close(l->in_to);
        l->in_to = -1;
        l->in_from = -1;
      }
    }
    if (fds[5].revents & (POLLIN | POLLHUP | POLLERR)) {
      activity = true;
      if (!foreground_pump(l->out_from, l->out_to)) {
        close(l->out_from);
        l->out_from = -1;
      }
    }
    if (activity && l->idle_fd >= 0 && !exited)
      timer_arm(l->idle_fd, l->idle);
  }
  return exited ? exit_code_of(status) : EXIT_RUN_ERROR;
}

/* --idle-timeout: the container gets pipes on 0 and 1; the originals are kept above 2. */
static int interpose_stdio(struct loop *l, int saved[2]) {
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0)
    return -1;
  saved[0] = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
  saved[1] = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  /* dup2 clears O_CLOEXEC: the container inherits exactly these two ends as its 0 and 1. */
  if (saved[0] < 0 || saved[1] < 0 || dup2(in[0], STDIN_FILENO) < 0 || dup2(out[1], STDOUT_FILENO) < 0)
    return -1;
  close(in[0]);
  close(out[1]);
  l->in_from = saved[0];
  l->in_to = in[1];
  l->out_from = out[0];
  l->out_to = saved[1];
  return 0;
}

static void restore_stdio(int saved[2]) {
  /* Our copies of the container's ends must go, or the pipes never report EOF. */
  dup2(saved[0], STDIN_FILENO);
  dup2(saved[1], STDOUT_FILENO);
}

/* Does the container need the runtime's sealed re-exec (linux/selfclone.h)? Read from the config
 * as the caller wrote it (or the default one --rootfs generates): the options and the profiles
 * never add an LSM label, a shared pid namespace or CAP_SYS_PTRACE. A config that does not load
 * says no: the real load reports why, and nothing is forked. */
static bool needs_sealed_copy(const struct run_options *o) {
  struct cm_error *ignored = NULL;
  struct spec *s;
  if (o->rootfs) {
    cleanup_free char *json = spec_default_json(false);
    s = spec_load_string(json, strlen(json), "default config", &ignored);
  } else {
    char cfg[PATH_MAX + 16];
    snprintf(cfg, sizeof(cfg), "%s/config.json", o->bundle);
    s = spec_load_file(cfg, "config.json", &ignored);
  }
  cm_error_freep(&ignored);
  bool needed = s && s->process && selfclone_required(s, s->process);
  spec_free(s);
  return needed;
}

int main(int argc, char **argv) {
  exec_guard_make_nondumpable(); /* CVE-2019-5736: before anything forks */
  struct cm_error *err = NULL;
  struct run_options o = {.profile = "mcp", .grace = 5, .root = "/run/codemode"};
  parse_args(argc, argv, &o);
  /* The sealed re-exec, if any, before anything is made: it would repeat or leak it. */
  if (!o.explain && needs_sealed_copy(&o) && selfclone_ensure(&err) < 0)
    return fail(err);
  if (cm_log_init(NULL, CM_LOG_TEXT, o.debug) < 0)
    return EXIT_RUN_ERROR;

  /* Die with the caller (an MCP client that crashed): SIGTERM arrives like any other stop
   * request, goes to the container, and the cleanup below runs. */
  pid_t parent = getppid();
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent)
    return EXIT_RUN_ERROR; /* the caller died before we could watch it */

  char id_buf[64];
  if (o.id == NULL) {
    snprintf(id_buf, sizeof(id_buf), "codemode-run-%d", (int)getpid());
    o.id = id_buf;
  }
  struct runtime_context ctx = {.root = o.root, .cgroup_manager = CGROUP_MANAGER_CGROUPFS};
  struct cleanup_plan plan = {.watcher_fd = -1};
  int rc = EXIT_RUN_ERROR;
  struct spec *s = NULL;
  struct policy_result pol = {0};
  char bundle[PATH_MAX];

  if (container_id_validate(o.id, &err) < 0)
    return fail(err);
  /* Block every signal before the container exists: none is lost, all wait in the signalfd. */
  sigset_t all, old;
  sigfillset(&all);
  sigdelset(&all, SIGSEGV);
  sigdelset(&all, SIGBUS);
  sigdelset(&all, SIGFPE);
  sigdelset(&all, SIGILL);
  sigprocmask(SIG_BLOCK, &all, &old);

  if (!o.explain) {
    plan.watcher_fd = start_watcher(&ctx, o.id);
    if (plan.watcher_fd < 0) {
      cm_error_set(&err, errno, "start the cleanup watcher");
      return fail(err);
    }
  }
  if (o.rootfs && make_generated_bundle(&o, &plan, &err) < 0)
    goto out_err;
  const char *b = o.rootfs ? plan.tmp_bundle : o.bundle;
  if (realpath(b, bundle) == NULL) {
    cm_error_set(&err, errno, "bundle %s", b);
    goto out_err;
  }
  char cfg[PATH_MAX + 16];
  snprintf(cfg, sizeof(cfg), "%s/config.json", bundle);
  s = spec_load_file(cfg, "config.json", &err);
  if (s == NULL || apply_options(s, &o, bundle, &err) < 0)
    goto out_err;
  enum policy_profile profile;
  if (policy_effective_profile(s, o.profile, &profile, &err) < 0 ||
      policy_apply(s, profile, bundle, &pol, &err) < 0)
    goto out_err;
  for (size_t i = 0; i < pol.report.count; i++)
    cm_debug("profile %s: %s", policy_profile_name(profile), pol.report.lines[i]);
  if (o.explain) {
    /* The one case where we write to stdout: the user asked for this report. */
    printf("profile: %s\n", policy_profile_name(profile));
    for (size_t i = 0; i < pol.report.count; i++)
      printf("%s\n", pol.report.lines[i]);
    if (o.ephemeral)
      printf("root: an overlay with a throwaway tmpfs upper layer (--ephemeral): writable, never saved\n");
    rc = 0;
    goto out;
  }
  if (o.ephemeral) {
    if (make_ephemeral_root(s, bundle, &plan, &err) < 0)
      goto out_err;
    /* Writes land in the throwaway upper layer: the rootfs on disk stays as it was. */
    s->root_readonly = false;
    cm_debug("--ephemeral: root writable through an overlay at %s", s->root_path);
  }

  struct loop l = {.ctx = &ctx,
                   .id = o.id,
                   .sigfd = -1,
                   .timeout_fd = -1,
                   .grace_fd = -1,
                   .idle_fd = -1,
                   .grace = o.grace,
                   .idle = o.idle_timeout,
                   .in_from = -1,
                   .in_to = -1,
                   .out_from = -1,
                   .out_to = -1};
  int saved[2] = {-1, -1};
  if (o.idle_timeout > 0 && interpose_stdio(&l, saved) < 0) {
    cm_error_set(&err, errno, "--idle-timeout: set up pipes");
    goto out_err;
  }
  struct create_options co = {.id = o.id,
                              .bundle = bundle,
                              .config_path = cfg,
                              .foreground = true,
                              .start_at_once = true,
                              .spec = s,
                              .no_reexec = true,
                              .stacked_seccomp = pol.stacked_seccomp.present ? &pol.stacked_seccomp : NULL};
  struct created_container cc = {.pid = -1, .console_master = -1, .start_sock = -1};
  int created = runtime_create(&ctx, &co, &cc, &err);
  if (o.idle_timeout > 0) {
    restore_stdio(saved);
  } else if (created == 0) {
    /* The container has its own copies of our stdin and stdout: drop ours, so the caller sees
     * EOF exactly when the container's processes are gone. */
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (devnull >= 0) {
      dup2(devnull, STDIN_FILENO);
      dup2(devnull, STDOUT_FILENO);
      close(devnull);
    }
  }
  if (created < 0)
    goto out_err;
  l.init = cc.pid;
  if (runtime_start_at_once(&ctx, o.id, s, cc.start_sock, &err) < 0)
    goto out_delete;
  l.sigfd = signalfd(-1, &all, SFD_CLOEXEC | SFD_NONBLOCK);
  l.timeout_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
  l.grace_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
  if (o.idle_timeout > 0)
    l.idle_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
  if (l.sigfd < 0 || l.timeout_fd < 0 || l.grace_fd < 0 || (o.idle_timeout > 0 && l.idle_fd < 0)) {
    cm_error_set(&err, errno, "signalfd/timerfd");
    goto out_delete;
  }
  if (o.timeout > 0)
    timer_arm(l.timeout_fd, o.timeout);
  if (l.idle_fd >= 0)
    timer_arm(l.idle_fd, o.idle_timeout);
  rc = wait_loop(&l);
  if (l.timed_out)
    rc = EXIT_TIMEOUT;
  goto out_delete_quiet;

out_delete:
  rc = fail(err);
  err = NULL;
out_delete_quiet : {
  struct cm_error *derr = NULL;
  cleanup_free char *dir = state_dir_path(ctx.root, o.id);
  if (access(dir, F_OK) == 0 && runtime_delete_with_spec(&ctx, o.id, true, s, &derr) < 0) {
    cleanup_free char *msg = cm_error_format(derr);
    fprintf(stderr, "codemode-run: delete %s: %s\n", o.id, msg);
    cm_error_free(derr);
  }
  goto out;
}
out_err:
  rc = fail(err);
out:
  if (s)
    spec_free(s);
  policy_result_free(&pol);
  if (plan.ephemeral_dir[0]) {
    umount2(plan.ephemeral_dir, MNT_DETACH);
  }
  remove_leftovers(&plan);
  /* Cleanup done: the watcher may go. */
  plan_tell(&plan, 'D', NULL);
  if (plan.watcher_fd >= 0)
    close(plan.watcher_fd);
  sigprocmask(SIG_SETMASK, &old, NULL);
  return rc;
}
