/* codemode-run's life of one container: the watcher first, then the config (flags applied, the
 * profile's tightening), create, start, the wait loop, and the delete that always runs. Nothing
 * is left behind, even when codemode-run is SIGKILLed: the watcher (watcher.c) waits on a pipe
 * and deletes the container when we vanish without saying goodbye; we die with our parent
 * (PR_SET_PDEATHSIG), and the container's init is pid 1 of its own pid namespace, so its whole
 * process tree goes with it. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "linux/selfclone.h"
#include "policy/profile.h"
#include "runtime/rootless.h"
#include "runtime/state.h"
#include "supervisor/egress_setup.h"
#include "supervisor/supervisor.h"
#include "util/cleanup.h"
#include "util/log.h"
#include "util/host_root.h"

static int fail(struct cm_error *err) {
  cleanup_free char *msg = cm_error_format(err);
  fprintf(stderr, "codemode-run: %s\n", msg);
  cm_error_free(err);
  return EXIT_RUN_ERROR;
}

int supervisor_run_standalone(struct run_options *o) {
  struct cm_error *err = NULL;
  /* fd 3 is the container's init (run_init.c): held by a placeholder until then, so no fd of
   * ours (the watcher's pipe, the image lock) takes that number. */
  if (!o->no_init && fcntl(3, F_GETFD) < 0) {
    int ph = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (ph >= 0 && ph != 3) {
      dup3(ph, 3, O_CLOEXEC);
      close(ph);
    }
  }
  /* The sealed re-exec, if any, before anything is made: it would repeat or leak it. */
  if (!o->explain && run_spec_needs_sealed_copy(o) && selfclone_ensure(&err) < 0)
    return fail(err);
  if (cm_log_init(NULL, CM_LOG_TEXT, o->debug) < 0)
    return EXIT_RUN_ERROR;

  /* Die with the caller (an MCP client that crashed): SIGTERM arrives like any other stop
   * request, goes to the container, and the cleanup below runs. */
  pid_t parent = getppid();
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent)
    return EXIT_RUN_ERROR; /* the caller died before we could watch it */

  char id_buf[64];
  if (o->id == NULL) {
    snprintf(id_buf, sizeof(id_buf), "codemode-run-%d", (int)getpid());
    o->id = id_buf;
  }
  cleanup_free char *rootless_root = NULL;
  if (o->root == NULL) {
    /* Not root: the user's own state directory (runtime/rootless.h). */
    if (geteuid() == 0) {
      o->root = "/run/codemode";
    } else {
      rootless_root = rootless_state_root(&err);
      if (rootless_root == NULL)
        return fail(err);
      o->root = rootless_root;
    }
  }
  struct runtime_context ctx = {.root = o->root, .cgroup_manager = CGROUP_MANAGER_CGROUPFS};
  struct cleanup_plan plan = {.watcher_fd = -1, .watcher_pid = -1};
  int rc = EXIT_RUN_ERROR;
  struct spec *s = NULL;
  struct policy_result pol = {0};
  struct run_image image = {.lock_fd = -1};
  struct run_secrets secrets = {0};
  struct egress_config egress = {.audit_fd = -1};
  struct run_observe *observe = NULL; /* --learn, --policy, the audit (run_observe.c) */
  char bundle[PATH_MAX];

  if (container_id_validate(o->id, &err) < 0)
    return fail(err);
  enum policy_profile asked;
  struct cm_error *ignored = NULL;
  if (!o->explain && o->profile && policy_profile_from_name(o->profile, &asked, &ignored) == 0 &&
      asked == POLICY_PROFILE_CI && !cm_host_root() && geteuid() != 0) {
    /* A normal user's job with fewer ids than it needs: said at start (before our own user
     * namespace, scratch.c), not as a late EINVAL inside the job. */
    cleanup_free char *warning = rootless_ci_subid_warning();
    if (warning)
      fprintf(stderr, "codemode-run: warning: %s\n", warning);
  }
  cm_error_freep(&ignored);
  /* Block every signal before the container exists: none is lost, all wait in the signalfd. */
  sigset_t all, old;
  sigfillset(&all);
  sigdelset(&all, SIGSEGV);
  sigdelset(&all, SIGBUS);
  sigdelset(&all, SIGFPE);
  sigdelset(&all, SIGILL);
  sigprocmask(SIG_BLOCK, &all, &old);

  if (!o->explain) {
    plan.watcher_fd = watcher_start(&ctx, o->id, &plan.watcher_pid);
    if (plan.watcher_fd < 0) {
      cm_error_set(&err, errno, "start the cleanup watcher");
      return fail(err);
    }
  }
  if (o->rootfs && run_spec_generate_bundle("--rootfs", o->rootfs, &plan, &err) < 0)
    goto out_err;
  /* --image: the bundle's rootfs is the image's; the process is set from its config below. */
  if (o->image && run_spec_generate_bundle("--image", "/", &plan, &err) < 0)
    goto out_err;
  if (o->host) {
    char root[PATH_MAX];
    if (run_host_make_root(&plan, root, sizeof(root), &err) < 0 ||
        run_spec_generate_bundle("--host", root, &plan, &err) < 0)
      goto out_err;
  }
  const char *b = o->rootfs || o->image || o->host ? plan.tmp_bundle : o->bundle;
  if (realpath(b, bundle) == NULL) {
    cm_error_set(&err, errno, "bundle %s", b);
    goto out_err;
  }
  char cfg[PATH_MAX + 16];
  snprintf(cfg, sizeof(cfg), "%s/config.json", bundle);
  s = spec_load_file(cfg, "config.json", &err);
  if (s == NULL || (o->image && run_image_prepare(s, o, &image, &err) < 0))
    goto out_err;
  if (o->host)
    run_host_process(s, o);
  size_t config_mounts = s->n_mounts; /* the command line's binds follow */
  /* The profile first (the flag and the config's annotation, which the options do not touch):
   * a ci job's --state directories are made for it (run_spec.c). */
  enum policy_profile profile;
  if (policy_effective_profile(s, o->profile, &profile, &err) < 0 ||
      run_spec_apply_options(s, o, profile, &err) < 0)
    goto out_err;
  if (run_observe_load(o, &observe, &err) < 0)
    goto out_err;
  if (profile == POLICY_PROFILE_CI) {
    /* The profile's filter is ci.json in place of the config's (policy/profile_ci.c). */
    if (o->seccomp) {
      cm_error_set(&err, 0, "--seccomp %s: under --profile ci the filter is ci.json (codemode-profiles(5)); drop "
                   "--seccomp", o->seccomp);
      goto out_err;
    }
    /* A job's root is writable and thrown away: the --ephemeral overlay (an image's rootfs in
     * the store gets its throwaway upper layer, now writable). */
    o->ephemeral = true;
  }
  if (policy_apply(s, profile, bundle, &pol, &err) < 0 || policy_apply_egress(s, &o->egress, &pol, &err) < 0)
    goto out_err;
  /* Writes land in the throwaway upper layer: the rootfs on disk stays as it was. */
  if (o->ephemeral)
    policy_root_made_writable(s, &pol, "--ephemeral");
  if (o->dns_upstream && !egress_policy_active(&pol.egress)) {
    cm_error_set(&err, 0, "--dns-upstream: nothing is allowed (no --allow-host/--allow-cidr): no broker resolves");
    goto out_err;
  }
  for (size_t i = 0; i < pol.report.count; i++) {
    const char *line = pol.report.lines[i];
    cm_debug("profile %s: %s", policy_profile_name(profile), line);
    /* A limit the profile put on the server is never a surprise: one line each on stderr (the
     * flag that raises it is in --help), the rest only with --explain or --debug. */
    if (!o->explain && !o->debug &&
        (strncmp(line, "linux.resources.", 16) == 0 || strncmp(line, "process.rlimits", 15) == 0))
      fprintf(stderr, "codemode-run: profile %s: %s\n", policy_profile_name(profile), line);
  }
  if (run_observe_prepare(observe, o, s, &pol, profile, bundle, &err) < 0)
    goto out_err;
  if (o->explain) {
    /* The one case where we write to stdout: the user asked for this report. */
    printf("profile: %s\n", policy_profile_name(profile));
    for (size_t i = 0; i < pol.report.count; i++)
      printf("%s\n", pol.report.lines[i]);
    if (o->ephemeral)
      printf("root: an overlay with a throwaway tmpfs upper layer (--ephemeral): writable, never saved\n");
    else if (o->image)
      printf("root: the image's rootfs in the store under a throwaway overlay upper layer (%s)\n",
             s->root_readonly ? "read-only" : "writable, never saved");
    struct policy_report landlock = {0};
    policy_landlock_describe(s, &pol, runtime_landlock_abi(), &landlock);
    for (size_t i = 0; i < landlock.count; i++)
      printf("%s\n", landlock.lines[i]);
    policy_report_free(&landlock);
    run_observe_explain(observe, o);
    if (!cm_host_root()) {
      char line[1024];
      if (rootless_cgroup_explain(&ctx, s, o->id, line, sizeof(line), &err) < 0)
        goto out_err;
      printf("%s\n", line);
    }
    rc = 0;
    goto out;
  }
  if ((o->host && run_host_root(s, config_mounts, o->ephemeral || o->image, &plan, &err) < 0) || run_spec_cow_mounts(s, o, &plan, &err) < 0)
    goto out_err;
  if (o->host && profile == POLICY_PROFILE_CI && run_host_ci_containers(&plan, &err) < 0)
    goto out_err;
  /* Those mounts are ours, made after the profile: the Landlock layer learns them (the rights
   * of every mount as it now is; the profile's are unchanged by this). */
  if (o->host || o->mounts.count)
    for (size_t i = 0; i < s->n_mounts; i++)
      policy_landlock_add_mount(&pol, &s->mounts[i]);
  if (run_spec_check_process(s, o, bundle, &err) < 0)
    goto out_err;
  if (run_secrets_apply(o, s, &secrets, &err) < 0)
    goto out_err;
  if (secrets.n_bound && !egress_policy_active(&pol.egress)) {
    cm_error_set(&err, 0, "--secret-host: the container may reach no host (add --allow-host)");
    goto out_err;
  }
  if (egress_policy_active(&pol.egress)) {
    struct egress_setup_options eo = {.dns_upstream = o->dns_upstream,
                                      .audit_log = o->audit_log,
                                      .secrets = secrets.bound,
                                      .n_secrets = secrets.n_bound};
    if (egress_setup_build(&pol.egress, &eo, &egress, &err) < 0)
      goto out_err;
    run_observe_egress(observe, &egress);
  }
  /* An image's rootfs in the store is shared by every run: never written, so always under a
   * throwaway upper layer (even a container that could remount its root writable writes only
   * there). The root stays as read-only as the profile made it unless --ephemeral. */
  if (o->ephemeral || o->image) {
    if (run_spec_ephemeral_root(s, bundle, &plan, &err) < 0)
      goto out_err;
    if (o->ephemeral)
      cm_debug("--ephemeral: root writable through an overlay at %s", s->root_path);
  }

  struct supervise_loop l = {.ctx = &ctx,
                             .id = o->id,
                             .sigfd = -1,
                             .timeout_fd = -1,
                             .grace_fd = -1,
                             .idle_fd = -1,
                             .grace = o->grace,
                             .idle = o->idle_timeout,
                             .in_from = -1,
                             .in_to = -1,
                             .out_from = -1,
                             .out_to = -1,
                             .err_from = -1,
                             .err_to = -1};
  int saved[3] = {-1, -1, -1};
  /* With a read-only root, the server's output goes through us and is read for EROFS reports
   * (erofs_hints.c); --idle-timeout watches stdin and stdout. Otherwise stdio is the caller's,
   * untouched. */
  struct erofs_hints hints = {.to = STDERR_FILENO, .profile = policy_profile_name(profile)};
  bool watch_erofs = s->root_readonly;
  if (watch_erofs)
    l.hints = &hints;
  if ((o->idle_timeout > 0 || watch_erofs) &&
      supervise_interpose_stdio(&l, o->idle_timeout > 0, watch_erofs, saved) < 0) {
    cm_error_set(&err, errno, "stdio: set up pipes");
    goto out_err;
  }
  scratch_nest_userns(s, &plan);
  int preserve_fds = 0;
  if (!o->no_init && run_init_prepare(s, &preserve_fds, &err) < 0)
    goto out_err;
  struct create_options co = {.id = o->id,
                              .preserve_fds = preserve_fds,
                              .bundle = bundle,
                              .config_path = cfg,
                              .foreground = true,
                              .start_at_once = true,
                              .spec = s,
                              .no_reexec = true,
                              .stacked_seccomp = pol.stacked_seccomp.present ? &pol.stacked_seccomp : NULL,
                              .landlock = pol.landlock.present ? &pol.landlock : NULL,
                              .egress = egress_policy_active(&pol.egress) ? &egress : NULL};
  run_observe_create_options(observe, &co);
  struct created_container cc = {.pid = -1, .console_master = -1, .start_sock = -1};
  int created = runtime_create(&ctx, &co, &cc, &err);
  supervise_restore_stdio(saved);
  if (o->idle_timeout == 0 && created == 0) {
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
  const struct runtime_listener *listener = run_observe_started(observe, cc.pid, &err);
  if (err) {
    close(cc.start_sock);
    goto out_delete;
  }
  if (runtime_start_at_once(&ctx, o->id, s, cc.start_sock, listener, &err) < 0)
    goto out_delete;
  l.sigfd = signalfd(-1, &all, SFD_CLOEXEC | SFD_NONBLOCK);
  l.timeout_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
  l.grace_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
  if (o->idle_timeout > 0)
    l.idle_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
  if (l.sigfd < 0 || l.timeout_fd < 0 || l.grace_fd < 0 || (o->idle_timeout > 0 && l.idle_fd < 0)) {
    cm_error_set(&err, errno, "signalfd/timerfd");
    goto out_delete;
  }
  if (o->timeout > 0)
    supervise_timer_arm(l.timeout_fd, o->timeout);
  if (l.idle_fd >= 0)
    supervise_timer_arm(l.idle_fd, o->idle_timeout);
  rc = supervise_wait(&l);
  if (l.timed_out)
    rc = EXIT_TIMEOUT;
  /* The container's processes are gone: what was learned or denied can be written. */
  if (run_observe_finish(observe, o, s, &err) < 0) {
    fail(err);
    err = NULL;
    if (rc == 0)
      rc = EXIT_RUN_ERROR;
  }
  goto out_delete_quiet;

out_delete:
  run_spec_name_mount_flag(s, o, err);
  rc = fail(err);
  err = NULL;
out_delete_quiet : {
  struct cm_error *derr = NULL;
  cleanup_free char *dir = state_dir_path(ctx.root, o->id);
  if (access(dir, F_OK) == 0 && runtime_delete_with_spec(&ctx, o->id, true, s, &derr) < 0) {
    cleanup_free char *msg = cm_error_format(derr);
    fprintf(stderr, "codemode-run: delete %s: %s\n", o->id, msg);
    cm_error_free(derr);
  }
  goto out;
}
out_err:
  run_spec_name_mount_flag(s, o, err);
  rc = fail(err);
out:
  run_observe_free(observe);
  if (s)
    spec_free(s);
  run_image_release(&image);
  policy_result_free(&pol);
  egress_setup_free(&egress);
  run_secrets_free(&secrets);
  /* A directory made for this run (mkdtemp) must be free of its mount to be removed. The kept,
   * shared mount point needs nothing: the tmpfs and all under it go with our mount namespace
   * when we exit, in the one teardown its other mounts get (an unmount of its own walked the
   * tree and waited out an RCU grace period once more on the way out: issue 27). */
  if (plan.ephemeral_dir[0] && !plan.ephemeral_kept)
    umount2(plan.ephemeral_dir, MNT_DETACH);
  plan_remove_leftovers(&plan);
  /* Cleanup done: the watcher may go. */
  plan_tell(&plan, 'D', NULL);
  if (plan.watcher_fd >= 0)
    close(plan.watcher_fd);
  /* It exits at our 'D' record: wait for it, so that when codemode-run is gone, everything of
   * it is (a caller that checks for leftovers right after sees none). */
  if (plan.watcher_pid > 0)
    while (waitpid(plan.watcher_pid, NULL, 0) < 0 && errno == EINTR)
      ;
  sigprocmask(SIG_SETMASK, &old, NULL);
  return rc;
}
