/* Idmapped mounts: detached idmapped clones, and overlays re-assembled from idmapped layers
 * (an overlay mount itself cannot be idmapped). See idmap.h. */
#include "linux/idmap.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>


#include "linux/rootfs_internal.h"
#include "util/cleanup.h"
#include "util/log.h"
#include "util/sync.h"

/* The filesystem's name for messages ("overlay", "nfs", or its magic number). */
static void fs_name(int fd, char *buf, size_t size) {
  struct statfs st;
  if (fstatfs(fd, &st) < 0) {
    snprintf(buf, size, "?");
    return;
  }
  static const struct {
    long magic;
    const char *name;
  } names[] = {{0x794c7630, "overlay"}, {0x6969, "nfs"},     {0x01021997, "9p"},  {0x9fa0, "proc"},
               {0x62656572, "sysfs"},   {0x65735546, "fuse"}, {0x27e0eb, "cgroup"}, {0x63677270, "cgroup2"},
               {0xFF534D42, "cifs"},    {0x1cd1, "devpts"},  {0x58465342, "xfs"}, {0x9123683e, "btrfs"},
               {0xef53, "ext4"},        {0x01021994, "tmpfs"}};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
    if ((long)st.f_type == names[i].magic) {
      snprintf(buf, size, "%s", names[i].name);
      return;
    }
  snprintf(buf, size, "filesystem 0x%lx", (unsigned long)st.f_type);
}

int idmap_clone(int src_fd, int userns_fd, unsigned tree, unsigned long flags, unsigned long clear, bool rro,
                bool *refused, struct cm_error **err) {
  if (refused)
    *refused = false;
  bool recursive = tree & IDMAP_TREE, mapped = recursive && (tree & IDMAP_TREE_MAPPED);
  cleanup_close int mnt_fd = open_tree(
      src_fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0));
  if (mnt_fd < 0)
    return cm_error_set(err, errno, "clone mount tree");
  struct mount_attr idmap = {.attr_set = MOUNT_ATTR_IDMAP, .userns_fd = (uint64_t)userns_fd};
  if (userns_fd >= 0 &&
      mount_setattr(mnt_fd, "", AT_EMPTY_PATH | (mapped ? AT_RECURSIVE : 0), &idmap, sizeof(idmap)) < 0) {
    int e = errno;
    char name[48];
    fs_name(mnt_fd, name, sizeof(name));
    if (e == EINVAL && refused)
      *refused = true;
    if (e == EINVAL)
      return cm_error_set(err, e, "%s does not support idmapped mounts%s", name,
                          mapped ? " (here or in a mount below)" : "");
    return cm_error_set(err, e, "idmap a mount of %s", name);
  }
  struct mount_attr attr;
  mount_attr_from_flags(flags, clear, &attr);
  if ((attr.attr_set || attr.attr_clr) && mount_setattr(mnt_fd, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0)
    return cm_error_set(err, errno, "set mount flags");
  if (rro && mount_set_readonly(mnt_fd, true, err) < 0)
    return -1;
  return cm_steal_fd(&mnt_fd);
}

/* mountinfo escapes blanks, tabs, newlines and backslashes as \ooo; overlay's options also
 * escape commas and '='. */
static void unescape(char *s) {
  char *out = s;
  for (char *in = s; *in;) {
    if (in[0] == '\\' && in[1] >= '0' && in[1] <= '3' && in[2] >= '0' && in[2] <= '7' && in[3] >= '0' &&
        in[3] <= '7') {
      *out++ = (char)(((in[1] - '0') << 6) | ((in[2] - '0') << 3) | (in[3] - '0'));
      in += 4;
    } else {
      *out++ = *in++;
    }
  }
  *out = '\0';
}

void overlay_layers_free(struct overlay_layers *l) {
  free(l->upper);
  for (size_t i = 0; i < l->n_lowers; i++)
    free(l->lowers[i]);
  free(l->lowers);
  free(l->extra_options);
  *l = (struct overlay_layers){0};
}

static void add_lower(struct overlay_layers *l, const char *p) {
  l->lowers = realloc(l->lowers, (l->n_lowers + 2) * sizeof(char *));
  if (l->lowers == NULL || (l->lowers[l->n_lowers] = strdup(p)) == NULL)
    abort();
  l->lowers[++l->n_lowers] = NULL;
}

