/* The runtime's side of user namespaces and idmapped mounts for create (userns_setup.h). */
#include "runtime/userns_setup.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "linux/idmap.h"
#include "linux/mount_source.h"
#include "linux/rootfs.h"
#include "spec/json_util.h"
#include "util/cleanup.h"
#include "util/log.h"
#include "util/sync.h"
#include "util/host_root.h"

char *userns_setup_db_name(const char *db, unsigned long id) {
  cleanup_fclose FILE *f = fopen(db, "re");
  char line[4096];
  while (f && fgets(line, sizeof(line), f)) {
    char *save = NULL;
    char *name = strtok_r(line, ":", &save);
    strtok_r(NULL, ":", &save);
    char *num = strtok_r(NULL, ":", &save);
    if (name && num && strtoul(num, NULL, 10) == id)
      return strdup(name);
  }
  return NULL;
}

static void set_maps(struct spec_id_mapping **maps, size_t *n, const struct spec_id_mapping *from, size_t count) {
  free(*maps);
  *maps = malloc(count * sizeof(**maps));
  if (*maps == NULL)
    abort();
  memcpy(*maps, from, count * sizeof(**maps));
  *n = count;
}

/* The caller's own id as the container's root, and its first subordinate range (up to 65536
 * ids) as 1…, when it has one and the helper that may map it is installed. */
static int rootless_maps(const char *file, const char *helper, uint32_t own, const char *name,
                         struct spec_id_mapping out[2], struct cm_error **err) {
  out[0] = (struct spec_id_mapping){0, own, 1};
  struct subid_range r[1];
  int n = subid_ranges(file, name, own, r, 1, err);
  if (n < 0)
    return -1;
  if (n == 0)
    return 1;
  if (userns_helper_path(helper) == NULL) {
    cm_debug("rootless: %s gives you ids %u-%u, but %s is not installed: only your own id is mapped", file,
             r[0].start, r[0].start + r[0].count - 1, helper);
    return 1;
  }
  out[1] = (struct spec_id_mapping){1, r[0].start, r[0].count < 65536 ? r[0].count : 65536};
  return 2;
}

/* Every range of our own map (a /proc/self/{uid,gid}_map), each id mapped to itself. */
static int identity_maps(const char *file, struct spec_id_mapping **maps, size_t *n, struct cm_error **err) {
  struct cm_id_range r[340];
  int k = cm_self_id_map(file, r, 340);
  if (k < 0)
    return cm_error_set(err, errno, "read %s", file);
  if (k == 0)
    return cm_error_set(err, 0, "%s: no id is mapped in our user namespace", file);
  struct spec_id_mapping m[340];
  for (int i = 0; i < k; i++)
    m[i] = (struct spec_id_mapping){r[i].inside, r[i].inside, r[i].count};
  set_maps(maps, n, m, (size_t)k);
  return 0;
}

static bool single_own(const struct spec_id_mapping *m, size_t n, uint32_t own) {
  return n == 1 && m[0].size == 1 && m[0].host_id == own;
}

int userns_setup_rootless_maps(struct spec_linux *l, struct cm_error **err) {
  struct spec_id_mapping uids[2], gids[2];
  cleanup_free char *uname = userns_setup_db_name("/etc/passwd", geteuid());
  cleanup_free char *gname = userns_setup_db_name("/etc/group", getegid());
  int nu = rootless_maps("/etc/subuid", "newuidmap", geteuid(), uname, uids, err);
  int ng = nu < 0 ? -1 : rootless_maps("/etc/subgid", "newgidmap", getegid(), gname, gids, err);
  if (nu < 0 || ng < 0)
    return -1;
  set_maps(&l->uid_mappings, &l->n_uid_mappings, uids, (size_t)nu);
  set_maps(&l->gid_mappings, &l->n_gid_mappings, gids, (size_t)ng);
  return 0;
}

void userns_setup_rootless_plan(const struct spec_linux *l, struct userns_plan *p) {
  p->dumpable_while_mapping = true;
  p->helpers = !single_own(l->uid_mappings, l->n_uid_mappings, geteuid()) ||
               !single_own(l->gid_mappings, l->n_gid_mappings, getegid());
  p->deny_setgroups = !p->helpers;
}

