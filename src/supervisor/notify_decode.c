/* One seccomp notification, read safely and decoded (supervisor/observe.h).
 *
 * The target is blocked in the syscall while we look: its registers are in the notification
 * (copied by the kernel, the target cannot change them); what they point to (a path, a struct)
 * is read from its memory with process_vm_readv, and may change under us if another of its
 * threads writes there. That is why nothing here decides anything: the answer is always
 * CONTINUE, and what the kernel then does is the kernel's decision. After the reads the
 * notification id is checked again (SECCOMP_IOCTL_NOTIF_ID_VALID, as seccomp_unotify(2) says):
 * if the target died meanwhile, its pid may already be another process's, and what we read is
 * thrown away.
 *
 * Paths are resolved the way the kernel will: relative ones against the target's cwd or dirfd
 * (readlink of /proc/PID/cwd and /proc/PID/fd/N, which name the path as the container sees it),
 * then inside the target's root (/proc/PID/root with RESOLVE_IN_ROOT: a symlink in the container
 * cannot lead us onto a host path). The ELF interpreter (PT_INTERP) and a #! interpreter of an
 * executed file are decoded too: the kernel opens them for execution without a syscall of the
 * target. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "spec/landlock_config.h"
#include "supervisor/observe.h"
#include "util/cleanup.h"
#include "util/safepath.h"

#ifndef __O_TMPFILE
#define __O_TMPFILE 020000000
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif
#ifndef AT_EMPTY_PATH
#define AT_EMPTY_PATH 0x1000
#endif

enum kind {
  K_NONE,
  K_OPEN,
  K_OPENAT,
  K_OPENAT2,
  K_CREAT,
  K_EXECVE,
  K_EXECVEAT,
  K_MKDIR,
  K_MKDIRAT,
  K_MKNOD,
  K_MKNODAT,
  K_UNLINK,
  K_UNLINKAT,
  K_RMDIR,
  K_RENAME,
  K_RENAMEAT,
  K_RENAMEAT2,
  K_LINK,
  K_LINKAT,
  K_SYMLINK,
  K_SYMLINKAT,
  K_TRUNCATE,
  K_FTRUNCATE,
  K_IOCTL,
  K_BIND,
  K_CLONE,
  K_SOCKET,
  K_SOCKETPAIR,
  K_PRCTL,
};

static const struct {
  const char *name;
  enum kind kind;
  bool file; /* watched by the audit filter */
} decoded[] = {
    {"open", K_OPEN, true},           {"openat", K_OPENAT, true},       {"openat2", K_OPENAT2, true},
    {"creat", K_CREAT, true},         {"execve", K_EXECVE, true},       {"execveat", K_EXECVEAT, true},
    {"mkdir", K_MKDIR, true},         {"mkdirat", K_MKDIRAT, true},     {"mknod", K_MKNOD, true},
    {"mknodat", K_MKNODAT, true},     {"unlink", K_UNLINK, true},       {"unlinkat", K_UNLINKAT, true},
    {"rmdir", K_RMDIR, true},         {"rename", K_RENAME, true},       {"renameat", K_RENAMEAT, true},
    {"renameat2", K_RENAMEAT2, true}, {"link", K_LINK, true},           {"linkat", K_LINKAT, true},
    {"symlink", K_SYMLINK, true},     {"symlinkat", K_SYMLINKAT, true}, {"truncate", K_TRUNCATE, true},
    {"ftruncate", K_FTRUNCATE, true}, {"ioctl", K_IOCTL, false},        {"bind", K_BIND, false},
    {"clone", K_CLONE, false},        {"socket", K_SOCKET, false},      {"socketpair", K_SOCKETPAIR, false},
    {"prctl", K_PRCTL, false},
};
#define N_DECODED (sizeof(decoded) / sizeof(decoded[0]))

const char *const notify_file_syscalls[] = {
    "open",  "openat",  "openat2", "creat",     "execve",   "execveat",  "mkdir",    "mkdirat",
    "mknod", "mknodat", "unlink",  "unlinkat",  "rmdir",    "rename",    "renameat", "renameat2",
    "link",  "linkat",  "symlink", "symlinkat", "truncate", "ftruncate", NULL};

