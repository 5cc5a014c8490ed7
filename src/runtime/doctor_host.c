/* codemode doctor's checks of the host's setup (runtime/doctor.h): subordinate id ranges and
 * newuidmap, CRIU, codemode's registration with Docker and containerd; the run of them all, and
 * the one probe that needs a real kernel (overlay in a user namespace). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "linux/userns.h"
#include "runtime/doctor_internal.h"

/* name in $PATH (a copy of at most size bytes in out), or false. */
static bool in_path(const char *path, const char *name, char *out, size_t size) {
  const char *p = path && *path ? path : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  while (*p) {
    size_t n = strcspn(p, ":");
    if (n > 0 && (size_t)snprintf(out, size, "%.*s/%s", (int)n, p, name) < size && access(out, X_OK) == 0)
      return true;
    p += n + (p[n] == ':');
  }
  return false;
}

void doctor_subid(const struct doctor_env *e, struct doctor_check *c) {
  if (e->uid == 0) {
    doctor_set(c, "subordinate ids", DOCTOR_OK, "", "root: each mcp container gets a host range of its own");
    return;
  }
  char uidf[PATH_MAX], gidf[PATH_MAX], helper[PATH_MAX];
  snprintf(uidf, sizeof(uidf), "%s/subuid", e->etc);
  snprintf(gidf, sizeof(gidf), "%s/subgid", e->etc);
  struct subid_range r[8];
  struct cm_error *err = NULL;
  int nu = subid_ranges(uidf, e->user ? e->user : "", (uint32_t)e->uid, r, 8, &err);
  if (err)
    cm_error_free(err), err = NULL;
  int ng = subid_ranges(gidf, e->user ? e->user : "", (uint32_t)e->uid, r, 8, &err);
  if (err)
    cm_error_free(err);
  char helper_gid[PATH_MAX];
  bool helpers = in_path(e->path, "newuidmap", helper, sizeof(helper)) &&
                 in_path(e->path, "newgidmap", helper_gid, sizeof(helper_gid));
  char fix[256];
  snprintf(fix, sizeof(fix), "as root: usermod --add-subuids 100000-165535 --add-subgids 100000-165535 %s",
           e->user ? e->user : "USER");
  if (nu <= 0 || ng <= 0)
    doctor_set(c, "subordinate ids", DOCTOR_WARN, fix,
               "no range for %s in %s/subuid and %s/subgid: containers map one id (yours); images that "
               "run as another user fail",
               e->user ? e->user : "this user", e->etc, e->etc);
  else if (!helpers)
    doctor_set(c, "subordinate ids", DOCTOR_WARN, "apt-get install uidmap",
               "ranges in %s/subuid and subgid, but no newuidmap/newgidmap to map them", e->etc);
  else
    doctor_set(c, "subordinate ids", DOCTOR_OK, "", "ranges in %s/subuid and subgid, newuidmap at %s", e->etc,
               helper);
}

void doctor_criu(const struct doctor_env *e, struct doctor_check *c) {
  char at[PATH_MAX];
  if (!in_path(e->path, "criu", at, sizeof(at)))
    doctor_set(c, "criu", DOCTOR_WARN, "apt-get install criu (only for checkpoint/restore)",
               "not installed: no checkpoint/restore");
  else if (e->uid != 0)
    doctor_set(c, "criu", DOCTOR_WARN, "checkpoint as root", "%s: needs root (CAP_CHECKPOINT_RESTORE)", at);
  else if (e->criu_check == 0)
    doctor_set(c, "criu", DOCTOR_WARN, "a kernel this criu supports (criu check says what is missing)",
               "%s check failed: %s", at, e->criu_detail ? e->criu_detail : "");
  else
    doctor_set(c, "criu", DOCTOR_OK, "", "%s%s", at, e->criu_check == 1 ? ": criu check passed" : "");
}

