/* linux/{seccomp,caps,sysctl,fds,security_attrs}.c: the last steps before execve.
 * Everything that changes process state runs in a forked child (test_linux_child.h).
 * CM_TEST_FILTER="pattern" runs only matching tests (handy under valgrind). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka.h needs the four above first. */
#include <cmocka.h>

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/keyctl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>

#include "linux/caps.h"
#include "linux/fds.h"
#include "linux/last_steps.h"
#include "linux/seccomp.h"
#include "linux/security_attrs.h"
#include "linux/sysctl.h"
#include "test_linux_child.h"

#define BIT(c) (1ULL << (c))

/* ---- seccomp helpers ------------------------------------------------------------------- */

static struct spec_seccomp_syscall rule(const char *name, enum spec_seccomp_action action, uint32_t errno_ret,
                                        struct spec_seccomp_arg *args, size_t n_args) {
  struct spec_seccomp_syscall r = {0};
  char **items = calloc(2, sizeof(char *));
  items[0] = strdup(name);
  r.names.items = items;
  r.names.count = 1;
  r.action = action;
  r.has_errno_ret = errno_ret != 0;
  r.errno_ret = errno_ret;
  r.args = args;
  r.n_args = n_args;
  return r;
}

static void free_rules(struct spec_seccomp *sc) {
  for (size_t i = 0; i < sc->n_syscalls; i++) {
    for (size_t n = 0; n < sc->syscalls[i].names.count; n++)
      free(sc->syscalls[i].names.items[n]);
    free(sc->syscalls[i].names.items);
  }
}

/* Compile in the parent (so cmocka sees errors), load in a child running `body`. */
struct load_job {
  struct seccomp_program *prog;
  int (*body)(void);
  bool set_nnp;
};

static int load_and_run(void *arg) {
  struct load_job *job = arg;
  if (job->set_nnp)
    CHILD_OK(no_new_privs_apply(&err));
  CHILD_OK(seccomp_program_load(job->prog, &err));
  return job->body();
}

static int run_filtered(struct spec_seccomp *sc, int (*body)(void)) {
  struct seccomp_program prog;
  struct cm_error *err = NULL;
  int r = seccomp_compile(sc, &prog, &err);
  if (r < 0)
    fail_msg("seccomp_compile: %s", err->msg);
  assert_true(prog.n_insns > 0);
  struct load_job job = {&prog, body, true};
  int status = run_in_child(load_and_run, &job);
  seccomp_program_free(&prog);
  return status;
}

static int body_uname_errno_42(void) {
  struct utsname u;
  errno = 0;
  CHILD_CHECK(uname(&u) == -1 && errno == 42);
  CHILD_CHECK(getpid() > 0); /* everything else still allowed */
  return 0;
}

static void test_seccomp_errno(void **state) {
  struct spec_seccomp_syscall rules[] = {rule("uname", SPEC_SECCOMP_ERRNO, 42, NULL, 0)};
  struct spec_seccomp sc = {
      .present = true, .default_action = SPEC_SECCOMP_ALLOW, .syscalls = rules, .n_syscalls = 1};
  assert_int_equal(run_filtered(&sc, body_uname_errno_42), 0);
  free_rules(&sc);
}

static int body_getppid(void) {
  syscall(SYS_getppid);
  return 0; /* not reached: killed */
}

static void test_seccomp_kill_process(void **state) {
  struct spec_seccomp_syscall rules[] = {rule("getppid", SPEC_SECCOMP_KILL_PROCESS, 0, NULL, 0)};
  struct spec_seccomp sc = {
      .present = true, .default_action = SPEC_SECCOMP_ALLOW, .syscalls = rules, .n_syscalls = 1};
  assert_int_equal(run_filtered(&sc, body_getppid), 128 + SIGSYS);
  free_rules(&sc);
}

static void test_seccomp_kill_is_kill_thread(void **state) {
  struct spec_seccomp_syscall rules[] = {rule("getppid", SPEC_SECCOMP_KILL, 0, NULL, 0)};
  struct spec_seccomp sc = {
      .present = true, .default_action = SPEC_SECCOMP_ALLOW, .syscalls = rules, .n_syscalls = 1};
  assert_int_equal(run_filtered(&sc, body_getppid), 128 + SIGSYS);
  free_rules(&sc);
}

static void test_seccomp_unknown_names_skipped(void **state) {
  struct spec_seccomp_syscall rules[] = {rule("no_such_syscall_cm", SPEC_SECCOMP_ERRNO, 42, NULL, 0),
                                         rule("uname", SPEC_SECCOMP_ERRNO, 42, NULL, 0)};
  struct spec_seccomp sc = {
      .present = true, .default_action = SPEC_SECCOMP_ALLOW, .syscalls = rules, .n_syscalls = 2};
  assert_int_equal(run_filtered(&sc, body_uname_errno_42), 0);
  free_rules(&sc);
}

/* One operator on getpgid's arg0: `hit` must be refused with errno 42, `miss` must pass. */
struct op_case {
  enum spec_seccomp_op op;
  uint64_t value, value_two, hit, miss;
};
static struct op_case current_case;

static int body_op_case(void) {
  errno = 0;
  long r = syscall(SYS_getpgid, (long)current_case.hit);
  CHILD_CHECK(r == -1 && errno == 42);
  errno = 0;
  r = syscall(SYS_getpgid, (long)current_case.miss);
  CHILD_CHECK(!(r == -1 && errno == 42));
  return 0;
}

