/* codemode learn: learn a bundle's policy (codemode-run --learn, run for you), or merge the
 * policies of several learning runs (each exercised other tools of the server) into one.
 * The mechanism is src/supervisor/ (the learning run) and src/policy/learned_policy.c (merge). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "policy/learned_policy.h"
#include "util/cleanup.h"
#include "util/sibling.h"

static const char help[] =
    "usage: codemode learn -o OUT.json [codemode-run options] BUNDLE [-- CMD ARGS...]\n"
    "       codemode learn --merge [-o OUT.json] A.json B.json [C.json...]\n"
    "\n"
    "The first form runs BUNDLE under codemode-run --learn OUT.json (profile mcp, stdio passed\n"
    "through: drive the server with its client): OUT.json gets the seccomp profile, Landlock\n"
    "rules and egress allowlist of what the run did, each rule with when it was seen.\n"
    "The second unions learning runs (different tools exercised) into one policy, on stdout\n"
    "unless -o. Apply a policy with codemode-run --policy FILE; compare two with\n"
    "codemode policy diff OLD NEW. codemode-profiles(5).\n"
    "\n"
    "Options:\n"
    "  -o, --output FILE  where the policy goes\n"
    "  --merge            merge the policy files given\n"
    "  -h, --help         this help\n";

static int write_out(const char *path, const char *text, struct cm_error **err) {
  if (path == NULL || strcmp(path, "-") == 0) {
    fputs(text, stdout);
    return fflush(stdout) == 0 ? 0 : cm_error_set(err, errno, "write the policy");
  }
  cleanup_free char *tmp = NULL;
  if (asprintf(&tmp, "%s.tmp-%d", path, (int)getpid()) < 0)
    abort();
  cleanup_close int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0)
    return cm_error_set(err, errno, "-o %s", path);
  size_t len = strlen(text);
  if (write(fd, text, len) != (ssize_t)len || fsync(fd) < 0 || rename(tmp, path) < 0) {
    int e = errno;
    unlink(tmp);
    return cm_error_set(err, e, "-o %s", path);
  }
  return 0;
}

static int merge(const char *out, char **files, int n) {
  struct cm_error *err = NULL;
  struct learned_policy merged = {0};
  for (int i = 0; i < n; i++) {
    struct learned_policy p;
    if (learned_policy_load_file(files[i], &p, &err) < 0) {
      learned_policy_free(&merged);
      return cli_fail(err);
    }
    learned_policy_merge(&merged, &p);
    learned_policy_free(&p);
  }
  cleanup_free char *json = learned_policy_json(&merged);
  learned_policy_free(&merged);
  if (write_out(out, json, &err) < 0)
    return cli_fail(err);
  return 0;
}

int cmd_learn(struct cli_globals *g, int argc, char **argv) {
  const char *out = NULL;
  bool do_merge = false;
  int i = 1;
  /* Our own options first; everything else is codemode-run's. */
  for (; i < argc; i++) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      fputs(help, stdout);
      return 0;
    } else if (strcmp(argv[i], "--merge") == 0) {
      do_merge = true;
    } else if ((strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) && i + 1 < argc) {
      out = argv[++i];
    } else if (strncmp(argv[i], "--output=", 9) == 0) {
      out = argv[i] + 9;
    } else {
      break;
    }
  }
  if (do_merge) {
    /* Here -o may come anywhere: `--merge A B -o OUT`. */
    char **files = calloc((size_t)argc, sizeof(char *));
    if (files == NULL)
      abort();
    int n_files = 0;
    for (int k = i; k < argc; k++) {
      if ((strcmp(argv[k], "-o") == 0 || strcmp(argv[k], "--output") == 0) && k + 1 < argc)
        out = argv[++k];
      else if (strncmp(argv[k], "--output=", 9) == 0)
        out = argv[k] + 9;
      else if (argv[k][0] == '-' && argv[k][1] != '\0') {
        free(files);
        return cli_usage_error("learn", "--merge: unexpected option \"%s\"", argv[k]);
      } else
        files[n_files++] = argv[k];
    }
    int rc = n_files < 2 ? cli_usage_error("learn", "--merge needs two policy files or more")
                         : merge(out, files, n_files);
    free(files);
    return rc;
  }
  if (out == NULL)
    return cli_usage_error("learn", "-o OUT.json: where the learned policy goes");
  if (i >= argc)
    return cli_usage_error("learn", "missing BUNDLE");
  /* codemode-run --root ROOT [--profile P] [egress flags] --learn OUT ARGS… */
  cleanup_free char *run = cm_sibling_binary("codemode-run", "CODEMODE_RUN", CODEMODE_BINDIR);
  size_t cap = (size_t)argc + 16 +
               2 * (g->egress.allow_host.count + g->egress.allow_cidr.count + g->egress.deny_host.count +
                    g->egress.deny_cidr.count);
  char **args = calloc(cap, sizeof(char *));
  if (args == NULL)
    abort();
  size_t n = 0;
  args[n++] = "codemode-run";
  args[n++] = "--root";
  args[n++] = (char *)g->ctx.root;
  if (g->profile) {
    args[n++] = "--profile";
    args[n++] = (char *)g->profile;
  }
  const struct {
    const char *flag;
    const struct spec_strv *v;
  } egress[] = {{"--allow-host", &g->egress.allow_host},
                {"--allow-cidr", &g->egress.allow_cidr},
                {"--deny-host", &g->egress.deny_host},
                {"--deny-cidr", &g->egress.deny_cidr}};
  for (size_t e = 0; e < sizeof(egress) / sizeof(egress[0]); e++)
    for (size_t k = 0; k < egress[e].v->count; k++) {
      args[n++] = (char *)egress[e].flag;
      args[n++] = egress[e].v->items[k];
    }
  if (g->audit_log) {
    args[n++] = "--audit-log";
    args[n++] = (char *)g->audit_log;
  }
  args[n++] = "--learn";
  args[n++] = (char *)out;
  for (; i < argc; i++)
    args[n++] = argv[i];
  args[n] = NULL;
  execv(run, args);
  struct cm_error *err = NULL;
  cm_error_set(&err, errno, "learn: exec %s", run);
  free(args);
  return cli_fail(err);
}
