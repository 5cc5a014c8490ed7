/* tests/bench/landlock_cost BUNDLE print | time N — what Landlock adds to the start of a
 * container under the mcp profile (issue 18), measured step by step. run.sh calls it.
 *
 *   print   the Landlock layer the mcp profile derives for BUNDLE's config, as a landlockconfig
 *           document (run.sh puts it in a bundle's run.codemode.landlock annotation to time a
 *           whole `run` with and without it)
 *   time N  N times: the runtime's share (the profile's derivation from the mounts, the copy
 *           checked and masked for this kernel, landlock.json written to a tmpfs as create
 *           keeps it) in this process, and init's share (every rule path opened,
 *           the ruleset made, landlock_restrict_self) in a fresh child each time, on this
 *           host's paths, which are the same set as the container's (/, /proc, /dev...).
 *           Prints "runtime_ms init_ms" (medians).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "linux/landlock.h"
#include "policy/profile.h"
#include "policy/profile_rules.h"
#include "runtime/state.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(double), cmp);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void die(struct cm_error *err, const char *what) {
  fprintf(stderr, "landlock_cost: %s: %s\n", what, err ? err->msg : "failed");
  exit(1);
}

int main(int argc, char **argv) {
  if (argc < 3 || (strcmp(argv[2], "print") != 0 && (strcmp(argv[2], "time") != 0 || argc < 4))) {
    fprintf(stderr, "usage: landlock_cost BUNDLE print | time N\n");
    return 2;
  }
  char cfg[4096];
  snprintf(cfg, sizeof(cfg), "%s/config.json", argv[1]);
  struct cm_error *err = NULL;
  struct spec *s = spec_load_file(cfg, "config.json", &err);
  if (s == NULL)
    die(err, cfg);
  struct policy_result pol;
  if (policy_apply(s, POLICY_PROFILE_MCP, argv[1], &pol, &err) < 0)
    die(err, "profile mcp");
  if (strcmp(argv[2], "print") == 0) {
    char *json = spec_landlock_config_json(&pol.landlock, false);
    puts(json);
    free(json);
    return 0;
  }
  int n = atoi(argv[3]);
  if (n < 1)
    n = 1;
  int abi = landlock_abi();
  if (abi < 1) {
    fprintf(stderr, "landlock_cost: Landlock is not available\n");
    return 1;
  }
  double *rt = calloc((size_t)n, sizeof(double)), *init = calloc((size_t)n, sizeof(double));
  char dir[] = "/dev/shm/cm-landlock-cost.XXXXXX";
  if (mkdtemp(dir) == NULL)
    return 1;
  int dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  for (int i = 0; i < n; i++) {
    /* The runtime: what create does with the profile's layer before it forks init. */
    double t0 = now_ms();
    struct spec_landlock derived = {0}, layer;
    struct policy_report report = {0};
    policy_landlock_derive(s, true, &derived, &report);
    spec_landlock_copy(&layer, &derived);
    spec_landlock_mask_abi(&layer, landlock_abi());
    char *kept = spec_landlock_kept_json(&layer, 1, abi);
    if (write_file_atomic(dirfd, "landlock.json", kept, strlen(kept), 0600, &err) < 0)
      die(err, "keep");
    rt[i] = now_ms() - t0;
    free(kept);
    spec_landlock_clear(&derived);
    policy_report_free(&report);

    /* init: a fresh process each time (the first open of each path is what a start pays). */
    int p[2];
    if (pipe(p) < 0)
      return 1;
    pid_t pid = fork();
    if (pid == 0) {
      struct landlock_prepared prep;
      prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
      double t1 = now_ms();
      if (landlock_prepare(&layer, 1, "/", &prep, &err) < 0 || landlock_enforce(&prep, &err) < 0)
        die(err, "apply");
      double d = now_ms() - t1;
      if (write(p[1], &d, sizeof(d)) != sizeof(d))
        _exit(1);
      _exit(0);
    }
    close(p[1]);
    if (read(p[0], &init[i], sizeof(double)) != sizeof(double))
      return 1;
    close(p[0]);
    waitpid(pid, NULL, 0);
    spec_landlock_clear(&layer);
  }
  unlinkat(dirfd, "landlock.json", 0);
  close(dirfd);
  rmdir(dir);
  printf("%.4f %.4f\n", median(rt, n), median(init, n));
  free(rt);
  free(init);
  policy_result_free(&pol);
  spec_free(s);
  return 0;
}