/* lowerdir=a:b:c ("\:" is a colon inside a name; "::" separates data-only layers, read as
 * ordinary lowers here) or lowerdir+=a, one per layer. */
static int parse_lowers(struct overlay_layers *l, char *value, struct cm_error **err) {
  char *start = value;
  for (char *p = value;; p++) {
    if (*p == '\\' && p[1] == ':') {
      memmove(p, p + 1, strlen(p));
      continue;
    }
    if (*p != ':' && *p != '\0')
      continue;
    bool end = *p == '\0';
    *p = '\0';
    if (*start) {
      if (start[0] != '/')
        return cm_error_set(err, EINVAL, "overlay lowerdir \"%s\" is relative", start);
      add_lower(l, start);
    }
    if (end)
      return 0;
    start = p + 1;
  }
}

int overlay_layers_of(const char *path, struct overlay_layers *out, struct cm_error **err) {
  *out = (struct overlay_layers){0};
  /* Not on an overlay at all (the common case): no need to read the mount table (0.1 ms). */
  struct statfs sfs;
  if (statfs(path, &sfs) == 0 && sfs.f_type != OVERLAYFS_SUPER_MAGIC)
    return 0;
  cleanup_fclose FILE *f = fopen("/proc/self/mountinfo", "re");
  if (f == NULL)
    return cm_error_set(err, errno, "open /proc/self/mountinfo");
  cleanup_free char *line = NULL, *found = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, f) > 0) {
    char mountpoint[4096];
    if (sscanf(line, "%*s %*s %*s %*s %4095s", mountpoint) != 1)
      continue;
    unescape(mountpoint);
    if (strcmp(mountpoint, path) != 0)
      continue;
    /* The last line for a mount point is the mount on top, the one the path resolves to. */
    free(found);
    found = strdup(line);
  }
  if (found == NULL)
    return 0;
  char *sep = strstr(found, " - ");
  if (sep == NULL)
    return 0;
  char fstype[64], source[4096];
  char *super = NULL;
  if (sscanf(sep + 3, "%63s %4095s", fstype, source) != 2 || strcmp(fstype, "overlay") != 0)
    return 0;
  /* " - fstype source superoptions\n" */
  super = strchr(sep + 3, ' ');
  super = super ? strchr(super + 1, ' ') : NULL;
  if (super == NULL)
    return cm_error_set(err, EINVAL, "mountinfo of %s: no overlay options", path);
  super++;
  super[strcspn(super, "\n")] = '\0';
  FILE *extra = NULL;
  size_t extra_len = 0;
  extra = open_memstream(&out->extra_options, &extra_len);
  char *save = NULL;
  int rc = 1;
  for (char *opt = strtok_r(super, ",", &save); opt; opt = strtok_r(NULL, ",", &save)) {
    unescape(opt);
    if (strncmp(opt, "lowerdir=", 9) == 0 || strncmp(opt, "lowerdir+=", 10) == 0) {
      if (parse_lowers(out, strchr(opt, '=') + 1, err) < 0) {
        rc = -1;
        break;
      }
    } else if (strncmp(opt, "upperdir=", 9) == 0) {
      if (opt[9] != '/') {
        rc = cm_error_set(err, EINVAL, "overlay upperdir \"%s\" is relative", opt + 9);
        break;
      }
      free(out->upper);
      out->upper = strdup(opt + 9);
    } else if (strncmp(opt, "metacopy=", 9) == 0 || strncmp(opt, "redirect_dir=", 13) == 0 ||
               strncmp(opt, "xino=", 5) == 0 || strcmp(opt, "userxattr") == 0) {
      fprintf(extra, "%s%s", ftell(extra) ? "," : "", opt);
    }
  }
  fclose(extra);
  if (out->extra_options && out->extra_options[0] == '\0') {
    free(out->extra_options);
    out->extra_options = NULL;
  }
  if (rc == 1 && out->n_lowers == 0)
    rc = cm_error_set(err, EINVAL, "overlay at %s: no lowerdir in its mount options", path);
  if (rc < 0) {
    overlay_layers_free(out);
    return cm_error_prefix(err, "rootfs %s", path);
  }
  return 1;
}

