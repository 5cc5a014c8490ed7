/* The isolation every hardening profile shares (mcp and ci): new namespaces, never the host's;
 * a user namespace whose root is never host root; the sysfs for a rootless /sys bind; the
 * tmpfs, masked and read-only paths added; the standard devices only; no config sysctls or raw
 * cgroup files; the capability names and rlimit clamps of the reports. What the profiles differ
 * in (capabilities, the root's writability, limits, seccomp) is in profile_mcp.c and
 * profile_ci.c. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "linux/namespaces.h"
#include "policy/profile_rules.h"
#include "spec/json_util.h"
#include "util/cleanup.h"
#include "util/host_root.h"

char *policy_cap_names(uint64_t mask) {
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  for (int cap = 0; cap < 64; cap++) {
    if (!(mask >> cap & 1))
      continue;
    char *name = cap_to_name((cap_value_t)cap);
    if (name) {
      for (char *p = name; *p; p++)
        *p = (char)(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p);
    }
    fprintf(f, "%s%s", ftell(f) ? " " : "", name ? name : "?");
    cap_free(name);
  }
  fclose(f);
  return out;
}


static struct spec_rlimit *rlimit_find_or_add(struct spec_process *p, int resource, const char *type,
                                              bool *added) {
  for (size_t i = 0; i < p->n_rlimits; i++)
    if (p->rlimits[i].resource == resource) {
      *added = false;
      return &p->rlimits[i];
    }
  struct spec_rlimit *grown = realloc(p->rlimits, (p->n_rlimits + 1) * sizeof(*grown));
  if (grown == NULL)
    abort();
  p->rlimits = grown;
  struct spec_rlimit *rl = &p->rlimits[p->n_rlimits++];
  *rl = (struct spec_rlimit){
      .resource = resource, .type = xstrdup(type), .soft = RLIM_INFINITY, .hard = RLIM_INFINITY};
  *added = true;
  return rl;
}

void policy_tighten_rlimit(struct spec_process *p, int resource, const char *type, uint64_t soft,
                           uint64_t hard, struct policy_report *r) {
  bool added;
  struct spec_rlimit *rl = rlimit_find_or_add(p, resource, type, &added);
  uint64_t old_soft = rl->soft, old_hard = rl->hard;
  if (rl->hard > hard)
    rl->hard = hard;
  if (rl->soft > soft)
    rl->soft = soft;
  if (rl->soft > rl->hard)
    rl->soft = rl->hard;
  if (added)
    policy_report_add(r, "process.rlimits: %s set to %" PRIu64 "/%" PRIu64, type, rl->soft, rl->hard);
  else if (old_soft != rl->soft || old_hard != rl->hard)
    policy_report_add(r, "process.rlimits: %s %" PRIu64 "/%" PRIu64 " -> %" PRIu64 "/%" PRIu64, type,
                      old_soft, old_hard, rl->soft, rl->hard);
}


/* --- namespaces ----------------------------------------------------------------------------- */

/* Does `path` name the namespace the host's init lives in, or the one we run in (the one a
 * container without its own would share)? */
