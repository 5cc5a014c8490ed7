/* Path resolution confined to a root directory: openat2(RESOLVE_IN_ROOT) and a portable walk. */
#include "util/safepath.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/cleanup.h"

#define SAFEPATH_MAX_SYMLINKS 40 /* the kernel's own limit (MAXSYMLINKS) */

const char *safepath_fd_path(int fd, char buf[static 32]) {
  snprintf(buf, 32, "/proc/self/fd/%d", fd);
  return buf;
}

char *safepath_split(const char *path, const char **base) {
  size_t len = strlen(path);
  while (len > 1 && path[len - 1] == '/')
    len--;
  size_t start = len;
  while (start > 0 && path[start - 1] != '/')
    start--;
  size_t base_len = len - start;
  if (base_len == 0 || (base_len == 1 && path[start] == '.') ||
      (base_len == 2 && path[start] == '.' && path[start + 1] == '.')) {
    errno = EINVAL;
    return NULL;
  }
  /* `base` points into `path`, so it must run to the end: no trailing slash. */
  if (path[len] != '\0') {
    errno = EINVAL;
    return NULL;
  }
  *base = path + start;
  size_t parent_len = start;
  while (parent_len > 1 && path[parent_len - 1] == '/')
    parent_len--;
  if (parent_len == 0)
    return strdup(".");
  return strndup(path, parent_len);
}

/* errno survives the error bookkeeping, so callers can still test for ENOENT. */
static int fail(struct cm_error **err, int errnum, const char *what, const char *path) {
  cm_error_set(err, errnum, "%s \"%s\" inside the container root", what, path);
  errno = errnum;
  return -1;
}

/* A growable stack of directory fds: the directories walked so far, stack[0] being the root.
 * ".." pops, so it can never climb above the root (CVE-2021-30465 class: no escape via ..). */
struct dir_stack {
  int *fds;
  size_t depth, cap;
};

static void dir_stack_release(struct dir_stack *s) {
  for (size_t i = 0; i < s->depth; i++)
    close(s->fds[i]);
  free(s->fds);
  s->fds = NULL;
  s->depth = s->cap = 0;
}

static int dir_stack_push(struct dir_stack *s, int fd) {
  if (s->depth == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 16;
    int *fds = realloc(s->fds, cap * sizeof(*fds));
    if (!fds)
      return -1;
    s->fds = fds;
    s->cap = cap;
  }
  s->fds[s->depth++] = fd;
  return 0;
}

static int dir_stack_top(const struct dir_stack *s) {
  return s->fds[s->depth - 1];
}

/* Pop down to (but never below) the root. */
static void dir_stack_pop_to(struct dir_stack *s, size_t depth) {
  while (s->depth > depth && s->depth > 1)
    close(s->fds[--s->depth]);
}

/* Create one missing component in `dir`. EEXIST is not an error: someone (or a dangling
 * symlink) is there, and the caller looks again. */
static int create_component(int dir, const char *name, bool as_file, mode_t mode) {
  if (as_file) {
    /* O_EXCL|O_NOFOLLOW: never open (and so never truncate or chmod) what a symlink points at. */
    int fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 0666);
    if (fd < 0)
      return errno == EEXIST ? 0 : -1;
    close(fd);
    return 0;
  }
  if (mkdirat(dir, name, mode) < 0 && errno != EEXIST)
    return -1;
  return 0;
}

