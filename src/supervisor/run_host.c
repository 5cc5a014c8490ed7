/* codemode-run --host -- CMD: wrap a command from the host (an `npx -y @scope/server` or `uvx`
 * line of an mcpServers config) without an image. The container's root is an empty tmpfs in
 * codemode-run's own mount namespace holding, read-only and nosuid/nodev, the host's system
 * directories (/usr and the /bin, /sbin, /lib* beside it, as the host has them: symlinks into
 * /usr where it is merged) and an allow-list of /etc: what programs need to run and reach the
 * network (passwd, group, hosts, resolv.conf, nsswitch.conf, the CA store, ld.so's cache,
 * alternatives, localtime…), never shadow files, ssh host keys, sudoers or anything not listed;
 * its directories bound, its small files copied into the read-only root (copy_small_file).
 * HOME (/root) and /tmp are empty tmpfs; none of the caller's files is there unless --mount
 * gives it. The binds are ours, not the caller's config's: they are made after the profile, in
 * codemode-run's scratch mount namespace under the root itself, which the runtime then clones
 * (idmapped) as one tree (spec.h's root_tree_trusted). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "spec/json_util.h"
#include "supervisor/supervisor.h"
#include "util/cleanup.h"
#include "util/file_copy.h"
#include "util/host_root.h"
#include "util/safepath.h"

static const char *const system_dirs[] = {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"};

/* /etc entries a program may need; everything else of /etc stays out (an allow-list: a new file
 * with secrets in it is never exposed by accident). */
/* (Not npmrc, pip.conf, gitconfig: they can hold registry tokens and credential helpers. Not
 * all of ssl or pki: their private/ directories hold the host's TLS keys (Debian's
 * /etc/ssl/private, RHEL's /etc/pki/tls/private), which idmapping would show as the container
 * root's; only the trust store and OpenSSL's configuration beside them.) */
static const char *const etc_allowed[] = {
    "passwd",
    "group",
    "hosts",
    "resolv.conf",
    "nsswitch.conf",
    "host.conf",
    "gai.conf",
    "networks",
    "protocols",
    "services",
    "ssl/certs",
    "ssl/openssl.cnf",
    "ssl/cert.pem",
    "ssl/ca-bundle.pem", /* openSUSE's CA bundle */
    "ca-certificates",
    "ca-certificates.conf",
    "pki/ca-trust",
    "pki/tls/certs",
    "pki/tls/openssl.cnf",
    "pki/tls/cert.pem",
    "crypto-policies",
    "localtime",
    "timezone",
    "alternatives",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "os-release",
    "debian_version",
    "lsb-release",
    "mime.types",
    "magic",
    "magic.mime",
    "inputrc",
    "xdg",
    "fonts",
    "locale.alias",
    "locale.conf",
    "default/locale",
    "java-17-openjdk",
    "python3",
    "python3.11",
    "perl",
    "profile",
};

/* Inserted at *at (then advanced): before the --mount binds of the command line, which must land
 * on top of ours (a cache bound at /root/.npm over the /root tmpfs, not under it). */
static void add_mount(struct spec *s, size_t *at, const char *type, const char *src, const char *dst,
                      const char *const *opts) {
  size_t insert_at = (*at)++;
  struct spec_mount *grown = realloc(s->mounts, (s->n_mounts + 1) * sizeof(*grown));
  if (grown == NULL)
    abort();
  s->mounts = grown;
  memmove(&s->mounts[insert_at + 1], &s->mounts[insert_at], (s->n_mounts - insert_at) * sizeof(*grown));
  s->n_mounts++;
  struct spec_mount *m = &s->mounts[insert_at];
  *m = (struct spec_mount){.destination = xstrdup(dst), .type = xstrdup(type), .source = xstrdup(src)};
  for (; *opts; opts++)
    spec_strv_push(&m->options, *opts);
  spec_mount_decode_options(m);
  /* Ours, chosen here (the /root and /tmp tmpfs; the host's directories are bound under the
   * root instead: run_host_root). */
  m->trusted = true;
}

int run_host_make_root(struct cleanup_plan *plan, char *root, size_t size, struct cm_error **err) {
  /* A directory of the scratch tmpfs (scratch.c): gone with us, even on SIGKILL. */
  const char *scratch = scratch_dir(plan, err);
  if (scratch == NULL)
    return cm_error_prefix(err, "--host");
  snprintf(root, size, "%s/hostroot", scratch);
  if (mkdir(root, 0755) < 0)
    return cm_error_set(err, errno, "--host: mkdir %s", root);
  return 0;
}

