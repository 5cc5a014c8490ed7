/* linux.resources.devices on cgroup v2: a BPF_PROG_TYPE_CGROUP_DEVICE program.
 *
 * Semantics are those of the v1 devices controller: start from deny-all, apply the rules in
 * order, a later rule overriding an earlier one per access bit. The program walks the rules
 * backwards keeping the still-undecided request bits: an allow rule decides the bits it covers
 * (allowed), a deny rule that covers an undecided bit denies the request. Nothing matched → deny.
 * No RLIMIT_MEMLOCK raise: since 5.11 BPF memory is charged to the memory cgroup. */
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cgroup/internal.h"
#include "util/cleanup.h"
#include "util/log.h"

/* The devices every container needs, allowed after the config's rules, as runc 1.1.5 does (its
 * list, observed in devices.list): mknod of anything (opening is what counts), the standard
 * nodes, ptys and tun. The host console (5:1) and everything else stay denied unless
 * linux.resources.devices allows them. */
static const struct {
  const char *path; /* the node runc makes for it; NULL: a rule only */
  struct spec_device_rule rule;
} default_rules[] = {
    {NULL, {true, 'c', -1, -1, "m"}},
    {NULL, {true, 'b', -1, -1, "m"}},
    {"/dev/null", {true, 'c', 1, 3, "rwm"}},
    {"/dev/random", {true, 'c', 1, 8, "rwm"}},
    {"/dev/full", {true, 'c', 1, 7, "rwm"}},
    {"/dev/tty", {true, 'c', 5, 0, "rwm"}},
    {"/dev/zero", {true, 'c', 1, 5, "rwm"}},
    {"/dev/urandom", {true, 'c', 1, 9, "rwm"}},
    {NULL, {true, 'c', 136, -1, "rwm"}}, /* /dev/pts/N */
    {NULL, {true, 'c', 5, 2, "rwm"}},    /* /dev/ptmx */
    {NULL, {true, 'c', 10, 200, "rwm"}}, /* /dev/net/tun */
};

static bool listed_in(const char *path, const struct spec_device *devs, size_t n_devs) {
  for (size_t i = 0; i < n_devs; i++)
    if (devs[i].path != NULL && strcmp(devs[i].path, path) == 0)
      return true;
  return false;
}

/* linux.devices only makes nodes: whether the container may open one is linux.resources.devices'
 * decision alone (runtime-spec; runc), so a config's deny is never undone by listing the device.
 * What runc does with them, and so do we: a default device the config lists itself (same path)
 * loses its default allow, leaving its access to the config's rules. */
struct spec_device_rule *cg_device_rules(const struct spec_resources *r, const struct spec_device *devs,
                                         size_t n_devs, size_t *n_out) {
  size_t n_defaults = sizeof(default_rules) / sizeof(default_rules[0]);
  struct spec_device_rule *rules = calloc(r->n_devices + n_defaults, sizeof(*rules));
  if (rules == NULL)
    abort();
  size_t n = 0;
  for (size_t i = 0; i < r->n_devices; i++)
    rules[n++] = r->devices[i];
  for (size_t i = 0; i < n_defaults; i++)
    if (default_rules[i].path == NULL || !listed_in(default_rules[i].path, devs, n_devs))
      rules[n++] = default_rules[i].rule;
  *n_out = n;
  return rules;
}

static unsigned access_bits(const char *access) {
  unsigned bits = 0;
  if (access[0] == '\0')
    return BPF_DEVCG_ACC_READ | BPF_DEVCG_ACC_WRITE | BPF_DEVCG_ACC_MKNOD;
  for (const char *p = access; *p; p++)
    bits |= *p == 'r' ? BPF_DEVCG_ACC_READ : *p == 'w' ? BPF_DEVCG_ACC_WRITE : *p == 'm' ? BPF_DEVCG_ACC_MKNOD : 0;
  return bits;
}

/* Minimal instruction builders (the kernel uapi has the encoding, not these helpers). */
static struct bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
  return (struct bpf_insn){.code = code, .dst_reg = dst, .src_reg = src, .off = off, .imm = imm};
}
#define LDX_W(dst, src, off) insn(BPF_LDX | BPF_MEM | BPF_W, dst, src, off, 0)
#define ALU64_IMM(op, dst, imm) insn(BPF_ALU64 | BPF_K | (op), dst, 0, 0, imm)
#define ALU64_REG(op, dst, src) insn(BPF_ALU64 | BPF_X | (op), dst, src, 0, 0)
#define JMP_IMM(op, dst, imm, off) insn(BPF_JMP | BPF_K | (op), dst, 0, off, imm)
#define JMP32_IMM(op, dst, imm, off) insn(BPF_JMP32 | BPF_K | (op), dst, 0, off, imm)
#define JMP_REG(op, dst, src, off) insn(BPF_JMP | BPF_X | (op), dst, src, off, 0)
#define EXIT() insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)

/* r2 = device type, r3 = requested access (the undecided bits), r4 = major, r5 = minor,
 * r6 = major << 32 | minor, r7 = scratch. */
