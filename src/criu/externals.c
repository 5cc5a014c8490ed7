/* External mounts and namespaces of a checkpoint (src/criu/externals.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "criu/externals.h"
#include "util/cleanup.h"

#define DEV_KEY_PREFIX "codemode-dev:"
#define CGROUP_KEY_PREFIX "codemode-cgroup:"

__attribute__((format(printf, 2, 3))) static void push(struct criu_externals *e, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = NULL;
  int n = vasprintf(&s, fmt, ap);
  va_end(ap);
  if (n < 0)
    abort();
  e->ext = realloc(e->ext, (e->n + 1) * sizeof(char *));
  if (e->ext == NULL)
    abort();
  e->ext[e->n++] = s;
}

static bool mount_is_bind(const struct spec_mount *m) {
  if (m->type && strcmp(m->type, "bind") == 0)
    return true;
  for (size_t i = 0; i < m->options.count; i++)
    if (strcmp(m->options.items[i], "bind") == 0 || strcmp(m->options.items[i], "rbind") == 0)
      return true;
  return false;
}

/* A key CRIU would take apart: its external strings are "mnt[KEY]:VALUE". */
static int check_key(const char *what, const char *s, struct cm_error **err) {
  if (strpbrk(s, "[]:\n") != NULL)
    return cm_error_set(err, EINVAL, "checkpoint: %s \"%s\" has a character CRIU cannot take in an external "
                                     "mount name ('[', ']', ':' or a newline)",
                        what, s);
  return 0;
}

/* The mountinfo fields of one line: root (4th), mount point (5th) and fs type (after " - ").
 * Octal escapes (\040 for a space) are left as they are: CRIU compares the escaped form too. */
static bool mountinfo_fields(const char *line, char root[4096], char mnt[4096], char fstype[256]) {
  const char *dash = strstr(line, " - ");
  return dash != NULL && sscanf(line, "%*s %*s %*s %4095s %4095s", root, mnt) == 2 &&
         sscanf(dash + 3, "%255s", fstype) == 1;
}

static int dump_host_devices(pid_t pid, struct criu_externals *e, struct cm_error **err) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/mountinfo", (int)pid);
  cleanup_fclose FILE *f = fopen(path, "re");
  if (f == NULL)
    return cm_error_set(err, errno, "checkpoint: open %s", path);
  char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, f) > 0) {
    char root[4096], mnt[4096], fstype[256];
    if (!mountinfo_fields(line, root, mnt, fstype))
      continue;
    /* The container's own cgroup directory bound in (linux/mount_cgroup.c, without a cgroup
     * namespace): CRIU finds no mount of that hierarchy's root for it. */
    if ((strcmp(fstype, "cgroup2") == 0 || strcmp(fstype, "cgroup") == 0) && strcmp(root, "/") != 0) {
      push(e, "mnt[%s]:" CGROUP_KEY_PREFIX "%s", mnt, mnt);
      continue;
    }
    /* A node of the host's devtmpfs bound in (never the container's own tmpfs /dev). */
    if (strcmp(fstype, "devtmpfs") != 0 || strcmp(root, "/") == 0 || strchr(root + 1, '/') != NULL)
      continue;
    push(e, "mnt[%s]:" DEV_KEY_PREFIX "%s", mnt, root + 1);
  }
  free(line);
  return 0;
}

