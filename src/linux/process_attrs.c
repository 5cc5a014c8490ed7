/* Per-process attributes applied in the container just before execve: oomScoreAdj,
 * personality, ioPriority, scheduler. (rlimits: rlimits.c.) */
#include "linux/process_attrs.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/ioprio.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <linux/sched.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/cleanup.h"

/* Open /proc/self/<name> for writing, refusing anything that is not the real procfs file: the
 * container's /proc may be a fake mount, or have another proc file bind-mounted over this one so
 * our write lands somewhere else (CVE-2019-16884, CVE-2025-52881 classes). */
static int open_proc_self_for_write(const char *name, struct cm_error **err) {
  cleanup_close int proc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (proc < 0)
    return cm_error_set(err, errno, "open /proc");
  struct statfs sfs;
  if (fstatfs(proc, &sfs) < 0)
    return cm_error_set(err, errno, "fstatfs /proc");
  if (sfs.f_type != PROC_SUPER_MAGIC)
    return cm_error_set(err, 0, "/proc is not a procfs mount; refusing to write /proc/self/%s", name);
  char rel[64];
  snprintf(rel, sizeof(rel), "self/%s", name);
  /* NO_XDEV: a bind mount over the file is a mount crossing and is rejected. */
  struct open_how how = {
      .flags = O_WRONLY | O_NOFOLLOW | O_CLOEXEC,
      .resolve = RESOLVE_BENEATH | RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS,
  };
  int fd = (int)syscall(SYS_openat2, proc, rel, &how, sizeof(how));
  if (fd < 0)
    return cm_error_set(err, errno, "open /proc/self/%s", name);
  return fd;
}

int oom_score_adj_apply(const struct spec_process *p, struct cm_error **err) {
  if (!p->has_oom_score_adj)
    return 0;
  cleanup_close int fd = open_proc_self_for_write("oom_score_adj", err);
  if (fd < 0)
    return cm_error_prefix(err, "process.oomScoreAdj");
  char buf[16];
  int len = snprintf(buf, sizeof(buf), "%d", p->oom_score_adj);
  if (write(fd, buf, (size_t)len) != len) {
    if (errno == EACCES)
      return cm_error_set(err, errno,
                          "process.oomScoreAdj: set %d: lowering the OOM score adjustment below the minimum "
                          "inherited from a privileged ancestor needs CAP_SYS_RESOURCE",
                          p->oom_score_adj);
    return cm_error_set(err, errno, "process.oomScoreAdj: write %d to /proc/self/oom_score_adj", p->oom_score_adj);
  }
  return 0;
}

int loginuid_lock(const struct spec_process *p, struct cm_error **err) {
  if (!p->lock_loginuid)
    return 0;
  char buf[16] = "";
  cleanup_close int rfd = open("/proc/self/loginuid", O_RDONLY | O_CLOEXEC);
  if (rfd < 0)
    return errno == ENOENT ? 0 : cm_error_set(err, errno, "read /proc/self/loginuid"); /* no audit */
  ssize_t n = read(rfd, buf, sizeof(buf) - 1);
  if (n <= 0)
    return cm_error_set(err, errno, "read /proc/self/loginuid");
  buf[n] = '\0';
  /* Inherited from a login: already set, and unchangeable without CAP_AUDIT_CONTROL. */
  if (strtoul(buf, NULL, 10) != 4294967295UL)
    return 0;
  /* Unset: anyone may set it once, with no privilege at all, and audit records would then name a
   * login uid of the server's choosing. It becomes the uid of whoever started the container. */
  cleanup_close int fd = open_proc_self_for_write("loginuid", err);
  if (fd < 0)
    return cm_error_prefix(err, "audit login uid");
  int len = snprintf(buf, sizeof(buf), "%u", (unsigned)getuid());
  if (write(fd, buf, (size_t)len) != len)
    return cm_error_set(err, errno, "audit login uid: write %s to /proc/self/loginuid", buf);
  return 0;
}

int personality_apply(const struct spec_personality *pers, struct cm_error **err) {
  if (!pers->present)
    return 0;
  /* No flag is defined by the spec yet; refusing them beats silently ignoring them. */
  if (pers->flags.count > 0)
    return cm_error_set(err, EINVAL, "linux.personality.flags: \"%s\" is not supported", pers->flags.items[0]);
  if (pers->domain != PER_LINUX && pers->domain != PER_LINUX32)
    return cm_error_set(err, EINVAL, "linux.personality.domain: 0x%lx is not LINUX or LINUX32", pers->domain);
  if (personality(pers->domain) < 0)
    return cm_error_set(err, errno, "linux.personality: personality(%s)",
                        pers->domain == PER_LINUX32 ? "LINUX32" : "LINUX");
  return 0;
}

int io_priority_apply(const struct spec_process *p, struct cm_error **err) {
  if (!p->has_io_priority)
    return 0;
  /* Out-of-range values would be silently masked into other bits (newer kernels read hints there). */
  if (p->io_priority_class < IOPRIO_CLASS_RT || p->io_priority_class > IOPRIO_CLASS_IDLE)
    return cm_error_set(err, EINVAL, "process.ioPriority.class: %d is not RT, BE or IDLE", p->io_priority_class);
  if (p->io_priority < 0 || p->io_priority > 7)
    return cm_error_set(err, EINVAL, "process.ioPriority.priority: %d is not in 0..7", p->io_priority);
  int value = IOPRIO_PRIO_VALUE(p->io_priority_class, p->io_priority);
  if (syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, value) < 0)
    return cm_error_set(err, errno, "process.ioPriority: ioprio_set(class %d, priority %d)", p->io_priority_class,
                        p->io_priority);
  return 0;
}

/* struct sched_attr as the kernel defines it (SCHED_ATTR_SIZE_VER1); glibc 2.36 has none and
 * newer glibc declares its own, hence the private name. */
struct cm_sched_attr {
  uint32_t size;
  uint32_t sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime;
  uint64_t sched_deadline;
  uint64_t sched_period;
  uint32_t sched_util_min;
  uint32_t sched_util_max;
};

static const char *sched_policy_name(int policy) {
  switch (policy) {
  case SCHED_OTHER: return "SCHED_OTHER";
  case SCHED_FIFO: return "SCHED_FIFO";
  case SCHED_RR: return "SCHED_RR";
  case SCHED_BATCH: return "SCHED_BATCH";
  case SCHED_IDLE: return "SCHED_IDLE";
  case SCHED_DEADLINE: return "SCHED_DEADLINE";
  default: return "unknown policy";
  }
}

int scheduler_apply(const struct spec_process *p, struct cm_error **err) {
  const struct spec_scheduler *s = &p->scheduler;
  if (!s->present)
    return 0;
  struct cm_sched_attr attr = {
      .size = sizeof(attr),
      .sched_policy = (uint32_t)s->policy,
      .sched_flags = s->flags,
      .sched_nice = s->nice,
      .sched_priority = (uint32_t)s->priority,
      .sched_runtime = s->runtime,
      .sched_deadline = s->deadline,
      .sched_period = s->period,
      /* The spec carries no clamp values: the full range means "no clamping". */
      .sched_util_min = 0,
      .sched_util_max = 1024,
  };
  if (syscall(SYS_sched_setattr, 0, &attr, 0) < 0)
    return cm_error_set(err, errno, "process.scheduler: sched_setattr(%s, nice %d, priority %d, flags 0x%llx)",
                        sched_policy_name(s->policy), s->nice, s->priority, (unsigned long long)s->flags);
  return 0;
}