static bool id_mapped(const struct spec_id_mapping *m, size_t n, uint32_t id) {
  for (size_t i = 0; i < n; i++)
    if (id >= m[i].container_id && id - m[i].container_id < m[i].size)
      return true;
  return false;
}

/* devpts "gid=5" (tty) names a group a rootless namespace usually does not have: the kernel
 * refuses the mount. Dropped, as runc's rootless conversion does (the ptys then belong to the
 * container's root group). */
static void drop_unmapped_devpts_gid(struct spec *s) {
  for (size_t i = 0; i < s->n_mounts; i++) {
    struct spec_mount *m = &s->mounts[i];
    if (!m->type || strcmp(m->type, "devpts") != 0)
      continue;
    for (size_t k = 0; k < m->options.count; k++) {
      const char *o = m->options.items[k];
      if (strncmp(o, "gid=", 4) != 0 || id_mapped(s->linux_.gid_mappings, s->linux_.n_gid_mappings,
                                                   (uint32_t)strtoul(o + 4, NULL, 10)))
        continue;
      cm_debug("mounts[%zu] devpts: %s is not mapped in the user namespace: dropped", i, o);
      free(m->options.items[k]);
      memmove(&m->options.items[k], &m->options.items[k + 1], (m->options.count - k) * sizeof(char *));
      m->options.count--;
      spec_mount_decode_options(m);
      break;
    }
  }
}

static int bind_clone(const struct userns_setup *u, const struct spec *s, size_t i, int src, bool recursive,
                      unsigned long flags, int container_ns, struct cm_error **err);

static bool is_bind(const struct spec_mount *m) {
  return (m->flags & MS_BIND) || (m->type && strcmp(m->type, "bind") == 0);
}