#define MAX_NR 1024
struct notify_decoder {
  unsigned char kinds[MAX_NR];
  char *names[MAX_NR]; /* libseccomp's names, resolved once */
  uint32_t native;     /* AUDIT_ARCH_* of our architecture */
  struct seccomp_notif_sizes sizes;
  struct seccomp_notif *req;
  struct seccomp_notif_resp *resp;
};

struct notify_decoder *notify_decoder_new(struct cm_error **err) {
  struct notify_decoder *d = calloc(1, sizeof(*d));
  if (d == NULL)
    abort();
  for (size_t i = 0; i < N_DECODED; i++) {
    int nr = seccomp_syscall_resolve_name(decoded[i].name);
    if (nr >= 0 && nr < MAX_NR)
      d->kinds[nr] = (unsigned char)decoded[i].kind;
  }
  d->native = seccomp_arch_native();
  /* The kernel's structs may be larger than our headers': allocate what it says. */
  if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &d->sizes) < 0) {
    free(d);
    return cm_error_set(err, errno, "seccomp: SECCOMP_GET_NOTIF_SIZES"), NULL;
  }
  size_t rq = d->sizes.seccomp_notif > sizeof(*d->req) ? d->sizes.seccomp_notif : sizeof(*d->req);
  size_t rs = d->sizes.seccomp_notif_resp > sizeof(*d->resp) ? d->sizes.seccomp_notif_resp : sizeof(*d->resp);
  d->req = calloc(1, rq);
  d->resp = calloc(1, rs);
  d->sizes.seccomp_notif = (unsigned short)rq;
  d->sizes.seccomp_notif_resp = (unsigned short)rs;
  if (d->req == NULL || d->resp == NULL)
    abort();
  return d;
}

void notify_decoder_free(struct notify_decoder *d) {
  if (d == NULL)
    return;
  for (size_t i = 0; i < MAX_NR; i++)
    free(d->names[i]);
  free(d->req);
  free(d->resp);
  free(d);
}

/* --- the target's memory and files ----------------------------------------------------------- */

/* A NUL-terminated string at addr, read page by page (a read across an unmapped page fails
 * whole). false: unreadable or longer than size. */
static bool read_string(pid_t pid, uint64_t addr, char *buf, size_t size) {
  size_t got = 0;
  while (got < size) {
    size_t room = 4096 - ((addr + got) & 4095);
    if (room > size - got)
      room = size - got;
    struct iovec local = {buf + got, room}, remote = {(void *)(uintptr_t)(addr + got), room};
    ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (n <= 0)
      return false;
    if (memchr(buf + got, '\0', (size_t)n))
      return true;
    got += (size_t)n;
  }
  return false;
}

static bool read_mem(pid_t pid, uint64_t addr, void *buf, size_t len) {
  struct iovec local = {buf, len}, remote = {(void *)(uintptr_t)addr, len};
  return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)len;
}

/* readlink of /proc/PID/<what> (cwd, fd/N): the path as the container sees it. */
static bool proc_link(pid_t pid, const char *what, char *buf, size_t size) {
  char link[64];
  snprintf(link, sizeof(link), "/proc/%d/%s", (int)pid, what);
  ssize_t n = readlink(link, buf, size - 1);
  if (n <= 0)
    return false;
  buf[n] = '\0';
  return buf[0] == '/';
}

/* Lexically clean an absolute path in place ("//", ".", ".." against what is already there). */
static void clean_path(char *p) {
  char out[PATH_MAX];
  size_t len = 0;
  const char *s = p;
  while (*s) {
    while (*s == '/')
      s++;
    const char *e = s;
    while (*e && *e != '/')
      e++;
    size_t n = (size_t)(e - s);
    if (n == 0)
      break;
    if (n == 1 && s[0] == '.') {
    } else if (n == 2 && s[0] == '.' && s[1] == '.') {
      while (len > 0 && out[len - 1] != '/')
        len--;
      if (len > 0)
        len--;
    } else if (len + n + 2 < sizeof(out)) {
      out[len++] = '/';
      memcpy(out + len, s, n);
      len += n;
    }
    s = e;
  }
  if (len == 0)
    out[len++] = '/';
  out[len] = '\0';
  memcpy(p, out, len + 1);
}

