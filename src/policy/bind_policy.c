/* Which host paths an mcp container may not have bound in.
 *
 * The source is resolved the way the mount will see it (symlinks followed, relative to the
 * bundle) so a symlink to /etc is refused like /etc itself. The config comes from the caller,
 * not from the contained server, so a race on the host path after this check is the caller's
 * own doing; the check is about mistakes and about configs copied from the internet. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/profile_rules.h"
#include "util/cleanup.h"

/* Host trees that hand out the machine: runtime sockets and state, credentials, kernel
 * interfaces. A source equal to one, inside one, or containing one (/, /var) is refused. */
static const char *const sensitive_trees[] = {
    "/proc", "/sys", "/dev", "/etc", "/root", "/run", "/var/run", "/boot", "/lib/modules", "/usr/lib/modules",
};
/* Refused when the source is exactly this (or contains it): subdirectories are used for the
 * container's own files by Docker and Kubernetes (hosts, resolv.conf, secrets volumes) and for
 * scratch space; every host process shares the tree itself (its sockets, its shm segments). Below
 * one, the sensitive tree holding it no longer applies (/dev/shm/x is not /dev). */
static const char *const sensitive_roots[] = {
    "/var/lib/docker", "/var/lib/containerd", "/var/lib/kubelet", "/var/lib/containers", "/tmp", "/var/tmp",
    "/dev/shm",        "/run/containerd",
};
/* Path components that are credentials wherever they live. */
static const char *const sensitive_names[] = {
    ".ssh",        ".aws",        ".kube",
    ".docker",     ".gnupg",      ".config",
    ".azure",      ".netrc",      ".git-credentials",
    ".npmrc",      ".pypirc",     ".password-store",
    "gcloud",      "docker.sock", "containerd.sock",
    "podman.sock", "crio.sock",
};

static bool is_under(const char *path, const char *tree) {
  size_t n = strlen(tree);
  return strncmp(path, tree, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static const char *sensitive_component(const char *path) {
  for (size_t i = 0; i < sizeof(sensitive_names) / sizeof(sensitive_names[0]); i++) {
    size_t n = strlen(sensitive_names[i]);
    for (const char *p = path; (p = strstr(p, sensitive_names[i])) != NULL; p++) {
      if (p[-1] == '/' && (p[n] == '\0' || p[n] == '/'))
        return sensitive_names[i];
    }
  }
  return NULL;
}

static int refuse(const char *source, const char *resolved, const char *why, struct cm_error **err) {
  if (strcmp(source, resolved) == 0)
    return cm_error_set(err, EPERM, "bind mount of host %s refused (%s)", source, why);
  return cm_error_set(err, EPERM, "bind mount of host %s (resolves to %s) refused (%s)", source, resolved,
                      why);
}

/* exempt: a sensitive tree that is the invoking user's own home, accepted for what lies inside
 * it (never itself) when the source is only ever read (policy_check_cow_source). */
static int check_source(const char *source, const char *bundle, const char *exempt, struct cm_error **err) {
  if (source == NULL || *source == '\0')
    return 0;
  cleanup_free char *joined = NULL;
  if (source[0] != '/') {
    if (asprintf(&joined, "%s/%s", bundle ? bundle : ".", source) < 0)
      abort();
  }
  const char *lexical = joined ? joined : source;
  char buf[PATH_MAX];
  /* A missing source fails the mount later; judge it by its name meanwhile. */
  const char *path = realpath(lexical, buf) ? buf : lexical;

  if (strcmp(path, "/") == 0)
    return refuse(source, path, "the whole host filesystem", err);
  bool below_root = false;
  for (size_t i = 0; i < sizeof(sensitive_roots) / sizeof(sensitive_roots[0]); i++) {
    if (is_under(sensitive_roots[i], path))
      return refuse(
          source, path,
          "a host tree shared by every container or process; bind a directory of your own inside it", err);
    below_root |= is_under(path, sensitive_roots[i]);
  }
  for (size_t i = 0; i < sizeof(sensitive_trees) / sizeof(sensitive_trees[0]); i++) {
    bool own_home = exempt && strcmp(sensitive_trees[i], exempt) == 0 && strcmp(path, exempt) != 0;
    if (is_under(path, sensitive_trees[i]) && !below_root && !own_home)
      return refuse(source, path, "host system tree", err);
    if (is_under(sensitive_trees[i], path))
      return refuse(source, path, "contains a host system tree", err);
  }
  /* The invoking user's home as a whole: keys, tokens, shell history. A directory inside it is
   * judged like any other (and refused when it holds credentials). */
  const char *home = getenv("HOME");
  char home_buf[PATH_MAX];
  if (home && home[0] == '/' && home[1] && realpath(home, home_buf) && strcmp(home_buf, "/") != 0 &&
      is_under(home_buf, path))
    return refuse(source, path, "the invoking user's home; bind a directory inside it", err);
  const char *name = sensitive_component(path);
  if (name)
    return refuse(source, path, name, err);
  struct stat st;
  if (stat(path, &st) == 0) {
    /* A host socket is a host service (docker, ssh-agent, dbus…) inside the container. */
    if (S_ISSOCK(st.st_mode))
      return refuse(source, path, "a host socket", err);
    /* A home directory: its credentials would come along. */
    if (S_ISDIR(st.st_mode)) {
      for (size_t i = 0; i < sizeof(sensitive_names) / sizeof(sensitive_names[0]); i++) {
        char sub[PATH_MAX];
        struct stat sst;
        if (sensitive_names[i][0] == '.' &&
            snprintf(sub, sizeof(sub), "%s/%s", path, sensitive_names[i]) < (int)sizeof(sub) &&
            lstat(sub, &sst) == 0)
          return refuse(source, path, "contains credentials", err);
      }
    }
  }
  return 0;
}

int policy_check_bind_source(const char *source, const char *bundle, struct cm_error **err) {
  return check_source(source, bundle, NULL, err);
}

int policy_check_cow_source(const char *source, const char *bundle, struct cm_error **err) {
  /* The passwd entry of the user we run as, not $HOME: HOME=/etc must not make /etc/x "home".
   * Only a home that is itself one of the system trees (root's /root) needs the exemption; any
   * other home is judged as before. Another user's tree under /root never matches. */
  struct passwd *pw = getpwuid(geteuid());
  char home[PATH_MAX];
  const char *exempt = NULL;
  if (pw && pw->pw_dir && pw->pw_dir[0] == '/' && realpath(pw->pw_dir, home))
    for (size_t i = 0; i < sizeof(sensitive_trees) / sizeof(sensitive_trees[0]) && !exempt; i++)
      if (strcmp(home, sensitive_trees[i]) == 0)
        exempt = sensitive_trees[i];
  return check_source(source, bundle, exempt, err);
}