#ifndef __NR_open_tree_attr
#define __NR_open_tree_attr 467 /* Linux 6.15, the same number on every architecture */
#endif

/* A detached, read-only, nosuid, nodev clone of the mount at `path` (followed: resolv.conf is
 * often a symlink into /run, what it points at is bound). Not recursive: what is mounted below
 * it on the host stays out (a procfs, a disk). One open_tree_attr where the kernel has it
 * (clone and flags in one call), else open_tree and mount_setattr. The caller checks what the
 * clone is on this fd, the very one attached (no second lookup). */
static int clone_read_only(const char *path, struct cm_error **err) {
  struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
  static bool no_attr_call;
  if (!no_attr_call) {
    int fd = (int)syscall(__NR_open_tree_attr, AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC, &attr,
                          sizeof(attr));
    if (fd >= 0 || errno != ENOSYS)
      return fd < 0 ? cm_error_set(err, errno, "--host: clone the mount of %s", path) : fd;
    no_attr_call = true;
  }
  cleanup_close int mnt = open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
  if (mnt < 0)
    return cm_error_set(err, errno, "--host: clone the mount of %s", path);
  if (mount_setattr(mnt, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0)
    return cm_error_set(err, errno, "--host: make the bind of %s read-only, nosuid, nodev", path);
  return cm_steal_fd(&mnt);
}

/* The directories above name (relative: pki/tls/certs) under dir_fd, made where missing. */
static int make_parent(int dir_fd, const char *name, struct cm_error **err) {
  const char *slash = strrchr(name, '/');
  if (slash == NULL)
    return 0;
  char up[PATH_MAX];
  snprintf(up, sizeof(up), "%.*s", (int)(slash - name), name);
  cleanup_close int fd = safepath_mkdir_p(dir_fd, up, 0755, err);
  return fd < 0 ? cm_error_prefix(err, "--host") : 0;
}

/* The clone `mnt` of `path` attached at `name` (relative, may hold '/') under dir_fd, on a
 * mount point made here: a directory or an empty file, never there before (so never a symlink,
 * and move_mount does not follow one in the last component). Made in our scratch mount
 * namespace, so the runtime takes the whole root as one tree: one idmapped clone, no message
 * to init, mount or Landlock rule per bind (issue 27: they made --host 1.5 × a bundle's start). */
static int attach_at(int mnt, const char *path, int dir_fd, const char *name, bool dir,
                     struct cm_error **err) {
  if (make_parent(dir_fd, name, err) < 0)
    return -1;
  if ((dir ? mkdirat(dir_fd, name, 0755) : mknodat(dir_fd, name, S_IFREG | 0644, 0)) < 0)
    return cm_error_set(err, errno, "--host: mount point %s", name);
  if (move_mount(mnt, "", dir_fd, name, MOVE_MOUNT_F_EMPTY_PATH) < 0)
    return cm_error_set(err, errno, "--host: bind %s", path);
  return 0;
}

/* An /etc entry that is a symlink into /usr on the host (localtime -> /usr/share/zoneinfo/Etc/UTC,
 * os-release -> ../usr/lib/os-release) is the same symlink in the container, where it resolves
 * in the host's /usr bound read-only: the program sees what it sees on the host. A bind of the
 * resolved file would lose the name, and ICU (node, every JavaScript runtime) then finds its
 * time zone by reading and comparing every file of /usr/share/zoneinfo: 1367 opens, ~50 ms of
 * an npx start (issue 27). Only a target that is under /usr once normalized (no "..", which
 * could climb out of it): anything else is bound as before. A symlink cannot lead outside the
 * container's root wherever it points; the check keeps it from dangling. */
static bool etc_link_into_usr(const char *name, char *target, size_t size) {
  /* Entries in a subdirectory (default/locale, ssl/certs) are bound or copied. */
  if (strchr(name, '/') != NULL)
    return false;
  char host[PATH_MAX];
  snprintf(host, sizeof(host), "/etc/%s", name);
  ssize_t n = readlink(host, target, size - 1);
  if (n <= 0 || (size_t)n >= size - 1)
    return false;
  target[n] = '\0';
  /* Relative to /etc: one "../" out of it. */
  const char *rest = target;
  if (target[0] != '/') {
    if (strncmp(target, "../", 3) != 0)
      return false;
    rest = target + 2; /* "/usr/..." */
  }
  size_t len = strlen(rest);
  bool dots = strstr(rest, "/../") != NULL || strstr(rest, "/./") != NULL ||
              (len >= 3 && strcmp(rest + len - 3, "/..") == 0) || (len >= 2 && strcmp(rest + len - 2, "/.") == 0);
  if (strncmp(rest, "/usr/", 5) != 0 || dots)
    return false;
  struct stat st;
  return stat(host, &st) == 0 && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode));
}

