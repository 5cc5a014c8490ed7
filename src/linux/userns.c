/* User namespaces: creating one in the child, writing its id maps from the runtime (directly or
 * through newuidmap/newgidmap), /etc/subuid ranges, and throwaway namespaces for idmapped mounts.
 * Which of these a container gets is decided in runtime/userns_setup.c; see userns.h. */
#include "linux/userns.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "linux/namespaces.h"
#include "util/cleanup.h"
#include "util/log.h"

int subid_ranges(const char *file, const char *name, uint32_t id, struct subid_range *out, size_t max,
                 struct cm_error **err) {
  cleanup_fclose FILE *f = fopen(file, "re");
  if (f == NULL)
    return errno == ENOENT ? 0 : cm_error_set(err, errno, "read %s", file);
  char idbuf[16];
  snprintf(idbuf, sizeof(idbuf), "%u", id);
  size_t n = 0;
  char line[512];
  while (n < max && fgets(line, sizeof(line), f)) {
    char *save = NULL;
    char *who = strtok_r(line, ":\n", &save);
    char *start = strtok_r(NULL, ":\n", &save);
    char *count = strtok_r(NULL, ":\n", &save);
    if (who == NULL || start == NULL || count == NULL || who[0] == '#')
      continue;
    if (!((name && strcmp(who, name) == 0) || strcmp(who, idbuf) == 0))
      continue;
    char *e1, *e2;
    unsigned long s = strtoul(start, &e1, 10), c = strtoul(count, &e2, 10);
    if (*e1 || *e2 || c == 0 || s > UINT32_MAX || c > UINT32_MAX || s + c > UINT32_MAX)
      continue; /* as newuidmap does: a malformed line grants nothing */
    out[n++] = (struct subid_range){(uint32_t)s, (uint32_t)c};
  }
  return (int)n;
}

const char *userns_helper_path(const char *name) {
  static const char *const dirs[] = {"/usr/bin", "/bin", "/usr/sbin", "/usr/local/bin"};
  static char found[64];
  for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
    snprintf(found, sizeof(found), "%s/%s", dirs[i], name);
    if (access(found, X_OK) == 0)
      return found;
  }
  return NULL;
}

static bool read_first_line(const char *path, char *buf, size_t size) {
  cleanup_fclose FILE *f = fopen(path, "re");
  if (f == NULL || fgets(buf, (int)size, f) == NULL)
    return false;
  buf[strcspn(buf, "\n")] = '\0';
  return true;
}

#define APPARMOR_FIX                                                                                   \
  "Fix: install codemode's AppArmor profile (as root: make install-apparmor PREFIX=<where codemode is " \
  "installed>, or copy contrib/apparmor/codemode.in to /etc/apparmor.d/codemode with @BINDIR@ set to " \
  "that bin directory and run apparmor_parser -r /etc/apparmor.d/codemode), or lift the restriction "   \
  "for everyone: sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0"

int userns_apparmor_check(struct cm_error **err) {
  return userns_apparmor_check_at("/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
                                  "/proc/self/attr/apparmor/current", "/proc/self/attr/current", err);
}

int userns_apparmor_check_at(const char *knob, const char *label_path, const char *label_old, struct cm_error **err) {
  char v[16], label[256];
  if (!read_first_line(knob, v, sizeof(v)) || strcmp(v, "1") != 0)
    return 0;
  /* Our label: "unconfined", or "codemode (unconfined)" under our profile. */
  if (!read_first_line(label_path, label, sizeof(label)) && !read_first_line(label_old, label, sizeof(label)))
    return 0;
  if (strcmp(label, "unconfined") != 0)
    return 0;
  return cm_error_set(err, EPERM,
                      "AppArmor restricts unprivileged user namespaces on this host "
                      "(kernel.apparmor_restrict_unprivileged_userns=1) and codemode runs unconfined, so its "
                      "container's root would have no capability at all. " APPARMOR_FIX);
}

