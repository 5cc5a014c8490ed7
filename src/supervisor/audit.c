/* The denials of a run (codemode-run --audit-log FILE, --audit-summary), one audit log record
 * each (util/audit_log.h), with the policy line that would allow it.
 *
 * Who decides is always the kernel; this only names what it did:
 *   - seccomp: the kernel's own record of each ERRNO it returned (observer.c); which filter it
 *     was follows from the rules: a syscall the learned policy does not list is the policy's
 *     denial, one it allows is the profile's (mcp.json) or the config's;
 *   - Landlock: the audit filter shows every call that reaches a file (notify_decode.c), and the
 *     path and rights it needs are checked here against each layer the container runs under, the
 *     way the kernel checks them (a right a layer handles must be granted by a rule on the file or
 *     a directory above it). The kernel's Landlock records would need the audit subsystem enabled
 *     (audit=1 or auditd), which codemode does not turn on for the host.
 *   - hosts: the egress broker writes its refusals to the same log itself. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <yajl/yajl_tree.h>

#include "spec/json_util.h"
#include "supervisor/observe.h"
#include "util/audit_log.h"
#include "util/cleanup.h"
#include "util/log.h"

struct denial {
  char *key;  /* what, for counting identical ones */
  char *text; /* the summary's line */
  char *allow_with;
  unsigned count;
};

struct audit_session {
  char *id;
  int log_fd;
  const struct spec_landlock *const *layers;
  const char *const *layer_names;
  size_t n_layers;
  int kernel_abi;
  const struct learned_policy *policy;
  struct denial *d;
  size_t n;
  char *no_records; /* why the kernel's records are missing, if they are */
};

struct audit_session *audit_session_new(const char *id, int log_fd, const struct spec_landlock *const *layers,
                                        const char *const *layer_names, size_t n_layers,
                                        const struct learned_policy *policy) {
  struct audit_session *a = calloc(1, sizeof(*a));
  if (a == NULL)
    abort();
  a->id = strdup(id);
  a->log_fd = log_fd;
  a->layers = layers;
  a->layer_names = layer_names;
  a->n_layers = n_layers;
  a->policy = policy;
  return a;
}

void audit_session_set_abi(struct audit_session *a, int abi) {
  a->kernel_abi = abi;
}

/* Counted for the summary; true the first time. */
static bool note(struct audit_session *a, const char *key, const char *text, const char *allow_with) {
  for (size_t i = 0; i < a->n; i++)
    if (strcmp(a->d[i].key, key) == 0) {
      a->d[i].count++;
      return false;
    }
  a->d = realloc(a->d, (a->n + 1) * sizeof(*a->d));
  if (a->d == NULL)
    abort();
  a->d[a->n++] = (struct denial){strdup(key), strdup(text), allow_with ? strdup(allow_with) : NULL, 1};
  return true;
}

static void comm_of(pid_t pid, char *buf, size_t size) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
  buf[0] = '\0';
  cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? read(fd, buf, size - 1) : -1;
  if (n > 0) {
    buf[n] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
  }
}

/* --- Landlock, as the kernel checks it ------------------------------------------------------- */

