/* process.capabilities → the bounding, permitted, effective, inheritable and ambient sets, as
 * steps of the last-steps program (last_steps.h).
 *
 * The bounding set is shrunk first, while the process is still the container's root with every
 * capability effective (CAP_SETPCAP); after user.c's switch (which keeps permitted across setuid
 * with PR_SET_KEEPCAPS) permitted/effective/inheritable are set in one capset, then ambient. So a
 * non-root user too ends with exactly the listed sets. */
#include "linux/caps.h"

#include <errno.h>
#include <sys/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/log.h"

#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_RAISE 2
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

/* The running kernel's last capability (what /proc/sys/kernel/cap_last_cap says, possibly newer
 * than libcap knows), asked of the kernel itself: a fake /proc in the rootfs must not be able to
 * make us skip dropping the newest capabilities. CAPBSET_READ fails with EINVAL past the last. */
static int kernel_last_cap(void) {
  /* Binary search: six calls, not one per capability (this runs before every container's exec). */
  int lo = 0, hi = 63; /* lo is known to exist (CAP_CHOWN) */
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (prctl(PR_CAPBSET_READ, mid, 0, 0, 0) >= 0)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

static uint64_t valid_mask(int last_cap) {
  return last_cap >= 63 ? ~0ULL : ((1ULL << (last_cap + 1)) - 1);
}

/* For error messages; built per container start, so no libcap allocation per capability. */
static const char *cap_display_name(int cap, char *buf, size_t len) {
  static const char *const names[] = {
      "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL",
      "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE",
      "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK", "CAP_IPC_OWNER", "CAP_SYS_MODULE",
      "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE", "CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT",
      "CAP_SYS_NICE", "CAP_SYS_RESOURCE", "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE",
      "CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN",
      "CAP_SYSLOG", "CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF",
      "CAP_CHECKPOINT_RESTORE"};
  if (cap >= 0 && (size_t)cap < sizeof(names) / sizeof(names[0]))
    return names[cap];
  snprintf(buf, len, "capability %d", cap);
  return buf;
}

int caps_plan(const struct spec_capabilities *c, struct caps_plan *out, struct cm_error **err) {
  memset(out, 0, sizeof(*out));
  out->last_cap = kernel_last_cap();
  uint64_t known = valid_mask(out->last_cap);
  /* No capabilities object means none at all, also for uid 0 (runc does the same). */
  if (c->present) {
    out->bounding = c->bounding;
    out->permitted = c->permitted;
    out->effective = c->effective;
    out->inheritable = c->inheritable;
    out->ambient = c->ambient;
    uint64_t unknown = (c->bounding | c->permitted | c->effective | c->inheritable | c->ambient) & ~known;
    if (unknown)
      cm_warn("capabilities unknown to this kernel (mask 0x%llx) are ignored", (unsigned long long)unknown);
    out->bounding &= known;
    out->permitted &= known;
    out->effective &= known;
    out->inheritable &= known;
    out->ambient &= known;
  }
  /* What the kernel's capset will refuse, refused now, while create can still say so (runc
   * applies the capabilities before the exec fifo: a refused set fails create, not the
   * process). The sets it compares with are ours: the trampoline starts as the container's root
   * with our bounding set (linux/last_steps.h). */
  struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
  struct __user_cap_data_struct now[2];
  if (capget(&hdr, now) < 0)
    return cm_error_set(err, errno, "capabilities: capget");
  uint64_t have_perm = now[0].permitted | ((uint64_t)now[1].permitted << 32);
  uint64_t have_inh = now[0].inheritable | ((uint64_t)now[1].inheritable << 32);
  char name[64];
  uint64_t bad;
  if ((bad = out->effective & ~out->permitted) != 0)
    return cm_error_set(err, EPERM,
                        "capabilities: set permitted/effective/inheritable (effective lists capabilities that are "
                        "not in permitted: %s)",
                        cap_display_name(__builtin_ctzll(bad), name, sizeof(name)));
  if ((bad = out->permitted & ~have_perm) != 0)
    return cm_error_set(err, EPERM, "capabilities: permitted lists %s, which the runtime itself does not hold",
                        cap_display_name(__builtin_ctzll(bad), name, sizeof(name)));
  /* A new inheritable capability must stay in the bounding set (after its drops). */
  for (uint64_t inh = out->inheritable & ~have_inh; inh; inh &= inh - 1) {
    int c = __builtin_ctzll(inh);
    if (!(out->bounding & (1ULL << c)) || prctl(PR_CAPBSET_READ, c, 0, 0, 0) != 1)
      return cm_error_set(err, EPERM,
                          "capabilities: set permitted/effective/inheritable (inheritable lists %s, which is not in "
                          "the bounding set)",
                          cap_display_name(c, name, sizeof(name)));
  }

  /* With CAP_SETPCAP in our bounding set the container's root holds it, and dropping a
   * capability already gone succeeds: drop every unlisted one without asking. Without it every
   * drop would fail: ask which are there, and only those are an error. */
  out->drop = known & ~out->bounding;
  if (prctl(PR_CAPBSET_READ, CAP_SETPCAP, 0, 0, 0) != 1) {
    for (int cap = 0; cap <= out->last_cap; cap++)
      if ((out->drop & (1ULL << cap)) && prctl(PR_CAPBSET_READ, cap, 0, 0, 0) != 1)
        out->drop &= ~(1ULL << cap);
  }
  return 0;
}

void caps_emit_bounding(struct last_steps *ls, const struct caps_plan *p) {
  for (int c = 0; c <= p->last_cap; c++) {
    if (!(p->drop & (1ULL << c)))
      continue;
    /* Without this, a setuid binary or file caps could regain what the spec withheld. */
    char name[64];
    last_steps_syscall(ls, SYS_prctl, 0, (uint64_t[6]){PR_CAPBSET_DROP, (uint64_t)c},
                       "capabilities: drop %s from the bounding set", cap_display_name(c, name, sizeof(name)));
  }
}

/* One capset of permitted/effective/inheritable, with `extra` added to effective and permitted. */
static void emit_capset(struct last_steps *ls, const struct caps_plan *p, uint64_t extra) {
  struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
  uint64_t eff = p->effective | extra, perm = p->permitted | extra;
  /* Inheritable stays empty unless listed: otherwise file-inheritable binaries in the image
   * would gain capabilities across execve (CVE-2022-29162 class). */
  struct __user_cap_data_struct data[2] = {
      {.effective = (uint32_t)eff, .permitted = (uint32_t)perm, .inheritable = (uint32_t)p->inheritable},
      {.effective = (uint32_t)(eff >> 32), .permitted = (uint32_t)(perm >> 32),
       .inheritable = (uint32_t)(p->inheritable >> 32)},
  };
  uint32_t hdr_off = last_steps_data(ls, &hdr, sizeof(hdr));
  uint32_t data_off = last_steps_data(ls, data, sizeof(data));
  const char *hint = (p->effective & ~p->permitted)
                         ? " (effective lists capabilities that are not in permitted)"
                         : " (is every listed capability in the bounding set, and inheritable in permitted?)";
  last_steps_syscall(ls, SYS_capset, LS_ARG_DATA(0) | LS_ARG_DATA(1), (uint64_t[6]){hdr_off, data_off},
                     "capabilities: set permitted/effective/inheritable%s", hint);
}

void caps_emit_sets(struct last_steps *ls, const struct caps_plan *p, uint64_t extra) {
  emit_capset(ls, p, extra);
  struct ls_step *clear = last_steps_syscall(ls, SYS_prctl, 0, (uint64_t[6]){PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL},
                                             "capabilities: clear the ambient set");
  if (p->ambient == 0)
    clear->ok_errno = EINVAL; /* kernel < 4.3: no ambient set to clear */
  for (int c = 0; c <= p->last_cap; c++) {
    if (!(p->ambient & (1ULL << c)))
      continue;
    /* Fails unless the capability is in permitted and inheritable. runc's own default config
     * lists ambient caps without inheritable ones, so this is routine, not an error. */
    last_steps_syscall(ls, SYS_prctl, 0, (uint64_t[6]){PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, (uint64_t)c},
                       "capabilities: raise ambient %d", c)
        ->flags |= LS_IGNORE_FAILURE;
  }
  /* KEEPCAPS was only needed across user.c's setuid; execve resets it anyway. */
  last_steps_syscall(ls, SYS_prctl, 0, (uint64_t[6]){PR_SET_KEEPCAPS, 0}, "prctl(PR_SET_KEEPCAPS)");
}

void caps_emit_exact(struct last_steps *ls, const struct caps_plan *p) { emit_capset(ls, p, 0); }
