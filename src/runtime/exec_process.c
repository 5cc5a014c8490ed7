#include "runtime/exec_process.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "linux/console.h"
#include "linux/exec_trampoline.h"
#include "linux/fds.h"
#include "linux/last_steps.h"
#include "linux/process_attrs.h"
#include "linux/security_attrs.h"
#include "runtime/container_init.h"
#include "util/log.h"
#include "util/cleanup.h"
#include "util/sync.h"

static __attribute__((noreturn)) void fail(int sync_fd, struct cm_error *err) {
  sync_send_error(sync_fd, err);
  _exit(1);
}

static int64_t expect(int sync_fd, uint32_t type) {
  struct sync_msg m;
  struct cm_error *err = NULL;
  int r = sync_recv(sync_fd, &m, NULL, &err);
  if (r != 0 || m.type != type)
    _exit(1);
  return m.value;
}

static void reset_signals(void) {
  sigset_t none;
  sigemptyset(&none);
  for (int sig = 1; sig < NSIG; sig++)
    signal(sig, SIG_DFL);
  sigprocmask(SIG_SETMASK, &none, NULL);
}

static __attribute__((noreturn)) void exec_child(const struct exec_child_config *c);

void exec_stage1(const struct exec_child_config *c) {
  struct cm_error *err = NULL;
  /* Until execve we are a copy of the runtime inside the container's namespaces: a
   * non-dumpable process cannot be ptraced or have /proc/PID/exe opened by the container
   * (CVE-2019-5736 class, linux/exec_trampoline.h). main() did it already; this keeps the
   * guarantee where it matters, whoever calls us. */
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  cm_log_route_to_sync(c->sync_fd, "exec-stage1");

  /* The runtime moved us into the container's cgroup: every child we make is born there. */
  expect(c->sync_fd, SYNC_CGROUP_JOINED);
  cm_debug("in the container's cgroup; joining its namespaces");
  /* Before joining a user namespace, whose root may not write our non-dumpable /proc/self
   * files; the process inherits the value. Not root: our non-dumpable /proc/self files are host
   * root's, so dumpable for these writes, still outside the container (nothing in it can see us
   * yet, and the user's own processes could write the binary anyway). */
  if (geteuid() != 0 && (c->process->has_oom_score_adj || c->process->lock_loginuid))
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
  int oom_rc = oom_score_adj_apply(c->process, &err);
  if (oom_rc == 0)
    oom_rc = loginuid_lock(c->process, &err);
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  if (oom_rc < 0)
    fail(c->sync_fd, err);

  /* One setns on init's pidfd joins them all atomically, in the kernel's order (user first),
   * and names exactly the process we checked: no /proc/PID path a reused pid could redirect. */
  if (c->pidfd >= 0) {
    if (c->ns_flags && setns(c->pidfd, c->ns_flags) < 0) {
      cm_error_set(&err, errno, "join the container's namespaces (flags 0x%x)", c->ns_flags);
      fail(c->sync_fd, err);
    }
    close(c->pidfd);
  } else {
    /* No pidfd (kernels before 5.3): one namespace at a time, the user namespace first so the
     * others are joined with its privileges, the mount namespace last. */
    static const enum spec_ns_type order[] = {SPEC_NS_USER, SPEC_NS_IPC, SPEC_NS_UTS, SPEC_NS_NETWORK,
                                              SPEC_NS_PID, SPEC_NS_CGROUP, SPEC_NS_TIME, SPEC_NS_MOUNT};
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
      int fd = c->ns_fds[order[i]];
      if (fd < 0)
        continue;
      if (setns(fd, 0) < 0) {
        cm_error_set(&err, errno, "join the container's %s namespace", spec_ns_name(order[i]));
        fail(c->sync_fd, err);
      }
      close(fd);
    }
  }

  /* In the container's user namespace, become its root, as init's stage1 did: the exec
   * trampoline must start as that root to set the process's credentials itself (last_steps.h);
   * our host uid is not mapped there. */
  bool joined_userns = c->pidfd >= 0 ? (c->ns_flags & CLONE_NEWUSER) != 0 : c->ns_fds[SPEC_NS_USER] >= 0;
  if (joined_userns && (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)) {
    cm_error_set(&err, errno, "become root in the container's user namespace (is uid/gid 0 mapped?)");
    fail(c->sync_fd, err);
  }

  /* CLONE_PARENT: the process is the runtime's child (foreground exec waits for it), and the
   * caller's subreaper (the shim) inherits it when `exec --detach` returns. */
  pid_t pid = (pid_t)syscall(SYS_clone, CLONE_PARENT | SIGCHLD, NULL, NULL, NULL, NULL);
  if (pid < 0) {
    cm_error_set(&err, errno, "clone the exec process");
    fail(c->sync_fd, err);
  }
  if (pid == 0)
    exec_child(c);
  sync_send(c->sync_fd, SYNC_INIT_PID, pid, NULL, -1, NULL);
  _exit(0);
}