static void test_seccomp_arg_operators(void **state) {
  const struct op_case cases[] = {
      {SPEC_SECCOMP_OP_NE, 5, 0, 6, 5},
      {SPEC_SECCOMP_OP_LT, 5, 0, 4, 5},
      {SPEC_SECCOMP_OP_LE, 5, 0, 5, 6},
      {SPEC_SECCOMP_OP_EQ, 5, 0, 5, 4},
      {SPEC_SECCOMP_OP_GE, 5, 0, 5, 4},
      {SPEC_SECCOMP_OP_GT, 5, 0, 6, 5},
      {SPEC_SECCOMP_OP_MASKED_EQ, 0xf0, 0x50, 0x5a, 0x6a},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    current_case = cases[i];
    struct spec_seccomp_arg arg = {0, cases[i].value, cases[i].value_two, cases[i].op};
    struct spec_seccomp_syscall rules[] = {rule("getpgid", SPEC_SECCOMP_ERRNO, 42, &arg, 1)};
    struct spec_seccomp sc = {
        .present = true, .default_action = SPEC_SECCOMP_ALLOW, .syscalls = rules, .n_syscalls = 1};
    if (run_filtered(&sc, body_op_case) != 0)
      fail_msg("operator case %zu failed", i);
    free_rules(&sc);
  }
}

static int body_personality(void) {
  errno = 0;
  CHILD_CHECK(personality(0xffffffff) == -1 && errno == 43);
  CHILD_CHECK(personality(PER_LINUX) != -1);
  return 0;
}

static void test_seccomp_personality_eq(void **state) {
  struct spec_seccomp_arg arg = {0, 0xffffffff, 0, SPEC_SECCOMP_OP_EQ};
  struct spec_seccomp_syscall rules[] = {rule("personality", SPEC_SECCOMP_ERRNO, 43, &arg, 1)};
  struct spec_seccomp sc = {
      .present = true, .default_action = SPEC_SECCOMP_ALLOW, .syscalls = rules, .n_syscalls = 1};
  assert_int_equal(run_filtered(&sc, body_personality), 0);
  free_rules(&sc);
}

static int body_same_index_or(void) {
  errno = 0;
  CHILD_CHECK(syscall(SYS_getpgid, 7L) == -1 && errno == 42);
  errno = 0;
  CHILD_CHECK(syscall(SYS_getpgid, 9L) == -1 && errno == 42);
  errno = 0;
  CHILD_CHECK(!(syscall(SYS_getpgid, 8L) == -1 && errno == 42));
  return 0;
}

static void test_seccomp_same_index_is_or(void **state) {
  struct spec_seccomp_arg args[] = {{0, 7, 0, SPEC_SECCOMP_OP_EQ}, {0, 9, 0, SPEC_SECCOMP_OP_EQ}};
  struct spec_seccomp_syscall rules[] = {rule("getpgid", SPEC_SECCOMP_ERRNO, 42, args, 2)};
  struct spec_seccomp sc = {
      .present = true, .default_action = SPEC_SECCOMP_ALLOW, .syscalls = rules, .n_syscalls = 1};
  assert_int_equal(run_filtered(&sc, body_same_index_or), 0);
  free_rules(&sc);
}

static int body_different_index_and(void) {
  errno = 0;
  CHILD_CHECK(syscall(SYS_getpriority, (long)PRIO_PROCESS, 4242L) == -1 && errno == 42);
  errno = 0;
  CHILD_CHECK(!(syscall(SYS_getpriority, (long)PRIO_PROCESS, 0L) == -1 && errno == 42));
  errno = 0;
  CHILD_CHECK(!(syscall(SYS_getpriority, (long)PRIO_PGRP, 4242L) == -1 && errno == 42));
  return 0;
}

static void test_seccomp_different_index_is_and(void **state) {
  struct spec_seccomp_arg args[] = {{0, PRIO_PROCESS, 0, SPEC_SECCOMP_OP_EQ},
                                    {1, 4242, 0, SPEC_SECCOMP_OP_EQ}};
  struct spec_seccomp_syscall rules[] = {rule("getpriority", SPEC_SECCOMP_ERRNO, 42, args, 2)};
  struct spec_seccomp sc = {
      .present = true, .default_action = SPEC_SECCOMP_ALLOW, .syscalls = rules, .n_syscalls = 1};
  assert_int_equal(run_filtered(&sc, body_different_index_and), 0);
  free_rules(&sc);
}

static int body_default_errno(void) {
  /* Only exit_group (for _exit) and the probe are allowed; everything else answers ENOSYS. */
  errno = 0;
  CHILD_CHECK(syscall(SYS_getpid) == -1 && errno == ENOSYS);
  CHILD_CHECK(syscall(SYS_getppid) > 0);
  return 0;
}

