/* Namespaces: join one by path (type-checked), write a child's id maps, set time offsets and
 * the UTS names. Creating namespaces (clone/unshare) is the runtime's job, not this file's. */
#include "linux/namespaces.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/cleanup.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

/* Local table rather than spec_ns_clone_flag(): this file only needs the kernel facts. */
static int ns_clone_flag(enum spec_ns_type type) {
  switch (type) {
  case SPEC_NS_PID: return CLONE_NEWPID;
  case SPEC_NS_NETWORK: return CLONE_NEWNET;
  case SPEC_NS_MOUNT: return CLONE_NEWNS;
  case SPEC_NS_IPC: return CLONE_NEWIPC;
  case SPEC_NS_UTS: return CLONE_NEWUTS;
  case SPEC_NS_USER: return CLONE_NEWUSER;
  case SPEC_NS_CGROUP: return CLONE_NEWCGROUP;
  case SPEC_NS_TIME: return CLONE_NEWTIME;
  default: return 0;
  }
}

/* Names as written in config.json's linux.namespaces[].type. */
static const char *ns_type_name(enum spec_ns_type type) {
  switch (type) {
  case SPEC_NS_PID: return "pid";
  case SPEC_NS_NETWORK: return "network";
  case SPEC_NS_MOUNT: return "mount";
  case SPEC_NS_IPC: return "ipc";
  case SPEC_NS_UTS: return "uts";
  case SPEC_NS_USER: return "user";
  case SPEC_NS_CGROUP: return "cgroup";
  case SPEC_NS_TIME: return "time";
  default: return "unknown";
  }
}

static const char *clone_flag_name(int flag) {
  for (int t = 0; t < SPEC_NS_COUNT; t++)
    if (ns_clone_flag((enum spec_ns_type)t) == flag)
      return ns_type_name((enum spec_ns_type)t);
  return "unknown";
}

int ns_join(enum spec_ns_type type, const char *path, struct cm_error **err) {
  int want = ns_clone_flag(type);
  if (want == 0)
    return cm_error_set(err, EINVAL, "join namespace %s: invalid namespace type %d", path, (int)type);
  cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return cm_error_set(err, errno, "join %s namespace: open %s", ns_type_name(type), path);
  /* Check the type before setns: a path of the wrong kind (or a plain file the config points
   * at) must fail loudly instead of silently joining something else. */
  int got = ioctl(fd, NS_GET_NSTYPE);
  if (got < 0) {
    if (errno == ENOTTY || errno == EINVAL)
      return cm_error_set(err, 0, "join %s namespace: %s is not a namespace file", ns_type_name(type), path);
    return cm_error_set(err, errno, "join %s namespace: ioctl(NS_GET_NSTYPE) on %s", ns_type_name(type), path);
  }
  if (got != want)
    return cm_error_set(err, 0, "join %s namespace: %s is a %s namespace, not a %s namespace", ns_type_name(type),
                        path, clone_flag_name(got), ns_type_name(type));
  if (setns(fd, want) < 0)
    return cm_error_set(err, errno, "join %s namespace: setns %s", ns_type_name(type), path);
  return 0;
}

/* "cid hid size\n" per mapping; the kernel accepts at most 340 lines in one page. */
static int format_id_map(const struct spec_id_mapping *maps, size_t n, char *buf, size_t bufsize) {
  size_t used = 0;
  for (size_t i = 0; i < n; i++) {
    int w = snprintf(buf + used, bufsize - used, "%u %u %u\n", maps[i].container_id, maps[i].host_id, maps[i].size);
    if (w < 0 || (size_t)w >= bufsize - used)
      return -1;
    used += (size_t)w;
  }
  return (int)used;
}