enum { R0, R1, R2, R3, R4, R5, R6, R7 };
#define ACC_ALL (BPF_DEVCG_ACC_READ | BPF_DEVCG_ACC_WRITE | BPF_DEVCG_ACC_MKNOD)

struct prog {
  struct bpf_insn *insns;
  size_t n, cap;
  bool too_long; /* a jump offset does not fit the instruction's 16 bits */
};

static size_t emit(struct prog *p, struct bpf_insn i) {
  if (p->n == p->cap) {
    p->cap = p->cap ? p->cap * 2 : 64;
    struct bpf_insn *bigger = realloc(p->insns, p->cap * sizeof(*bigger));
    if (bigger == NULL)
      abort();
    p->insns = bigger;
  }
  p->insns[p->n] = i;
  return p->n++;
}

/* Point the jump at `from` to the next instruction to be emitted. */
static void land_here(struct prog *p, size_t from) {
  size_t off = p->n - from - 1;
  if (off > INT16_MAX)
    p->too_long = true;
  p->insns[from].off = (int16_t)off;
}

/* The rules that apply to one device type, last rule first. The shape is chosen for the
 * verifier, whose cost (not the program's run time) is what a container start pays: about 2 µs
 * per instruction it walks on this machine. Each rule tests its device with one jump (the
 * major:minor pair as one 64-bit key), and the type is tested once for the whole section, so no
 * path reaches a rule with a register the verifier already knows: nothing for it to re-walk. */
static void emit_section(struct prog *p, const struct spec_device_rule *rules, size_t n, char type) {
  for (size_t k = n; k-- > 0;) {
    const struct spec_device_rule *rule = &rules[k];
    unsigned acc = access_bits(rule->access);
    if ((rule->type != 'a' && rule->type != type) || acc == 0 || rule->major > UINT32_MAX ||
        rule->minor > UINT32_MAX)
      continue; /* cannot match this type, or any device: major and minor are 32-bit */
    size_t skip = SIZE_MAX; /* the one jump past this rule for another device, if any */
    if (rule->major >= 0 && rule->minor >= 0) {
      uint64_t key = (uint64_t)rule->major << 32 | (uint64_t)rule->minor;
      emit(p, insn(BPF_LD | BPF_DW | BPF_IMM, R7, 0, 0, (int32_t)(uint32_t)key));
      emit(p, insn(0, 0, 0, 0, (int32_t)(uint32_t)(key >> 32)));
      skip = emit(p, JMP_REG(BPF_JNE, R6, R7, 0));
    } else if (rule->major >= 0) {
      skip = emit(p, JMP32_IMM(BPF_JNE, R4, (int32_t)(uint32_t)rule->major, 0));
    } else if (rule->minor >= 0) {
      skip = emit(p, JMP32_IMM(BPF_JNE, R5, (int32_t)(uint32_t)rule->minor, 0));
    }
    if (acc == ACC_ALL) {
      /* Decides every bit a request can carry (others were denied at the top). */
      emit(p, ALU64_IMM(BPF_MOV, R0, rule->allow ? 1 : 0));
      emit(p, EXIT());
    } else if (rule->allow) {
      emit(p, ALU64_IMM(BPF_AND, R3, (int32_t)~acc));
      emit(p, JMP_IMM(BPF_JNE, R3, 0, 2));
      emit(p, ALU64_IMM(BPF_MOV, R0, 1));
      emit(p, EXIT());
    } else {
      emit(p, ALU64_REG(BPF_MOV, R7, R3));
      emit(p, ALU64_IMM(BPF_AND, R7, (int32_t)acc));
      emit(p, JMP_IMM(BPF_JEQ, R7, 0, 2));
      emit(p, ALU64_IMM(BPF_MOV, R0, 0));
      emit(p, EXIT());
    }
    if (skip != SIZE_MAX)
      land_here(p, skip);
    else if (acc == ACC_ALL)
      return; /* matches everything: the rules before it are unreachable, and so is the default */
  }
  emit(p, ALU64_IMM(BPF_MOV, R0, 0)); /* nothing decided: deny */
  emit(p, EXIT());
}

static void build_program(struct prog *p, const struct spec_device_rule *rules, size_t n) {
  emit(p, LDX_W(R2, R1, offsetof(struct bpf_cgroup_dev_ctx, access_type)));
  emit(p, ALU64_REG(BPF_MOV, R3, R2));
  emit(p, ALU64_IMM(BPF_AND, R2, 0xffff));
  emit(p, ALU64_IMM(BPF_RSH, R3, 16));
  emit(p, LDX_W(R4, R1, offsetof(struct bpf_cgroup_dev_ctx, major)));
  emit(p, LDX_W(R5, R1, offsetof(struct bpf_cgroup_dev_ctx, minor)));
  emit(p, ALU64_REG(BPF_MOV, R6, R4));
  emit(p, ALU64_IMM(BPF_LSH, R6, 32));
  emit(p, ALU64_REG(BPF_OR, R6, R5));
  /* An access bit no rule can speak for (a future kernel's) is denied, as no rule decides it. */
  size_t unknown_access = emit(p, JMP_IMM(BPF_JSET, R3, (int32_t)~ACC_ALL, 0));
  size_t to_char = emit(p, JMP_IMM(BPF_JEQ, R2, BPF_DEVCG_DEV_CHAR, 0));
  size_t to_block = emit(p, JMP_IMM(BPF_JEQ, R2, BPF_DEVCG_DEV_BLOCK, 0));
  emit_section(p, rules, n, 'a'); /* neither type: only the 'a' rules apply */
  land_here(p, to_char);
  emit_section(p, rules, n, 'c');
  land_here(p, to_block);
  emit_section(p, rules, n, 'b');
  land_here(p, unknown_access);
  emit(p, ALU64_IMM(BPF_MOV, R0, 0));
  emit(p, EXIT());
}

