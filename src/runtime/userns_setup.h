/* The runtime's side of a container's user namespace and idmapped mounts, for create.
 *
 * Decided before anything is made (userns_setup_decide):
 * - a caller that is not root gets a user namespace when the config has none, as with crun: its
 *   uid and gid become the container's root, plus its /etc/subuid and /etc/subgid ranges when
 *   newuidmap/newgidmap are installed (linux/userns.h);
 * - under the mcp profiles as root (linux.userns_auto): a host range allocated for this container
 *   (runtime/idrange.h), the namespace created by a child that has become the range's first uid,
 *   and the rootfs and every bind idmapped through it (nothing is chowned; Docker's overlay
 *   rootfs is re-assembled from idmapped layers, linux/idmap.h; the layers of a config's own
 *   overlay are opened here, idmapped, for the child to assemble in its user namespace);
 * - mounts[].uidMappings/gidMappings and the idmap/ridmap options, for every root caller.
 * The detached mounts are made here (only host root may idmap a filesystem) and handed to
 * stage1 over the sync socket, after the id maps are written (SYNC_MOUNT_FD, then
 * SYNC_MOUNTS_DONE); init attaches them in place of the config's sources.
 * Annotation run.codemode.userns.idmap=none: the user's choice for a rootfs or bind on a
 * filesystem that cannot be idmapped: everything is still bound, without idmapping (the files
 * keep their host owners, which the container sees as nobody). */
#ifndef CM_RUNTIME_USERNS_SETUP_H
#define CM_RUNTIME_USERNS_SETUP_H

#include <stdbool.h>
#include <sys/types.h>

#include "linux/userns.h"
#include "runtime/idrange.h"
#include "spec/spec.h"
#include "util/error.h"

#define USERNS_IDMAP_ANNOTATION "run.codemode.userns.idmap"

struct userns_setup {
  struct userns_plan plan;
  bool idmap_all;  /* mcp as root: the rootfs and every bind through the container's namespace */
  bool idmap_off;  /* USERNS_IDMAP_ANNOTATION=none */
  bool premounts;  /* stage1 receives detached mounts (SYNC_MOUNT_FD … SYNC_MOUNTS_DONE) */
  bool has_range;
  struct idrange range;
};

/* Before the state directory: fill in what the config leaves to us (a non-root caller's user
 * namespace and mappings), check what cannot work, decide the rest. */
int userns_setup_decide(struct spec *s, struct userns_setup *u, struct cm_error **err);
/* Once the state directory exists: the mcp range (linux.userns_auto as root), written into s's
 * mappings. */
int userns_setup_allocate(struct spec *s, struct userns_setup *u, const char *state_dir, int dirfd,
                          struct cm_error **err);
/* The child unshared its user namespace: write its maps. */
int userns_setup_write_maps(const struct userns_setup *u, pid_t child, const struct spec *s, struct cm_error **err);
/* Make the detached mounts and send them to the child on sock, then SYNC_MOUNTS_DONE. `child`
 * holds the container's user namespace (or -1 when there is none of our making). */
int userns_setup_send_mounts(const struct userns_setup *u, pid_t child, const struct spec *s, const char *bundle,
                             const char *rootfs, int sock, struct cm_error **err);
/* A caller that is not root: its uid and gid as root, and its first /etc/subuid and /etc/subgid
 * ranges (up to 65536 ids) as 1… when newuidmap/newgidmap are installed, into l's mappings. */
int userns_setup_rootless_maps(struct spec_linux *l, struct cm_error **err);
/* How such maps are written: by the helpers when more than our own ids are mapped, else by us
 * with setgroups denied; the child dumpable meanwhile. */
void userns_setup_rootless_plan(const struct spec_linux *l, struct userns_plan *p);
/* The name of id in /etc/passwd or /etc/group (no NSS: the binary is static; malloc'd), or NULL. */
char *userns_setup_db_name(const char *db, unsigned long id);
/* A failed create: give back the range. */
void userns_setup_release(struct userns_setup *u, const char *state_dir, int dirfd);

#endif
