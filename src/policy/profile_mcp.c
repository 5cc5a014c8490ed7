/* The mcp profile: what untrusted code (an MCP server) gets, whatever the config asked for.
 * Every rule keeps the stricter of the config's value and its own, and reports what it changed.
 * man/codemode-profiles.5 lists the rules and why. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "linux/namespaces.h"
#include "policy/profile_rules.h"
#include "policy/seccomp_profile.h"
#include "spec/json_util.h"
#include "util/cleanup.h"
#include "util/host_root.h"

#define MCP_MEMORY_LIMIT (512LL * 1024 * 1024)
#define MCP_PIDS_LIMIT 256
#define MCP_CPU_PERIOD 100000ULL /* µs; quota == period: one CPU */
#define MCP_NOFILE_SOFT 1024ULL
#define MCP_NOFILE_HARD 4096ULL
#define MCP_OOM_SCORE_ADJ 1000
#define MCP_TMPFS_SIZE "size=64m" /* also in mount_policy.c */

/* --- process ------------------------------------------------------------------------------ */

static void tighten_process(struct spec_process *p, struct policy_report *r) {
  /* setuid binaries and file capabilities could otherwise regain privileges after exec. */
  if (!p->no_new_privileges) {
    p->no_new_privileges = true;
    policy_report_add(r, "process.noNewPrivileges: false -> true");
  }
  /* No capability at all: root in the container is then an ordinary user towards the kernel
   * (CVE-2022-29162/27650 class: inherited or ambient capabilities). */
  struct spec_capabilities *c = &p->capabilities;
  uint64_t all = c->bounding | c->effective | c->inheritable | c->permitted | c->ambient;
  if (all) {
    cleanup_free char *names = policy_cap_names(all);
    policy_report_add(r, "process.capabilities: every set emptied (dropped %s)", names);
  } else if (!c->present) {
    policy_report_add(r, "process.capabilities: every set emptied");
  }
  *c = (struct spec_capabilities){.present = true};

  /* Its audit login uid is set for it (when unset) instead of being left for it to choose. */
  p->lock_loginuid = true;
  /* Every process is the first the OOM killer picks: a runaway server, not the host, dies. */
  if (!p->has_oom_score_adj || p->oom_score_adj < MCP_OOM_SCORE_ADJ) {
    if (p->has_oom_score_adj)
      policy_report_add(r, "process.oomScoreAdj: %d -> %d", p->oom_score_adj, MCP_OOM_SCORE_ADJ);
    else
      policy_report_add(r, "process.oomScoreAdj: set to %d", MCP_OOM_SCORE_ADJ);
    p->has_oom_score_adj = true;
    p->oom_score_adj = MCP_OOM_SCORE_ADJ;
  }
}

/* --- mounts --------------------------------------------------------------------------------- */

static int tighten_mounts(struct spec *s, const char *bundle, struct policy_report *r,
                          struct cm_error **err) {
  /* An allow-list of mount types and places (mount_policy.c). */
  if (policy_tighten_mounts(s, bundle, MCP_TMPFS_SIZE, r, err) < 0)
    return -1;
  if (!policy_has_mount_at(s, "/tmp"))
    policy_add_tmpfs(s, "/tmp", (const char *const[]){"nosuid", "nodev", "mode=1777", MCP_TMPFS_SIZE, NULL}, r);
  if (!policy_has_mount_at(s, "/dev/shm") && policy_has_mount_at(s, "/dev"))
    policy_add_tmpfs(s, "/dev/shm",
              (const char *const[]){"nosuid", "nodev", "noexec", "mode=1777", MCP_TMPFS_SIZE, NULL}, r);
  /* The server must not change its own code or plant files for later runs. */
  if (!s->root_readonly) {
    s->root_readonly = true;
    policy_report_add(r, "root.readonly: false -> true");
  }
  return 0;
}

/* --- devices and sysctls -------------------------------------------------------------------- */

/* --- resources ------------------------------------------------------------------------------ */

/* The quota is an average, not a ceiling on every 100 ms: a server that slept (a start reading
 * its files, an idle session) may spend what it left unused, at most one period's quota more
 * (the kernel refuses a burst above the quota). Over any stretch of time it still has one CPU
 * at most, plus that one quota: a busy loop gains nothing after its first period. Without it,
 * the CFS throttling of a start that runs 2 threads at once made npx server-memory 66-81 ms
 * slower under --host as root than bare; with it, as fast (issue 27). */
static void tighten_burst(struct spec_cpu *c, uint64_t quota, struct policy_report *r, const char *field) {
  if (!c->burst.set) {
    policy_report_add(r, "%s: set to %" PRIu64 " (unused quota may be spent later: one quota at most)", field,
                      quota);
    c->burst = (struct spec_opt_u64){true, quota};
    c->burst_optional = true;
  } else if (c->burst.value > quota) {
    policy_report_add(r, "%s: %" PRIu64 " -> %" PRIu64 " (one quota at most)", field, c->burst.value, quota);
    c->burst.value = quota;
  }
}

