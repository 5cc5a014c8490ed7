/* codemode-run --learn FILE: every call the learning filter notified becomes a seccomp rule (with
 * its arguments that matter) and every file it reached a Landlock right; the syscalls the kernel
 * denied meanwhile (the mcp profile underneath) are listed as denied during learning; the hosts
 * come from the egress broker's audit records. At the end, one policy file
 * (policy/learned_policy.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "linux/landlock.h"
#include "spec/json_util.h"
#include "supervisor/observe.h"
#include "util/audit_log.h"
#include "util/cleanup.h"

struct learn_session {
  struct learned_policy p;
  struct spec_strv mounts;
};

struct learn_session *learn_session_new(void) {
  struct learn_session *l = calloc(1, sizeof(*l));
  if (l == NULL)
    abort();
  return l;
}

void learn_session_mounts(struct learn_session *l, const struct spec *s) {
  spec_strv_free(&l->mounts);
  /* --host's binds, made under the root by codemode-run (spec.h's root_tree_mounts) */
  for (size_t i = 0; i < s->root_tree_mounts.count; i++)
    spec_strv_push(&l->mounts, s->root_tree_mounts.items[i]);
  for (size_t i = 0; i < s->n_mounts; i++) {
    const char *d = s->mounts[i].destination ? s->mounts[i].destination : "";
    /* /dev's and /proc's own mounts are not where a server keeps files */
    bool system = strcmp(d, "/") == 0 || strncmp(d, "/dev", 4) == 0 || strncmp(d, "/proc", 5) == 0 ||
                  strncmp(d, "/sys", 4) == 0;
    if (d[0] == '/' && !system)
      spec_strv_push(&l->mounts, d);
  }
}

static void now_seen(struct learned_seen *s) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  *s = (struct learned_seen){.count = 1, .run = 1};
  audit_time_format(tv.tv_sec, tv.tv_usec / 1000, s->first);
}

static void on_call(void *arg, const struct observed_call *c) {
  struct learn_session *l = arg;
  /* mcp.json answers clone3 ENOSYS on purpose (libc then uses clone, whose flags a filter can
   * check), and the learned policy keeps that rule: it is not a denial of the server's. */
  if (strcmp(c->name, "clone3") == 0)
    return;
  struct learned_seen seen;
  now_seen(&seen);
  learned_policy_add_rule(&l->p, c->name, &c->key, &seen);
  if (c->made_dir[0]) {
    bool known = false;
    for (size_t i = 0; i < l->p.made_dirs.count && !known; i++)
      known = strcmp(l->p.made_dirs.items[i], c->made_dir) == 0;
    if (!known)
      spec_strv_push(&l->p.made_dirs, c->made_dir);
  }
  for (int i = 0; i < c->n_files; i++) {
    uint64_t a = c->files[i].access;
    /* Only a file's own rights: a rule the collapse may move to its directory. */
    bool file = (a & ~LL_FS_FILE_RIGHTS) == 0;
    learned_policy_add_path(&l->p, c->files[i].path, a, &seen, 0, NULL, file);
  }
}

static void on_denial(void *arg, const struct kernel_denial *d) {
  struct learn_session *l = arg;
  if (d->name && strcmp(d->name, "clone3") == 0)
    return; /* mcp's ENOSYS by design (above) */
  char what[96];
  snprintf(what, sizeof(what), "syscall %s", d->name ? d->name : "?");
  struct learned_seen seen = {.count = 1, .run = 1};
  snprintf(seen.first, sizeof(seen.first), "%s", d->time);
  learned_policy_add_denied(&l->p, what, &seen);
}

void learn_session_sink(struct learn_session *l, struct observer_sink *out) {
  *out = (struct observer_sink){.call = on_call, .denial = on_denial, .arg = l};
}

/* v's string, or "" */
static const char *sv(yajl_val v) {
  return v && v->type == yajl_t_string ? v->u.string : "";
}

/* The broker's records since `start` (schema v1): each allowed connection's host and port is an
 * allow rule (a host the broker checked end to end, or an address a CIDR rule let through); each
 * refused one a denial while learning. */