static void exec_child(const struct exec_child_config *c) {
  const struct spec_process *p = c->process;
  struct cm_error *err = NULL;
  int sync_fd = c->sync_fd;
  cm_log_route_to_sync(sync_fd, "exec");
  cm_debug("in the container's namespaces: setting up the process (terminal %s, cwd %s)",
           p->terminal ? "yes" : "no", p->cwd ? p->cwd : "/");

  if (setsid() < 0) {
    cm_error_set(&err, errno, "setsid");
    fail(sync_fd, err);
  }
  if (p->terminal) {
    int master = console_setup_exec(p, &err);
    if (master < 0 || (c->pty_onlcr_off && console_clear_onlcr(master, &err) < 0))
      fail(sync_fd, err);
    sync_send(sync_fd, SYNC_CONSOLE_FD, 0, NULL, master, NULL);
    close(master);
  }
  if (!p->terminal && fds_localize_stdio_devices(&err) < 0)
    fail(sync_fd, err);
  /* A fresh session keyring: the caller's (the shim's, the host's) keys stay out of reach. */
  if (keyring_join_new(c->id, &err) < 0 || rlimits_apply(p, &err) < 0 ||
      io_priority_apply(p, &err) < 0 || scheduler_apply(p, &err) < 0 || lsm_apply_exec_label(p, &err) < 0)
    fail(sync_fd, err);

  bool cwd_ok = chdir(p->cwd) == 0; /* retried as the user (last steps): it may be the user's only */
  if (!cwd_ok && errno != EACCES) {
    cm_error_set(&err, errno, "chdir to cwd \"%s\"", p->cwd);
    fail(sync_fd, err);
  }
  char *exe = process_find_executable(p, &err);
  if (exe == NULL)
    fail(sync_fd, err);
  char **envp = process_env_with_home(p);

  /* The container's Landlock layers, made while still root (as init made them) and enforced
   * where the filters are loaded: the same domain rules as init's, never fewer. */
  struct landlock_prepared ll = {0};
  if (landlock_prepare(c->landlock, c->n_landlock, p->cwd, &ll, &err) < 0)
    fail(sync_fd, err);

  /* A NOTIFY filter: its own listener goes to linux.seccomp.listenerPath through the runtime,
   * as init's did (runc does the same for exec'd processes), so loaded here, as in init: after
   * the trampoline is made (below; issue 28: a NOTIFY rule for fchmod met its fchmod). */
  bool seccomp_early = c->seccomp && c->seccomp->notify;
  /* The last steps (linux/last_steps.h) as in init; their failures still reach `exec` over the
   * sync socket, which stays open until the program's execve (the runtime's EOF). */
  struct last_steps ls;
  last_steps_init(&ls, sync_fd, true);
  struct last_steps_process lp = {
      .process = p,
      .cwd_as_user = !cwd_ok,
      .filters = {seccomp_early ? NULL : c->seccomp_stacked, seccomp_early ? NULL : c->seccomp},
      .keep_fds = {sync_fd},
      .n_keep_fds = 1,
      .landlock = seccomp_early ? NULL : &ll,
  };
  if (last_steps_for_process(&ls, &lp, &err) < 0)
    fail(sync_fd, err);
  int keep[1 + LANDLOCK_MAX_LAYERS] = {sync_fd};
  size_t n_keep = 1;
  for (size_t i = 0; !seccomp_early && i < ll.n; i++)
    keep[n_keep++] = ll.fds[i];
  struct exec_trampoline trampoline = {.fd = -1};
  if (!c->exec_direct) {
    size_t len;
    void *prog = last_steps_serialize(&ls, &len);
    int rc = exec_trampoline_prepare(&trampoline, prog, len, &err);
    free(prog);
    if (rc < 0)
      fail(sync_fd, err);
  }
  if (seccomp_early) {
    process_load_seccomp_early(sync_fd, &ll, c->seccomp_stacked, c->seccomp);
  }
  /* Nothing of the runtime's reaches the process but the fds asked for (CVE-2024-21626 class). */
  if (fds_close_on_exec_from(3 + c->preserve_fds, &err) < 0)
    fail(sync_fd, err);
  reset_signals();
  cm_debug("exec %s%s", exe, c->exec_direct ? "" : " (through the sealed trampoline: credentials, filters)");
  if (c->exec_direct)
    last_steps_exec_here(&ls, exe, p->args.items, envp);
  exec_trampoline_exec(&trampoline, exe, p->args.items, keep, n_keep, envp);
  cm_error_set(&err, errno, "exec %s", exe);
  fail(sync_fd, err);
}