/* What copy_small_file did with an /etc entry (or -1: an error). */
enum etc_copy { ETC_COPIED, ETC_BIND, ETC_ABSENT };

/* Larger files are bound: the copy is read whole at each start. ld.so.cache and mime.types, the
 * largest of the list on Debian, are 47 and 74 KiB; binding them instead (a 16 KiB limit) was
 * no faster, and neither was read/write through a buffer instead of sendfile (A/B, 400 runs). */
#define ETC_COPY_MAX (256 * 1024)

/* An /etc file copied into the root's tmpfs instead of bound over an empty file there. A bind
 * costs ~30 us of CPU over a run: the clone, its mount point, the runtime's idmapped clone of
 * the tree and the container's copy of the namespace holding it, the teardown of each (leaving
 * the 22 small files of Debian's list out saved 0.7 ms of a --host start); a copy, about half
 * (copies instead of binds: -0.3 to -0.4 ms, issue 27's note). Only under a read-only root (the
 * caller checks), so that the copy is as read-only to the container as a bind was. What the
 * container sees is the file as it was at the start: a bind showed a later write in place too,
 * but not a replaced file (it holds the old inode), and replacing is how passwd, group and
 * resolv.conf are updated. The file is judged on the fd read from (opened following a symlink,
 * as the bind followed it: resolv.conf into /run): a regular file, else a directory (bound),
 * else skipped (a fifo or a device, as the bind path skips them). Unreadable to us (a user's
 * run): bound, as before, and as unreadable in the container. */