static int fsconfig_string(int fs_fd, const char *key, const char *value, struct cm_error **err) {
  if (fsconfig(fs_fd, FSCONFIG_SET_STRING, key, value, 0) < 0)
    return cm_error_set(err, errno, "overlay option %s=%s", key, value);
  return 0;
}

/* fsopen → fsconfig → fsmount of the overlay whose layers (and upper/work, when `tmp` is a
 * throwaway upper's mount) are named by the /proc/self/fd paths in `lowerdir`. */
static int overlay_assemble(const char *lowerdir, int tmp, const char *extra_options, bool writable,
                            struct cm_error **err) {
  cleanup_close int fs = fsopen("overlay", FSOPEN_CLOEXEC);
  if (fs < 0)
    return cm_error_set(err, errno, "fsopen overlay");
  if (fsconfig_string(fs, "lowerdir", lowerdir, err) < 0)
    return -1;
  if (tmp >= 0) {
    char upper[64], work[64];
    snprintf(upper, sizeof(upper), "/proc/self/fd/%d/upper", tmp);
    snprintf(work, sizeof(work), "/proc/self/fd/%d/work", tmp);
    if (fsconfig_string(fs, "upperdir", upper, err) < 0 || fsconfig_string(fs, "workdir", work, err) < 0)
      return -1;
  }
  if (extra_options && mount_fs_config_options(fs, "overlay", extra_options, err) < 0)
    return -1;
  if (fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
    int e = errno;
    char msg[256] = "";
    ssize_t r = read(fs, msg, sizeof(msg) - 1);
    msg[r > 2 ? r : 0] = '\0';
    msg[strcspn(msg, "\n")] = '\0';
    return cm_error_set(err, e, "assemble an overlay over idmapped layers%s%s%s", r > 2 ? " (" : "",
                        r > 2 ? msg + 2 : "", r > 2 ? ")" : "");
  }
  int rc = fsmount(fs, FSMOUNT_CLOEXEC, writable ? 0 : MOUNT_ATTR_RDONLY);
  if (rc < 0)
    return cm_error_set(err, errno, "fsmount overlay");
  return rc;
}

/* Before Linux 6.15 overlay takes a layer only from a mount in the caller's own mount namespace
 * (clone_private_mount's check), so detached idmapped clones are refused with EINVAL (Debian's
 * 6.12, Ubuntu's 6.8). There a child assembles the overlay in a private mount namespace of its
 * own: the layer mounts (the same fds, so the same /proc/self/fd names) attached on its "/", out
 * of sight, after making every mount there private so that nothing propagates to the namespace it
 * came from. The overlay keeps private clones of its layers; the detached overlay it makes is
 * sent back, and the child's namespace, with the attached layers, goes when it exits. */
int idmap_overlay_assemble_attached(const int *layer_fds, size_t n, const char *lowerdir, int tmp,
                                    const char *extra_options, bool writable, struct cm_error **err) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
    return cm_error_set(err, errno, "overlay: socketpair");
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(sv[0]);
    close(sv[1]);
    return cm_error_set(err, e, "overlay: fork the assembling child");
  }
  if (pid == 0) {
    close(sv[0]);
    struct cm_error *cerr = NULL;
    int fd = -1;
    if (unshare(CLONE_NEWNS) < 0)
      cm_error_set(&cerr, errno, "overlay: unshare a private mount namespace");
    else if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
      cm_error_set(&cerr, errno, "overlay: make the private mount namespace's mounts private");
    else {
      for (size_t i = 0; i < n + (tmp >= 0 ? 1 : 0) && cerr == NULL; i++) {
        int m = i < n ? layer_fds[i] : tmp;
        if (move_mount(m, "", AT_FDCWD, "/", MOVE_MOUNT_F_EMPTY_PATH) < 0)
          cm_error_set(&cerr, errno, "overlay: attach layer mount %zu in a private mount namespace", i);
      }
      if (cerr == NULL)
        fd = overlay_assemble(lowerdir, tmp, extra_options, writable, &cerr);
    }
    if (fd >= 0)
      sync_send(sv[1], SYNC_MOUNT_FD, -1, NULL, fd, NULL);
    else
      sync_send_error(sv[1], cerr);
    _exit(fd >= 0 ? 0 : 1);
  }
  close(sv[1]);
  struct sync_msg msg;
  int fd = -1;
  int r = sync_recv(sv[0], &msg, &fd, err);
  close(sv[0]);
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  if (r < 0)
    return -1;
  if (r == 1)
    return cm_error_set(err, EPROTO, "overlay: the assembling child died without a word (status %d)", status);
  if (msg.type == SYNC_MOUNT_FD && fd >= 0)
    return fd;
  if (fd >= 0)
    close(fd);
  return cm_error_set(err, msg.type == SYNC_ERROR ? (int)msg.value : EPROTO, "%s", msg.text);
}