static bool is_host_namespace(enum spec_ns_type t, const char *path) {
  struct stat a;
  if (stat(path, &a) < 0)
    return false; /* the runtime fails on a bad path anyway */
  static const char *const refs[] = {"/proc/1/ns/%s", "/proc/self/ns/%s"};
  for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]); i++) {
    char ref[64];
    struct stat b;
    snprintf(ref, sizeof(ref), refs[i], spec_ns_proc_name(t));
    if (stat(ref, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
      return true;
  }
  return false;
}

int policy_tighten_namespaces(struct spec *s, const char *profile, struct policy_report *r, struct cm_error **err) {
  static const enum spec_ns_type required[] = {SPEC_NS_PID, SPEC_NS_NETWORK, SPEC_NS_IPC,
                                               SPEC_NS_UTS, SPEC_NS_MOUNT,   SPEC_NS_CGROUP};
  for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
    enum spec_ns_type t = required[i];
    struct spec_namespace *ns = &s->linux_.namespaces[t];
    bool shares_host = !ns->present || (ns->path && is_host_namespace(t, ns->path));
    /* The host's network stack (its listeners, its other interfaces) or its process table (signal
     * and ptrace targets, /proc of host processes) is what the profile exists to keep out of
     * reach: refuse, rather than silently change what the caller asked for. */
    if (shares_host && (t == SPEC_NS_NETWORK || t == SPEC_NS_PID))
      return cm_error_set(err, EPERM,
                          "linux.namespaces: the host %s namespace cannot be joined (%s): the %s "
                          "profile needs a new one",
                          spec_ns_name(t),
                          t == SPEC_NS_NETWORK ? "Docker --network host, a Kubernetes hostNetwork pod"
                                               : "Docker --pid host, a Kubernetes hostPID pod",
                          profile);
    if (shares_host && ns->path)
      return cm_error_set(err, EPERM, "linux.namespaces: joining the host %s namespace (%s) is refused",
                          spec_ns_name(t), ns->path);
    if (!ns->present) {
      ns->present = true;
      policy_report_add(r, "linux.namespaces: new %s namespace added", spec_ns_name(t));
    }
    /* Loopback only, also where an engine made the namespace: a Kubernetes pod's (CNI gave it
     * an eth0) is joined only while it holds nothing but lo, else the container gets a new one
     * (linux/net.c, at create). Refusing instead would leave no way to run a pod at all. */
    if (t == SPEC_NS_NETWORK && ns->path) {
      ns->loopback_only = true;
      policy_report_add(r, "linux.namespaces: network %s joined only while it holds nothing but lo, "
                           "else a new namespace (loopback only)", ns->path);
    }
  }
  return 0;
}

/* A container that joins namespaces a user namespace other than ours owns (a pod's: the
 * sandbox made them under the range the profile gave it) joins that user namespace too, as the
 * containers of a Kubernetes pod with its own user namespace do. A namespace of its own would
 * not own the pod's IPC or network namespace: mqueue and sysfs could not be mounted there, and
 * the pod's containers could not share IPC objects across two ranges. True when joined. */
static bool join_owner_userns(struct spec *s, struct policy_report *r) {
  static const enum spec_ns_type shared[] = {SPEC_NS_IPC, SPEC_NS_NETWORK, SPEC_NS_UTS, SPEC_NS_PID};
  cleanup_close int mine = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
  for (size_t i = 0; mine >= 0 && i < sizeof(shared) / sizeof(shared[0]); i++) {
    const struct spec_namespace *other = &s->linux_.namespaces[shared[i]];
    char path[64];
    if (!other->present || other->path == NULL || !ns_owner_userns_path(other->path, mine, path, sizeof(path)))
      continue;
    struct spec_namespace *ns = &s->linux_.namespaces[SPEC_NS_USER];
    ns->present = true;
    ns->path = xstrdup(path);
    s->linux_.userns_join_owner = true;
    policy_report_add(r, "linux.namespaces: joins the user namespace %s, which owns the %s namespace it shares "
                         "(%s): a pod's containers share one range",
                      path, spec_ns_proc_name(shared[i]), other->path);
    return true;
  }
  return false;
}

/* Container root is never host root: a user namespace always, its mappings never naming host
 * id 0. With one the config leaves to us, the runtime maps the container to a host range of its
 * own (root) or to the caller's ids (rootless); either way the namespace is created by the
 * unprivileged host uid, so per-uid kernel budgets (inotify, mqueue, RLIMIT_NPROC, keys) are
 * that uid's and never host root's (runtime/userns_setup.h). */
