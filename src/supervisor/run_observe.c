/* codemode-run --learn, --policy, --audit-log, --audit-summary: from the flags to the filters
 * create loads and the observer (supervisor/observe.h), and what is written when the container
 * is gone.
 *
 *   --learn FILE   the learning filter (a baseline passes, every other syscall is notified) is
 *                  the supervisor's only listener; FILE gets the policy of what the run did.
 *                  --profile mcp-audit is learn mode too (to FILE, or stderr without --learn).
 *   --policy FILE  the learned seccomp filter stacked after the mcp profile's and the config's,
 *                  the learned Landlock rules as one more layer: both only ever add denials.
 *   --audit-log FILE, --audit-summary
 *                  every filter loaded with SECCOMP_FILTER_FLAG_LOG (the kernel then reports
 *                  each ERRNO it returns), and the audit filter shows the files calls reach. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "linux/landlock.h"
#include "linux/seccomp_listener.h"
#include "policy/learned_policy.h"
#include "policy/seccomp_profile.h"
#include "spec/json_util.h"
#include "supervisor/observe.h"
#include "supervisor/supervisor.h"
#include "util/audit_log.h"
#include "util/cleanup.h"
#include "util/log.h"

struct run_observe {
  bool learning, auditing;
  const char *learn_to;
  struct learned_policy policy;
  bool has_policy;
  struct spec_seccomp policy_seccomp;
  struct spec_landlock policy_landlock;
  struct seccomp_program listener;
  struct observer obs;
  struct learn_session *learn;
  struct audit_session *audit;
  struct observer_sink learn_sink, audit_sink;
  int audit_fd;
  off_t audit_start;
  const struct spec_landlock *layers[3];
  const char *layer_names[3];
  size_t n_layers;
  struct runtime_listener hand_over;
  struct timeval started;
  char started_text[32];
  char *source;
  char *no_records; /* why the kernel's seccomp records cannot be read (rootless), or NULL */
};

/* Learning with an audit log: both hear everything. */
static void tee_call(void *arg, const struct observed_call *c) {
  struct run_observe *r = arg;
  if (r->learn_sink.call)
    r->learn_sink.call(r->learn_sink.arg, c);
  if (r->audit && r->audit_sink.call)
    r->audit_sink.call(r->audit_sink.arg, c);
}
static void tee_denial(void *arg, const struct kernel_denial *d) {
  struct run_observe *r = arg;
  if (r->learn && r->learn_sink.denial)
    r->learn_sink.denial(r->learn_sink.arg, d);
  if (r->audit && r->audit_sink.denial)
    r->audit_sink.denial(r->audit_sink.arg, d);
}
static void tee_no_records(void *arg, const char *why) {
  struct run_observe *r = arg;
  free(r->no_records);
  r->no_records = xstrdup(why);
  if (r->audit && r->audit_sink.no_kernel_records)
    r->audit_sink.no_kernel_records(r->audit_sink.arg, why);
  else
    fprintf(stderr, "codemode-run: %s: the syscalls the profile denies while learning are not listed\n", why);
}

/* The kernel reports every action but ALLOW of a filter loaded with this flag. */
static void log_denials(struct spec_seccomp *sc) {
  if (sc == NULL || !sc->present)
    return;
  for (size_t i = 0; i < sc->flags.count; i++)
    if (strcmp(sc->flags.items[i], "SECCOMP_FILTER_FLAG_LOG") == 0)
      return;
  spec_strv_push(&sc->flags, "SECCOMP_FILTER_FLAG_LOG");
}

static char *describe_source(const struct run_options *o, const char *bundle) {
  char *s;
  if (o->image)
    s = asprintf(&s, "image %s", o->image) < 0 ? NULL : s;
  else if (o->host)
    s = strdup("--host");
  else if (o->rootfs)
    s = asprintf(&s, "rootfs %s", o->rootfs) < 0 ? NULL : s;
  else
    s = asprintf(&s, "bundle %s", bundle) < 0 ? NULL : s;
  if (s == NULL)
    abort();
  return s;
}