static bool at_or_beneath(const char *path, const char *dir) {
  if (strcmp(dir, "/") == 0)
    return true;
  size_t n = strlen(dir);
  return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* The rights of `want` that layer l refuses on path. */
static uint64_t layer_refuses(const struct spec_landlock *l, int abi, const char *path, uint64_t want) {
  uint64_t handled = l->handled[SPEC_LANDLOCK_FS];
  if (abi > 0)
    handled &= spec_landlock_supported(SPEC_LANDLOCK_FS, abi);
  uint64_t need = want & handled;
  if (need == 0)
    return 0;
  for (size_t i = 0; i < l->deny.count; i++)
    if (at_or_beneath(path, l->deny.items[i]))
      return need;
  uint64_t granted = 0;
  for (size_t i = 0; i < l->n_paths; i++)
    if (l->paths[i].path[0] == '/' && at_or_beneath(path, l->paths[i].path))
      granted |= l->paths[i].access;
  return need & ~granted;
}

static void dir_of(const char *path, char *out, size_t size) {
  snprintf(out, size, "%s", path);
  char *slash = strrchr(out, '/');
  if (slash == out)
    out[1] = '\0';
  else if (slash)
    *slash = '\0';
}

static void on_call(void *arg, const struct observed_call *c) {
  struct audit_session *a = arg;
  for (int i = 0; i < c->n_files; i++) {
    const struct observed_file *f = &c->files[i];
    if (cm_log_debug_enabled()) {
      cleanup_free char *want = spec_landlock_access_names(SPEC_LANDLOCK_FS, f->access);
      cm_debug("audit: pid %d %s %s (%s)", (int)c->pid, c->name, f->path, want);
    }
    for (size_t k = 0; k < a->n_layers; k++) {
      uint64_t refused = layer_refuses(a->layers[k], a->kernel_abi, f->path, f->access);
      if (!refused)
        continue;
      cleanup_free char *rights = spec_landlock_access_names(SPEC_LANDLOCK_FS, refused);
      bool learned = strcmp(a->layer_names[k], "learned policy") == 0;
      cleanup_free char *allow = NULL;
      if (learned) {
        /* Where learning would have put the rule: a file's read/write rights on its directory. */
        char dir[PATH_MAX];
        bool own =
            (refused & ~(uint64_t)LL_FS_FILE_RIGHTS) == 0 && !(refused & (LL_FS_EXECUTE | LL_FS_IOCTL_DEV));
        if (own)
          dir_of(f->path, dir, sizeof(dir));
        else
          snprintf(dir, sizeof(dir), "%s", f->path);
        allow = learned_policy_allow_path(dir, refused);
      }
      char comm[64];
      comm_of(c->pid, comm, sizeof(comm));
      char key[PATH_MAX + 128], text[PATH_MAX + 256], rule[160];
      snprintf(key, sizeof(key), "file %s %s %s", f->path, rights, a->layer_names[k]);
      snprintf(text, sizeof(text), "file %s (%s, by %s): denied by the %s Landlock layer", f->path, rights,
               c->name, a->layer_names[k]);
      snprintf(rule, sizeof(rule), "%s: no rule grants %s here", a->layer_names[k], rights);
      /* Every denial is one record (the summary counts the identical ones). */
      note(a, key, text, allow);
      {
        struct audit_log_record r = {.event = "file",
                                     .decision = "deny",
                                     .by = "landlock",
                                     .syscall = c->name,
                                     .nr = c->nr,
                                     .pid = c->pid,
                                     .comm = comm,
                                     .errnum = EACCES,
                                     .path = f->path,
                                     .access = rights,
                                     .layer = a->layer_names[k],
                                     .rule = rule,
                                     .reason =
                                         learned ? NULL : "the profile's layer: a policy cannot allow it",
                                     .allow_with = allow};
        audit_log_write(a->log_fd, a->id, &r);
      }
      break; /* the first layer that refuses is the one named; the kernel needs only one */
    }
  }
}

static void on_denial(void *arg, const struct kernel_denial *d) {
  struct audit_session *a = arg;
  const char *name = d->name ? d->name : "?";
  /* mcp.json (and the learned policy after it) answer clone3 ENOSYS on purpose: libc then uses
   * clone, whose flags a filter can check. Not a denial anyone should act on. */
  if (strcmp(name, "clone3") == 0)
    return;
  bool only_args = false;
  bool listed = a->policy && learned_policy_has_syscall(a->policy, name, &only_args);
  char rule[200];
  cleanup_free char *allow = NULL;
  const char *reason = NULL;
  if (a->policy && !listed) {
    snprintf(rule, sizeof(rule), "learned policy: %s is not in seccomp.syscalls (default SCMP_ACT_ERRNO)",
             name);
    allow = learned_policy_allow_syscall(name);
  } else if (a->policy && only_args) {
    snprintf(rule, sizeof(rule), "learned policy: %s only with the arguments seen while learning", name);
    allow = learned_policy_allow_syscall(name);
    reason = "the kernel's record does not hold the arguments: this line allows any";
  } else {
    snprintf(rule, sizeof(rule), "the mcp profile (mcp.json) or the config's linux.seccomp");
    reason = "a learned policy only ever adds denials: it cannot allow this";
  }
  char key[200], text[400];
  snprintf(key, sizeof(key), "syscall %s errno %d", name, d->errnum);
  snprintf(text, sizeof(text), "syscall %s (pid %d, %s): denied by %s", name, (int)d->pid, d->comm, rule);
  /* Every denial the kernel reports is one record. */
  note(a, key, text, allow);
  struct audit_log_record r = {.time = d->time[0] ? d->time : NULL,
                               .event = "syscall",
                               .decision = "deny",
                               .by = "seccomp",
                               .syscall = name,
                               .nr = d->nr,
                               .pid = d->pid,
                               .comm = d->comm,
                               .exe = d->exe,
                               .errnum = d->errnum,
                               .rule = rule,
                               .reason = reason,
                               .allow_with = allow};
  audit_log_write(a->log_fd, a->id, &r);
}

static void on_no_records(void *arg, const char *why) {
  struct audit_session *a = arg;
  free(a->no_records);
  a->no_records = strdup(why);
  struct audit_log_record r = {
      .event = "audit", .decision = "incomplete", .by = "seccomp", .nr = -1, .reason = why};
  audit_log_write(a->log_fd, a->id, &r);
}

void audit_session_sink(struct audit_session *a, struct observer_sink *out) {
  *out = (struct observer_sink){
      .call = on_call, .denial = on_denial, .no_kernel_records = on_no_records, .arg = a};
}

size_t audit_session_denials(const struct audit_session *a) {
  return a->n;
}

static void note_host(struct audit_session *a, const char *host, unsigned port, const char *rule) {
  char key[300], text[400];
  snprintf(key, sizeof(key), "host %s:%u", host, port);
  snprintf(text, sizeof(text), "host %s:%u: refused by the egress broker (%s)", host, port,
           rule ? rule : "no rule");
  cleanup_free char *allow = learned_policy_allow_host(host, port);
  note(a, key, text, allow);
}

/* v's string, or "" */
static const char *sv(yajl_val v) {
  return v && v->type == yajl_t_string ? v->u.string : "";
}

void audit_session_read_log(struct audit_session *a, int log_fd, off_t start) {
  if (log_fd < 0)
    return;
  char link[64];
  snprintf(link, sizeof(link), "/proc/self/fd/%d", log_fd);
  int rfd = open(link, O_RDONLY | O_CLOEXEC);
  if (rfd < 0)
    return;
  cleanup_fclose FILE *f = lseek(rfd, start, SEEK_SET) < 0 ? NULL : fdopen(rfd, "r");
  if (f == NULL) {
    close(rfd);
    return;
  }
  char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, f) > 0) {
    yajl_val v = yajl_tree_parse(line, NULL, 0);
    if (v == NULL)
      continue;
    yajl_val event = jfind(v, "event"), decision = jfind(v, "decision"), host = jfind(v, "host"),
             port = jfind(v, "port"), rule = jfind(v, "rule"), reason = jfind(v, "reason");
    if (strcmp(sv(event), "connect") == 0 && sv(decision)[0] && strcmp(sv(decision), "allow") != 0 &&
        sv(host)[0])
      note_host(a, sv(host), YAJL_IS_INTEGER(port) ? (unsigned)YAJL_GET_INTEGER(port) : 0,
                sv(rule)[0] ? sv(rule) : sv(reason)[0] ? sv(reason) : NULL);
    yajl_tree_free(v);
  }
  free(line);
}