int policy_tighten_userns(struct spec *s, uint32_t slots, struct policy_report *r, struct cm_error **err) {
  struct spec_linux *l = &s->linux_;
  struct spec_namespace *ns = &l->namespaces[SPEC_NS_USER];
  if (ns->path) {
    if (is_host_namespace(SPEC_NS_USER, ns->path))
      return cm_error_set(err, EPERM, "linux.namespaces: joining the host user namespace (%s) is refused", ns->path);
    return 0;
  }
  if (!ns->present && cm_host_root() && join_owner_userns(s, r))
    return 0;
  if (!ns->present) {
    ns->present = true;
    l->userns_auto = true;
    l->userns_auto_slots = slots;
    free(l->uid_mappings);
    free(l->gid_mappings);
    l->uid_mappings = l->gid_mappings = NULL;
    l->n_uid_mappings = l->n_gid_mappings = 0;
    if (cm_host_root())
      policy_report_add(r, "linux.namespaces: new user namespace added: container ids 0-%u map to a host "
                           "range allocated for this container, and it is created by that range's first uid",
                        (slots ? slots : 1) * 65536u - 1);
    else
      policy_report_add(r, "linux.namespaces: new user namespace added: your uid and gid are the container's "
                           "root (rootless)");
    return 0;
  }
  static const char *const fields[] = {"uidMappings", "gidMappings"};
  for (int k = 0; k < 2; k++) {
    const struct spec_id_mapping *m = k ? l->gid_mappings : l->uid_mappings;
    size_t n = k ? l->n_gid_mappings : l->n_uid_mappings;
    for (size_t i = 0; i < n; i++)
      if (m[i].host_id == 0 || (uint64_t)m[i].host_id + m[i].size > UINT32_MAX)
        return cm_error_set(err, EPERM,
                            "linux.%s[%zu]: maps host id 0 into the container (container ids %u-%u): its root "
                            "would be the host's; map an unprivileged range, or leave the user namespace to "
                            "the profile",
                            fields[k], i, m[i].container_id, m[i].container_id + m[i].size - 1);
  }
  if (!l->userns_auto && cm_host_root()) {
    l->userns_create_as_mapped_root = true;
    policy_report_add(r, "linux.namespaces: the config's user namespace is created by the host uid its root "
                         "maps to, not by root");
  }
  return 0;
}



/* A rootless config (`codemode spec --rootless`, `runc spec --rootless`) binds the host's /sys,
 * since without a network namespace of its own a user namespace may not mount sysfs. The
 * profile gives the container its own network namespace, so it gets a fresh read-only sysfs
 * instead of the host's tree. */
void policy_sys_bind_to_sysfs(struct spec *s, struct policy_report *r) {
  for (size_t i = 0; i < s->n_mounts; i++) {
    struct spec_mount *m = &s->mounts[i];
    bool bind = (m->type && strcmp(m->type, "bind") == 0) || (m->flags & MS_BIND);
    char real[PATH_MAX];
    if (!bind || strcmp(m->destination, "/sys") != 0 || m->source == NULL || realpath(m->source, real) == NULL ||
        strcmp(real, "/sys") != 0)
      continue;
    free(m->type);
    free(m->source);
    spec_strv_free(&m->options);
    m->type = xstrdup("sysfs");
    m->source = xstrdup("sysfs");
    static const char *const opts[] = {"nosuid", "noexec", "nodev", "ro"};
    for (size_t k = 0; k < sizeof(opts) / sizeof(opts[0]); k++)
      spec_strv_push(&m->options, opts[k]);
    spec_mount_decode_options(m);
    policy_report_add(r, "mounts[%zu] /sys: the bind of the host's /sys becomes a fresh read-only sysfs (the "
                         "container has its own network namespace)",
                      i);
  }
}

bool policy_has_mount_at(const struct spec *s, const char *dest) {
  for (size_t i = 0; i < s->n_mounts; i++)
    if (strcmp(s->mounts[i].destination, dest) == 0)
      return true;
  return false;
}