int userns_child_create(const struct userns_plan *p, struct cm_error **err) {
  if (p->become_creator) {
    /* The host's groups of the runtime's caller are not the container's; then the gid, then
     * the uid (after which we hold no capability on the host). */
    if (setgroups(0, NULL) < 0 || setresgid(p->creator_gid, p->creator_gid, p->creator_gid) < 0 ||
        setresuid(p->creator_uid, p->creator_uid, p->creator_uid) < 0)
      return cm_error_set(err, errno, "become host uid %u gid %u before creating the user namespace",
                          p->creator_uid, p->creator_gid);
  }
  if (unshare(CLONE_NEWUSER) < 0) {
    int e = errno;
    /* Ubuntu 24.04+: AppArmor lets unprivileged processes create user namespaces only under a
     * profile that allows it. Other hosts: a sysctl turned them off. */
    if (e == EPERM || e == EACCES || e == ENOSPC) {
      char v[8] = "";
      cleanup_fclose FILE *f = fopen("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "re");
      if (f && fgets(v, sizeof(v), f) && v[0] == '1')
        return cm_error_set(err, e,
                            "create a user namespace: refused by AppArmor "
                            "(kernel.apparmor_restrict_unprivileged_userns=1). " APPARMOR_FIX);
      cleanup_fclose FILE *m = fopen("/proc/sys/user/max_user_namespaces", "re");
      if (m && fgets(v, sizeof(v), m) && v[0] == '0' && (v[1] == '\n' || v[1] == '\0'))
        return cm_error_set(err, e, "create a user namespace: user.max_user_namespaces is 0 (sudo sysctl "
                                    "user.max_user_namespaces=15000 enables them)");
      cleanup_fclose FILE *u = fopen("/proc/sys/kernel/unprivileged_userns_clone", "re");
      if (u && fgets(v, sizeof(v), u) && v[0] == '0')
        return cm_error_set(err, e, "create a user namespace: kernel.unprivileged_userns_clone is 0 (sudo sysctl "
                                    "kernel.unprivileged_userns_clone=1 enables them)");
    }
    return cm_error_set(err, e, "create a user namespace");
  }
  return 0;
}

void userns_child_begin(const struct userns_plan *p) {
  /* Safe: no container process exists yet, and other processes of this user could write the
   * binary anyway. */
  if (p->dumpable_while_mapping)
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
}

void userns_child_mapped(const struct userns_plan *p) {
  if (p->dumpable_while_mapping)
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

/* Run one helper (newuidmap or newgidmap) with the mappings as arguments; its stderr is the
 * error's text when it fails. */
static int run_helper(const char *name, pid_t pid, const struct spec_id_mapping *maps, size_t n,
                      struct cm_error **err) {
  const char *path = userns_helper_path(name);
  if (path == NULL)
    return cm_error_set(err, ENOENT,
                        "%s is not installed: a rootless container with more than its own id mapped needs it "
                        "(Debian/Ubuntu: apt-get install uidmap)",
                        name);
  char *argv[3 + 3 * 340 + 1];
  char numbers[1 + 3 * 340][12];
  size_t a = 0, k = 0;
  argv[a++] = (char *)name;
  snprintf(numbers[k], sizeof(numbers[k]), "%d", (int)pid);
  argv[a++] = numbers[k++];
  for (size_t i = 0; i < n && i < 340; i++) {
    uint32_t v[3] = {maps[i].container_id, maps[i].host_id, maps[i].size};
    for (int j = 0; j < 3; j++) {
      snprintf(numbers[k], sizeof(numbers[k]), "%u", v[j]);
      argv[a++] = numbers[k++];
    }
  }
  argv[a] = NULL;
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) < 0)
    return cm_error_set(err, errno, "%s: pipe", name);
  pid_t child = fork();
  if (child < 0) {
    close(pipefd[0]);
    close(pipefd[1]);
    return cm_error_set(err, errno, "%s: fork", name);
  }
  if (child == 0) {
    dup2(pipefd[1], STDERR_FILENO);
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
      dup2(null, STDIN_FILENO);
      dup2(null, STDOUT_FILENO);
    }
    char *envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
    execve(path, argv, envp);
    dprintf(STDERR_FILENO, "exec %s: %s", path, strerror(errno));
    _exit(127);
  }
  close(pipefd[1]);
  char out[512];
  size_t used = 0;
  ssize_t r;
  while (used < sizeof(out) - 1 && (r = read(pipefd[0], out + used, sizeof(out) - 1 - used)) != 0) {
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      break;
    used += (size_t)r;
  }
  out[used] = '\0';
  close(pipefd[0]);
  int status;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR)
    ;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return 0;
  while (used > 0 && (out[used - 1] == '\n' || out[used - 1] == ' '))
    out[--used] = '\0';
  for (char *c = out; *c; c++)
    if (*c == '\n')
      *c = ' ';
  return cm_error_set(err, 0, "%s failed: %s (the ranges must be yours in /etc/%s)", path,
                      used ? out : "no message", strcmp(name, "newuidmap") == 0 ? "subuid" : "subgid");
}