static long sys_bpf(int cmd, union bpf_attr *attr) {
  return syscall(SYS_bpf, cmd, attr, sizeof(*attr));
}

static int load_program(const struct prog *p, struct cm_error **err) {
  union bpf_attr attr;
  memset(&attr, 0, sizeof(attr));
  attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
  attr.insns = (uint64_t)(uintptr_t)p->insns;
  attr.insn_cnt = (uint32_t)p->n;
  attr.license = (uint64_t)(uintptr_t) "GPL";
  int fd = (int)sys_bpf(BPF_PROG_LOAD, &attr);
  if (fd >= 0)
    return fd;
  int saved = errno;
  /* Load again with the verifier log so the error says why. */
  char log[4096] = "";
  attr.log_buf = (uint64_t)(uintptr_t)log;
  attr.log_size = sizeof(log);
  attr.log_level = 1;
  int again = (int)sys_bpf(BPF_PROG_LOAD, &attr);
  if (again >= 0)
    return again;
  log[sizeof(log) - 1] = '\0';
  return cm_error_set(err, saved, "load device filter (BPF_PROG_TYPE_CGROUP_DEVICE, %zu insns)%s%s", p->n,
                      log[0] ? ": " : "", log);
}

/* Ids of the device programs attached directly to the cgroup. */
static int query_attached(int dirfd, uint32_t *ids, uint32_t *count) {
  union bpf_attr attr;
  memset(&attr, 0, sizeof(attr));
  attr.query.target_fd = (uint32_t)dirfd;
  attr.query.attach_type = BPF_CGROUP_DEVICE;
  attr.query.prog_ids = (uint64_t)(uintptr_t)ids;
  attr.query.prog_cnt = *count;
  if (sys_bpf(BPF_PROG_QUERY, &attr) < 0)
    return -1;
  *count = attr.query.prog_cnt;
  return 0;
}

int cg_bpf_devices_apply(const char *dir, const struct spec_device_rule *rules, size_t n, struct cm_error **err) {
  struct prog p = {0};
  build_program(&p, rules, n);
  if (p.too_long) {
    free(p.insns);
    return cm_error_set(err, E2BIG, "linux.resources.devices: %zu rules make a device filter too long", n);
  }
  cleanup_close int prog_fd = load_program(&p, err);
  free(p.insns);
  if (prog_fd < 0)
    return -1;
  cleanup_close int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0)
    return cm_error_set(err, errno, "open %s", dir);

  uint32_t old_ids[64];
  uint32_t n_old = 64;
  if (query_attached(dirfd, old_ids, &n_old) < 0)
    n_old = 0;

  /* Attach the new filter before detaching the old ones: the container is never without one. */
  union bpf_attr attr;
  memset(&attr, 0, sizeof(attr));
  attr.target_fd = (uint32_t)dirfd;
  attr.attach_bpf_fd = (uint32_t)prog_fd;
  attr.attach_type = BPF_CGROUP_DEVICE;
  attr.attach_flags = BPF_F_ALLOW_MULTI;
  if (sys_bpf(BPF_PROG_ATTACH, &attr) < 0) {
    /* Someone attached a single, non-multi program here: replacing it is what attaching
     * without flags does. */
    attr.attach_flags = 0;
    if (sys_bpf(BPF_PROG_ATTACH, &attr) < 0)
      return cm_error_set(err, errno, "attach device filter to %s", dir);
    return 0;
  }
  for (uint32_t i = 0; i < n_old; i++) {
    union bpf_attr get;
    memset(&get, 0, sizeof(get));
    get.prog_id = old_ids[i];
    cleanup_close int old_fd = (int)sys_bpf(BPF_PROG_GET_FD_BY_ID, &get);
    if (old_fd < 0)
      continue;
    memset(&attr, 0, sizeof(attr));
    attr.target_fd = (uint32_t)dirfd;
    attr.attach_bpf_fd = (uint32_t)old_fd;
    attr.attach_type = BPF_CGROUP_DEVICE;
    if (sys_bpf(BPF_PROG_DETACH, &attr) < 0)
      cm_debug("cgroup: detach old device filter %u from %s: %s", old_ids[i], dir, strerror(errno));
  }
  return 0;
}
