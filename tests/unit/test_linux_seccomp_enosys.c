/* linux/seccomp_enosys.c: syscalls newer than every one a profile names get ENOSYS (as runc's
 * patchbpf), the rest of the profile is unchanged. The compiled programs are run through a small
 * classic-BPF evaluator here, for every architecture and mode, and one is loaded for real. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka.h needs the four above first. */
#include <cmocka.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/syscall.h>

#include "linux/seccomp.h"
#include "linux/security_attrs.h"
#include "test_linux_child.h"

#define X32_BIT 0x40000000u
#define RET_ERRNO(e) (SECCOMP_RET_ERRNO | (e))

/* Enough of classic BPF for what libseccomp and the stub emit. */
static uint32_t bpf_eval(const struct seccomp_program *p, uint32_t arch, uint32_t nr) {
  struct seccomp_data d = {.nr = (int)nr, .arch = arch};
  const struct sock_filter *f = p->bpf;
  uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {0};
  for (size_t pc = 0; pc < p->n_insns; pc++) {
    const struct sock_filter *i = &f[pc];
    switch (i->code) {
    case BPF_LD | BPF_W | BPF_ABS:
      assert_true(i->k + 4 <= sizeof(d));
      memcpy(&a, (const char *)&d + i->k, 4);
      break;
    case BPF_LD | BPF_MEM: a = mem[i->k]; break;
    case BPF_LDX | BPF_MEM: x = mem[i->k]; break;
    case BPF_ST: mem[i->k] = a; break;
    case BPF_STX: mem[i->k] = x; break;
    case BPF_ALU | BPF_AND | BPF_K: a &= i->k; break;
    case BPF_ALU | BPF_OR | BPF_K: a |= i->k; break;
    case BPF_MISC | BPF_TAX: x = a; break;
    case BPF_MISC | BPF_TXA: a = x; break;
    case BPF_JMP | BPF_JA: pc += i->k; break;
    case BPF_JMP | BPF_JEQ | BPF_K: pc += a == i->k ? i->jt : i->jf; break;
    case BPF_JMP | BPF_JGT | BPF_K: pc += a > i->k ? i->jt : i->jf; break;
    case BPF_JMP | BPF_JGE | BPF_K: pc += a >= i->k ? i->jt : i->jf; break;
    case BPF_JMP | BPF_JSET | BPF_K: pc += (a & i->k) ? i->jt : i->jf; break;
    case BPF_RET | BPF_K: return i->k;
    default: fail_msg("unsupported BPF instruction 0x%x at %zu", i->code, pc);
    }
  }
  fail_msg("fell off the end of the program");
  return 0;
}

static struct spec_strv strv(const char **items, size_t n) {
  return (struct spec_strv){.items = (char **)items, .count = n};
}