static int copy_small_file(const char *host, int dir_fd, const char *name, mode_t umask_now,
                           struct cm_error **err) {
  cleanup_close int in = open(host, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  if (in < 0)
    return errno == ENOENT || errno == ENOTDIR ? ETC_ABSENT : ETC_BIND;
  struct stat st;
  if (fstat(in, &st) < 0)
    return cm_error_set(err, errno, "--host: stat %s", host);
  if (S_ISDIR(st.st_mode) || (S_ISREG(st.st_mode) && st.st_size > ETC_COPY_MAX))
    return ETC_BIND;
  if (!S_ISREG(st.st_mode))
    return ETC_ABSENT;
  if (make_parent(dir_fd, name, err) < 0)
    return -1;
  /* Its mode (not a setuid, setgid or sticky bit), set again only where the umask narrowed it;
   * its owner where we may set it and it is not ours already (as the host's root we create as
   * 0:0; a user's run owns its copies). Each syscall here is paid 22 times a start. */
  mode_t mode = st.st_mode & 0777;
  cleanup_close int out = openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (out < 0 || file_copy_bytes(out, in, st.st_size) < 0 ||
      ((st.st_uid != 0 || st.st_gid != 0) && cm_host_root() && fchown(out, st.st_uid, st.st_gid) < 0) ||
      ((mode & umask_now) && fchmod(out, mode) < 0))
    return cm_error_set(err, errno, "--host: copy %s into the root", host);
  return ETC_COPIED;
}

/* Binds as mounts of the config (the runtime makes each), for a root that becomes an overlay:
 * an overlay shows its lower directory's own files, never what is mounted on them. */
static const char *const ro_bind[] = {"bind", "ro", "nosuid", "nodev", NULL};

int run_host_root(struct spec *s, size_t first_user_mount, bool overlay_root, struct cleanup_plan *plan,
                  struct cm_error **err) {
  size_t at = first_user_mount;
  char root[PATH_MAX];
  snprintf(root, sizeof(root), "%s/hostroot", plan->ephemeral_dir);
  cleanup_close int rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (rfd < 0)
    return cm_error_set(err, errno, "--host: %s", root);
  bool usr_bound = false; /* /usr is ours in the container: /etc's links into it resolve */
  for (size_t i = 0; i < sizeof(system_dirs) / sizeof(system_dirs[0]); i++) {
    const char *d = system_dirs[i];
    struct stat st;
    if (lstat(d, &st) < 0)
      continue;
    if (S_ISLNK(st.st_mode)) {
      /* Merged /usr: the same symlink, which then resolves inside the container. */
      char target[PATH_MAX];
      ssize_t n = readlink(d, target, sizeof(target) - 1);
      if (n <= 0)
        continue;
      target[n] = '\0';
      if (symlinkat(target, rfd, d + 1) < 0)
        return cm_error_set(err, errno, "--host: symlink %s", d);
      continue;
    }
    if (!S_ISDIR(st.st_mode))
      continue;
    usr_bound |= strcmp(d, "/usr") == 0;
    if (overlay_root) {
      add_mount(s, &at, "bind", d, d, ro_bind);
      continue;
    }
    cleanup_close int mnt = clone_read_only(d, err);
    if (mnt < 0)
      return -1;
    /* What was cloned is what is judged: a directory (a symlink swapped in since the lstat
     * would have been followed). */
    if (fstat(mnt, &st) < 0)
      return cm_error_set(err, errno, "--host: stat the clone of %s", d);
    if (!S_ISDIR(st.st_mode))
      return cm_error_set(err, ENOTDIR, "--host: %s changed while it was bound: not a directory", d);
    if (attach_at(mnt, d, rfd, d + 1, true, err) < 0)
      return -1;
    spec_strv_push(&s->root_tree_mounts, d);
  }
  if (mkdirat(rfd, "etc", 0755) < 0 || mkdirat(rfd, "root", 0700) < 0)
    return cm_error_set(err, errno, "--host: mkdir in %s", root);
  cleanup_close int etc = openat(rfd, "etc", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (etc < 0)
    return cm_error_set(err, errno, "--host: open %s/etc", root);
  mode_t umask_now = umask(0);
  umask(umask_now);
  for (size_t i = 0; i < sizeof(etc_allowed) / sizeof(etc_allowed[0]); i++) {
    char host[PATH_MAX], target[PATH_MAX];
    snprintf(host, sizeof(host), "/etc/%s", etc_allowed[i]);
    if (usr_bound && etc_link_into_usr(etc_allowed[i], target, sizeof(target))) {
      if (symlinkat(target, etc, etc_allowed[i]) < 0)
        return cm_error_set(err, errno, "--host: symlink %s/etc/%s", root, etc_allowed[i]);
      continue;
    }
    if (overlay_root) {
      struct stat st;
      /* stat, not lstat: resolv.conf is often a symlink into /run; what it points at is bound. */
      if (stat(host, &st) == 0 && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))
        add_mount(s, &at, "bind", host, host, ro_bind);
      continue;
    }
    if (s->root_readonly) {
      int c = copy_small_file(host, etc, etc_allowed[i], umask_now, err);
      if (c < 0)
        return -1;
      if (c == ETC_ABSENT)
        continue;
      if (c == ETC_COPIED) {
        spec_strv_push(&s->root_tree_mounts, host);
        continue;
      }
    }
    cleanup_error struct cm_error *why = NULL;
    cleanup_close int mnt = clone_read_only(host, &why);
    if (mnt < 0 && why->errnum != ENOENT && why->errnum != ENOTDIR) {
      *err = why;
      why = NULL;
      return -1;
    }
    struct stat st;
    if (mnt < 0 || fstat(mnt, &st) < 0 || !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))
      continue; /* not on this host, or neither a file nor a directory */
    if (attach_at(mnt, host, etc, etc_allowed[i], S_ISDIR(st.st_mode), err) < 0)
      return -1;
    spec_strv_push(&s->root_tree_mounts, host);
  }
  s->root_tree_trusted = !overlay_root;
  static const char *const home_opts[] = {"nosuid", "nodev", "mode=0700", "size=256m", NULL};
  add_mount(s, &at, "tmpfs", "tmpfs", "/root", home_opts);
  static const char *const tmp_opts[] = {"nosuid", "nodev", "mode=1777", "size=256m", NULL};
  bool has_tmp = false;
  for (size_t i = 0; i < s->n_mounts; i++)
    has_tmp |= strcmp(s->mounts[i].destination, "/tmp") == 0;
  if (!has_tmp)
    add_mount(s, &at, "tmpfs", "tmpfs", "/tmp", tmp_opts);
  return 0;
}

/* --profile ci --host: the host's podman, buildah and crun find a configuration that works in a
 * job (nothing of the host's /etc/containers is taken: its registries' credentials and mirrors
 * are the host's). Whether nested containers get cgroups is not said here: only the runtime
 * knows whether it delegated the job's cgroup (cgroup/delegate.c), and its drop-in
 * containers.conf.d/zz-codemode-ci.conf (runtime/containers_dropin.c, written into this same
 * /etc/containers when the job starts) says "enabled" exactly then, "disabled" otherwise: the
 * job's cgroup is then the host's, read-only to the job, and every nested container stays
 * within its limits. Storage on the job's /var/lib/containers tmpfs (policy/profile_ci.c),
 * where native overlay works in a user namespace; local images (podman load) accepted without a
 * signature, as Debian's default. */