int idmap_overlay(const struct overlay_layers *l, int userns_fd, uid_t owner_uid, gid_t owner_gid,
                  const char *upper_size, struct cm_error **err) {
  size_t n = l->n_lowers + (l->upper ? 1 : 0);
  if (n == 1 && owner_uid == (uid_t)-1) {
    /* One layer and nothing to write: that layer is the whole tree (and overlay wants two). */
    cleanup_close int src = open(l->upper ? l->upper : l->lowers[0], O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (src < 0)
      return cm_error_set(err, errno, "overlay layer %s", l->upper ? l->upper : l->lowers[0]);
    return idmap_clone(src, userns_fd, 0, MS_RDONLY, 0, false, NULL, err);
  }
  cleanup_free int *fds = calloc(n, sizeof(int));
  if (fds == NULL)
    abort();
  for (size_t i = 0; i < n; i++)
    fds[i] = -1;
  cleanup_free char *lowerdir = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&lowerdir, &len);
  cleanup_close int tmp = -1;
  int rc = -1;
  /* The layers, top first: the original upper (if any) becomes the top lower. */
  for (size_t i = 0; i < n; i++) {
    const char *layer = l->upper ? (i == 0 ? l->upper : l->lowers[i - 1]) : l->lowers[i];
    cleanup_close int src = open(layer, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (src < 0) {
      cm_error_set(err, errno, "overlay layer %s", layer);
      fclose(f);
      goto out;
    }
    fds[i] = idmap_clone(src, userns_fd, 0, 0, 0, false, NULL, err);
    if (fds[i] < 0) {
      cm_error_prefix(err, "overlay layer %s", layer);
      fclose(f);
      goto out;
    }
    /* The magic link of the fd resolves to the detached mount itself: no path on the host. */
    fprintf(f, "%s/proc/self/fd/%d", i ? ":" : "", fds[i]);
  }
  fclose(f);
  if (owner_uid != (uid_t)-1) {
    /* A throwaway upper layer on its own tmpfs, not idmapped: overlay, mounted by root, creates
     * its work dir with root's ids, which an idmapped upper could not store. Its directories
     * belong to the container's root, so what the container creates is its own. */
    cleanup_free char *data = NULL;
    if (asprintf(&data, "size=%s,mode=0755", upper_size ? upper_size : "256m") < 0)
      abort();
    tmp = mount_new_fs("tmpfs", "tmpfs", MS_NOSUID | MS_NODEV, data, err);
    if (tmp < 0)
      goto out;
    if (mkdirat(tmp, "upper", 0755) < 0 || mkdirat(tmp, "work", 0700) < 0 ||
        fchownat(tmp, "upper", owner_uid, owner_gid, AT_SYMLINK_NOFOLLOW) < 0 ||
        fchownat(tmp, "work", owner_uid, owner_gid, AT_SYMLINK_NOFOLLOW) < 0) {
      cm_error_set(err, errno, "overlay: make the throwaway upper layer");
      goto out;
    }
  }
  bool writable = owner_uid != (uid_t)-1;
  cleanup_error struct cm_error *first = NULL;
  rc = overlay_assemble(lowerdir, tmp, l->extra_options, writable, &first);
  if (rc < 0 && first->errnum == EINVAL) {
    cm_debug("%s: assembling it again with its layers attached in a private mount namespace (Linux before "
             "6.15)",
             first->msg);
    rc = idmap_overlay_assemble_attached(fds, n, lowerdir, tmp, l->extra_options, writable, err);
  } else if (rc < 0) {
    *err = first;
    first = NULL;
  }
out:
  for (size_t i = 0; i < n; i++)
    if (fds[i] >= 0)
      close(fds[i]);
  return rc;
}