int criu_externals_for_dump(const struct spec *s, pid_t pid, struct criu_externals *out, struct cm_error **err) {
  *out = (struct criu_externals){.netns_fd = -1};
  for (size_t i = 0; i < s->n_mounts; i++) {
    const struct spec_mount *m = &s->mounts[i];
    if (!mount_is_bind(m))
      continue;
    if (check_key("config.json: .mounts[].destination", m->destination, err) < 0)
      return -1;
    push(out, "mnt[%s]:%s", m->destination, m->destination);
  }
  if (dump_host_devices(pid, out, err) < 0)
    return -1;
  const struct spec_namespace *net = &s->linux_.namespaces[SPEC_NS_NETWORK];
  if (net->present && net->path) {
    /* The namespace init is in (a hardening profile may have swapped the config's for a new
     * one, linux/net.c): only a joined one is external. */
    char p[64];
    struct stat joined, theirs;
    snprintf(p, sizeof(p), "/proc/%d/ns/net", (int)pid);
    if (stat(p, &theirs) < 0)
      return cm_error_set(err, errno, "checkpoint: stat %s", p);
    if (stat(net->path, &joined) == 0 && joined.st_ino == theirs.st_ino && joined.st_dev == theirs.st_dev) {
      char ino[32];
      snprintf(ino, sizeof(ino), "%llu", (unsigned long long)theirs.st_ino);
      push(out, "net[%s]:%s", ino, CRIU_EXT_NETNS_KEY);
    }
  }
  return 0;
}

/* The device nodes a container's /dev can hold as host binds: the default ones and the config's. */
static const char *const default_devices[] = {"null", "zero", "full", "random", "urandom", "tty", NULL};

static void push_device(struct criu_externals *e, const char *name) {
  /* Only a plain name under /dev that is a device on the host: nothing else of the host can be
   * bound into the container by an image that names it (the images are the user's files). */
  if (name[0] == '\0' || strchr(name, '/') != NULL || strpbrk(name, "[]:\n") != NULL || name[0] == '.')
    return;
  char host[512];
  snprintf(host, sizeof(host), "/dev/%s", name);
  struct stat st;
  if (lstat(host, &st) < 0 || !(S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)))
    return;
  push(e, "mnt[" DEV_KEY_PREFIX "%s]:%s", name, host);
}

/* The restored container's own cgroup directories, under the keys the dump gave the binds of
 * the original's: for each host hierarchy mounted at /sys/fs/cgroup[/NAME] and each cgroup mount
 * of the config at DEST, DEST[/NAME] is the new cgroup's directory in that hierarchy. */
static void push_cgroup_binds(const struct spec *s, const char *cgroup_path, struct criu_externals *e) {
  cleanup_fclose FILE *f = fopen("/proc/self/mountinfo", "re");
  if (f == NULL || cgroup_path == NULL)
    return;
  char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, f) > 0) {
    char root[4096], mnt[4096], fstype[256];
    if (!mountinfo_fields(line, root, mnt, fstype))
      continue;
    if ((strcmp(fstype, "cgroup2") != 0 && strcmp(fstype, "cgroup") != 0) || strcmp(root, "/") != 0)
      continue;
    const char *rest = NULL;
    if (strcmp(mnt, "/sys/fs/cgroup") == 0)
      rest = "";
    else if (strncmp(mnt, "/sys/fs/cgroup/", 15) == 0 && strchr(mnt + 15, '/') == NULL)
      rest = mnt + 14; /* "/NAME" */
    if (rest == NULL)
      continue;
    char host[8192];
    snprintf(host, sizeof(host), "%s%s", mnt, cgroup_path);
    struct stat st;
    if (stat(host, &st) < 0 || !S_ISDIR(st.st_mode))
      continue;
    for (size_t i = 0; i < s->n_mounts; i++) {
      const struct spec_mount *m = &s->mounts[i];
      if (m->type == NULL || (strcmp(m->type, "cgroup") != 0 && strcmp(m->type, "cgroup2") != 0))
        continue;
      push(e, "mnt[" CGROUP_KEY_PREFIX "%s%s]:%s", m->destination, rest, host);
    }
  }
  free(line);
}