static void test_seccomp_default_errno_and_skip_default_rule(void **state) {
  /* Plus what a sanitizer runtime may need on the way out. */
  char *allow_names[] = {"getppid",     "exit_group", "exit",    "write",        "mmap",
                         "munmap",      "mprotect",   "madvise", "rt_sigaction", "rt_sigprocmask",
                         "sigaltstack", "prctl",      NULL};
  struct spec_seccomp_syscall rules[2] = {0};
  rules[0].names.items = allow_names;
  rules[0].names.count = sizeof(allow_names) / sizeof(allow_names[0]) - 1;
  rules[0].action = SPEC_SECCOMP_ALLOW;
  /* Same as the default action: must be skipped, not refused. */
  rules[1] = rule("getpid", SPEC_SECCOMP_ERRNO, ENOSYS, NULL, 0);
  struct spec_seccomp sc = {.present = true,
                            .default_action = SPEC_SECCOMP_ERRNO,
                            .has_default_errno_ret = true,
                            .default_errno_ret = ENOSYS,
                            .syscalls = rules,
                            .n_syscalls = 2};
  assert_int_equal(run_filtered(&sc, body_default_errno), 0);
  free(rules[1].names.items[0]);
  free(rules[1].names.items);
}

static void test_seccomp_architectures_and_flags(void **state) {
  char *archs[] = {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32", "SCMP_ARCH_NOT_A_REAL_ONE", NULL};
  char *flags[] = {"SECCOMP_FILTER_FLAG_LOG", "SECCOMP_FILTER_FLAG_SPEC_ALLOW", "SECCOMP_FILTER_FLAG_TSYNC",
                   NULL};
  struct spec_seccomp_syscall rules[] = {rule("uname", SPEC_SECCOMP_ERRNO, 42, NULL, 0)};
  struct spec_seccomp sc = {.present = true,
                            .default_action = SPEC_SECCOMP_ALLOW,
                            .architectures = {archs, 4},
                            .flags = {flags, 3},
                            .syscalls = rules,
                            .n_syscalls = 1};
  struct seccomp_program prog;
  struct cm_error *err = NULL;
  assert_int_equal(seccomp_compile(&sc, &prog, &err), 0);
  assert_int_equal(prog.flags, 1u | 2u | 4u);
  assert_false(prog.notify);
  seccomp_program_free(&prog);
  assert_int_equal(run_filtered(&sc, body_uname_errno_42), 0);
  free_rules(&sc);
}

static void test_seccomp_refusals(void **state) {
  struct cm_error *err = NULL;
  struct seccomp_program prog;
  struct spec_seccomp notify_default = {.present = true, .default_action = SPEC_SECCOMP_NOTIFY};
  assert_int_equal(seccomp_compile(&notify_default, &prog, &err), -1);
  assert_non_null(strstr(err->msg, "cannot be the default action"));
  cm_error_free(err);
  err = NULL;

  char *flags[] = {"SECCOMP_FILTER_FLAG_BOGUS", NULL};
  struct spec_seccomp bad_flag = {.present = true, .default_action = SPEC_SECCOMP_ALLOW, .flags = {flags, 1}};
  assert_int_equal(seccomp_compile(&bad_flag, &prog, &err), -1);
  assert_non_null(strstr(err->msg, "SECCOMP_FILTER_FLAG_BOGUS"));
  cm_error_free(err);
  err = NULL;

  struct spec_seccomp absent = {0};
  assert_int_equal(seccomp_compile(&absent, &prog, &err), 0);
  assert_int_equal(prog.n_insns, 0);
  assert_int_equal(seccomp_program_load(&prog, &err), 0); /* no-op */
  seccomp_program_free(&prog);
}

static int notify_child(void *arg) {
  struct seccomp_program *prog = arg;
  CHILD_OK(no_new_privs_apply(&err));
  struct cm_error *err = NULL;
  int fd = seccomp_program_load(prog, &err);
  CHILD_CHECK(fd > 2);
  CHILD_CHECK(fcntl(fd, F_GETFD) >= 0);
  return 0;
}

static void test_seccomp_notify_returns_listener(void **state) {
  char *flags[] = {"SECCOMP_FILTER_FLAG_TSYNC", NULL};
  struct spec_seccomp_syscall rules[] = {rule("getppid", SPEC_SECCOMP_NOTIFY, 0, NULL, 0)};
  struct spec_seccomp sc = {.present = true,
                            .default_action = SPEC_SECCOMP_ALLOW,
                            .flags = {flags, 1},
                            .syscalls = rules,
                            .n_syscalls = 1};
  struct seccomp_program prog;
  struct cm_error *err = NULL;
  assert_int_equal(seccomp_compile(&sc, &prog, &err), 0);
  assert_true(prog.notify);
  /* TSYNC + NEW_LISTENER needs TSYNC_ESRCH: load must cope. */
  assert_int_equal(run_in_child(notify_child, &prog), 0);
  seccomp_program_free(&prog);
  free_rules(&sc);
}

/* The process's last steps (linux/last_steps.h: bounding set, user, capability sets), run in
 * place as the runtime runs them from its sealed copy. */
static int apply_process(const struct spec_capabilities *caps, uint32_t uid, bool nnp,
                         const struct seccomp_program *filter, struct cm_error **err) {
  struct spec_process p = {.capabilities = *caps, .user = {.uid = uid, .gid = uid}, .cwd = "/",
                           .no_new_privileges = nnp};
  struct last_steps_process lp = {.process = &p, .filters = {NULL, filter}};
  struct last_steps ls;
  last_steps_init(&ls, 2, false);
  int rc = last_steps_for_process(&ls, &lp, err);
  if (rc == 0)
    rc = last_steps_run_here(&ls, err);
  last_steps_free(&ls);
  return rc;
}

/* Without no_new_privs and without CAP_SYS_ADMIN the kernel refuses the filter. */
static int load_unprivileged_child(void *arg) {
  struct seccomp_program *prog = arg;
  struct spec_capabilities none = {.present = true, .bounding = BIT(CAP_SETPCAP)};
  CHILD_OK(apply_process(&none, 0, false, NULL, &err));
  CHILD_FAILS_WITH(seccomp_program_load(prog, &err), "no_new_privs or CAP_SYS_ADMIN");
  return 0;
}

static void test_seccomp_needs_nnp_or_sys_admin(void **state) {
  struct spec_seccomp_syscall rules[] = {rule("uname", SPEC_SECCOMP_ERRNO, 42, NULL, 0)};
  struct spec_seccomp sc = {
      .present = true, .default_action = SPEC_SECCOMP_ALLOW, .syscalls = rules, .n_syscalls = 1};
  struct seccomp_program prog;
  struct cm_error *err = NULL;
  assert_int_equal(seccomp_compile(&sc, &prog, &err), 0);
  assert_int_equal(run_in_child(load_unprivileged_child, &prog), 0);
  seccomp_program_free(&prog);
  free_rules(&sc);
}

/* ---- capabilities ---------------------------------------------------------------------- */

struct cap_sets {
  uint64_t inh, prm, eff, bnd, amb;
};

static int read_cap_sets(struct cap_sets *s) {
  FILE *f = fopen("/proc/self/status", "re");
  if (!f)
    return -1;
  char line[256];
  int found = 0;
  while (fgets(line, sizeof(line), f)) {
    unsigned long long v;
    if (sscanf(line, "CapInh: %llx", &v) == 1)
      s->inh = v, found++;
    else if (sscanf(line, "CapPrm: %llx", &v) == 1)
      s->prm = v, found++;
    else if (sscanf(line, "CapEff: %llx", &v) == 1)
      s->eff = v, found++;
    else if (sscanf(line, "CapBnd: %llx", &v) == 1)
      s->bnd = v, found++;
    else if (sscanf(line, "CapAmb: %llx", &v) == 1)
      s->amb = v, found++;
  }
  fclose(f);
  return found == 5 ? 0 : -1;
}

#define CHILD_CHECK_SETS(want)                                                                               \
  do {                                                                                                       \
    struct cap_sets got_ = {0};                                                                              \
    CHILD_CHECK(read_cap_sets(&got_) == 0);                                                                  \
    if (memcmp(&got_, &(want), sizeof(got_)) != 0) {                                                         \
      dprintf(2, "caps: got inh %llx prm %llx eff %llx bnd %llx amb %llx\n", (unsigned long long)got_.inh,   \
              (unsigned long long)got_.prm, (unsigned long long)got_.eff, (unsigned long long)got_.bnd,      \
              (unsigned long long)got_.amb);                                                                 \
      _exit(1);                                                                                              \
    }                                                                                                        \
  } while (0)

struct caps_case {
  struct spec_capabilities spec;
  struct cap_sets want;
  uint32_t uid; /* 0: stay root */
};

static int caps_child(void *arg) {
  struct caps_case *c = arg;
  CHILD_OK(apply_process(&c->spec, c->uid, false, NULL, &err));
  CHILD_CHECK(getuid() == c->uid && geteuid() == c->uid);
  CHILD_CHECK_SETS(c->want);
  CHILD_CHECK(prctl(PR_GET_KEEPCAPS, 0, 0, 0, 0) == 0);
  return 0;
}

static void test_caps_root_exact_sets(void **state) {
  uint64_t b = BIT(CAP_CHOWN) | BIT(CAP_KILL) | BIT(CAP_NET_BIND_SERVICE);
  uint64_t p = BIT(CAP_CHOWN) | BIT(CAP_KILL);
  struct caps_case c = {
      .spec = {.present = true, .bounding = b, .permitted = p, .effective = p},
      .want = {.inh = 0, .prm = p, .eff = p, .bnd = b, .amb = 0},
  };
  assert_int_equal(run_in_child(caps_child, &c), 0);
}

static void test_caps_absent_means_none(void **state) {
  struct caps_case c = {.spec = {.present = false}, .want = {0}};
  assert_int_equal(run_in_child(caps_child, &c), 0);
}

static void test_caps_ambient(void **state) {
  uint64_t nb = BIT(CAP_NET_BIND_SERVICE);
  struct caps_case c = {
      .spec = {.present = true,
               .bounding = nb,
               .permitted = nb,
               .effective = nb,
               .inheritable = nb,
               .ambient = nb},
      .want = {.inh = nb, .prm = nb, .eff = nb, .bnd = nb, .amb = nb},
  };
  assert_int_equal(run_in_child(caps_child, &c), 0);
}

static void test_caps_ambient_without_inheritable_warns(void **state) {
  uint64_t nb = BIT(CAP_NET_BIND_SERVICE);
  struct caps_case c = {
      .spec = {.present = true, .bounding = nb, .permitted = nb, .effective = nb, .ambient = nb},
      .want = {.inh = 0, .prm = nb, .eff = nb, .bnd = nb, .amb = 0},
  };
  assert_int_equal(run_in_child(caps_child, &c), 0);
}

static void test_caps_non_root_user(void **state) {
  uint64_t b = BIT(CAP_CHOWN) | BIT(CAP_NET_BIND_SERVICE) | BIT(CAP_SETPCAP);
  uint64_t p = BIT(CAP_NET_BIND_SERVICE) | BIT(CAP_CHOWN);
  uint64_t nb = BIT(CAP_NET_BIND_SERVICE);
  struct caps_case c = {
      .spec =
          {.present = true, .bounding = b, .permitted = p, .effective = p, .inheritable = nb, .ambient = nb},
      .want = {.inh = nb, .prm = p, .eff = p, .bnd = b, .amb = nb},
      .uid = 1000,
  };
  assert_int_equal(run_in_child(caps_child, &c), 0);
}

static void test_caps_non_root_user_none(void **state) {
  struct caps_case c = {.spec = {.present = true}, .want = {0}, .uid = 1000};
  assert_int_equal(run_in_child(caps_child, &c), 0);
}

static void test_caps_unknown_bits_ignored(void **state) {
  uint64_t k = BIT(CAP_KILL);
  struct caps_case c = {
      .spec = {.present = true, .bounding = k | BIT(62), .permitted = k | BIT(62), .effective = k},
      .want = {.prm = k, .eff = k, .bnd = k},
  };
  assert_int_equal(run_in_child(caps_child, &c), 0);
}

static int caps_inheritable_outside_bounding_child(void *arg) {
  struct spec_capabilities c = {
      .present = true, .bounding = BIT(CAP_KILL), .permitted = BIT(CAP_KILL), .inheritable = BIT(CAP_CHOWN)};
  CHILD_FAILS_WITH(apply_process(&c, 0, false, NULL, &err), "set permitted/effective/inheritable");
  return 0;
}

static void test_caps_inheritable_outside_bounding_refused(void **state) {
  assert_int_equal(run_in_child(caps_inheritable_outside_bounding_child, NULL), 0);
}

/* The filters are the last steps: loaded for a non-root user without no_new_privs and without
 * CAP_SYS_ADMIN in its sets (it is kept effective for the load, then dropped by one capset), and
 * with no_new_privs after everything else. Either way the process ends filtered, with exactly
 * its sets. */
struct filtered_case {
  struct seccomp_program *prog;
  bool nnp;
};

static int filtered_child(void *arg) {
  struct filtered_case *c = arg;
  struct spec_capabilities caps = {.present = true, .bounding = BIT(CAP_KILL), .permitted = BIT(CAP_KILL),
                                   .effective = BIT(CAP_KILL)};
  CHILD_OK(apply_process(&caps, 1000, c->nnp, c->prog, &err));
  struct utsname u;
  errno = 0;
  CHILD_CHECK(uname(&u) == -1 && errno == 42);
  CHILD_CHECK(getuid() == 1000);
  CHILD_CHECK(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == (c->nnp ? 1 : 0));
  struct cap_sets want = {.prm = BIT(CAP_KILL), .eff = BIT(CAP_KILL), .bnd = BIT(CAP_KILL)};
  CHILD_CHECK_SETS(want);
  return 0;
}

static void test_seccomp_last_with_and_without_nnp(void **state) {
  struct spec_seccomp_syscall rules[] = {rule("uname", SPEC_SECCOMP_ERRNO, 42, NULL, 0)};
  struct spec_seccomp sc = {
      .present = true, .default_action = SPEC_SECCOMP_ALLOW, .syscalls = rules, .n_syscalls = 1};
  struct seccomp_program prog;
  struct cm_error *err = NULL;
  assert_int_equal(seccomp_compile(&sc, &prog, &err), 0);
  struct filtered_case with = {&prog, true}, without = {&prog, false};
  assert_int_equal(run_in_child(filtered_child, &with), 0);
  assert_int_equal(run_in_child(filtered_child, &without), 0);
  seccomp_program_free(&prog);
  free_rules(&sc);
}

/* ---- sysctl ---------------------------------------------------------------------------- */

static int validate_one(const char *key, const bool new_ns[SPEC_NS_COUNT], const char *net_path, char **msg) {
  struct spec s = {0};
  struct spec_kv kv = {(char *)key, "1"};
  s.linux_.sysctl.items = &kv;
  s.linux_.sysctl.count = 1;
  for (int t = 0; t < SPEC_NS_COUNT; t++)
    s.linux_.namespaces[t].present = new_ns[t];
  if (net_path) {
    s.linux_.namespaces[SPEC_NS_NETWORK].present = true;
    s.linux_.namespaces[SPEC_NS_NETWORK].path = (char *)net_path;
  }
  struct cm_error *err = NULL;
  int r = sysctl_validate(&s, &err);
  *msg = err ? strdup(err->msg) : NULL;
  cm_error_free(err);
  return r;
}

static void test_sysctl_validate_table(void **state) {
  bool all[SPEC_NS_COUNT], none[SPEC_NS_COUNT] = {0};
  for (int t = 0; t < SPEC_NS_COUNT; t++)
    all[t] = true;
  const struct {
    const char *key;
    bool with_all;
    const char *net_path;
    const char *error; /* NULL: accepted */
  } cases[] = {
      {"net.ipv4.ip_forward", true, NULL, NULL},
      {"net.ipv4.ip_forward", false, NULL, "needs a new network namespace"},
      {"net.ipv4.ip_forward", false, "/proc/self/ns/net", "needs a new network namespace"},
      {"net/ipv4/conf/eth0.100/forwarding", true, NULL, NULL},
      {"kernel.msgmax", true, NULL, NULL},
      {"kernel.shm_rmid_forced", true, NULL, NULL},
      {"fs.mqueue.msg_max", true, NULL, NULL},
      {"kernel.sem", false, NULL, "needs a new IPC namespace"},
      {"kernel.hostname", true, NULL, NULL},
      {"kernel.domainname", false, NULL, "needs a new UTS namespace"},
      {"vm.swappiness", true, NULL, "is not namespaced and would change the host"},
      {"kernel.core_pattern", true, NULL, "\"kernel.core_pattern\" is not namespaced"},
      {"fs.file-max", true, NULL, "is not namespaced"},
      {"net..ipv4", true, NULL, "is not a valid key"},
      {".net.ipv4", true, NULL, "is not a valid key"},
      {"net.ipv4.", true, NULL, "is not a valid key"},
      {"net/ipv4/../../kernel/core_pattern", true, NULL, "is not a valid key"},
      {"net/./ipv4", true, NULL, "is not a valid key"},
      {"", true, NULL, "empty key"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char *msg = NULL;
    int r = validate_one(cases[i].key, cases[i].with_all ? all : none, cases[i].net_path, &msg);
    if (cases[i].error == NULL && r != 0)
      fail_msg("%s: unexpected error %s", cases[i].key, msg);
    if (cases[i].error && (r == 0 || !msg || !strstr(msg, cases[i].error)))
      fail_msg("%s: expected \"%s\", got %s", cases[i].key, cases[i].error, msg ? msg : "success");
    free(msg);
  }
}

static int sysctl_apply_child(void *arg) {
  CHILD_CHECK(unshare(CLONE_NEWNET) == 0);
  struct spec_kv kvs[] = {{"net.ipv4.ip_forward", "1"}, {"net/ipv4/conf/lo/forwarding", "1"}};
  struct spec_kv_list l = {kvs, 2};
  CHILD_OK(sysctl_apply(&l, &err));
  char buf[8] = {0};
  int fd = open("/proc/sys/net/ipv4/ip_forward", O_RDONLY);
  CHILD_CHECK(fd >= 0 && read(fd, buf, sizeof(buf) - 1) > 0 && buf[0] == '1');
  close(fd);
  fd = open("/proc/sys/net/ipv4/conf/lo/forwarding", O_RDONLY);
  CHILD_CHECK(fd >= 0 && read(fd, buf, sizeof(buf) - 1) > 0 && buf[0] == '1');
  close(fd);
  struct spec_kv missing[] = {{"net.ipv4.no_such_key_cm", "1"}};
  struct spec_kv_list l2 = {missing, 1};
  CHILD_FAILS_WITH(sysctl_apply(&l2, &err), "net.ipv4.no_such_key_cm");
  return 0;
}

static char read_first_byte(const char *path) {
  char c = 0;
  int fd = open(path, O_RDONLY);
  if (fd >= 0 && read(fd, &c, 1) != 1)
    c = 0;
  if (fd >= 0)
    close(fd);
  return c;
}

static void test_sysctl_apply_in_new_netns(void **state) {
  char host_before = read_first_byte("/proc/sys/net/ipv4/ip_forward");
  assert_int_equal(run_in_child(sysctl_apply_child, NULL), 0);
  assert_int_equal(read_first_byte("/proc/sys/net/ipv4/ip_forward"), host_before);
}

/* With close_range denied by a seccomp profile (EPERM), the /proc/self/fd walk takes over. */
static int body_cloexec_under_seccomp(void) {
  int fd = open("/dev/null", O_RDONLY);
  CHILD_CHECK(fd >= 0 && dup2(fd, 9) == 9);
  CHILD_CHECK(syscall(SYS_close_range, 100U, 200U, 0U) == -1 && errno == EPERM);
  CHILD_OK(fds_close_on_exec_from(3, &err));
  CHILD_CHECK(fcntl(9, F_GETFD) & FD_CLOEXEC);
  return 0;
}

static void test_fds_close_range_denied_falls_back(void **state) {
  struct spec_seccomp_syscall rules[] = {rule("close_range", SPEC_SECCOMP_ERRNO, EPERM, NULL, 0)};
  struct spec_seccomp sc = {
      .present = true, .default_action = SPEC_SECCOMP_ALLOW, .syscalls = rules, .n_syscalls = 1};
  assert_int_equal(run_filtered(&sc, body_cloexec_under_seccomp), 0);
  free_rules(&sc);
}

/* ---- procfs ---------------------------------------------------------------------------- */

static void test_procfs_open_paths(void **state) {
  struct cm_error *err = NULL;
  int fd = procfs_open("sys/kernel/ostype", O_RDONLY, &err);
  assert_true(fd >= 0);
  char buf[16] = {0};
  assert_true(read(fd, buf, sizeof(buf) - 1) > 0);
  assert_int_equal(strncmp(buf, "Linux", 5), 0);
  close(fd);
  fd = procfs_open("self/status", O_RDONLY, &err);
  assert_true(fd >= 0);
  close(fd);
  fd = procfs_open("thread-self/attr/current", O_RDONLY, &err);
  assert_true(fd >= 0);
  close(fd);
  /* A symlink inside procfs (self/cwd is a magic link) is not followed. */
  assert_int_equal(procfs_open("self/cwd/etc/passwd", O_RDONLY, &err), -1);
  cm_error_free(err);
  err = NULL;
  assert_int_equal(procfs_open("sys/../../etc/passwd", O_RDONLY, &err), -1);
  cm_error_free(err);
}

/* In a private mount namespace: a file bind-mounted over a procfs file is never written to. */
static int procfs_overmount_child(void *arg) {
  const char *decoy = arg;
  CHILD_CHECK(unshare(CLONE_NEWNS) == 0);
  CHILD_CHECK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
  CHILD_CHECK(mount(decoy, "/proc/sys/kernel/domainname", NULL, MS_BIND, NULL) == 0);
  CHILD_CHECK(unshare(CLONE_NEWUTS) == 0);
  struct spec_kv kvs[] = {{"kernel.domainname", "cm-overmount"}};
  struct spec_kv_list l = {kvs, 1};
  CHILD_OK(sysctl_apply(&l, &err)); /* lands in the real procfs (private instance) */
  char name[64] = {0};
  CHILD_CHECK(getdomainname(name, sizeof(name)) == 0 && strcmp(name, "cm-overmount") == 0);
  /* Without CAP_SYS_ADMIN (no private procfs), the overmount is detected instead. */
  struct spec_capabilities c = {.present = true,
                                .bounding = BIT(CAP_SETPCAP),
                                .permitted = BIT(CAP_SETPCAP),
                                .effective = BIT(CAP_SETPCAP)};
  CHILD_OK(apply_process(&c, 0, false, NULL, &err));
  CHILD_FAILS_WITH(sysctl_apply(&l, &err), "something is mounted over it");
  return 0;
}

static void test_procfs_overmount(void **state) {
  char decoy[] = "/tmp/cm-sec-decoy-XXXXXX";
  int fd = mkstemp(decoy);
  assert_true(fd >= 0);
  close(fd);
  int r = run_in_child(procfs_overmount_child, decoy);
  struct stat st;
  assert_int_equal(stat(decoy, &st), 0);
  unlink(decoy);
  assert_int_equal(r, 0);
  assert_int_equal(st.st_size, 0); /* nothing was written to the decoy */
}

/* A tmpfs dressed up as /proc is refused when we must fall back to /proc. */
static int fake_proc_child(void *arg) {
  CHILD_CHECK(unshare(CLONE_NEWNS) == 0);
  CHILD_CHECK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
  CHILD_CHECK(mount("cm-fake-proc", "/proc", "tmpfs", 0, NULL) == 0);
  struct spec_capabilities c = {.present = true,
                                .bounding = BIT(CAP_SETPCAP),
                                .permitted = BIT(CAP_SETPCAP),
                                .effective = BIT(CAP_SETPCAP)};
  CHILD_OK(apply_process(&c, 0, false, NULL, &err));
  CHILD_FAILS_WITH(procfs_open("sys/kernel/ostype", O_RDONLY, &err), "/proc is not a procfs");
  return 0;
}

static void test_procfs_fake_proc_refused(void **state) {
  assert_int_equal(run_in_child(fake_proc_child, NULL), 0);
}

/* ---- fds ------------------------------------------------------------------------------- */

static int cloexec_child(void *arg) {
  int fd = open("/dev/null", O_RDONLY);
  CHILD_CHECK(fd >= 0 && dup2(fd, 7) == 7 && dup2(fd, 300) == 300);
  CHILD_CHECK(!(fcntl(7, F_GETFD) & FD_CLOEXEC));
  CHILD_OK(fds_close_on_exec_from(3, &err));
  CHILD_CHECK(fcntl(7, F_GETFD) & FD_CLOEXEC);
  CHILD_CHECK(fcntl(300, F_GETFD) & FD_CLOEXEC);
  CHILD_CHECK(!(fcntl(2, F_GETFD) & FD_CLOEXEC));
  /* After execve nothing past 2 remains. */
  execl("/bin/sh", "sh", "-c",
        "for f in /proc/self/fd/*; do n=${f##*/}; [ $n -le 2 ] || [ ! -e $f ] || exit 3; done", (char *)NULL);
  return 2;
}

static void test_fds_close_on_exec(void **state) {
  assert_int_equal(run_in_child(cloexec_child, NULL), 0);
}

static int cloexec_preserve_child(void *arg) {
  int fd = open("/dev/null", O_RDONLY);
  CHILD_CHECK(fd >= 0 && dup2(fd, 3) == 3 && dup2(fd, 4) == 4);
  CHILD_OK(fds_close_on_exec_from(4, &err)); /* --preserve-fds 1 */
  CHILD_CHECK(!(fcntl(3, F_GETFD) & FD_CLOEXEC));
  CHILD_CHECK(fcntl(4, F_GETFD) & FD_CLOEXEC);
  return 0;
}

static void test_fds_preserve(void **state) {
  assert_int_equal(run_in_child(cloexec_preserve_child, NULL), 0);
}

static int cwd_ok_child(void *arg) {
  CHILD_CHECK(chdir("/tmp") == 0);
  CHILD_OK(fds_verify_cwd_inside_root(&err));
  return 0;
}

/* CVE-2024-21626 shape: a host directory fd survives into a chroot and becomes the cwd. */
static int cwd_leak_child(void *arg) {
  const char *root = arg;
  int host_dir = open("/tmp", O_PATH | O_DIRECTORY);
  CHILD_CHECK(host_dir >= 0);
  CHILD_CHECK(chroot(root) == 0);
  CHILD_CHECK(fchdir(host_dir) == 0);
  CHILD_FAILS_WITH(fds_verify_cwd_inside_root(&err), "outside the container root");
  return 0;
}

static void test_fds_verify_cwd(void **state) {
  assert_int_equal(run_in_child(cwd_ok_child, NULL), 0);
  char root[] = "/tmp/cm-sec-root-XXXXXX";
  assert_non_null(mkdtemp(root));
  int r = run_in_child(cwd_leak_child, root);
  rmdir(root);
  assert_int_equal(r, 0);
}

/* ---- no_new_privs, LSM, keyring --------------------------------------------------------- */

static int nnp_child(void *arg) {
  CHILD_CHECK(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 0);
  CHILD_OK(no_new_privs_apply(&err));
  CHILD_CHECK(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1);
  return 0;
}

static void test_no_new_privs(void **state) {
  assert_int_equal(run_in_child(nnp_child, NULL), 0);
}

static bool lsm_active(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

static void test_lsm_labels_refused_without_lsm(void **state) {
  struct spec_process p = {0};
  struct cm_error *err = NULL;
  assert_int_equal(lsm_apply_exec_label(&p, &err), 0);
  if (!lsm_active("/sys/module/apparmor/parameters/enabled")) {
    p.apparmor_profile = "cm-test-profile";
    assert_int_equal(lsm_apply_exec_label(&p, &err), -1);
    assert_string_equal(
        err->msg, "apparmor profile cm-test-profile requested but AppArmor is not enabled on this host");
    cm_error_free(err);
    err = NULL;
    p.apparmor_profile = NULL;
  }
  if (!lsm_active("/sys/fs/selinux/enforce")) {
    p.selinux_label = "system_u:system_r:container_t:s0";
    assert_int_equal(lsm_apply_exec_label(&p, &err), -1);
    assert_non_null(strstr(err->msg, "SELinux is not enabled"));
    cm_error_free(err);
  }
}

static int keyring_child(void *arg) {
  long before = syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0);
  CHILD_OK(keyring_join_new("cm-unit-test", &err));
  long after = syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0);
  CHILD_CHECK(after > 0 && after != before);
  char desc[256] = {0};
  long n = syscall(SYS_keyctl, KEYCTL_DESCRIBE, after, desc, sizeof(desc) - 1);
  CHILD_CHECK(n > 0);
  CHILD_CHECK(strstr(desc, ";_ses.cm-unit-test") != NULL);
  unsigned perm = 0;
  CHILD_CHECK(sscanf(strchr(strchr(strchr(desc, ';') + 1, ';') + 1, ';') + 1, "%x", &perm) == 1);
  CHILD_CHECK(perm & 0x00080000u);
  return 0;
}

static void test_keyring_join_new(void **state) {
  assert_int_equal(run_in_child(keyring_child, NULL), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_seccomp_errno),
      cmocka_unit_test(test_seccomp_kill_process),
      cmocka_unit_test(test_seccomp_kill_is_kill_thread),
      cmocka_unit_test(test_seccomp_unknown_names_skipped),
      cmocka_unit_test(test_seccomp_arg_operators),
      cmocka_unit_test(test_seccomp_personality_eq),
      cmocka_unit_test(test_seccomp_same_index_is_or),
      cmocka_unit_test(test_seccomp_different_index_is_and),
      cmocka_unit_test(test_seccomp_default_errno_and_skip_default_rule),
      cmocka_unit_test(test_seccomp_architectures_and_flags),
      cmocka_unit_test(test_seccomp_refusals),
      cmocka_unit_test(test_seccomp_notify_returns_listener),
      cmocka_unit_test(test_seccomp_needs_nnp_or_sys_admin),
      cmocka_unit_test(test_seccomp_last_with_and_without_nnp),
      cmocka_unit_test(test_caps_root_exact_sets),
      cmocka_unit_test(test_caps_absent_means_none),
      cmocka_unit_test(test_caps_ambient),
      cmocka_unit_test(test_caps_ambient_without_inheritable_warns),
      cmocka_unit_test(test_caps_non_root_user),
      cmocka_unit_test(test_caps_non_root_user_none),
      cmocka_unit_test(test_caps_unknown_bits_ignored),
      cmocka_unit_test(test_caps_inheritable_outside_bounding_refused),
      cmocka_unit_test(test_sysctl_validate_table),
      cmocka_unit_test(test_sysctl_apply_in_new_netns),
      cmocka_unit_test(test_procfs_open_paths),
      cmocka_unit_test(test_procfs_overmount),
      cmocka_unit_test(test_procfs_fake_proc_refused),
      cmocka_unit_test(test_fds_close_on_exec),
      cmocka_unit_test(test_fds_preserve),
      cmocka_unit_test(test_fds_close_range_denied_falls_back),
      cmocka_unit_test(test_fds_verify_cwd),
      cmocka_unit_test(test_no_new_privs),
      cmocka_unit_test(test_lsm_labels_refused_without_lsm),
      cmocka_unit_test(test_keyring_join_new),
  };
  const char *filter = getenv("CM_TEST_FILTER");
  if (filter && *filter)
    cmocka_set_test_filter(filter);
  return cmocka_run_group_tests(tests, NULL, NULL);
}