static int write_one_id_map(pid_t pid, const char *file, const char *field, const struct spec_id_mapping *maps,
                            size_t n, struct cm_error **err) {
  if (n == 0)
    return cm_error_set(err, 0, "linux.%s: a new user namespace needs at least one mapping", field);
  char buf[4096];
  int len = format_id_map(maps, n, buf, sizeof(buf));
  if (len < 0)
    return cm_error_set(err, E2BIG, "linux.%s: %zu mappings do not fit in one page", field, n);
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
  cleanup_close int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return cm_error_set(err, errno, "open %s", path);
  /* The kernel takes a map in exactly one write(); a second write fails with EPERM. */
  ssize_t w = write(fd, buf, (size_t)len);
  if (w != len) {
    /* Drop the trailing newline for a one-line message. */
    for (int i = 0; i < len; i++)
      if (buf[i] == '\n')
        buf[i] = i == len - 1 ? '\0' : ',';
    return cm_error_set(err, w < 0 ? errno : EIO, "write %s (linux.%s \"%s\")", path, field, buf);
  }
  return 0;
}

int ns_write_id_mappings(pid_t pid, const struct spec_linux *l, struct cm_error **err) {
  /* uid_map first, then gid_map: the order runc and the kernel docs use. */
  if (write_one_id_map(pid, "uid_map", "uidMappings", l->uid_mappings, l->n_uid_mappings, err) < 0)
    return -1;
  if (write_one_id_map(pid, "gid_map", "gidMappings", l->gid_mappings, l->n_gid_mappings, err) < 0)
    return -1;
  return 0;
}

int ns_write_time_offsets(const struct spec_linux *l, struct cm_error **err) {
  if (!l->time_monotonic.present && !l->time_boottime.present)
    return 0;
  char buf[256];
  size_t used = 0;
  if (l->time_monotonic.present)
    used += (size_t)snprintf(buf + used, sizeof(buf) - used, "monotonic %lld %u\n",
                             (long long)l->time_monotonic.secs, l->time_monotonic.nanosecs);
  if (l->time_boottime.present)
    used += (size_t)snprintf(buf + used, sizeof(buf) - used, "boottime %lld %u\n",
                             (long long)l->time_boottime.secs, l->time_boottime.nanosecs);
  cleanup_close int fd = open("/proc/self/timens_offsets", O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return cm_error_set(err, errno, "linux.timeOffsets: open /proc/self/timens_offsets");
  /* One write: offsets can only be set before the first process enters the namespace. */
  ssize_t w = write(fd, buf, used);
  if (w < 0 || (size_t)w != used) {
    for (size_t i = 0; i < used; i++)
      if (buf[i] == '\n')
        buf[i] = i == used - 1 ? '\0' : ',';
    return cm_error_set(err, w < 0 ? errno : EIO, "linux.timeOffsets: write \"%s\" to /proc/self/timens_offsets",
                        buf);
  }
  return 0;
}

int ns_set_uts_names(const char *hostname, const char *domainname, struct cm_error **err) {
  if (hostname && sethostname(hostname, strlen(hostname)) < 0)
    return cm_error_set(err, errno, "hostname: sethostname \"%s\"", hostname);
  if (domainname && setdomainname(domainname, strlen(domainname)) < 0)
    return cm_error_set(err, errno, "domainname: setdomainname \"%s\"", domainname);
  return 0;
}

static bool same_file(int a, int b) {
  struct stat sa, sb;
  return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int ns_owner_of(const char *path, unsigned long *owner_ino, unsigned int *owner_uid) {
  cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
  cleanup_close int owner = fd < 0 ? -1 : ioctl(fd, NS_GET_USERNS);
  struct stat st;
  uid_t uid;
  if (owner < 0 || fstat(owner, &st) < 0 || ioctl(owner, NS_GET_OWNER_UID, &uid) < 0)
    return -1;
  *owner_ino = (unsigned long)st.st_ino;
  *owner_uid = (unsigned int)uid;
  return 0;
}

bool ns_owner_userns_path(const char *path, int mine, char *out, size_t outsz) {
  cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
  cleanup_close int owner = fd < 0 ? -1 : ioctl(fd, NS_GET_USERNS);
  if (owner < 0 || same_file(owner, mine))
    return false;
  int pid = 0, end = 0;
  if (sscanf(path, "/proc/%d/ns/%*[a-z_]%n", &pid, &end) != 1 || end == 0 || path[end] != '\0' || pid <= 0)
    return false;
  snprintf(out, outsz, "/proc/%d/ns/user", pid);
  cleanup_close int user = open(out, O_RDONLY | O_CLOEXEC);
  return user >= 0 && same_file(user, owner);
}