int run_observe_load(struct run_options *o, struct run_observe **out, struct cm_error **err) {
  *out = NULL;
  bool mcp_audit = o->profile && strcmp(o->profile, "mcp-audit") == 0;
  bool learning = o->learn || mcp_audit;
  bool auditing = o->audit_log || o->audit_summary;
  if (!learning && !o->policy && !auditing)
    return 0;
  if (learning && o->policy)
    return cm_error_set(err, 0,
                        "--learn and --policy: learn without a policy (a run under one sees only what it "
                        "already allows), then merge the runs with codemode learn --merge");
  struct run_observe *r = calloc(1, sizeof(*r));
  if (r == NULL)
    abort();
  r->learning = learning;
  r->auditing = auditing;
  r->learn_to = o->learn ? o->learn : "-";
  r->audit_fd = -1;
  gettimeofday(&r->started, NULL);
  audit_time_format(r->started.tv_sec, r->started.tv_usec / 1000, r->started_text);
  *out = r;
  if (o->policy) {
    if (learned_policy_load_file(o->policy, &r->policy, err) < 0)
      return cm_error_prefix(err, "--policy");
    r->has_policy = true;
    if (learned_policy_seccomp(&r->policy, &r->policy_seccomp, err) < 0)
      return cm_error_prefix(err, "--policy %s", o->policy);
    learned_policy_landlock(&r->policy, &r->policy_landlock);
    /* Its hosts are allow rules as if given on the command line (which a hardening profile
     * trusts, unlike the config's annotation); the broker enforces them. */
    for (size_t i = 0; i < r->policy.n_hosts; i++) {
      const char *t = r->policy.hosts[i].text;
      if (strncmp(t, "allow-host ", 11) == 0)
        spec_strv_push(&o->egress.allow_host, t + 11);
      else if (strncmp(t, "allow-cidr ", 11) == 0)
        spec_strv_push(&o->egress.allow_cidr, t + 11);
      else
        return cm_error_set(err, 0,
                            "--policy %s: .egress.allow[%zu]: \"%s\" is not an allow-host or allow-cidr rule",
                            o->policy, i, t);
    }
  }
  return 0;
}

int run_observe_prepare(struct run_observe *r, struct run_options *o, struct spec *s,
                        struct policy_result *pol, enum policy_profile profile, const char *bundle,
                        struct cm_error **err) {
  if (r == NULL)
    return 0;
  bool learning = r->learning, auditing = r->auditing;
  /* The learned policy is written for, and stacked on, the mcp profile: learning under less
   * would record what mcp refuses anyway, applying it under less would be looser than mcp. */
  if ((learning || o->policy) && profile < POLICY_PROFILE_MCP_AUDIT)
    return cm_error_set(err, 0,
                        "%s: needs the mcp profile (the learned policy is stacked on it, never instead of "
                        "it): drop --profile %s",
                        learning ? "--learn" : "--policy", policy_profile_name(profile));
  r->source = describe_source(o, bundle);
  if (auditing) {
    if (o->audit_log) {
      r->audit_fd = audit_log_open(o->audit_log, err);
      if (r->audit_fd < 0)
        return -1;
      struct stat st;
      r->audit_start = fstat(r->audit_fd, &st) == 0 ? st.st_size : 0;
    }
    if (pol->landlock.present) {
      r->layers[r->n_layers] = &pol->landlock;
      r->layer_names[r->n_layers++] = "profile mcp";
    }
    if (s->landlock && s->landlock->present) {
      r->layers[r->n_layers] = s->landlock;
      r->layer_names[r->n_layers++] = "config's run.codemode.landlock";
    }
    if (r->policy_landlock.present) {
      r->layers[r->n_layers] = &r->policy_landlock;
      r->layer_names[r->n_layers++] = "learned policy";
    }
    r->audit = audit_session_new(o->id, r->audit_fd, r->layers, r->layer_names, r->n_layers,
                                 r->has_policy ? &r->policy : NULL);
    audit_session_set_abi(r->audit, landlock_abi());
    audit_session_sink(r->audit, &r->audit_sink);
    log_denials(&r->policy_seccomp);
  }
  log_denials(&pol->stacked_seccomp);
  log_denials(&s->linux_.seccomp);

  /* The supervisor's listener: the learning filter, or (auditing files) the audit filter. */
  if (learning) {
    r->learn = learn_session_new();
    learn_session_sink(r->learn, &r->learn_sink);
    if (seccomp_listener_compile(true, learned_baseline_syscalls, &r->listener, err) < 0)
      return -1;
  } else if (auditing && r->n_layers) {
    if (seccomp_listener_compile(false, notify_file_syscalls, &r->listener, err) < 0)
      return -1;
  }
  struct observer_sink tee = {
      .call = tee_call, .denial = tee_denial, .no_kernel_records = tee_no_records, .arg = r};
  if (observer_start(&r->obs, &tee, true, err) < 0)
    return cm_error_prefix(err, "%s", learning ? "--learn" : "the audit");
  return 0;
}

void run_observe_egress(struct run_observe *r, struct egress_config *egress) {
  if (r == NULL || !r->learning || egress == NULL)
    return;
  /* The hosts come from the broker's records: without an audit log of the user's, it writes to
   * one of ours that nobody else sees. */
  if (egress->audit_fd < 0 && r->audit_fd < 0) {
    int fd = memfd_create("codemode-learn-audit", MFD_CLOEXEC);
    if (fd < 0)
      return;
    r->audit_fd = fd;
    r->audit_start = 0;
    egress->audit_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  }
}