static const struct {
  const char *name, *text;
} ci_containers_files[] = {
    {"containers.conf", "# made by codemode-run --profile ci --host; cgroups: containers.conf.d/zz-codemode-ci.conf\n"
                        "[engine]\ncgroup_manager = \"cgroupfs\"\nevents_logger = \"file\"\nruntime = \"crun\"\n"},
    {"storage.conf", "# made by codemode-run --profile ci --host\n"
                     "[storage]\ndriver = \"overlay\"\nrunroot = \"/run/containers/storage\"\n"
                     "graphroot = \"/var/lib/containers/storage\"\n"},
    {"policy.json", "{\"default\": [{\"type\": \"insecureAcceptAnything\"}]}\n"},
    {"registries.conf", "# made by codemode-run --profile ci --host: no search registries\nunqualified-search-registries = []\n"},
};

int run_host_ci_containers(struct cleanup_plan *plan, struct cm_error **err) {
  /* podman, crun and buildah write under /run and /var/tmp (in the job's writable root). */
  static const struct {
    const char *path;
    mode_t mode;
  } dirs[] = {{"run", 0755}, {"var", 0755}, {"var/tmp", 01777}, {"var/lib", 0755}};
  for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
    char d[PATH_MAX];
    snprintf(d, sizeof(d), "%s/hostroot/%s", plan->ephemeral_dir, dirs[i].path);
    if ((mkdir(d, dirs[i].mode) < 0 && errno != EEXIST) || chmod(d, dirs[i].mode) < 0)
      return cm_error_set(err, errno, "--host: mkdir %s", d);
  }
  char dir[PATH_MAX];
  snprintf(dir, sizeof(dir), "%s/hostroot/etc/containers", plan->ephemeral_dir);
  if (mkdir(dir, 0755) < 0 && errno != EEXIST)
    return cm_error_set(err, errno, "--host: mkdir %s", dir);
  for (size_t i = 0; i < sizeof(ci_containers_files) / sizeof(ci_containers_files[0]); i++) {
    char path[PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/%s", dir, ci_containers_files[i].name);
    cleanup_close int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    size_t len = strlen(ci_containers_files[i].text);
    if (fd < 0 || write(fd, ci_containers_files[i].text, len) != (ssize_t)len)
      return cm_error_set(err, errno, "--host: write %s", path);
  }
  return 0;
}


/* Package runners that ask their registry before they start what is already in their cache:
 * in a container that may reach no host, npx waited ~73 s for the registry before the server
 * answered (issue 29; measured ~1.6 s offline). The variable that makes each use its cache
 * only; an --env of the caller's (applied after this) still wins. */
static const struct {
  const char *program;
  const char *const env[3];
} offline_env[] = {
    {"npx", {"npm_config_offline=true", "npm_config_update_notifier=false", NULL}},
    {"npm", {"npm_config_offline=true", "npm_config_update_notifier=false", NULL}},
    {"uvx", {"UV_OFFLINE=1", NULL}},
    {"uv", {"UV_OFFLINE=1", NULL}},
};

void run_host_process(struct spec *s, const struct run_options *o) {
  /* The host's own programs: their usual PATH, and HOME the empty /root. */
  struct spec_process *p = s->process;
  spec_strv_free(&p->env);
  spec_strv_push(&p->env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  spec_strv_push(&p->env, "HOME=/root");
  const char *lang = getenv("LANG");
  if (lang && *lang && strlen(lang) < 64) {
    char kv[80];
    snprintf(kv, sizeof(kv), "LANG=%s", lang);
    spec_strv_push(&p->env, kv);
  }
  free(p->cwd);
  p->cwd = xstrdup("/root");
  bool netless = o->egress.allow_host.count == 0 && o->egress.allow_cidr.count == 0 &&
                 !(o->net && strcmp(o->net, "host") == 0);
  const char *prog = o->cmd && o->n_cmd > 0 ? strrchr(o->cmd[0], '/') : NULL;
  prog = prog ? prog + 1 : (o->cmd && o->n_cmd > 0 ? o->cmd[0] : "");
  for (size_t i = 0; netless && i < sizeof(offline_env) / sizeof(offline_env[0]); i++)
    if (strcmp(prog, offline_env[i].program) == 0)
      for (const char *const *kv = offline_env[i].env; *kv; kv++)
        spec_strv_push(&p->env, *kv);
}