/* The tmpfs goes before the first mount that lies beneath dest: mounts are made in order, so
 * one appended after a caller's bind at /tmp/work would hide it (the server would find an
 * empty /tmp there: issue 29). The caller's mounts land on top of ours. */
void policy_add_tmpfs(struct spec *s, const char *dest, const char *const *options, struct policy_report *r) {
  struct spec_mount *grown = realloc(s->mounts, (s->n_mounts + 1) * sizeof(*grown));
  if (grown == NULL)
    abort();
  s->mounts = grown;
  size_t at = s->n_mounts, n = strlen(dest);
  for (size_t i = 0; i < s->n_mounts && at == s->n_mounts; i++)
    if (strncmp(s->mounts[i].destination, dest, n) == 0 && s->mounts[i].destination[n] == '/')
      at = i;
  memmove(&s->mounts[at + 1], &s->mounts[at], (s->n_mounts - at) * sizeof(*grown));
  s->n_mounts++;
  struct spec_mount *m = &s->mounts[at];
  *m =
      (struct spec_mount){.destination = xstrdup(dest), .type = xstrdup("tmpfs"), .source = xstrdup("tmpfs")};
  for (; *options; options++)
    spec_strv_push(&m->options, *options);
  spec_mount_decode_options(m);
  policy_report_add(r, "mounts: tmpfs added at %s (%s)", dest, m->data ? m->data : "");
}


void policy_add_paths(struct spec_strv *v, const char *const *paths, const char *what, struct policy_report *r) {
  for (size_t i = 0; paths[i] != NULL; i++) {
    bool found = false;
    for (size_t k = 0; k < v->count && !found; k++)
      found = strcmp(v->items[k], paths[i]) == 0;
    if (!found) {
      spec_strv_push(v, paths[i]);
      policy_report_add(r, "linux.%s: %s added", what, paths[i]);
    }
  }
}


static bool standard_device(const struct spec_device *d) {
  static const int64_t standard[][2] = {{1, 3}, {1, 5}, {1, 7}, {1, 8}, {1, 9}, {5, 0}, {5, 2}};
  if (d->type != 'c' && d->type != 'u')
    return false;
  for (size_t i = 0; i < sizeof(standard) / sizeof(standard[0]); i++)
    if (d->major == standard[i][0] && d->minor == standard[i][1])
      return true;
  return false;
}

/* The device cgroup rules let every host device through: the last rule for all devices is an
 * allow of rwm (Docker --privileged, a Kubernetes privileged container). -1: none does. */
static ssize_t allow_all_devices_rule(const struct spec_resources *res) {
  for (size_t i = res->n_devices; i-- > 0;) {
    const struct spec_device_rule *d = &res->devices[i];
    if (d->type != 'a' || d->major != -1 || d->minor != -1)
      continue;
    if (!d->allow)
      return -1;
    if (strchr(d->access, 'r') && strchr(d->access, 'w') && strchr(d->access, 'm'))
      return (ssize_t)i;
  }
  return -1;
}

/* A mount namespace joined by path belongs to the user namespace it was made in; the container's
 * root in a user namespace of its own (new, as the hardening profiles give it) has no capability
 * there, so not even the rootfs could be set up ("set propagation of /: Operation not
 * permitted"). Said at once, naming the namespace, its owner and the ways out. */