int safepath_walk(int root_fd, const char *path, enum safepath_create create, mode_t mode,
                  struct cm_error **err) {
  struct dir_stack stack = {0};
  cleanup_free char *remaining = strdup(path);
  int root_copy = fcntl(root_fd, F_DUPFD_CLOEXEC, 3);
  if (!remaining || root_copy < 0 || dir_stack_push(&stack, root_copy) < 0) {
    int saved = errno;
    if (root_copy >= 0 && stack.depth == 0)
      close(root_copy);
    dir_stack_release(&stack);
    return fail(err, saved, "resolve", path);
  }

  int result = -1;
  int links = 0;
  int retries = 0;
  char *cursor = remaining;
  for (;;) {
    while (*cursor == '/')
      cursor++;
    if (*cursor == '\0')
      break;
    char *slash = strchr(cursor, '/');
    char *rest = slash ? slash + 1 : cursor + strlen(cursor);
    if (slash)
      *slash = '\0';
    const char *name = cursor;
    bool is_last = true;
    for (const char *r = rest; *r; r++)
      if (*r != '/') {
        is_last = false;
        break;
      }

    if (strcmp(name, ".") == 0) {
      cursor = rest;
      continue;
    }
    if (strcmp(name, "..") == 0) {
      dir_stack_pop_to(&stack, stack.depth - 1);
      cursor = rest;
      continue;
    }

    /* O_PATH|O_NOFOLLOW opens a symlink itself, so we expand it ourselves below (inside the
     * root) instead of letting the kernel follow it to a host path. */
    int fd = openat(dir_stack_top(&stack), name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && create != SAFEPATH_NO_CREATE) {
      bool as_file = is_last && create == SAFEPATH_MKFILE;
      if (create_component(dir_stack_top(&stack), name, as_file, mode) < 0) {
        int saved = errno;
        dir_stack_release(&stack);
        return fail(err, saved, as_file ? "create file" : "create directory", path);
      }
      fd = openat(dir_stack_top(&stack), name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0 && errno == ENOENT && ++retries < 8) {
        /* It vanished between create and open (a racing rename): restore and retry. */
        if (slash)
          *slash = '/';
        continue;
      }
    }
    if (fd < 0) {
      int saved = errno;
      dir_stack_release(&stack);
      return fail(err, saved, "open", path);
    }

    struct stat st;
    if (fstat(fd, &st) < 0) {
      int saved = errno;
      close(fd);
      dir_stack_release(&stack);
      return fail(err, saved, "stat", path);
    }

    if (S_ISLNK(st.st_mode)) {
      char target[PATH_MAX];
      ssize_t n = readlinkat(fd, "", target, sizeof(target) - 1);
      close(fd);
      if (++links > SAFEPATH_MAX_SYMLINKS || n < 0) {
        int saved = n < 0 ? errno : ELOOP;
        dir_stack_release(&stack);
        return fail(err, saved, "resolve", path);
      }
      target[n] = '\0';
      /* An absolute target restarts at the container root, never at the host's "/". */
      if (target[0] == '/')
        dir_stack_pop_to(&stack, 1);
      char *expanded = NULL;
      if (asprintf(&expanded, "%s%s%s", target, *rest ? "/" : "", rest) < 0) {
        dir_stack_release(&stack);
        return fail(err, ENOMEM, "resolve", path);
      }
      free(remaining);
      remaining = expanded;
      cursor = remaining;
      continue;
    }

    if (S_ISDIR(st.st_mode)) {
      if (dir_stack_push(&stack, fd) < 0) {
        close(fd);
        dir_stack_release(&stack);
        return fail(err, ENOMEM, "resolve", path);
      }
      cursor = rest;
      continue;
    }

    if (!is_last) {
      close(fd);
      dir_stack_release(&stack);
      return fail(err, ENOTDIR, "resolve", path);
    }
    result = fd;
    break;
  }

  if (result < 0) {
    /* The path ended on a directory: hand out the top of the stack. */
    result = stack.fds[--stack.depth];
  }
  dir_stack_release(&stack);
  return result;
}

static int openat2_in_root(int root_fd, const char *path, int flags) {
  struct open_how how = {
      .flags = (unsigned long long)(flags | O_CLOEXEC),
      /* IN_ROOT: "/" and ".." stop at root_fd; NO_MAGICLINKS: /proc/self/{root,fd,cwd,exe}
       * cannot teleport us out (CVE-2019-16884, CVE-2025-52881 classes). */
      .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
  };
  for (int attempt = 0;; attempt++) {
    int fd = (int)syscall(SYS_openat2, root_fd, path, &how, sizeof(how));
    /* EAGAIN: the kernel saw a concurrent rename and could not vouch for "..": retry. */
    if (fd >= 0 || errno != EAGAIN || attempt >= 16)
      return fd;
  }
}

/* Without openat2: walk, then apply O_NOFOLLOW/open flags on the final component. */
static int open_by_walk(int root_fd, const char *path, int flags, struct cm_error **err) {
  cleanup_close int fd = -1;
  if (flags & O_NOFOLLOW) {
    const char *base = NULL;
    cleanup_free char *parent = safepath_split(path, &base);
    if (!parent)
      return fail(err, errno, "open", path);
    cleanup_close int dir = safepath_walk(root_fd, parent, SAFEPATH_NO_CREATE, 0, err);
    if (dir < 0)
      return -1;
    fd = openat(dir, base, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  } else {
    fd = safepath_walk(root_fd, path, SAFEPATH_NO_CREATE, 0, err);
    if (fd < 0)
      return -1;
  }
  if (fd < 0)
    return fail(err, errno, "open", path);
  struct stat st;
  if ((flags & O_DIRECTORY) && (fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode)))
    return fail(err, ENOTDIR, "open", path);
  if (flags & O_PATH)
    return cm_steal_fd(&fd);
  /* Re-open the very object we resolved, with the access mode the caller asked for. */
  char proc_path[32];
  int reopened = open(safepath_fd_path(fd, proc_path), (flags & ~O_NOFOLLOW) | O_CLOEXEC);
  if (reopened < 0)
    return fail(err, errno, "open", path);
  return reopened;
}

int safepath_open(int root_fd, const char *path, int flags, struct cm_error **err) {
  if (path[0] == '\0')
    path = ".";
  int fd = openat2_in_root(root_fd, path, flags);
  if (fd >= 0)
    return fd;
  if (errno == ENOSYS)
    return open_by_walk(root_fd, path, flags, err);
  return fail(err, errno, "open", path);
}

int safepath_mkdir_p(int root_fd, const char *path, mode_t mode, struct cm_error **err) {
  cleanup_close int fd = safepath_walk(root_fd, path, SAFEPATH_MKDIR, mode, err);
  if (fd < 0)
    return -1;
  struct stat st;
  if (fstat(fd, &st) < 0)
    return fail(err, errno, "stat", path);
  if (!S_ISDIR(st.st_mode))
    return fail(err, ENOTDIR, "create directory", path);
  return cm_steal_fd(&fd);
}

int safepath_mount_target(int root_fd, const char *path, bool is_dir, struct cm_error **err) {
  return safepath_walk(root_fd, path, is_dir ? SAFEPATH_MKDIR : SAFEPATH_MKFILE, 0755, err);
}
