/* The mcp profiles' Landlock layer: derived from the mounts the config ends up with, after the
 * profile has tightened them, so what the kernel allows follows what the caller was allowed to
 * mount — and not what happens to be mounted. A mount the profile never saw (one already under
 * the bundle's rootfs, carried in by the recursive bind) gets only the rootfs's read+execute;
 * a bind the mount options leave writable gets no more than the profile gave it.
 *
 *   /                         read+execute (all rights when the root is writable: --ephemeral)
 *   read-only binds, tmpfs    read+execute
 *   writable binds and tmpfs  every right (no execute on noexec mounts)
 *   /proc                     read, list, write files (writes stay limited by the read-only and
 *                             masked paths, which are mounts)
 *   /sys, cgroupfs            read, list
 *   /dev                      read, write and truncate the nodes, list; no ioctl except on the
 *                             terminals (/dev/pts, ptmx, tty, console)
 *   mqueue                    read and write, create and remove queues
 *   deny list                 no access at all (carved out by linux/landlock.c)
 *   scoped                    signal, abstract_unix_socket: no signal to, and no connection to
 *                             an abstract socket of, a process outside the container's domain
 *   TCP                       not handled, unless the egress broker restricts it
 *                             (policy_landlock_restrict_tcp)
 * Best effort: the runtime drops what the kernel's ABI lacks and records the ABI enforced. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

#include "policy/profile_rules.h"
#include "spec/json_util.h"
#include "util/cleanup.h"

#define DEV_NODE_RIGHTS (LL_FS_READ_FILE | LL_FS_WRITE_FILE | LL_FS_TRUNCATE | LL_FS_READ_DIR)
#define TERMINAL_RIGHTS (DEV_NODE_RIGHTS | LL_FS_IOCTL_DEV)
/* ptmx, tty, console are nodes: a rule on a file holds only file rights (the kernel refuses more). */
#define TERMINAL_NODE_RIGHTS (TERMINAL_RIGHTS & LL_FS_FILE_RIGHTS)

static bool type_is(const struct spec_mount *m, const char *t) {
  return m->type && strcmp(m->type, t) == 0;
}

static uint64_t mount_rights(const struct spec_mount *m) {
  const int abi = SPEC_LANDLOCK_ABI_KNOWN;
  bool ro = (m->flags & MS_RDONLY) || m->recursive_readonly;
  uint64_t rights;
  if (strcmp(m->destination, "/dev") == 0)
    rights = DEV_NODE_RIGHTS;
  else if (type_is(m, "devpts"))
    rights = TERMINAL_RIGHTS;
  else if (type_is(m, "proc"))
    rights = LL_FS_READ_FILE | LL_FS_READ_DIR | LL_FS_WRITE_FILE;
  else if (type_is(m, "sysfs") || type_is(m, "cgroup") || type_is(m, "cgroup2"))
    rights = LL_FS_READ_FILE | LL_FS_READ_DIR;
  else if (type_is(m, "mqueue"))
    rights = spec_landlock_read_write(abi) & ~(LL_FS_IOCTL_DEV | LL_FS_MAKE_CHAR | LL_FS_MAKE_BLOCK);
  else
    rights = ro ? spec_landlock_read_execute(abi) : spec_landlock_supported(SPEC_LANDLOCK_FS, abi);
  if (ro)
    rights &= spec_landlock_read_execute(abi) | LL_FS_IOCTL_DEV;
  if (m->flags & MS_NOEXEC)
    rights &= ~LL_FS_EXECUTE;
  if (m->flags & MS_NODEV)
    rights &= ~(LL_FS_IOCTL_DEV | LL_FS_MAKE_CHAR | LL_FS_MAKE_BLOCK);
  return rights;
}

/* A later mount on the same destination hides the earlier one: its rights replace them. */
static void set_path(struct spec_landlock *l, const char *path, uint64_t access) {
  for (size_t i = 0; i < l->n_paths; i++) {
    if (strcmp(l->paths[i].path, path) == 0) {
      l->paths[i].access = access;
      return;
    }
  }
  spec_landlock_add_path(l, path, access);
}

void policy_landlock_derive(const struct spec *s, bool mcp, struct spec_landlock *out,
                            struct policy_report *r) {
  spec_landlock_clear(out);
  if (!mcp && s->landlock_deny.count == 0)
    return;
  const int abi = SPEC_LANDLOCK_ABI_KNOWN;
  const uint64_t all = spec_landlock_supported(SPEC_LANDLOCK_FS, abi);
  out->present = true;
  out->best_effort = true;
  out->handled[SPEC_LANDLOCK_FS] = all;
  out->source = xstrdup(mcp ? "profile mcp" : "deny list");
  if (!mcp) {
    /* Only the deny list asked for Landlock: everything else stays as the mounts allow. */
    spec_landlock_add_path(out, "/", all);
  } else {
    out->handled[SPEC_LANDLOCK_SCOPE] = LL_SCOPE_SIGNAL | LL_SCOPE_ABSTRACT_UNIX_SOCKET;
    /* The server must not change its own code or plant files for later runs, even where a mount
     * under the rootfs the profile never saw would let it. */
    spec_landlock_add_path(out, "/", s->root_readonly ? spec_landlock_read_execute(abi) : all);
    /* The runtime makes /dev and its terminals whether or not the config mounts them. */
    spec_landlock_add_path(out, "/dev", DEV_NODE_RIGHTS);
    for (size_t i = 0; i < s->n_mounts; i++)
      set_path(out, s->mounts[i].destination, mount_rights(&s->mounts[i]));
    spec_landlock_add_path(out, "/dev/pts", TERMINAL_RIGHTS);
    static const char *const terminals[] = {"/dev/ptmx", "/dev/tty", "/dev/console"};
    for (size_t i = 0; i < sizeof(terminals) / sizeof(terminals[0]); i++)
      spec_landlock_add_path(out, terminals[i], TERMINAL_NODE_RIGHTS);
  }
  for (size_t i = 0; i < s->landlock_deny.count; i++)
    spec_landlock_add_deny(out, s->landlock_deny.items[i]);
  if (mcp)
    policy_report_add(
        r,
        "landlock: %zu rules from the mounts (root %s), scoped signal and abstract_unix_socket, "
        "%zu denied paths; best effort",
        out->n_paths, s->root_readonly ? "read+execute" : "writable", out->deny.count);
  else
    policy_report_add(r, "landlock: %zu denied paths (everything else as the mounts allow)", out->deny.count);
}