/* The absolute, lexically clean form of path as the target sees it (dirfd: AT_FDCWD or an fd). */
static bool absolute(pid_t pid, int dirfd, const char *path, char out[PATH_MAX]) {
  if (path[0] == '/') {
    snprintf(out, PATH_MAX, "%s", path);
  } else {
    char base[PATH_MAX], what[32];
    if (dirfd == AT_FDCWD)
      snprintf(what, sizeof(what), "cwd");
    else
      snprintf(what, sizeof(what), "fd/%d", dirfd);
    if (!proc_link(pid, what, base, sizeof(base)))
      return false;
    if (path[0] == '\0')
      snprintf(out, PATH_MAX, "%s", base);
    else if ((size_t)snprintf(out, PATH_MAX, "%s/%s", base, path) >= PATH_MAX)
      return false;
  }
  clean_path(out);
  return true;
}

/* Resolve an absolute path inside the target's root (symlinks followed the way the kernel will,
 * the last one only if follow). Fills out with the resolved path and *mode with the object's
 * type (0 when it does not exist: then out is the resolved parent plus the last name). */
static void resolve(pid_t pid, const char *abs, bool follow, char out[PATH_MAX], mode_t *mode) {
  *mode = 0;
  snprintf(out, PATH_MAX, "%s", abs);
  /* /proc is the container's own procfs: its magic links mean nothing from here, and every path
   * in it collapses to /proc in the policy anyway. */
  if (strncmp(abs, "/proc/", 6) == 0 || strcmp(abs, "/proc") == 0)
    return;
  char root_link[64];
  snprintf(root_link, sizeof(root_link), "/proc/%d/root", (int)pid);
  cleanup_close int root = open(root_link, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0)
    return;
  cleanup_close int fd = safepath_open(root, abs, O_PATH | (follow ? 0 : O_NOFOLLOW), NULL);
  const char *tail = NULL;
  cleanup_free char *parent = NULL;
  if (fd < 0 && errno == ENOENT) {
    parent = safepath_split(abs, &tail);
    if (parent == NULL)
      return;
    fd = safepath_open(root, parent, O_PATH | O_DIRECTORY, NULL);
  }
  if (fd < 0)
    return;
  struct stat st;
  if (fstat(fd, &st) < 0)
    return;
  char self[32], real[PATH_MAX];
  ssize_t n = readlink(safepath_fd_path(fd, self), real, sizeof(real) - 1);
  if (n <= 0 || real[0] != '/')
    return;
  real[n] = '\0';
  if (tail == NULL) {
    *mode = st.st_mode;
    snprintf(out, PATH_MAX, "%s", real);
  } else if ((size_t)snprintf(out, PATH_MAX, "%s%s%s", real, strcmp(real, "/") ? "/" : "", tail) >=
             PATH_MAX) {
    snprintf(out, PATH_MAX, "%s", abs);
  }
}

static void parent_dir(const char *path, char out[PATH_MAX]) {
  snprintf(out, PATH_MAX, "%s", path);
  char *slash = strrchr(out, '/');
  if (slash == out)
    out[1] = '\0';
  else if (slash)
    *slash = '\0';
}

static void add_file(struct observed_call *c, const char *path, uint64_t access) {
  if (access == 0 || c->n_files >= OBSERVED_FILES_MAX)
    return;
  for (int i = 0; i < c->n_files; i++)
    if (strcmp(c->files[i].path, path) == 0) {
      c->files[i].access |= access;
      return;
    }
  struct observed_file *f = &c->files[c->n_files++];
  snprintf(f->path, sizeof(f->path), "%s", path);
  f->access = access;
}

/* The right to create an entry of this type. */
static uint64_t make_right(mode_t mode) {
  switch (mode & S_IFMT) {
  case S_IFDIR: return LL_FS_MAKE_DIR;
  case S_IFLNK: return LL_FS_MAKE_SYM;
  case S_IFIFO: return LL_FS_MAKE_FIFO;
  case S_IFSOCK: return LL_FS_MAKE_SOCK;
  case S_IFCHR: return LL_FS_MAKE_CHAR;
  case S_IFBLK: return LL_FS_MAKE_BLOCK;
  default: return LL_FS_MAKE_REG;
  }
}

static uint64_t remove_right(mode_t mode) {
  return S_ISDIR(mode) ? LL_FS_REMOVE_DIR : LL_FS_REMOVE_FILE;
}