int doctor_probe_criu(const char *path, char *detail, size_t size) {
  char at[PATH_MAX];
  detail[0] = '\0';
  if (geteuid() != 0 || !in_path(path, "criu", at, sizeof(at)))
    return -1;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) < 0)
    return -1;
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    int null = open("/dev/null", O_RDONLY);
    if (null < 0 || dup2(null, 0) < 0 || dup2(fds[1], 1) < 0 || dup2(fds[1], 2) < 0)
      _exit(127);
    execl(at, "criu", "check", (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  /* The last line it writes (its verdict or its first error's tail); a bounded read. */
  char buf[8192];
  size_t len = 0;
  ssize_t n;
  while ((n = read(fds[0], buf + len, sizeof(buf) - 1 - len)) > 0) {
    len += (size_t)n;
    if (len == sizeof(buf) - 1) {
      memmove(buf, buf + len / 2, len - len / 2);
      len -= len / 2;
    }
  }
  close(fds[0]);
  buf[len] = '\0';
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  while (len > 0 && buf[len - 1] == '\n')
    buf[--len] = '\0';
  const char *last = strrchr(buf, '\n');
  snprintf(detail, size, "%s", last ? last + 1 : buf);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 1 : 0;
}

static bool is_codemode_path(const char *p, bool *mcp_name) {
  const char *base = strrchr(p, '/');
  base = base ? base + 1 : p;
  *mcp_name = strcmp(base, "codemode-mcp") == 0 || strcmp(base, "codemode-mcp-audit") == 0;
  return *mcp_name || strcmp(base, "codemode") == 0;
}

/* Any runtime of daemon.json's "runtimes" that is codemode; *mcp when it runs the mcp profile. */
static int docker_runtimes(const char *path, char *name, size_t size, bool *mcp) {
  char text[65536];
  FILE *f = fopen(path, "re");
  if (f == NULL)
    return -1;
  size_t n = fread(text, 1, sizeof(text) - 1, f);
  fclose(f);
  text[n] = '\0';
  char errbuf[256];
  yajl_val root = yajl_tree_parse(text, errbuf, sizeof(errbuf));
  const char *rt_path[] = {"runtimes", NULL};
  yajl_val rts = root ? yajl_tree_get(root, rt_path, yajl_t_object) : NULL;
  int found = 0;
  *mcp = false;
  for (size_t i = 0; rts && i < rts->u.object.len; i++) {
    const char *p_path[] = {"path", NULL}, *a_path[] = {"runtimeArgs", NULL};
    yajl_val p = yajl_tree_get(rts->u.object.values[i], p_path, yajl_t_string);
    yajl_val args = yajl_tree_get(rts->u.object.values[i], a_path, yajl_t_array);
    bool by_name = false;
    if (p == NULL || !is_codemode_path(p->u.string, &by_name))
      continue;
    bool by_args = false;
    for (size_t k = 0; args && k < args->u.array.len; k++) {
      const char *a = YAJL_IS_STRING(args->u.array.values[k]) ? args->u.array.values[k]->u.string : "";
      by_args |= strcmp(a, "--profile=mcp") == 0 || strcmp(a, "--profile=mcp-audit") == 0;
    }
    if (!found || ((by_name || by_args) && !*mcp)) {
      snprintf(name, size, "%s", rts->u.object.keys[i]);
      *mcp = by_name || by_args;
    }
    found = 1;
  }
  if (root)
    yajl_tree_free(root);
  return found;
}

bool doctor_docker_mcp_runtime(const char *path, char *name, size_t size) {
  bool mcp = false;
  return docker_runtimes(path, name, size, &mcp) == 1 && mcp;
}

void doctor_docker(const struct doctor_env *e, struct doctor_check *c) {
  char path[PATH_MAX], name[128];
  snprintf(path, sizeof(path), "%s/docker/daemon.json", e->etc);
  bool mcp = false;
  int r = docker_runtimes(path, name, sizeof(name), &mcp);
  static const char *const fix =
      "register it: README, Registering codemode with Docker (\"codemode-mcp\" with "
      "runtimeArgs [\"--profile=mcp\"])";
  if (r < 0)
    doctor_set(c, "docker", DOCTOR_WARN, fix, "no %s: codemode is not registered with Docker", path);
  else if (r == 0)
    doctor_set(c, "docker", DOCTOR_WARN, fix, "%s names no codemode runtime", path);
  else if (!mcp)
    doctor_set(c, "docker", DOCTOR_WARN, fix, "runtime \"%s\" is codemode, without the mcp profile", name);
  else
    doctor_set(c, "docker", DOCTOR_OK, "",
               "runtime \"%s\": docker run --runtime=%s runs under the mcp profile", name, name);
}

void doctor_containerd(const struct doctor_env *e, struct doctor_check *c) {
  char text[65536];
  static const char *const fix =
      "README, Registering codemode with containerd (a runc runtime whose BinaryName is "
      "codemode-mcp)";
  if (!doctor_read(e->etc, "containerd/config.toml", text, sizeof(text))) {
    doctor_set(c, "containerd", DOCTOR_WARN, fix, "no %s/containerd/config.toml: codemode is not registered",
               e->etc);
    return;
  }
  /* A line that is not a comment naming codemode-mcp as a BinaryName. */
  bool mcp = false, any = false;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    line += strspn(line, " \t");
    if (*line == '#' || strstr(line, "BinaryName") == NULL)
      continue;
    mcp |= strstr(line, "codemode-mcp") != NULL;
    any |= strstr(line, "codemode") != NULL;
  }
  if (mcp)
    doctor_set(c, "containerd", DOCTOR_OK, "", "a runtime with BinaryName codemode-mcp");
  else
    doctor_set(c, "containerd", DOCTOR_WARN, fix, "%s",
               any ? "codemode registered without the mcp profile (BinaryName codemode)"
                   : "no runtime with BinaryName codemode-mcp");
}