int userns_setup_decide(struct spec *s, struct userns_setup *u, struct cm_error **err) {
  *u = (struct userns_setup){0};
  struct spec_linux *l = &s->linux_;
  struct spec_namespace *ns = &l->namespaces[SPEC_NS_USER];
  bool root = cm_host_root();
  const char *idmap = spec_kv_get(&s->annotations, USERNS_IDMAP_ANNOTATION);
  u->idmap_off = idmap && strcmp(idmap, "none") == 0;
  if (idmap && !u->idmap_off)
    return cm_error_set(err, 0, "config.json: .annotations[\"%s\"]: \"%s\" (the one value is \"none\")",
                        USERNS_IDMAP_ANNOTATION, idmap);

  if (geteuid() != 0 && !ns->present) {
    /* Unprivileged, nothing else works: the namespace is added, as crun does. (Not for uid 0
     * of a user namespace that is not the host's: the container may share it, as with runc.) */
    ns->present = true;
    l->userns_auto = true;
    s->has_linux = true;
  }
  if (ns->present && ns->path && l->userns_join_owner && root) {
    /* A pod's user namespace (policy/profile_mcp.c): its maps are there already; the rootfs and
     * binds are idmapped to it, as for the range of a namespace of the container's own. */
    u->idmap_all = true;
    u->premounts = true;
  }
  if (ns->present && ns->path == NULL) {
    u->plan.create = true;
    if (!root && geteuid() == 0) {
      /* Root of a user namespace that is not the host's (codemode-run's own, util/host_root.h):
       * the container's nests in it, every id ours mapped to itself, and we write the maps
       * ourselves (our namespace's CAP_SETUID and CAP_SETGID cover them; newuidmap would look
       * for "root" in /etc/subuid). */
      if ((l->userns_auto || (l->n_uid_mappings == 0 && l->n_gid_mappings == 0)) &&
          (identity_maps("/proc/self/uid_map", &l->uid_mappings, &l->n_uid_mappings, err) < 0 ||
           identity_maps("/proc/self/gid_map", &l->gid_mappings, &l->n_gid_mappings, err) < 0))
        return -1;
      drop_unmapped_devpts_gid(s);
      /* Our binary was exec'd on the host: a non-dumpable child's /proc files are host root's. */
      u->plan.dumpable_while_mapping = true;
    } else if (!root) {
      if ((l->userns_auto || (l->n_uid_mappings == 0 && l->n_gid_mappings == 0)) &&
          userns_setup_rootless_maps(l, err) < 0)
        return -1;
      if (userns_apparmor_check(err) < 0)
        return -1;
      drop_unmapped_devpts_gid(s);
      userns_setup_rootless_plan(l, &u->plan);
    } else if (l->userns_auto) {
      /* Mappings and creator come with the range (userns_setup_allocate). */
      u->idmap_all = true;
      u->premounts = true;
      u->plan.become_creator = true;
    } else if (l->userns_create_as_mapped_root) {
      const struct spec_id_mapping *ru = NULL, *rg = NULL;
      for (size_t i = 0; i < l->n_uid_mappings; i++)
        if (l->uid_mappings[i].container_id == 0)
          ru = &l->uid_mappings[i];
      for (size_t i = 0; i < l->n_gid_mappings; i++)
        if (l->gid_mappings[i].container_id == 0)
          rg = &l->gid_mappings[i];
      if (ru == NULL || rg == NULL)
        return cm_error_set(err, 0, "config.json: .linux.uidMappings/gidMappings: container id 0 is not mapped");
      u->plan.become_creator = true;
      u->plan.creator_uid = ru->host_id;
      u->plan.creator_gid = rg->host_id;
    }
  }

  for (size_t i = 0; i < s->n_mounts; i++) {
    const struct spec_mount *m = &s->mounts[i];
    if (!m->idmap && m->n_uid_mappings == 0 && m->n_gid_mappings == 0)
      continue;
    const char *dest = m->destination ? m->destination : "";
    if (!is_bind(m))
      return cm_error_set(err, 0, "config.json: .mounts[%zu] (%s): idmapped mounts are bind mounts only", i, dest);
    if ((m->n_uid_mappings == 0) != (m->n_gid_mappings == 0))
      return cm_error_set(err, 0, "config.json: .mounts[%zu] (%s): uidMappings and gidMappings go together", i, dest);
    if (!root)
      return cm_error_set(err, EPERM,
                          "config.json: .mounts[%zu] (%s): an idmapped mount needs codemode to run as root "
                          "(mount_setattr(MOUNT_ATTR_IDMAP) needs CAP_SYS_ADMIN over the source's filesystem)",
                          i, dest);
    if (m->n_uid_mappings == 0 && !ns->present)
      return cm_error_set(err, 0,
                          "config.json: .mounts[%zu] (%s): \"idmap\" without uidMappings takes the container's "
                          "user namespace mappings, and it has no user namespace",
                          i, dest);
    u->premounts = true;
  }
  return 0;
}

int userns_setup_allocate(struct spec *s, struct userns_setup *u, const char *state_dir, int dirfd,
                          struct cm_error **err) {
  struct spec_linux *l = &s->linux_;
  if (!u->idmap_all || l->userns_join_owner)
    return 0;
  if (idrange_allocate(state_dir, dirfd, l->userns_auto_slots, &u->range, err) < 0)
    return -1;
  u->has_range = true;
  uint32_t ids = u->range.n_slots * IDRANGE_SIZE;
  struct spec_id_mapping um = {0, u->range.uid, ids}, gm = {0, u->range.gid, ids};
  set_maps(&l->uid_mappings, &l->n_uid_mappings, &um, 1);
  set_maps(&l->gid_mappings, &l->n_gid_mappings, &gm, 1);
  u->plan.creator_uid = u->range.uid;
  u->plan.creator_gid = u->range.gid;
  cm_debug("user namespace: host uids %u-%u, gids %u-%u (range %u), created as uid %u", u->range.uid,
           u->range.uid + ids - 1, u->range.gid, u->range.gid + ids - 1, u->range.slot,
           u->range.uid);
  return 0;
}