static void hosts_from_audit_log(struct learn_session *l, int fd, off_t start) {
  if (fd < 0)
    return;
  char link[64], path[PATH_MAX];
  snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  cleanup_close int rfd = open(link, O_RDONLY | O_CLOEXEC);
  if (rfd < 0 || lseek(rfd, start, SEEK_SET) < 0)
    return;
  (void)path;
  cleanup_fclose FILE *f = fdopen(rfd, "r");
  if (f == NULL)
    return;
  rfd = -1;
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  while ((n = getline(&line, &cap, f)) > 0) {
    yajl_val v = yajl_tree_parse(line, NULL, 0);
    if (v == NULL)
      continue;
    yajl_val event = jfind(v, "event"), decision = jfind(v, "decision"), host = jfind(v, "host"),
             port = jfind(v, "port"), time = jfind(v, "time"), sni = jfind(v, "sni"), http_host = jfind(v, "http_host");
    if (strcmp(sv(event), "connect") == 0 && sv(decision)[0] && sv(host)[0] && YAJL_IS_INTEGER(port)) {
      struct learned_seen seen = {.count = 1, .run = 1};
      snprintf(seen.first, sizeof(seen.first), "%s", sv(time));
      char text[300];
      bool allowed = strcmp(sv(decision), "allow") == 0;
      unsigned char addr[16];
      /* A connection a CIDR rule let through names an address, not a host. */
      bool v4 = inet_pton(AF_INET, sv(host), addr) == 1, v6 = !v4 && inet_pton(AF_INET6, sv(host), addr) == 1;
      /* A host rule only for a name the broker verified: it records as host the name it resolved
       * itself or gave out for the address, the name the client sent in the sni / http_host
       * field. A record where they differ is not learned as the client's name (a server that
       * behaves while learned must not grant itself egress): it is listed as a denial. */
      if (allowed && !v4 && !v6 &&
          ((sv(sni)[0] && strcmp(sv(sni), sv(host)) != 0) || (sv(http_host)[0] && strcmp(sv(http_host), sv(host)) != 0)))
        allowed = false;
      if (allowed && (v4 || v6))
        snprintf(text, sizeof(text), "allow-cidr %s/%d:%lld", sv(host), v4 ? 32 : 128,
                 YAJL_GET_INTEGER(port));
      else
        snprintf(text, sizeof(text), "%s%s:%lld", allowed ? "allow-host " : "host ", sv(host),
                 YAJL_GET_INTEGER(port));
      if (allowed)
        learned_policy_add_host(&l->p, text, &seen);
      else
        learned_policy_add_denied(&l->p, text, &seen);
    }
    yajl_tree_free(v);
  }
  free(line);
}

int learn_session_write(struct learn_session *l, const char *path, const struct learned_run *run,
                        int audit_log_fd, off_t audit_log_start, struct cm_error **err) {
  hosts_from_audit_log(l, audit_log_fd, audit_log_start);
  l->p.runs = calloc(1, sizeof(*l->p.runs));
  if (l->p.runs == NULL)
    abort();
  learned_run_copy(&l->p.runs[0], run, 1);
  for (size_t i = 0; i < l->mounts.count; i++)
    spec_strv_push(&l->p.runs[0].mounts, l->mounts.items[i]);
  l->p.n_runs = 1;
  l->p.landlock_abi = run->landlock_abi;
  if (l->p.landlock_abi > 0)
    for (size_t i = 0; learned_baseline_paths[i].path; i++) {
      struct learned_seen base = {.baseline = true};
      learned_policy_add_path(&l->p, learned_baseline_paths[i].path, learned_baseline_paths[i].access, &base,
                              0, NULL, false);
    }
  learned_policy_normalize(&l->p);
  cleanup_free char *json = learned_policy_json(&l->p);
  size_t len = strlen(json);
  if (strcmp(path, "-") == 0) {
    ssize_t n = write(STDERR_FILENO, json, len);
    (void)n;
    return 0;
  }
  /* Written whole and renamed into place: a reader never sees half a policy. */
  cleanup_free char *tmp = NULL;
  if (asprintf(&tmp, "%s.tmp-%d", path, (int)getpid()) < 0)
    abort();
  cleanup_close int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0)
    return cm_error_set(err, errno, "--learn %s: create %s", path, tmp);
  for (size_t done = 0; done < len;) {
    ssize_t n = write(fd, json + done, len - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      int e = n < 0 ? errno : EIO;
      unlink(tmp);
      return cm_error_set(err, e, "--learn %s: write", path);
    }
    done += (size_t)n;
  }
  if (fsync(fd) < 0 || rename(tmp, path) < 0) {
    int e = errno;
    unlink(tmp);
    return cm_error_set(err, e, "--learn %s", path);
  }
  return 0;
}

void learn_session_free(struct learn_session *l) {
  if (l == NULL)
    return;
  learned_policy_free(&l->p);
  spec_strv_free(&l->mounts);
  free(l);
}