int criu_externals_for_restore(const struct spec *s, const char *bundle, const char *cgroup_path,
                               struct criu_externals *out, struct cm_error **err) {
  *out = (struct criu_externals){.netns_fd = -1};
  push_cgroup_binds(s, cgroup_path, out);
  for (size_t i = 0; i < s->n_mounts; i++) {
    const struct spec_mount *m = &s->mounts[i];
    if (!mount_is_bind(m) || m->source == NULL)
      continue;
    if (check_key("config.json: .mounts[].destination", m->destination, err) < 0)
      return -1;
    cleanup_free char *src = NULL;
    if (m->source[0] == '/')
      src = strdup(m->source);
    else if (asprintf(&src, "%s/%s", bundle, m->source) < 0)
      abort();
    if (check_key("config.json: .mounts[].source", src, err) < 0)
      return -1;
    push(out, "mnt[%s]:%s", m->destination, src);
  }
  for (size_t i = 0; default_devices[i]; i++)
    push_device(out, default_devices[i]);
  for (size_t i = 0; i < s->linux_.n_devices; i++) {
    const char *p = s->linux_.devices[i].path;
    if (p && strncmp(p, "/dev/", 5) == 0)
      push_device(out, p + 5);
  }
  const struct spec_namespace *net = &s->linux_.namespaces[SPEC_NS_NETWORK];
  if (net->present && net->path) {
    out->netns_fd = open(net->path, O_RDONLY | O_CLOEXEC);
    if (out->netns_fd < 0)
      return cm_error_set(err, errno, "config.json: .linux.namespaces[network].path: %s", net->path);
  }
  return 0;
}

/* The mount ids of init's mount namespace (mountinfo's first field). */
static bool mount_id_inside(pid_t pid, unsigned mnt_id) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/mountinfo", (int)pid);
  cleanup_fclose FILE *f = fopen(path, "re");
  if (f == NULL)
    return false;
  char *line = NULL;
  size_t cap = 0;
  bool found = false;
  while (!found && getline(&line, &cap, f) > 0) {
    unsigned id;
    found = sscanf(line, "%u", &id) == 1 && id == mnt_id;
  }
  free(line);
  return found;
}

int criu_externals_stdio(pid_t pid, struct criu_externals *e, char names[3][CRIU_STDIO_NAME_MAX]) {
  for (int fd = 0; fd < 3; fd++) {
    char link[64], target[4096];
    names[fd][0] = '\0';
    snprintf(link, sizeof(link), "/proc/%d/fd/%d", (int)pid, fd);
    ssize_t n = readlink(link, target, sizeof(target) - 1);
    if (n <= 0)
      continue;
    target[n] = '\0';
    if (strncmp(target, "pipe:[", 6) == 0 && (size_t)n < CRIU_STDIO_NAME_MAX) {
      memcpy(names[fd], target, (size_t)n + 1);
      continue;
    }
    if (target[0] != '/')
      continue;
    /* A file of the caller's outside the container (a log it redirected stdio to): CRIU
     * cannot dump it, so it is external, and at restore the restoring caller's fd takes its place. */
    char info[64];
    snprintf(info, sizeof(info), "/proc/%d/fdinfo/%d", (int)pid, fd);
    cleanup_fclose FILE *f = fopen(info, "re");
    unsigned mnt_id = 0;
    char line[256];
    while (f && fgets(line, sizeof(line), f))
      if (sscanf(line, "mnt_id: %u", &mnt_id) == 1)
        break;
    struct stat st;
    if (mnt_id == 0 || stat(link, &st) < 0 || mount_id_inside(pid, mnt_id))
      continue;
    snprintf(names[fd], CRIU_STDIO_NAME_MAX, "file[%x:%llx]", mnt_id, (unsigned long long)st.st_ino);
    push(e, "%s", names[fd]);
  }
  return 0;
}

void criu_externals_free(struct criu_externals *e) {
  for (size_t i = 0; i < e->n; i++)
    free(e->ext[i]);
  free(e->ext);
  if (e->netns_fd >= 0)
    close(e->netns_fd);
  *e = (struct criu_externals){.netns_fd = -1};
}