void run_observe_explain(const struct run_observe *r, const struct run_options *o) {
  if (r == NULL)
    return;
  size_t baseline = 0;
  while (learned_baseline_syscalls[baseline])
    baseline++;
  if (r->learning)
    printf(
        "learn: every syscall but %zu baseline ones is shown to codemode-run, which records it and lets it "
        "through; the policy goes to %s\n",
        baseline, strcmp(r->learn_to, "-") ? r->learn_to : "stderr");
  if (r->has_policy) {
    /* How much smaller than the usual profiles, resolved for this machine and no capabilities. */
    struct seccomp_profile_target none = {0};
    struct spec_seccomp docker = {0}, mcp = {0};
    struct cm_error *ignored = NULL;
    size_t n_docker = seccomp_profile_load("default", &none, &docker, &ignored) == 0
                          ? seccomp_profile_count_allowed(&docker)
                          : 0;
    cm_error_freep(&ignored);
    size_t n_mcp =
        seccomp_profile_load("mcp", &none, &mcp, &ignored) == 0 ? seccomp_profile_count_allowed(&mcp) : 0;
    cm_error_freep(&ignored);
    printf("policy: %s: seccomp: allows %zu syscalls (Docker's default profile: %zu, mcp.json: %zu), stacked "
           "after "
           "the mcp profile's filter (default SCMP_ACT_ERRNO)\n",
           o->policy, seccomp_profile_count_allowed(&r->policy_seccomp), n_docker, n_mcp);
    seccomp_profile_free(&docker);
    seccomp_profile_free(&mcp);
    if (r->policy_landlock.present)
      printf("policy: %s: landlock: one more layer of %zu rules (ABI %d)\n", o->policy,
             r->policy_landlock.n_paths, r->policy.landlock_abi);
  }
  if (r->auditing)
    printf("audit: denials to %s%s\n", o->audit_log ? o->audit_log : "",
           o->audit_summary ? " (summary on exit)" : "");
}

void run_observe_create_options(struct run_observe *r, struct create_options *co) {
  if (r == NULL)
    return;
  if (r->policy_seccomp.present)
    co->policy_seccomp = &r->policy_seccomp;
  if (r->policy_landlock.present)
    co->policy_landlock = &r->policy_landlock;
  if (r->listener.n_insns)
    co->listener_filter = &r->listener;
}

const struct runtime_listener *run_observe_started(struct run_observe *r, pid_t init, struct cm_error **err) {
  if (r == NULL)
    return NULL;
  observer_set_container(&r->obs, init);
  if (observer_run(&r->obs, err) < 0)
    return NULL;
  if (r->listener.n_insns == 0)
    return NULL;
  r->hand_over = (struct runtime_listener){.init = init, .attach = observer_attach_listener, .arg = &r->obs};
  return &r->hand_over;
}

static char *command_line(const struct spec *s) {
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  const struct spec_strv *a = &s->process->args;
  /* codemode-run's own init comes first: the server is what it runs */
  size_t first = a->count > 1 && strcmp(a->items[0], "/proc/self/fd/3") == 0 ? 1 : 0;
  for (size_t i = first; i < a->count; i++)
    fprintf(f, "%s%s", i > first ? " " : "", a->items[i]);
  fclose(f);
  return out;
}

int run_observe_finish(struct run_observe *r, const struct run_options *o, const struct spec *s,
                       struct cm_error **err) {
  if (r == NULL)
    return 0;
  observer_stop(&r->obs);
  int rc = 0;
  if (r->learn) {
    struct timeval end;
    gettimeofday(&end, NULL);
    struct utsname u;
    bool have_u = uname(&u) == 0;
    cleanup_free char *cmd = command_line(s);
    struct learned_run run = {
        .run = 1,
        .started = r->started_text,
        .source = r->source,
        .command = cmd,
        .kernel = have_u ? u.release : NULL,
        .seconds =
            (double)(end.tv_sec - r->started.tv_sec) + (double)(end.tv_usec - r->started.tv_usec) / 1e6,
        .landlock_abi = landlock_abi() > SPEC_LANDLOCK_ABI_KNOWN ? SPEC_LANDLOCK_ABI_KNOWN : landlock_abi(),
        .notifications = r->obs.notifications,
        /* said in the file, so that a merge or a reader knows deniedDuringLearning is partial */
        .seccomp_unseen = r->no_records,
    };
    learn_session_mounts(r->learn, s); /* with the mounts codemode-run added after the profile */
    rc = learn_session_write(r->learn, r->learn_to, &run, r->audit_fd, r->audit_start, err);
    if (rc == 0 && strcmp(r->learn_to, "-") != 0)
      fprintf(stderr, "codemode-run: learned policy written to %s (%llu calls seen)\n", r->learn_to,
              (unsigned long long)r->obs.notifications);
  }
  if (r->audit && o->audit_summary) {
    audit_session_read_log(r->audit, r->audit_fd, r->audit_start);
    audit_session_summary(r->audit, STDERR_FILENO);
  }
  return rc;
}

void run_observe_free(struct run_observe *r) {
  if (r == NULL)
    return;
  if (r->obs.running || r->obs.decoder)
    observer_stop(&r->obs);
  learn_session_free(r->learn);
  audit_session_free(r->audit);
  if (r->has_policy)
    learned_policy_free(&r->policy);
  seccomp_profile_free(&r->policy_seccomp);
  spec_landlock_clear(&r->policy_landlock);
  seccomp_program_free(&r->listener);
  if (r->audit_fd >= 0)
    close(r->audit_fd);
  free(r->source);
  free(r->no_records);
  free(r);
}