int policy_check_joined_mount_ns(const struct spec *s, struct cm_error **err) {
  const struct spec_namespace *mnt = &s->linux_.namespaces[SPEC_NS_MOUNT];
  const struct spec_namespace *user = &s->linux_.namespaces[SPEC_NS_USER];
  unsigned long owner_ino;
  unsigned int owner_uid;
  if (!mnt->present || mnt->path == NULL || !user->present || user->path != NULL)
    return 0;
  if (ns_owner_of(mnt->path, &owner_ino, &owner_uid) < 0)
    return 0; /* joining it fails at create, naming the path */
  /* The initial user namespace has a fixed inode (0xEFFFFFFD): the host's, never joined here. */
  bool host_owned = owner_ino == 0xEFFFFFFDul;
  return cm_error_set(err, EPERM,
                      "linux.namespaces: the mount namespace %s belongs to user namespace user:[%lu]%s (created by "
                      "uid %u), which the container's own new user namespace cannot administer: nothing could be "
                      "mounted there, not even its rootfs. %s",
                      mnt->path, owner_ino, host_owned ? ", the host's" : "", owner_uid,
                      host_owned ? "Drop the mount namespace's path (the container then gets a new one): this "
                                   "profile never joins the host's user namespace, nor mounts in a namespace it owns"
                                 : "Drop the mount namespace's path (the container then gets a new one), or join the "
                                   "user namespace that owns it as well (a linux.namespaces user entry with the path "
                                   "/proc/PID/ns/user of a process in it)");
}

int policy_tighten_devices(struct spec_linux *l, struct policy_report *r, struct cm_error **err) {
  /* A privileged container: what it asked for (every device, every capability, no masks) is the
   * opposite of the profile, and silently giving it nothing would leave whoever asked unaware. */
  ssize_t all = allow_all_devices_rule(&l->resources);
  if (all >= 0)
    return cm_error_set(err, EPERM,
                        "linux.resources.devices[%zd]: allows every host device, as a privileged "
                        "container does (Docker --privileged, a Kubernetes privileged securityContext): "
                        "refused, run it without privileged",
                        all);
  /* tun, fuse, kvm, block devices…: each one is a kernel driver the server could attack. */
  size_t kept = 0;
  for (size_t i = 0; i < l->n_devices; i++) {
    struct spec_device *d = &l->devices[i];
    if (standard_device(d)) {
      l->devices[kept++] = *d;
      continue;
    }
    policy_report_add(r, "linux.devices: %s (%c %" PRId64 ":%" PRId64 ") removed", d->path, d->type, d->major,
                      d->minor);
    free(d->path);
  }
  l->n_devices = kept;
  /* The device cgroup: deny everything the config's rules allowed; the runtime then adds back
   * only the standard set (null, zero, full, random, urandom, tty, ptmx, pts). */
  struct spec_resources *res = &l->resources;
  bool already = res->n_devices > 0 && !res->devices[res->n_devices - 1].allow &&
                 res->devices[res->n_devices - 1].type == 'a';
  if (!already) {
    struct spec_device_rule *grown = realloc(res->devices, (res->n_devices + 1) * sizeof(*grown));
    if (grown == NULL)
      abort();
    res->devices = grown;
    res->devices[res->n_devices++] = (struct spec_device_rule){false, 'a', -1, -1, "rwm"};
    res->present = true;
    policy_report_add(r,
                      "linux.resources.devices: deny-all appended (only the standard devices stay usable)");
  }
  return 0;
}


void policy_drop_sysctls(struct spec_linux *l, struct policy_report *r) {
  /* Namespaced sysctls still change kernel behaviour the server could use (ping ranges, ports,
   * unprivileged BPF knobs…): a hardened container gets none from its config. */
  for (size_t i = 0; i < l->sysctl.count; i++)
    policy_report_add(r, "linux.sysctl: %s=%s removed", l->sysctl.items[i].key, l->sysctl.items[i].value);
  spec_kv_list_free(&l->sysctl);
}


/* The raw cgroup files of linux.resources.unified would set memory.max, pids.max or cpu.max behind
 * the fields above: not taken from a hardened container's config. */
void policy_drop_unified(struct spec_resources *res, struct policy_report *r) {
  for (size_t i = 0; i < res->unified.count; i++)
    policy_report_add(r, "linux.resources.unified: %s=%s removed", res->unified.items[i].key,
                      res->unified.items[i].value);
  spec_kv_list_free(&res->unified);
}