int userns_setup_write_maps(const struct userns_setup *u, pid_t child, const struct spec *s, struct cm_error **err) {
  return userns_write_maps(child, &s->linux_, &u->plan, err);
}

static bool same_maps(const struct spec_id_mapping *a, size_t na, const struct spec_id_mapping *b, size_t nb) {
  if (na != nb)
    return false;
  for (size_t i = 0; i < na; i++)
    if (a[i].container_id != b[i].container_id || a[i].host_id != b[i].host_id || a[i].size != b[i].size)
      return false;
  return true;
}

/* The container's own user namespace: the child's, or the one the config joins. */
static int container_userns_fd(pid_t child, const struct spec *s, struct cm_error **err) {
  char path[64];
  const char *p = s->linux_.namespaces[SPEC_NS_USER].path;
  if (p == NULL) {
    snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)child);
    p = path;
  }
  int fd = open(p, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return cm_error_set(err, errno, "open the container's user namespace %s", p);
  return fd;
}

/* One bind's detached mount: the source opened here (relative to the bundle), idmapped through
 * its own mappings or the container's, the config's flags on it. */
static int bind_mount_fd(const struct userns_setup *u, const struct spec *s, size_t i, int container_ns,
                         const struct mount_source_rules *rules, struct cm_error **err) {
  const struct spec_mount *m = &s->mounts[i];
  if (m->source == NULL)
    return cm_error_set(err, EINVAL, "bind mount without a source");
  cleanup_close int src = open(m->source, O_PATH | O_CLOEXEC);
  if (src < 0)
    return cm_error_set(err, errno, "open source");
  bool recursive = (m->flags & MS_REC) != 0;
  unsigned long flags = m->flags & ~(MS_REMOUNT | MS_BIND | MS_REC);
  struct mount_source_kind kind = {0};
  if (rules) {
    /* Hardened (linux/mount_source.h), here on the fd we clone, as the child would: never
     * recursive, a device node read-only, the tree judged as the container will see it. */
    if (mount_source_check(rules, src, "bind source", false, &kind, err) < 0)
      return -1;
    recursive = false;
    if (kind.is_device)
      flags |= MS_RDONLY | MS_NOSUID | MS_NOEXEC;
  }
  int fd = bind_clone(u, s, i, src, recursive, flags, container_ns, err);
  if (fd >= 0 && rules && kind.is_dir && mount_source_check_tree(rules, fd, "bind source", err) < 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* The clone of an opened bind source: idmapped as asked or as the profile does, else plain. */
static int bind_clone(const struct userns_setup *u, const struct spec *s, size_t i, int src, bool recursive,
                      unsigned long flags, int container_ns, struct cm_error **err) {
  const struct spec_mount *m = &s->mounts[i];
  bool own_maps = m->n_uid_mappings > 0;
  bool asked = own_maps || m->idmap;
  /* Writable binds too: what the container's root writes there is stored as owned by host root,
   * as without the user namespace. What that could plant, a setuid-root program, the profile's
   * filter refuses (no setuid or setgid mode bits: seccomp-profiles/mcp.json), and a write to an
   * existing setuid file clears its bit (no CAP_FSETID). */
  /* rbind: the submounts idmapped too when the profile idmaps (every mount, as the root), or as
   * the caller asked ("ridmap"; "idmap" and mappings alone: the top mount only, as runc). */
  unsigned tree = recursive ? IDMAP_TREE | (!asked || m->idmap_recursive ? IDMAP_TREE_MAPPED : 0) : 0;
  if (!asked && u->idmap_off)
    return idmap_clone(src, -1, tree, flags, m->clear_flags, m->recursive_readonly, NULL, err);
  cleanup_close int ns = -1;
  int use = container_ns;
  if (m->idmap_to_owner && !own_maps) {
    /* ci: the job's root writes here as the directory's owner, and only it is mapped (other
     * owners show as nobody). Host root's files would make its setuid programs and file
     * capabilities real ones on the host: refused. */
    struct stat st;
    if (fstat(src, &st) < 0)
      return cm_error_set(err, errno, "mounts[%zu] %s: stat the source", i, m->destination);
    if ((st.st_uid == 0 || st.st_gid == 0) && !S_ISDIR(st.st_mode)) {
      /* A file of host root's (an engine's /etc/hosts, resolv.conf, hostname): bound read-only,
       * through the container's own mapping. Writable, the job's root could make it a setuid
       * program of host root's; read-only it can change neither its bytes nor its mode. */
      cm_debug("mounts[%zu] %s: a file of host root's: bound read-only under the ci profile", i, m->destination);
      return idmap_clone(src, container_ns, 0, flags | MS_RDONLY, m->clear_flags & ~MS_RDONLY, m->recursive_readonly,
                         NULL, err);
    }
    struct statfs sfs;
    struct statvfs svfs;
    if ((st.st_uid == 0 || st.st_gid == 0) && fstatfs(src, &sfs) == 0 && sfs.f_type == TMPFS_MAGIC &&
        fstatvfs(src, &svfs) == 0 && (svfs.f_flag & ST_NOSUID)) {
      /* A tmpfs the engine made nosuid (Docker's /dev/shm): it exists only under that mount,
       * where setuid bits and file capabilities mean nothing, and it goes with the container. */
      cm_debug("mounts[%zu] %s: a nosuid tmpfs of host root's: idmapped through the container's mapping", i,
               m->destination);
      return idmap_clone(src, container_ns, tree, flags, m->clear_flags, m->recursive_readonly, NULL, err);
    }
    if (st.st_uid == 0 || st.st_gid == 0)
      return cm_error_set(err, EPERM,
                          "mounts[%zu] %s: a writable bind of %s, owned by host root (uid %u, gid %u): the job's "
                          "root would write there as host root (a setuid program it leaves would be host root's); "
                          "chown the directory to an unprivileged user (e.g. the runner's), or bind it read-only "
                          "or :cow",
                          i, m->destination, m->source ? m->source : "?", (unsigned)st.st_uid, (unsigned)st.st_gid);
    const struct spec_id_mapping *ru = NULL, *rg = NULL;
    for (size_t k = 0; k < s->linux_.n_uid_mappings; k++)
      if (s->linux_.uid_mappings[k].container_id == 0)
        ru = &s->linux_.uid_mappings[k];
    for (size_t k = 0; k < s->linux_.n_gid_mappings; k++)
      if (s->linux_.gid_mappings[k].container_id == 0)
        rg = &s->linux_.gid_mappings[k];
    if (ru == NULL || rg == NULL)
      return cm_error_set(err, EINVAL, "mounts[%zu] %s: the container's root is not mapped", i, m->destination);
    /* The mount's idmapping: on-disk owner -> the container root's host id. */
    struct spec_id_mapping um = {(uint32_t)st.st_uid, ru->host_id, 1}, gm = {(uint32_t)st.st_gid, rg->host_id, 1};
    ns = userns_open_with_mappings(&um, 1, &gm, 1, err);
    if (ns < 0)
      return -1;
    return idmap_clone(src, ns, tree, flags, m->clear_flags, m->recursive_readonly, NULL, err);
  }
  if (own_maps && (!same_maps(m->uid_mappings, m->n_uid_mappings, s->linux_.uid_mappings, s->linux_.n_uid_mappings) ||
                   !same_maps(m->gid_mappings, m->n_gid_mappings, s->linux_.gid_mappings, s->linux_.n_gid_mappings))) {
    ns = userns_open_with_mappings(m->uid_mappings, m->n_uid_mappings, m->gid_mappings, m->n_gid_mappings, err);
    if (ns < 0)
      return -1;
    use = ns;
  }
  bool refused = false;
  cleanup_error struct cm_error *why = NULL;
  int fd = idmap_clone(src, use, tree, flags, m->clear_flags, m->recursive_readonly, &refused, &why);
  if (fd < 0 && refused && !asked) {
    /* A filesystem that cannot be idmapped (a device node's devtmpfs…): bound as it is, its
     * files shown as nobody's. */
    cm_debug("mounts[%zu] %s: %s; bound without idmapping", i, m->destination, why->msg);
    fd = idmap_clone(src, -1, tree, flags, m->clear_flags, m->recursive_readonly, NULL, err);
  } else if (fd < 0) {
    *err = why;
    why = NULL;
  }
  return fd;
}

static int rootfs_mount_fd(const struct userns_setup *u, const struct spec *s, const char *rootfs, int container_ns,
                           const struct mount_source_rules *rules, struct cm_error **err) {
  if (rules) {
    /* Hardened: the root judged on its fd, as the child would (linux/mount_source.h). */
    cleanup_close int fd = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
    struct mount_source_kind kind;
    if (fd < 0)
      return cm_error_set(err, errno, "open rootfs %s", rootfs);
    if (mount_source_check(rules, fd, "root.path", true, &kind, err) < 0)
      return cm_error_prefix(err, "rootfs \"%s\"", rootfs);
  }
  struct overlay_layers layers;
  int is_overlay = u->idmap_off ? 0 : overlay_layers_of(rootfs, &layers, err);
  if (is_overlay < 0)
    return -1;
  if (is_overlay == 1) {
    /* Docker's (or codemode-run --ephemeral's) overlay: rebuilt over its layers, idmapped (its
     * upper one read-only, as a lower), and a throwaway upper layer of the range's own: the mount
     * points init makes land there, and so do the writes of a root that is not read-only. */
    char size[32] = "256m";
    if (s->hardening.root_upper_size)
      snprintf(size, sizeof(size), "%" PRIu64, s->hardening.root_upper_size);
    int fd = idmap_overlay(&layers, container_ns, u->range.uid, u->range.gid, size, err);
    overlay_layers_free(&layers);
    if (fd < 0)
      return cm_error_prefix(err, "rootfs %s (an overlay mount)", rootfs);
    cm_debug("rootfs %s: an overlay, re-assembled over idmapped layers and a throwaway upper layer", rootfs);
    return fd;
  }
  /* Idmapped and writable, the container's root would write as host root (see bind_mount_fd). */
  if (!u->idmap_off && !s->root_readonly)
    return cm_error_set(err, EPERM,
                        "rootfs %s: a writable root under the container's own host range must be an overlay "
                        "(codemode-run --ephemeral) or read-only (root.readonly)",
                        rootfs);
  cleanup_close int src = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (src < 0)
    return cm_error_set(err, errno, "open rootfs %s", rootfs);
  /* Hardened: without the host mounts below it (one of them could be a procfs or a disk), unless
   * each is one codemode-run made (--host: spec.h's root_tree_trusted), then all idmapped at once. */
  bool tree = rules == NULL || s->root_tree_trusted;
  bool refused = false;
  cleanup_error struct cm_error *why = NULL;
  int fd = idmap_clone(src, u->idmap_off ? -1 : container_ns, tree ? IDMAP_TREE | IDMAP_TREE_MAPPED : 0, 0, 0,
                       false, tree ? &refused : NULL, tree ? &why : err);
  if (fd < 0 && refused && s->root_tree_trusted) {
    /* A mount below that cannot be idmapped (the host's / on a filesystem that refuses it): the
     * root alone idmapped, the binds below bound as they are (their files shown as nobody's, as
     * bind_clone does for such a bind). */
    cm_debug("rootfs %s: %s; the mounts below it bound without idmapping", rootfs, why->msg);
    fd = idmap_clone(src, u->idmap_off ? -1 : container_ns, IDMAP_TREE, 0, 0, false, NULL, err);
  } else if (fd < 0 && tree) {
    *err = why;
    why = NULL;
  }
  if (fd < 0)
    return cm_error_prefix(err,
                           "rootfs %s (its files would all belong to nobody in the container: put it on ext4, "
                           "xfs, btrfs or tmpfs, or set the annotation %s=none to run it so)",
                           rootfs, USERNS_IDMAP_ANNOTATION);
  return fd;
}

static int send_mounts(const struct userns_setup *u, pid_t child, const struct spec *s, const char *bundle,
                       const char *rootfs, int sock, const struct mount_source_rules *rules, struct cm_error **err);

int userns_setup_send_mounts(const struct userns_setup *u, pid_t child, const struct spec *s, const char *bundle,
                             const char *rootfs, int sock, struct cm_error **err) {
  if (!u->premounts)
    return 0;
  struct mount_source_rules *rules = s->hardening.check_mount_sources ? mount_source_rules_load() : NULL;
  int rc = send_mounts(u, child, s, bundle, rootfs, sock, rules, err);
  mount_source_rules_free(rules);
  return rc;
}

static int send_mounts(const struct userns_setup *u, pid_t child, const struct spec *s, const char *bundle,
                       const char *rootfs, int sock, const struct mount_source_rules *rules, struct cm_error **err) {
  cleanup_close int container_ns = -1;
  if (s->linux_.namespaces[SPEC_NS_USER].present) {
    container_ns = container_userns_fd(child, s, err);
    if (container_ns < 0)
      return -1;
  }
  if (u->idmap_all) {
    int fd = rootfs_mount_fd(u, s, rootfs, container_ns, rules, err);
    if (fd < 0)
      return -1;
    int rc = sync_send(sock, SYNC_MOUNT_FD, -1, NULL, fd, err);
    close(fd);
    if (rc < 0)
      return -1;
  }
  /* Relative bind sources are relative to the bundle. */
  cleanup_close int cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (chdir(bundle) < 0)
    return cm_error_set(err, errno, "chdir to bundle %s", bundle);
  int rc = 0;
  for (size_t i = 0; i < s->n_mounts && rc == 0; i++) {
    const struct spec_mount *m = &s->mounts[i];
    bool overlay = !is_bind(m) && m->type && strcmp(m->type, "overlay") == 0;
    if (overlay && u->idmap_all) {
      /* Its layers are host paths our unprivileged child could not open: opened, judged and
       * idmapped here; the child assembles the overlay in its user namespace, so that what its
       * root writes to the upper layer is stored as host root's (as without the namespace). */
      struct rootfs_premount_layers l;
      if (rootfs_overlay_layer_fds(m, m->trusted ? NULL : rules, container_ns, &l, err) < 0) {
        rc = cm_error_prefix(err, "mount \"%s\" on \"%s\" (mounts[%zu], type overlay)", m->source ? m->source : "",
                             m->destination ? m->destination : "", i);
        break;
      }
      for (size_t k = 0; k < l.n_attach; k++) {
        if (rc == 0)
          rc = sync_send(sock, SYNC_MOUNT_FD, (int64_t)i, "attach", l.attach[k], err);
        close(l.attach[k]);
      }
      for (size_t k = 0; k < l.n; k++) {
        if (rc == 0)
          rc = sync_send(sock, SYNC_MOUNT_FD, (int64_t)i, "layer", l.fds[k], err);
        close(l.fds[k]);
      }
      free(l.attach);
      free(l.fds);
      continue;
    }
    if (!is_bind(m) || !(u->idmap_all || m->idmap || m->n_uid_mappings))
      continue;
    int fd = bind_mount_fd(u, s, i, container_ns, m->trusted ? NULL : rules, err);
    if (fd < 0) {
      rc = cm_error_prefix(err, "mount \"%s\" on \"%s\" (mounts[%zu], type bind)", m->source ? m->source : "",
                           m->destination ? m->destination : "", i);
      break;
    }
    rc = sync_send(sock, SYNC_MOUNT_FD, (int64_t)i, NULL, fd, err);
    close(fd);
  }
  if (cwd >= 0 && fchdir(cwd) < 0 && rc == 0)
    rc = cm_error_set(err, errno, "chdir back");
  if (rc < 0)
    return -1;
  return sync_send(sock, SYNC_MOUNTS_DONE, 0, NULL, -1, err);
}

void userns_setup_release(struct userns_setup *u, const char *state_dir, int dirfd) {
  if (u->has_range && dirfd >= 0)
    idrange_release(state_dir, dirfd);
  u->has_range = false;
}