static void tighten_resources(struct spec_resources *res, struct policy_report *r) {
  res->present = true;
  struct spec_memory *m = &res->memory;
  m->present = true;
  /* A memory hog is OOM-killed inside its cgroup instead of pushing the host into swap. */
  if (!m->limit.set || m->limit.value <= 0 || m->limit.value > MCP_MEMORY_LIMIT) {
    if (m->limit.set && m->limit.value > 0)
      policy_report_add(r, "linux.resources.memory.limit: %" PRId64 " -> %lld", m->limit.value,
                        MCP_MEMORY_LIMIT);
    else
      policy_report_add(r, "linux.resources.memory.limit: set to %lld (512 MiB)", MCP_MEMORY_LIMIT);
    m->limit = (struct spec_opt_i64){true, MCP_MEMORY_LIMIT};
  }
  /* memory.swap is memory+swap: equal to the limit means no swap. */
  if (!m->swap.set || m->swap.value < 0 || m->swap.value > m->limit.value) {
    policy_report_add(r, "linux.resources.memory.swap: set to %" PRId64 " (no swap)", m->limit.value);
    m->swap = (struct spec_opt_i64){true, m->limit.value};
  }
  /* A fork bomb stops at the pids limit. */
  if (!res->has_pids || res->pids_limit <= 0 || res->pids_limit > MCP_PIDS_LIMIT) {
    if (res->has_pids && res->pids_limit > 0)
      policy_report_add(r, "linux.resources.pids.limit: %" PRId64 " -> %d", res->pids_limit, MCP_PIDS_LIMIT);
    else
      policy_report_add(r, "linux.resources.pids.limit: set to %d", MCP_PIDS_LIMIT);
    res->has_pids = true;
    res->pids_limit = MCP_PIDS_LIMIT;
  }
  /* At most one CPU's worth of time, so a busy loop cannot starve the host. */
  struct spec_cpu *c = &res->cpu;
  uint64_t period = c->period.set && c->period.value ? c->period.value : MCP_CPU_PERIOD;
  bool unlimited = !c->quota.set || c->quota.value <= 0;
  if (unlimited || (uint64_t)c->quota.value > period) {
    if (unlimited)
      policy_report_add(r, "linux.resources.cpu: quota set to 1 CPU (%" PRIu64 "/%" PRIu64 ")", period,
                        period);
    else
      policy_report_add(
          r, "linux.resources.cpu: quota %" PRId64 "/%" PRIu64 " -> %" PRIu64 "/%" PRIu64 " (1 CPU)",
          c->quota.value, period, period, period);
    c->present = true;
    c->period = (struct spec_opt_u64){true, period};
    c->quota = (struct spec_opt_i64){true, (int64_t)period};
  }
  tighten_burst(c, (uint64_t)c->quota.value, r, "linux.resources.cpu.burst");
}

int policy_mcp_tighten_update(struct spec_resources *res, struct policy_report *r, struct cm_error **err) {
  /* Raw files and device rules have no clamp: refused, with the field that can do the job. */
  if (res->unified.count)
    return cm_error_set(
        err, EPERM,
        "unified.\"%s\": raw cgroup files cannot be set on a hardened container (fix: use the "
        "memory, cpu and pids fields)",
        res->unified.items[0].key);
  if (res->n_devices)
    return cm_error_set(
        err, EPERM,
        "devices: the device rules of a hardened container were fixed at create and cannot change");
  struct spec_memory *m = &res->memory;
  if (m->limit.set) {
    if (m->limit.value <= 0 || m->limit.value > MCP_MEMORY_LIMIT) {
      policy_report_add(r, "memory.limit: %" PRId64 " -> %lld (the profile's most)", m->limit.value,
                        MCP_MEMORY_LIMIT);
      m->limit.value = MCP_MEMORY_LIMIT;
    }
    /* memory+swap equal to the limit: no swap, as at create. */
    if (!m->swap.set || m->swap.value != m->limit.value) {
      if (m->swap.set)
        policy_report_add(r, "memory.swap: %" PRId64 " -> %" PRId64 " (no swap)", m->swap.value,
                          m->limit.value);
      m->swap = (struct spec_opt_i64){true, m->limit.value};
    }
  } else if (m->swap.set) {
    return cm_error_set(
        err, EPERM,
        "memory.swap: a hardened container has no swap (memory+swap follows memory.limit) (fix: "
        "give the memory limit instead)");
  }
  if (m->has_disable_oom_killer && m->disable_oom_killer) {
    m->disable_oom_killer = false;
    policy_report_add(r, "memory.disableOOMKiller: true -> false");
  }
  if (res->has_pids && (res->pids_limit <= 0 || res->pids_limit > MCP_PIDS_LIMIT)) {
    policy_report_add(r, "pids.limit: %" PRId64 " -> %d (the profile's most)", res->pids_limit,
                      MCP_PIDS_LIMIT);
    res->pids_limit = MCP_PIDS_LIMIT;
  }
  struct spec_cpu *c = &res->cpu;
  if (c->period.set || c->quota.set) {
    /* Both, always: a shorter period alone would raise the share the old quota gives. */
    uint64_t period = c->period.set && c->period.value ? c->period.value : MCP_CPU_PERIOD;
    int64_t quota = c->quota.set ? c->quota.value : -1;
    if (quota <= 0 || (uint64_t)quota > period) {
      policy_report_add(r, "cpu: quota %" PRId64 "/%" PRIu64 " -> %" PRIu64 "/%" PRIu64 " (1 CPU at most)",
                        quota, period, period, period);
      quota = (int64_t)period;
    }
    c->present = true;
    c->period = (struct spec_opt_u64){true, period};
    c->quota = (struct spec_opt_i64){true, quota};
  }
  /* A new quota brings its burst (the one of create, tighten_burst); a burst given alone is
   * judged against the most quota the profile allows, one period's (the kernel refuses one
   * above the current quota). */
  if (c->quota.set)
    tighten_burst(c, (uint64_t)c->quota.value, r, "cpu.burst");
  else if (c->burst.set)
    tighten_burst(c, MCP_CPU_PERIOD, r, "cpu.burst");
  return 0;
}

