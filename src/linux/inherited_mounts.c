#include "linux/inherited_mounts.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/log.h"

/* The initial mount namespace's inode: fixed since Linux 6.x (0xEFFFFFF8, like the other
 * initial namespaces'), before that the first one allocated at boot (0xF0000000). */
#define MNT_NS_INIT_INO_FIXED 0xEFFFFFF8u
#define MNT_NS_INIT_INO_FIRST 0xF0000000u

bool mntns_is_pid1s(void) {
  struct stat self, init;
  if (stat("/proc/self/ns/mnt", &self) < 0)
    return true;
  if (stat("/proc/1/ns/mnt", &init) == 0)
    return self.st_dev == init.st_dev && self.st_ino == init.st_ino;
  /* pid 1's namespace files may be closed to us (a sandbox, a hardened /proc): the initial
   * namespace is then known by its inode number. */
  return self.st_ino == MNT_NS_INIT_INO_FIXED || self.st_ino == MNT_NS_INIT_INO_FIRST;
}

static uint64_t own_mntns(void) {
  struct stat st;
  return stat("/proc/self/ns/mnt", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

/* mountinfo escapes ' ', '\t', '\n' and '\\' in mount points as octal. */
static void mountinfo_escape(const char *in, char *out, size_t size) {
  size_t o = 0;
  for (const char *p = in; *p && o + 5 < size; p++) {
    if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\\')
      o += (size_t)snprintf(out + o, size - o, "\\%03o", (unsigned char)*p);
    else
      out[o++] = *p;
  }
  out[o] = '\0';
}

/* The id of the topmost mount whose mount point is path (the last such line), or -1. */
static long top_mount_id(const char *path) {
  char want[4096 + 64];
  mountinfo_escape(path, want, sizeof(want));
  FILE *f = fopen("/proc/self/mountinfo", "re");
  if (f == NULL)
    return -1;
  long id = -1;
  char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, f) > 0) {
    long mid;
    int off = 0;
    /* "ID PARENT MAJ:MIN ROOT MOUNTPOINT …" */
    if (sscanf(line, "%ld %*d %*s %*s %n", &mid, &off) != 1 || off == 0)
      continue;
    size_t n = strlen(want);
    if (strncmp(line + off, want, n) == 0 && line[off + n] == ' ')
      id = mid;
  }
  free(line);
  fclose(f);
  return id;
}

int inherited_mounts_record(int dirfd, const char *rootfs, struct cm_error **err) {
  long id = top_mount_id(rootfs);
  if (id < 0)
    return cm_error_set(err, 0, "inherited mount namespace: no mount at the rootfs \"%s\" after init bound it", rootfs);
  char buf[64];
  int len = snprintf(buf, sizeof(buf), "%" PRIu64 " %ld\n", own_mntns(), id);
  cleanup_close int fd = openat(dirfd, "inherited-mounts", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0 || write(fd, buf, (size_t)len) != len)
    return cm_error_set(err, errno, "write inherited-mounts");
  return 0;
}

void inherited_mounts_remove(int dirfd, const char *rootfs) {
  cleanup_close int fd = openat(dirfd, "inherited-mounts", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0 || rootfs == NULL)
    return;
  char buf[64];
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  uint64_t ns;
  long id;
  if (n <= 0)
    return;
  buf[n] = '\0';
  if (sscanf(buf, "%" SCNu64 " %ld", &ns, &id) != 2)
    return;
  /* Another namespace (delete run from elsewhere), or a mount stacked on ours since: not ours to
   * detach; the caller's namespace keeps it, as runc leaves its mounts. */
  if (ns != own_mntns() || top_mount_id(rootfs) != id) {
    cm_debug("delete: the rootfs mounts made in the inherited mount namespace are not reachable from here; left");
    return;
  }
  if (umount2(rootfs, MNT_DETACH) < 0)
    cm_warn("delete: detach the rootfs mount \"%s\" made in the inherited mount namespace: %s", rootfs,
            strerror(errno));
}