void policy_root_made_writable(struct spec *s, struct policy_result *r, const char *why) {
  if (s->root_readonly)
    policy_report_add(&r->report, "root.readonly: true -> false (%s)", why);
  s->root_readonly = false;
  struct spec_landlock *l = &r->landlock;
  for (size_t i = 0; l->present && i < l->n_paths; i++) {
    if (strcmp(l->paths[i].path, "/") == 0 && l->paths[i].access != l->handled[SPEC_LANDLOCK_FS]) {
      l->paths[i].access = l->handled[SPEC_LANDLOCK_FS];
      policy_report_add(&r->report, "landlock: / every right (%s)", why);
    }
  }
}

void policy_landlock_add_mount(struct policy_result *r, const struct spec_mount *m) {
  if (r->landlock.present)
    set_path(&r->landlock, m->destination, mount_rights(m));
}

int policy_landlock_restrict_tcp(struct policy_result *r, const struct policy_landlock_tcp *tcp,
                                 struct cm_error **err) {
  struct spec_landlock *l = &r->landlock;
  if (!l->present)
    return cm_error_set(err, 0,
                        "landlock: TCP ports need the profile's Landlock layer (profile mcp or mcp-audit)");
  /* bind NULL: bind(2) stays unrestricted (the egress broker needs only connect limited). */
  l->handled[SPEC_LANDLOCK_NET] |= LL_NET_CONNECT_TCP | (tcp->bind ? LL_NET_BIND_TCP : 0);
  for (size_t i = 0; i < tcp->n_connect; i++)
    spec_landlock_add_port(l, tcp->connect[i], LL_NET_CONNECT_TCP);
  for (size_t i = 0; i < tcp->n_bind; i++)
    spec_landlock_add_port(l, tcp->bind[i], LL_NET_BIND_TCP);
  policy_report_add(&r->report, "landlock: TCP connect only to %zu broker ports, bind to %zu", tcp->n_connect,
                    tcp->n_bind);
  return 0;
}

static void describe_layer(const struct spec_landlock *l, int number, struct policy_report *out) {
  policy_report_add(out, "landlock layer %d (%s%s):", number, l->source ? l->source : "ruleset",
                    l->best_effort ? ", best effort" : ", refused where the kernel lacks a right");
  for (int k = 0; k < SPEC_LANDLOCK_KINDS; k++) {
    if (!l->handled[k])
      continue;
    cleanup_free char *names = spec_landlock_access_names(k, l->handled[k]);
    policy_report_add(out, "  %s: %s", spec_landlock_kind_field(k), names);
  }
  for (size_t i = 0; i < l->n_paths; i++) {
    cleanup_free char *names = spec_landlock_access_names(SPEC_LANDLOCK_FS, l->paths[i].access);
    policy_report_add(out, "  %s: %s", l->paths[i].path, names);
  }
  for (size_t i = 0; i < l->n_ports; i++) {
    cleanup_free char *names = spec_landlock_access_names(SPEC_LANDLOCK_NET, l->ports[i].access);
    policy_report_add(out, "  tcp port %" PRIu64 ": %s", l->ports[i].port, names);
  }
  for (size_t i = 0; i < l->deny.count; i++)
    policy_report_add(out, "  %s: denied (nothing at or beneath it)", l->deny.items[i]);
}

void policy_landlock_describe(const struct spec *s, const struct policy_result *r, int kernel_abi,
                              struct policy_report *out) {
  bool profile = r->landlock.present, asked = s->landlock && s->landlock->present;
  if (!profile && !asked) {
    policy_report_add(out, "landlock: none (no profile, annotation or deny list asks for it)");
    return;
  }
  if (kernel_abi <= 0) {
    policy_report_add(out, "landlock: not available on this kernel: %s",
                      asked ? "the container is refused (the annotation asks for Landlock)"
                            : "the profile's layer is not enforced");
  } else {
    struct cm_error *e = NULL;
    if (asked && spec_landlock_check_abi(s->landlock, kernel_abi, &e) < 0) {
      cleanup_free char *msg = cm_error_format(e);
      cm_error_free(e);
      policy_report_add(out, "landlock: this kernel has ABI %d: the container is refused (%s)", kernel_abi,
                        msg);
    } else {
      policy_report_add(out, "landlock: enforced at ABI %d (this kernel)%s", kernel_abi,
                        profile && kernel_abi < SPEC_LANDLOCK_ABI_KNOWN
                            ? "; the profile's layer drops the rights newer than that"
                            : "");
    }
  }
  int n = 0;
  if (profile)
    describe_layer(&r->landlock, ++n, out);
  if (asked)
    describe_layer(s->landlock, ++n, out);
}