/* --- seccomp -------------------------------------------------------------------------------- */

int policy_mcp_load_seccomp(uint64_t bounding, struct spec_seccomp *out, struct cm_error **err) {
  /* Resolved for the capabilities the process ends up with (none), on this machine. */
  struct seccomp_profile_target target = {.capabilities = bounding};
  return seccomp_profile_load("mcp", &target, out, err);
}

static int stack_seccomp(const struct spec *s, bool audit, struct policy_result *out, struct cm_error **err) {
  const char *name = "mcp";
  /* mcp-audit once stacked mcp-audit.json, whose denials only logged (SCMP_ACT_LOG): retired.
   * It enforces mcp.json; what it was for, learning what a server needs, is codemode-run's
   * learn mode (--learn, or --profile mcp-audit there). */
  if (audit)
    policy_report_add(&out->report, "seccomp: mcp-audit enforces mcp.json (its log-only filter is retired; "
                                    "codemode-run --learn FILE learns what a server needs)");
  if (policy_mcp_load_seccomp(s->process->capabilities.bounding, &out->stacked_seccomp, err) < 0)
    return -1;
  /* Stacked, not merged: the kernel runs both filters and the stricter answer wins, so nothing
   * in the caller's filter can weaken this one (and nothing here weakens the caller's). */
  policy_report_add(&out->report,
                    "seccomp: %s.json stacked on top of %s (%zu rules; the stricter filter wins)", name,
                    s->linux_.seccomp.present ? "the config's filter" : "no filter in the config",
                    out->stacked_seccomp.n_syscalls);
  return 0;
}

void policy_mcp_tighten_process(struct spec_process *p, struct policy_report *r) {
  tighten_process(p, r);
  policy_tighten_rlimit(p, RLIMIT_NOFILE, "RLIMIT_NOFILE", MCP_NOFILE_SOFT, MCP_NOFILE_HARD, r);
  /* A core dump would write the server's memory (and whatever secrets it read) to the host. */
  policy_tighten_rlimit(p, RLIMIT_CORE, "RLIMIT_CORE", 0, 0, r);
}

int policy_mcp_apply(struct spec *s, bool audit, const char *bundle, struct policy_result *out,
                     struct cm_error **err) {
  struct policy_report *r = &out->report;
  if (s->process == NULL)
    return cm_error_set(err, 0, "config.json: .process: missing");
  policy_sys_bind_to_sysfs(s, r);
  if (policy_tighten_namespaces(s, "mcp", r, err) < 0 || policy_tighten_userns(s, 1, r, err) < 0 ||
      policy_check_joined_mount_ns(s, err) < 0 || tighten_mounts(s, bundle, r, err) < 0)
    return -1;
  s->has_linux = true;
  policy_mcp_tighten_process(s->process, r);
  /* The default config's masked and read-only sets, whatever the caller's config left out. */
  policy_add_paths(&s->linux_.masked_paths, spec_default_masked_paths, "maskedPaths", r);
  policy_add_paths(&s->linux_.readonly_paths, spec_default_readonly_paths, "readonlyPaths", r);
  if (policy_tighten_devices(&s->linux_, r, err) < 0)
    return -1;
  policy_drop_sysctls(&s->linux_, r);
  tighten_resources(&s->linux_.resources, r);
  policy_drop_unified(&s->linux_.resources, r);
  return stack_seccomp(s, audit, out, err);
}