static int write_proc_file(pid_t pid, const char *file, const char *text, struct cm_error **err) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
  cleanup_close int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return cm_error_set(err, errno, "open %s", path);
  if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
    return cm_error_set(err, errno, "write \"%s\" to %s", text, path);
  return 0;
}

int userns_write_maps(pid_t pid, const struct spec_linux *l, const struct userns_plan *p, struct cm_error **err) {
  if (p->helpers) {
    if (run_helper("newuidmap", pid, l->uid_mappings, l->n_uid_mappings, err) < 0)
      return cm_error_prefix(err, "linux.uidMappings");
    if (run_helper("newgidmap", pid, l->gid_mappings, l->n_gid_mappings, err) < 0)
      return cm_error_prefix(err, "linux.gidMappings");
    return 0;
  }
  /* Unprivileged, the kernel takes a gid map only once setgroups is denied for good: otherwise
   * the container could drop a host group that denies it access (the "negative groups" hole). */
  if (p->deny_setgroups && write_proc_file(pid, "setgroups", "deny", err) < 0)
    return -1;
  if (ns_write_id_mappings(pid, l, err) < 0) {
    if (geteuid() != 0 && (*err)->errnum == EPERM)
      cm_error_prefix(err, "as uid %u, only your own uid and gid can be mapped without newuidmap/newgidmap "
                           "(apt-get install uidmap, and ranges for you in /etc/subuid and /etc/subgid)",
                      geteuid());
    return -1;
  }
  return 0;
}

int userns_open_with_mappings(const struct spec_id_mapping *uids, size_t n_uids, const struct spec_id_mapping *gids,
                              size_t n_gids, struct cm_error **err) {
  int ready[2], hold[2];
  if (pipe2(ready, O_CLOEXEC) < 0)
    return cm_error_set(err, errno, "pipe");
  if (pipe2(hold, O_CLOEXEC) < 0) {
    close(ready[0]);
    close(ready[1]);
    return cm_error_set(err, errno, "pipe");
  }
  pid_t child = fork();
  if (child < 0) {
    int e = errno;
    close(ready[0]);
    close(ready[1]);
    close(hold[0]);
    close(hold[1]);
    return cm_error_set(err, e, "fork");
  }
  if (child == 0) {
    close(ready[0]);
    close(hold[1]);
    char c = unshare(CLONE_NEWUSER) == 0 ? 'y' : 'n';
    if (write(ready[1], &c, 1) != 1)
      _exit(1);
    /* Until the runtime has opened our namespace: EOF on the pipe. */
    while (read(hold[0], &c, 1) < 0 && errno == EINTR)
      ;
    _exit(0);
  }
  close(ready[1]);
  close(hold[0]);
  int fd = -1;
  char c = 'n';
  ssize_t r;
  do
    r = read(ready[0], &c, 1);
  while (r < 0 && errno == EINTR);
  close(ready[0]);
  if (r != 1 || c != 'y') {
    cm_error_set(err, EPERM, "create a user namespace for an idmapped mount");
  } else {
    struct spec_linux l = {.uid_mappings = (struct spec_id_mapping *)uids,
                           .n_uid_mappings = n_uids,
                           .gid_mappings = (struct spec_id_mapping *)gids,
                           .n_gid_mappings = n_gids};
    if (ns_write_id_mappings(child, &l, err) == 0) {
      char path[64];
      snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)child);
      fd = open(path, O_RDONLY | O_CLOEXEC);
      if (fd < 0)
        cm_error_set(err, errno, "open %s", path);
    }
  }
  close(hold[1]);
  while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
    ;
  return fd;
}
