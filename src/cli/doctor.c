/* codemode doctor [--json]: what this machine can do for codemode (runtime/doctor.h has the
 * checks); one line per check, ok/warn/fail and the fix. Exit 0 unless a check fails. */
#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yajl/yajl_gen.h>

#include "cli/cli.h"
#include "runtime/doctor.h"
#include "util/image_resolved.h"

static const char help[] =
    "usage: codemode [--root DIR] doctor [--json] [--store DIR]\n"
    "\n"
    "One line per check, ok/warn/fail, with the fix: kernel, user namespaces, AppArmor's\n"
    "restriction, cgroup mode and delegation, Landlock, seccomp, idmapped mounts of the state\n"
    "directory and the image store, overlay in a user namespace (tried), /etc/subuid and\n"
    "/etc/subgid with newuidmap, CRIU, registration with Docker and containerd.\n"
    "Exit status 0 unless a check fails.\n"
    "\n"
    "  --json         an array of {\"check\", \"status\", \"detail\", \"fix\"}\n"
    "  --store DIR    the image store to look at (default: codemode-image's)\n"
    "  -h, --help     this help\n";

static void kv(yajl_gen g, const char *k, const char *v) {
  yajl_gen_string(g, (const unsigned char *)k, strlen(k));
  yajl_gen_string(g, (const unsigned char *)v, strlen(v));
}

int cmd_doctor(struct cli_globals *g, int argc, char **argv) {
  static const struct option opts[] = {
      {"json", no_argument, NULL, 'j'},
      {"store", required_argument, NULL, 's'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  bool json = false;
  const char *store = NULL;
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
    case 'j': json = true; break;
    case 's': store = optarg; break;
    case 'h': fputs(help, stdout); return 0;
    default: return cli_usage_error("doctor", "unknown or incomplete option \"%s\"", argv[optind - 1]);
    }
  }
  if (optind < argc)
    return cli_usage_error("doctor", "unexpected argument \"%s\"", argv[optind]);
  char *default_store = store ? NULL : image_store_default_dir();
  struct passwd *pw = getpwuid(geteuid());
  /* criu and newuidmap live in sbin, which a user's PATH often lacks. */
  char path[4096];
  const char *env_path = getenv("PATH");
  snprintf(path, sizeof(path), "%s%s/usr/local/sbin:/usr/sbin:/sbin", env_path ? env_path : "",
           env_path && *env_path ? ":" : "");
  struct doctor_env e = {
      .proc = "/proc",
      .sys = "/sys",
      .etc = "/etc",
      .uid = geteuid(),
      .user = pw ? pw->pw_name : NULL,
      .state_dir = g->ctx.root,
      .store_dir = store ? store : default_store,
      .xdg_runtime_dir = getenv("XDG_RUNTIME_DIR"),
      .landlock_abi = runtime_landlock_abi(),
      .overlay_userns = doctor_probe_overlay_userns(),
      .path = path,
  };
  char criu_detail[512];
  e.criu_check = doctor_probe_criu(e.path, criu_detail, sizeof(criu_detail));
  e.criu_detail = criu_detail;
  struct doctor_check checks[32];
  size_t n = doctor_run(&e, checks, sizeof(checks) / sizeof(checks[0]));
  bool failed = false;
  if (json) {
    yajl_gen gen = yajl_gen_alloc(NULL);
    if (gen == NULL)
      abort();
    yajl_gen_config(gen, yajl_gen_beautify, 1);
    yajl_gen_array_open(gen);
    for (size_t i = 0; i < n; i++) {
      yajl_gen_map_open(gen);
      kv(gen, "check", checks[i].check);
      kv(gen, "status", doctor_status_name(checks[i].status));
      kv(gen, "detail", checks[i].detail);
      kv(gen, "fix", checks[i].fix);
      yajl_gen_map_close(gen);
    }
    yajl_gen_array_close(gen);
    const unsigned char *buf;
    size_t len;
    yajl_gen_get_buf(gen, &buf, &len);
    fwrite(buf, 1, len, stdout);
    yajl_gen_free(gen);
  }
  for (size_t i = 0; i < n; i++) {
    failed |= checks[i].status == DOCTOR_FAIL;
    if (json)
      continue;
    printf("%-4s  %-28s %s\n", doctor_status_name(checks[i].status), checks[i].check, checks[i].detail);
    if (checks[i].fix[0] && checks[i].status != DOCTOR_OK)
      printf("      %-28s fix: %s\n", "", checks[i].fix);
  }
  free(default_store);
  return failed ? 1 : 0;
}