/* A path argument at addr, resolved; false when unreadable. */
static bool path_arg(pid_t pid, int dirfd, uint64_t addr, bool follow, char out[PATH_MAX], mode_t *mode) {
  char raw[PATH_MAX], abs[PATH_MAX];
  if (addr == 0 || !read_string(pid, addr, raw, sizeof(raw)) || !absolute(pid, dirfd, raw, abs))
    return false;
  resolve(pid, abs, follow, out, mode);
  return true;
}

/* --- what the call needs -------------------------------------------------------------------- */

static void decode_open(struct observed_call *c, pid_t pid, int dirfd, uint64_t addr, uint64_t flags) {
  if (flags & O_PATH)
    return; /* Landlock does not restrict O_PATH opens */
  char path[PATH_MAX];
  mode_t mode;
  if (!path_arg(pid, dirfd, addr, !(flags & O_NOFOLLOW), path, &mode))
    return;
  /* /proc is not resolved (resolve()): what it names exists as the flags say. */
  if (mode == 0 && (strncmp(path, "/proc/", 6) == 0 || strcmp(path, "/proc") == 0))
    mode = (flags & O_DIRECTORY) || strcmp(path, "/proc") == 0 ? S_IFDIR : S_IFREG;
  int acc = (int)(flags & O_ACCMODE);
  uint64_t rw = (acc == O_RDONLY ? LL_FS_READ_FILE : 0) | (acc == O_WRONLY ? LL_FS_WRITE_FILE : 0) |
                (acc == O_RDWR ? LL_FS_READ_FILE | LL_FS_WRITE_FILE : 0);
  if ((flags & __O_TMPFILE) == __O_TMPFILE) {
    add_file(c, path, LL_FS_MAKE_REG | (rw & ~LL_FS_READ_FILE));
  } else if (S_ISDIR(mode)) {
    add_file(c, path, LL_FS_READ_DIR);
  } else if (mode) {
    add_file(c, path, rw | ((flags & O_TRUNC) && acc != O_RDONLY ? LL_FS_TRUNCATE : 0));
  } else if (flags & O_CREAT) {
    char dir[PATH_MAX];
    parent_dir(path, dir);
    /* The new file is beneath its directory: the rule there must also let it be written. */
    add_file(c, dir, LL_FS_MAKE_REG | rw);
  }
}

/* An execve opens the file for reading too (open_exec: FMODE_READ | __FMODE_EXEC), and Landlock
 * asks for both rights. */
#define EXEC_RIGHTS (LL_FS_EXECUTE | LL_FS_READ_FILE)

/* The kernel opens for execution, without a syscall of the target: the ELF interpreter and a
 * script's #! interpreter. */
static void decode_interpreters(struct observed_call *c, pid_t pid, const char *path, int depth) {
  if (depth > 3)
    return;
  char root_link[64];
  snprintf(root_link, sizeof(root_link), "/proc/%d/root", (int)pid);
  cleanup_close int root = open(root_link, O_PATH | O_DIRECTORY | O_CLOEXEC);
  cleanup_close int fd = root < 0 ? -1 : safepath_open(root, path, O_RDONLY | O_NONBLOCK, NULL);
  if (fd < 0)
    return;
  struct stat st;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
    return;
  unsigned char head[4096];
  ssize_t n = pread(fd, head, sizeof(head), 0);
  if (n < 4)
    return;
  char interp[PATH_MAX] = "";
  if (head[0] == '#' && head[1] == '!') {
    size_t i = 2, k = 0;
    while (i < (size_t)n && (head[i] == ' ' || head[i] == '\t'))
      i++;
    while (i < (size_t)n && head[i] != ' ' && head[i] != '\t' && head[i] != '\n' && k + 1 < sizeof(interp))
      interp[k++] = (char)head[i++];
    interp[k] = '\0';
  } else if (n >= (ssize_t)sizeof(Elf64_Ehdr) && memcmp(head, ELFMAG, SELFMAG) == 0 &&
             head[EI_CLASS] == ELFCLASS64) {
    Elf64_Ehdr eh;
    memcpy(&eh, head, sizeof(eh));
    for (unsigned i = 0; i < eh.e_phnum && i < 64; i++) {
      Elf64_Phdr ph;
      if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize)) != sizeof(ph))
        break;
      if (ph.p_type == PT_INTERP && ph.p_filesz > 1 && ph.p_filesz < sizeof(interp)) {
        if (pread(fd, interp, ph.p_filesz, (off_t)ph.p_offset) == (ssize_t)ph.p_filesz)
          interp[ph.p_filesz - 1] = '\0';
        else
          interp[0] = '\0';
        break;
      }
    }
  }
  if (interp[0] != '/')
    return;
  char resolved[PATH_MAX];
  mode_t mode;
  clean_path(interp);
  resolve(pid, interp, true, resolved, &mode);
  if (!mode)
    return;
  add_file(c, resolved, EXEC_RIGHTS);
  decode_interpreters(c, pid, resolved, depth + 1);
}