static const char *all_arches[] = {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"};

/* default ERRNO(6) (ENXIO, as in the report), write/exit_group/getppid allowed. */
static void compile(struct seccomp_program *prog, uint32_t dflt, const char **arches, size_t n_arches,
                    const char **names, size_t n_names) {
  struct spec_seccomp_syscall rule = {.names = strv(names, n_names), .action = SPEC_SECCOMP_ALLOW};
  struct spec_seccomp sc = {.present = true, .default_action = dflt, .has_default_errno_ret = true,
                            .default_errno_ret = 6, .architectures = strv(arches, n_arches),
                            .syscalls = &rule, .n_syscalls = 1};
  struct cm_error *err = NULL;
  if (seccomp_compile(&sc, prog, &err) < 0)
    fail_msg("seccomp_compile: %s", err->msg);
}

static int nr_of(uint32_t arch, const char *name) { return seccomp_syscall_resolve_name_arch(arch, name); }

static void test_enosys_above_the_highest_named(void **state) {
  const char *names[] = {"write", "exit_group", "getppid", "openat"};
  struct seccomp_program p;
  compile(&p, SPEC_SECCOMP_ERRNO, all_arches, 3, names, 4);
  /* x86_64: exit_group (231) is the highest named; openat (257) is higher. */
  int max64 = nr_of(SCMP_ARCH_X86_64, "openat");
  assert_int_equal(bpf_eval(&p, AUDIT_ARCH_X86_64, (uint32_t)max64), SECCOMP_RET_ALLOW);
  assert_int_equal(bpf_eval(&p, AUDIT_ARCH_X86_64, (uint32_t)max64 + 1), RET_ERRNO(ENOSYS));
  assert_int_equal(bpf_eval(&p, AUDIT_ARCH_X86_64, 1000), RET_ERRNO(ENOSYS));
  assert_int_equal(bpf_eval(&p, AUDIT_ARCH_X86_64, 435 /* clone3 */), RET_ERRNO(ENOSYS));
  /* Below it, unnamed: the profile's own default. */
  assert_int_equal(bpf_eval(&p, AUDIT_ARCH_X86_64, (uint32_t)nr_of(SCMP_ARCH_X86_64, "mkdir")), RET_ERRNO(6));
  /* x32: its own numbers (bit 30 set), its own maximum. */
  int max32 = nr_of(SCMP_ARCH_X32, "openat");
  assert_true((uint32_t)max32 & X32_BIT);
  assert_int_equal(bpf_eval(&p, AUDIT_ARCH_X86_64, (uint32_t)max32), SECCOMP_RET_ALLOW);
  assert_int_equal(bpf_eval(&p, AUDIT_ARCH_X86_64, (uint32_t)max32 + 1), RET_ERRNO(ENOSYS));
  /* i386: its own table. */
  int max386 = nr_of(SCMP_ARCH_X86, "openat");
  assert_int_equal(bpf_eval(&p, AUDIT_ARCH_I386, (uint32_t)max386), SECCOMP_RET_ALLOW);
  assert_int_equal(bpf_eval(&p, AUDIT_ARCH_I386, (uint32_t)max386 + 1), RET_ERRNO(ENOSYS));
  assert_int_equal(bpf_eval(&p, AUDIT_ARCH_I386, (uint32_t)nr_of(SCMP_ARCH_X86, "mkdir")), RET_ERRNO(6));
  /* An architecture the profile does not list still gets libseccomp's bad-arch kill. */
  assert_int_equal(bpf_eval(&p, AUDIT_ARCH_AARCH64, 1000) & SECCOMP_RET_ACTION_FULL, SECCOMP_RET_KILL_THREAD);
  seccomp_program_free(&p);
}

static void test_enosys_x86_64_without_x32(void **state) {
  const char *arches[] = {"SCMP_ARCH_X86_64"};
  const char *names[] = {"write", "exit_group"};
  struct seccomp_program p;
  compile(&p, SPEC_SECCOMP_KILL_PROCESS, arches, 1, names, 2);
  assert_int_equal(bpf_eval(&p, AUDIT_ARCH_X86_64, 1000), RET_ERRNO(ENOSYS)); /* also under a kill default */
  assert_int_equal(bpf_eval(&p, AUDIT_ARCH_X86_64, 60 /* exit */), SECCOMP_RET_KILL_PROCESS);
  /* x32 numbers are not judged by the stub: libseccomp's program decides (it kills them). */
  assert_int_not_equal(bpf_eval(&p, AUDIT_ARCH_X86_64, X32_BIT | 1000), RET_ERRNO(ENOSYS));
  seccomp_program_free(&p);
}

static void test_no_stub_for_a_permissive_default_or_no_arches(void **state) {
  const char *names[] = {"mkdir"};
  struct seccomp_program p;
  struct spec_seccomp_syscall rule = {.names = strv(names, 1), .action = SPEC_SECCOMP_ERRNO};
  struct spec_seccomp sc = {.present = true, .default_action = SPEC_SECCOMP_ALLOW,
                            .architectures = strv(all_arches, 3), .syscalls = &rule, .n_syscalls = 1};
  struct cm_error *err = NULL;
  assert_int_equal(seccomp_compile(&sc, &p, &err), 0);
  assert_int_equal(bpf_eval(&p, AUDIT_ARCH_X86_64, 1000), SECCOMP_RET_ALLOW);
  seccomp_program_free(&p);
  sc.default_action = SPEC_SECCOMP_LOG;
  rule.action = SPEC_SECCOMP_ERRNO;
  assert_int_equal(seccomp_compile(&sc, &p, &err), 0);
  assert_int_equal(bpf_eval(&p, AUDIT_ARCH_X86_64, 1000), SECCOMP_RET_LOG);
  seccomp_program_free(&p);
  /* runc 1.1.5 patches only the architectures the profile lists: none listed, no stub. */
  const char *allow[] = {"write", "exit_group"};
  compile(&p, SPEC_SECCOMP_ERRNO, NULL, 0, allow, 2);
  assert_int_equal(bpf_eval(&p, AUDIT_ARCH_X86_64, 1000), RET_ERRNO(6));
  seccomp_program_free(&p);
}

static int body_enosys(void) {
  errno = 0;
  CHILD_CHECK(syscall(1000, 0, 0, 0) == -1 && errno == ENOSYS);
  errno = 0;
  CHILD_CHECK(syscall(SYS_getuid) == -1 && errno == 6); /* below the maximum: the default */
  CHILD_CHECK(syscall(SYS_getppid) > 0);
  return 0;
}

static int load_and_check(void *arg) {
  CHILD_OK(no_new_privs_apply(&err));
  CHILD_OK(seccomp_program_load(arg, &err));
  return body_enosys();
}

static void test_enosys_loaded(void **state) {
  /* What the child's checks and exit need, sanitizers included (they unmap their signal stack). */
  const char *names[] = {"write", "exit_group", "exit", "getppid", "openat", "sigaltstack", "munmap", "mmap",
                         "rt_sigprocmask", "rt_sigaction", "madvise", "getpid", "gettid", "prctl"};
  struct seccomp_program p;
  compile(&p, SPEC_SECCOMP_ERRNO, all_arches, 3, names, sizeof(names) / sizeof(names[0]));
  assert_int_equal(run_in_child(load_and_check, &p), 0);
  seccomp_program_free(&p);
}

/* The cache (seccomp_cache.c) keeps the patched program: what a hit loads is what a compile gives. */
static void test_enosys_through_the_cache(void **state) {
  char dir[] = "/tmp/cm-seccomp-cache-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char cache[64];
  snprintf(cache, sizeof(cache), "%s/seccomp", dir);
  const char *names[] = {"write", "exit_group"};
  struct spec_seccomp_syscall rule = {.names = strv(names, 2), .action = SPEC_SECCOMP_ALLOW};
  struct spec_seccomp sc = {.present = true, .default_action = SPEC_SECCOMP_ERRNO,
                            .architectures = strv(all_arches, 3), .syscalls = &rule, .n_syscalls = 1};
  struct cm_error *err = NULL;
  struct seccomp_program fresh, cached;
  assert_int_equal(seccomp_compile(&sc, &fresh, &err), 0);
  assert_int_equal(seccomp_compile_cached(&sc, cache, &cached, &err), 0); /* miss: stored */
  seccomp_program_free(&cached);
  assert_int_equal(seccomp_compile_cached(&sc, cache, &cached, &err), 0); /* hit */
  assert_int_equal(cached.n_insns, fresh.n_insns);
  assert_memory_equal(cached.bpf, fresh.bpf, fresh.n_insns * sizeof(struct sock_filter));
  assert_int_equal(bpf_eval(&cached, AUDIT_ARCH_X86_64, 1000), RET_ERRNO(ENOSYS));
  seccomp_program_free(&cached);
  seccomp_program_free(&fresh);
  char cmd[128];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_enosys_above_the_highest_named),
      cmocka_unit_test(test_enosys_x86_64_without_x32),
      cmocka_unit_test(test_no_stub_for_a_permissive_default_or_no_arches),
      cmocka_unit_test(test_enosys_loaded),
      cmocka_unit_test(test_enosys_through_the_cache),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
