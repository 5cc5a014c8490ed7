/* linux.sysctl: refuse what would change the host, write the rest through a verified procfs. */
#include "linux/sysctl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "linux/security_attrs.h"
#include "util/cleanup.h"

/* Keys that live in the IPC namespace (besides the fs.mqueue.* prefix). */
static const char *const ipc_keys[] = {
    "kernel.msgmax", "kernel.msgmnb", "kernel.msgmni", "kernel.sem",
    "kernel.shmall", "kernel.shmmax", "kernel.shmmni", "kernel.shm_rmid_forced",
};
static const char *const uts_keys[] = {"kernel.hostname", "kernel.domainname"};

static bool in_list(const char *key, const char *const *list, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(key, list[i]) == 0)
      return true;
  return false;
}

/* Keys use '.' as separator unless they contain '/', then '/' separates and dots are literal
 * (sysctl(8): "net/ipv4/conf/eth0.100/forwarding"). Returns the key in '/' form for /proc/sys
 * and the key in '.' form for the namespace checks; NULL (after *err) if a component is empty,
 * "." or "..", which could escape /proc/sys. */
static int sysctl_key_forms(const char *key, char **slash_form, char **dot_form, struct cm_error **err) {
  bool slashes = strchr(key, '/') != NULL;
  char sep = slashes ? '/' : '.';
  if (*key == '\0')
    return cm_error_set(err, 0, "config.json: .linux.sysctl: empty key");
  const char *p = key;
  for (;;) {
    const char *end = strchr(p, sep);
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == 0 || (len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
      return cm_error_set(err, 0, "config.json: .linux.sysctl: \"%s\" is not a valid key", key);
    if (end == NULL)
      break;
    p = end + 1;
  }
  char *s = strdup(key), *d = strdup(key);
  if (s == NULL || d == NULL) {
    free(s);
    free(d);
    return cm_error_set(err, ENOMEM, "linux.sysctl");
  }
  if (!slashes)
    for (char *c = s; *c; c++)
      if (*c == '.')
        *c = '/';
  if (slashes)
    for (char *c = d; *c; c++)
      if (*c == '/')
        *c = '.';
  *slash_form = s;
  *dot_form = d;
  return 0;
}

/* Does the container get a namespace of type t that is not the runtime's own? A new one does;
 * a joined one (path) does unless it is the namespace we run in (as runc checks for net, so a
 * Kubernetes pod sandbox netns can still get its net.* sysctls). */
static bool has_own_namespace(const struct spec *s, enum spec_ns_type t, const char *proc_name) {
  const struct spec_namespace *ns = &s->linux_.namespaces[t];
  if (!ns->present)
    return false;
  if (ns->path == NULL)
    return true;
  char self_path[64];
  snprintf(self_path, sizeof(self_path), "/proc/self/ns/%s", proc_name);
  struct stat joined, self;
  /* If either cannot be inspected, joining it fails later with the real cause. */
  if (stat(ns->path, &joined) < 0 || stat(self_path, &self) < 0)
    return true;
  return !(joined.st_dev == self.st_dev && joined.st_ino == self.st_ino);
}

static int validate_key(const struct spec *s, const char *key, struct cm_error **err) {
  cleanup_free char *slash = NULL;
  cleanup_free char *dot = NULL;
  if (sysctl_key_forms(key, &slash, &dot, err) < 0)
    return -1;
  enum spec_ns_type needed;
  const char *what, *proc_name;
  if (in_list(dot, ipc_keys, sizeof(ipc_keys) / sizeof(ipc_keys[0])) || strncmp(dot, "fs.mqueue.", 10) == 0) {
    needed = SPEC_NS_IPC;
    what = "IPC";
    proc_name = "ipc";
  } else if (strncmp(dot, "net.", 4) == 0) {
    needed = SPEC_NS_NETWORK;
    what = "network";
    proc_name = "net";
  } else if (in_list(dot, uts_keys, sizeof(uts_keys) / sizeof(uts_keys[0]))) {
    needed = SPEC_NS_UTS;
    what = "UTS";
    proc_name = "uts";
  } else {
    /* Everything else (kernel.*, vm.*, fs.* …) is global: writing it would change the host. */
    return cm_error_set(err, 0, "config.json: .linux.sysctl: \"%s\" is not namespaced and would change the host; refused",
                        key);
  }
  if (!has_own_namespace(s, needed, proc_name))
    return cm_error_set(err, 0, "config.json: .linux.sysctl: \"%s\" needs a new %s namespace", key, what);
  /* Two fields setting one value: whichever is applied last would silently win (runc refuses
   * the pair too). */
  const char *field = strcmp(dot, "kernel.hostname") == 0     ? "hostname"
                      : strcmp(dot, "kernel.domainname") == 0 ? "domainname"
                                                              : NULL;
  const char *set = field == NULL ? NULL : field[0] == 'h' ? s->hostname : s->domainname;
  if (set != NULL && *set != '\0')
    return cm_error_set(err, 0,
                        "config.json: .linux.sysctl: \"%s\" conflicts with .%s (\"%s\"); set the name in .%s "
                        "only",
                        key, field, set, field);
  return 0;
}

int sysctl_validate(const struct spec *s, struct cm_error **err) {
  for (size_t i = 0; i < s->linux_.sysctl.count; i++)
    if (validate_key(s, s->linux_.sysctl.items[i].key, err) < 0)
      return -1;
  return 0;
}

int sysctl_apply(const struct spec_kv_list *sysctl, struct cm_error **err) {
  for (size_t i = 0; i < sysctl->count; i++) {
    const struct spec_kv *kv = &sysctl->items[i];
    cleanup_free char *slash = NULL;
    cleanup_free char *dot = NULL;
    cleanup_free char *relpath = NULL;
    if (sysctl_key_forms(kv->key, &slash, &dot, err) < 0)
      return -1;
    if (asprintf(&relpath, "sys/%s", slash) < 0)
      return cm_error_set(err, ENOMEM, "linux.sysctl");
    /* Verified procfs, no symlinks, no mounts on the way (CVE-2025-52881 class). */
    cleanup_close int fd = procfs_open(relpath, O_WRONLY | O_TRUNC, err);
    if (fd < 0)
      return cm_error_prefix(err, "linux.sysctl: %s", kv->key);
    const char *v = kv->value ? kv->value : "";
    size_t len = strlen(v);
    ssize_t n;
    do {
      n = write(fd, v, len);
    } while (n < 0 && errno == EINTR);
    if (n < 0)
      return cm_error_set(err, errno, "linux.sysctl: write %s = %s", kv->key, v);
    if ((size_t)n != len)
      return cm_error_set(err, EIO, "linux.sysctl: short write %s = %s", kv->key, v);
  }
  return 0;
}