static void decode_exec(struct observed_call *c, pid_t pid, int dirfd, uint64_t addr, uint64_t flags) {
  char path[PATH_MAX];
  mode_t mode;
  char raw[PATH_MAX] = "";
  if (addr && !read_string(pid, addr, raw, sizeof(raw)))
    return;
  if (raw[0] == '\0' && (flags & AT_EMPTY_PATH)) {
    char what[32];
    snprintf(what, sizeof(what), "fd/%d", dirfd);
    if (!proc_link(pid, what, path, sizeof(path)))
      return; /* a memfd ("/memfd:…" is not absolute): not a file of the container's tree */
  } else {
    char abs[PATH_MAX];
    if (!absolute(pid, dirfd, raw, abs))
      return;
    /* /proc/self/fd/N: the runtime's own sealed copies (trampoline, init), memfds */
    if (strncmp(abs, "/proc/", 6) == 0)
      return;
    resolve(pid, abs, true, path, &mode);
    if (!S_ISREG(mode))
      return; /* a $PATH lookup's miss: the kernel answers ENOENT before Landlock looks */
  }
  add_file(c, path, EXEC_RIGHTS);
  decode_interpreters(c, pid, path, 0);
}

/* The entry path gets created (make_right of mode) in its directory. */
static void decode_create(struct observed_call *c, pid_t pid, int dirfd, uint64_t addr, mode_t mode) {
  char path[PATH_MAX], dir[PATH_MAX];
  mode_t existing;
  if (!path_arg(pid, dirfd, addr, false, path, &existing))
    return;
  parent_dir(path, dir);
  add_file(c, dir, make_right(mode));
  if (S_ISDIR(mode) && existing == 0) /* mkdir -p of a directory that is there makes nothing */
    snprintf(c->made_dir, sizeof(c->made_dir), "%s", path);
}

static void decode_remove(struct observed_call *c, pid_t pid, int dirfd, uint64_t addr, bool dir_flag) {
  char path[PATH_MAX], dir[PATH_MAX];
  mode_t mode;
  if (!path_arg(pid, dirfd, addr, false, path, &mode))
    return;
  parent_dir(path, dir);
  add_file(c, dir, dir_flag ? LL_FS_REMOVE_DIR : remove_right(mode));
}

static void decode_rename(struct observed_call *c, pid_t pid, int olddir, uint64_t old, int newdir,
                          uint64_t new_, uint64_t flags) {
  char from[PATH_MAX], to[PATH_MAX], fdir[PATH_MAX], tdir[PATH_MAX];
  mode_t fmode, tmode;
  if (!path_arg(pid, olddir, old, false, from, &fmode) || !path_arg(pid, newdir, new_, false, to, &tmode))
    return;
  parent_dir(from, fdir);
  parent_dir(to, tdir);
  add_file(c, fdir, remove_right(fmode));
  add_file(c, tdir, make_right(fmode));
  if (tmode)
    add_file(c, tdir, remove_right(tmode));
  if (flags & RENAME_EXCHANGE) {
    add_file(c, tdir, remove_right(tmode));
    add_file(c, fdir, make_right(tmode) | remove_right(fmode));
  }
  /* Moving an entry to another directory needs refer on both (Landlock ABI 2). */
  if (strcmp(fdir, tdir) != 0) {
    add_file(c, fdir, LL_FS_REFER);
    add_file(c, tdir, LL_FS_REFER);
  }
}