size_t doctor_run(const struct doctor_env *e, struct doctor_check *out, size_t max) {
  void (*const checks[])(const struct doctor_env *, struct doctor_check *) = {
      doctor_kernel,   doctor_userns,  doctor_apparmor,   doctor_cgroup_mode,    doctor_cgroup_delegation,
      doctor_landlock, doctor_seccomp, doctor_idmap,      doctor_overlay_userns, doctor_subid,
      doctor_criu,     doctor_docker,  doctor_containerd,
  };
  size_t n = 0;
  for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]) && n < max; i++)
    checks[i](e, &out[n++]);
  return n;
}

/* A child makes a user and mount namespace of its own (mapped to its own uid, as a rootless
 * codemode does), a tmpfs, and an overlay on it. */
int doctor_probe_overlay_userns(void) {
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    uid_t uid = geteuid();
    gid_t gid = getegid();
    /* codemode is non-dumpable from its start (CVE-2019-5736), which makes /proc/self's files
     * root's: this child, which runs nothing but these mounts, must be able to write its maps. */
    if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0 || unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
      _exit(1);
    char map[64];
    int fd = open("/proc/self/setgroups", O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
      if (write(fd, "deny", 4) < 0) {
      }
      close(fd);
    }
    snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
    fd = open("/proc/self/uid_map", O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, map, strlen(map)) < 0)
      _exit(2);
    close(fd);
    snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
    fd = open("/proc/self/gid_map", O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, map, strlen(map)) < 0)
      _exit(2);
    close(fd);
    /* Private, and a tmpfs over /tmp in this namespace only: nothing of the host is written. */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
        mount("tmpfs", "/tmp", "tmpfs", 0, "size=1m") < 0)
      _exit(3);
    if (mkdir("/tmp/l", 0755) || mkdir("/tmp/u", 0755) || mkdir("/tmp/w", 0755) || mkdir("/tmp/m", 0755))
      _exit(4);
    _exit(mount("overlay", "/tmp/m", "overlay", 0, "lowerdir=/tmp/l,upperdir=/tmp/u,workdir=/tmp/w") == 0
              ? 0
              : 5);
  }
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return -1;
  if (!WIFEXITED(status))
    return -1;
  return WEXITSTATUS(status) == 0 ? 1 : WEXITSTATUS(status) == 5 ? 0 : -1;
}