void audit_session_summary(struct audit_session *a, int to) {
  cleanup_fclose FILE *f = fdopen(dup(to), "w");
  if (f == NULL)
    return;
  /* Without the kernel's seccomp records (rootless) only file and host denials can be counted:
   * never claim the run had no denial at all. */
  const char *what = a->no_records ? " file or host" : "";
  if (a->n == 0)
    fprintf(f, "codemode-run: audit: no%s denial in this run\n", what);
  else
    fprintf(f, "codemode-run: audit: %zu%s denial%s in this run:\n", a->n, what, a->n == 1 ? "" : "s");
  for (size_t i = 0; i < a->n; i++) {
    fprintf(f, "  %s", a->d[i].text);
    if (a->d[i].count > 1)
      fprintf(f, " (%u times)", a->d[i].count);
    fputc('\n', f);
    if (a->d[i].allow_with)
      fprintf(f, "    allowed by this policy line: %s\n", a->d[i].allow_with);
  }
  if (a->no_records)
    fprintf(f,
            "codemode-run: audit: syscalls denied by seccomp cannot be shown (the kernel enforced them "
            "regardless): %s\n",
            a->no_records);
}

void audit_session_free(struct audit_session *a) {
  if (a == NULL)
    return;
  for (size_t i = 0; i < a->n; i++) {
    free(a->d[i].key);
    free(a->d[i].text);
    free(a->d[i].allow_with);
  }
  free(a->d);
  free(a->no_records);
  free(a->id);
  free(a);
}