static void decode_link(struct observed_call *c, pid_t pid, int olddir, uint64_t old, int newdir,
                        uint64_t new_, bool follow) {
  char from[PATH_MAX], to[PATH_MAX], fdir[PATH_MAX], tdir[PATH_MAX];
  mode_t fmode, tmode;
  if (!path_arg(pid, olddir, old, follow, from, &fmode) || !path_arg(pid, newdir, new_, false, to, &tmode))
    return;
  parent_dir(from, fdir);
  parent_dir(to, tdir);
  add_file(c, tdir, make_right(fmode));
  if (strcmp(fdir, tdir) != 0) {
    add_file(c, fdir, LL_FS_REFER);
    add_file(c, tdir, LL_FS_REFER);
  }
}

/* An fd's file (ftruncate, ioctl on a device). */
static void decode_fd(struct observed_call *c, pid_t pid, int fd, uint64_t access, bool devices_only) {
  char what[32], path[PATH_MAX], link[64];
  snprintf(what, sizeof(what), "fd/%d", fd);
  if (!proc_link(pid, what, path, sizeof(path)))
    return;
  if (devices_only) {
    snprintf(link, sizeof(link), "/proc/%d/fd/%d", (int)pid, fd);
    struct stat st;
    if (stat(link, &st) < 0 || !(S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)))
      return;
  }
  add_file(c, path, access);
}

static void decode_bind(struct observed_call *c, pid_t pid, uint64_t addr, uint64_t len) {
  struct sockaddr_un sun;
  if (len <= offsetof(struct sockaddr_un, sun_path) || len > sizeof(sun))
    return;
  memset(&sun, 0, sizeof(sun));
  if (!read_mem(pid, addr, &sun, (size_t)len) || sun.sun_family != AF_UNIX || sun.sun_path[0] == '\0')
    return;
  sun.sun_path[sizeof(sun.sun_path) - 1] = '\0';
  char abs[PATH_MAX], path[PATH_MAX], dir[PATH_MAX];
  mode_t mode;
  if (!absolute(pid, AT_FDCWD, sun.sun_path, abs))
    return;
  resolve(pid, abs, false, path, &mode);
  parent_dir(path, dir);
  add_file(c, dir, LL_FS_MAKE_SOCK);
}

static void key(struct observed_call *c, unsigned index, enum spec_seccomp_op op, uint64_t value,
                uint64_t two) {
  if (c->key.n < LEARNED_KEY_ARGS)
    c->key.args[c->key.n++] =
        (struct spec_seccomp_arg){.index = index, .op = op, .value = value, .value_two = two};
}

static void decode(struct observed_call *c, enum kind k, pid_t pid, const uint64_t *a) {
  int d0 = (int)a[0], d1 = (int)a[1], d2 = (int)a[2];
  switch (k) {
  case K_NONE: break;
  case K_OPEN: decode_open(c, pid, AT_FDCWD, a[0], a[1]); break;
  case K_OPENAT: decode_open(c, pid, d0, a[1], a[2]); break;
  case K_OPENAT2: {
    uint64_t how_flags = 0; /* struct open_how starts with its u64 flags */
    if (a[2] && read_mem(pid, a[2], &how_flags, sizeof(how_flags)))
      decode_open(c, pid, d0, a[1], how_flags);
    break;
  }
  case K_CREAT: decode_open(c, pid, AT_FDCWD, a[0], O_CREAT | O_WRONLY | O_TRUNC); break;
  case K_EXECVE: decode_exec(c, pid, AT_FDCWD, a[0], 0); break;
  case K_EXECVEAT: decode_exec(c, pid, d0, a[1], a[4]); break;
  case K_MKDIR: decode_create(c, pid, AT_FDCWD, a[0], S_IFDIR); break;
  case K_MKDIRAT: decode_create(c, pid, d0, a[1], S_IFDIR); break;
  case K_MKNOD: decode_create(c, pid, AT_FDCWD, a[0], (mode_t)a[1]); break;
  case K_MKNODAT: decode_create(c, pid, d0, a[1], (mode_t)a[2]); break;
  case K_UNLINK: decode_remove(c, pid, AT_FDCWD, a[0], false); break;
  case K_UNLINKAT: decode_remove(c, pid, d0, a[1], a[2] & AT_REMOVEDIR); break;
  case K_RMDIR: decode_remove(c, pid, AT_FDCWD, a[0], true); break;
  case K_RENAME: decode_rename(c, pid, AT_FDCWD, a[0], AT_FDCWD, a[1], 0); break;
  case K_RENAMEAT: decode_rename(c, pid, d0, a[1], d2, a[3], 0); break;
  case K_RENAMEAT2: decode_rename(c, pid, d0, a[1], d2, a[3], a[4]); break;
  case K_LINK: decode_link(c, pid, AT_FDCWD, a[0], AT_FDCWD, a[1], false); break;
  case K_LINKAT: decode_link(c, pid, d0, a[1], d2, a[3], a[4] & AT_SYMLINK_FOLLOW); break;
  case K_SYMLINK: decode_create(c, pid, AT_FDCWD, a[1], S_IFLNK); break;
  case K_SYMLINKAT: decode_create(c, pid, d1, a[2], S_IFLNK); break;
  case K_TRUNCATE: {
    char path[PATH_MAX];
    mode_t mode;
    if (path_arg(pid, AT_FDCWD, a[0], true, path, &mode))
      add_file(c, path, LL_FS_TRUNCATE);
    break;
  }
  case K_FTRUNCATE: decode_fd(c, pid, d0, LL_FS_TRUNCATE, false); break;
  case K_IOCTL:
    /* The request is an unsigned int the kernel takes from 64 bits: its low 32 are what counts. */
    key(c, 1, SPEC_SECCOMP_OP_MASKED_EQ, 0xFFFFFFFFULL, a[1] & 0xFFFFFFFFULL);
    decode_fd(c, pid, d0, LL_FS_IOCTL_DEV, true);
    break;
  case K_BIND: decode_bind(c, pid, a[1], a[2]); break;
  case K_CLONE: key(c, 0, SPEC_SECCOMP_OP_EQ, a[0], 0); break;
  case K_SOCKET:
    key(c, 0, SPEC_SECCOMP_OP_EQ, a[0], 0);
    /* SOCK_NONBLOCK and SOCK_CLOEXEC ride in the type's upper bits */
    key(c, 1, SPEC_SECCOMP_OP_MASKED_EQ, 0xF, a[1] & 0xF);
    if (a[0] == AF_NETLINK)
      key(c, 2, SPEC_SECCOMP_OP_EQ, a[2], 0);
    break;
  case K_SOCKETPAIR: key(c, 0, SPEC_SECCOMP_OP_EQ, a[0], 0); break;
  case K_PRCTL: key(c, 0, SPEC_SECCOMP_OP_EQ, a[0], 0); break;
  }
}

static void answer_continue(struct notify_decoder *d, int fd, uint64_t id) {
  memset(d->resp, 0, d->sizes.seccomp_notif_resp);
  d->resp->id = id;
  d->resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
  /* ENOENT: the target died (or was interrupted by a signal) meanwhile; nothing to answer. */
  while (ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, d->resp) < 0 && errno == EINTR)
    ;
}

int notify_receive(struct notify_decoder *d, int fd, struct observed_call *out) {
  memset(d->req, 0, d->sizes.seccomp_notif);
  if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, d->req) < 0) {
    if (errno == EINTR || errno == ENOENT)
      return 0; /* interrupted, or the target went before we could take its notification */
    return -1;
  }
  memset(out, 0, sizeof(*out));
  const struct seccomp_data *sd = &d->req->data;
  out->pid = (pid_t)d->req->pid;
  out->nr = sd->nr;
  /* Another architecture's syscalls are killed by the mcp filter before they get here. */
  bool native = sd->arch == d->native && sd->nr >= 0 && sd->nr < MAX_NR;
  if (native && d->names[sd->nr] == NULL)
    d->names[sd->nr] = seccomp_syscall_resolve_num_arch(d->native, sd->nr);
  out->name = native ? d->names[sd->nr] : NULL;
  enum kind k = native ? (enum kind)d->kinds[sd->nr] : K_NONE;
  decode(out, k, out->pid, (const uint64_t *)sd->args);
  /* What was read is the pid's only if the notification is still alive now. */
  uint64_t id = d->req->id;
  bool valid = ioctl(fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
  answer_continue(d, fd, id);
  if (!valid || out->name == NULL)
    return 0;
  return 1;
}
