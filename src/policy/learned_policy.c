/* The learned policy's model: adding what a run saw, normalizing, merging, diffing, and what
 * codemode-run --policy makes of it (policy/learned_policy.h). The file format is
 * learned_policy_json.c, the collapse of paths to directories learned_paths.c. */
#include "policy/learned_policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/learned_internal.h"
#include "policy/seccomp_profile.h"
#include "spec/json_util.h"

const char *const learned_baseline_syscalls[] = {
    /* memory, time, the process's own ids and signals: what every runtime does constantly */
    "read",           "write",        "readv",           "writev",
    "pread64",        "pwrite64",     "close",           "fstat",
    "lseek",          "mmap",         "munmap",          "mprotect",
    "madvise",        "brk",          "mremap",          "futex",
    "sched_yield",    "nanosleep",    "clock_nanosleep", "clock_gettime",
    "gettimeofday",   "getpid",       "gettid",          "rt_sigreturn",
    "rt_sigprocmask", "rt_sigaction", "sigaltstack",     "restart_syscall",
    "exit",           "exit_group",   "epoll_wait",      "epoll_pwait",
    "poll",           "ppoll",        "getrandom",       NULL};

const struct learned_baseline_path learned_baseline_paths[] = {
    {"/sys/devices/system/cpu", LL_FS_READ_FILE | LL_FS_READ_DIR},
    {"/etc/ld.so.cache", LL_FS_READ_FILE},
    {"/etc/localtime", LL_FS_READ_FILE},
    {"/dev/null", LL_FS_READ_FILE | LL_FS_WRITE_FILE | LL_FS_TRUNCATE},
    {"/dev/zero", LL_FS_READ_FILE},
    {"/dev/urandom", LL_FS_READ_FILE},
    {"/dev/random", LL_FS_READ_FILE},
    {NULL, 0}};

bool learned_is_baseline(const char *name) {
  for (size_t i = 0; learned_baseline_syscalls[i]; i++)
    if (strcmp(learned_baseline_syscalls[i], name) == 0)
      return true;
  return false;
}

/* How many distinct argument sets a syscall may show before its rule allows any arguments: the
 * sets a server uses are few and stable (a thread's clone flags, its socket families); past
 * these, the set says nothing a reviewer could check. */
size_t learned_key_limit(const char *name) {
  if (strcmp(name, "clone") == 0)
    return 8;
  if (strcmp(name, "socket") == 0)
    return 16;
  if (strcmp(name, "socketpair") == 0)
    return 4;
  if (strcmp(name, "ioctl") == 0)
    return 32;
  if (strcmp(name, "prctl") == 0)
    return 16;
  return 0;
}

/* --- seen ------------------------------------------------------------------------------------ */

void learned_seen_merge(struct learned_seen *into, const struct learned_seen *from) {
  if (from == NULL)
    return;
  into->baseline |= from->baseline;
  into->count += from->count;
  bool earlier = from->first[0] && (!into->first[0] || strcmp(from->first, into->first) < 0);
  if (earlier) {
    memcpy(into->first, from->first, sizeof(into->first));
    into->run = from->run;
  } else if (!into->run) {
    into->run = from->run;
  }
}

void learned_seen_format(const struct learned_seen *s, char *buf, size_t size) {
  if (s->baseline && s->count == 0) {
    snprintf(buf, size, "the baseline: libc reads it on its own when it pleases, so it is allowed unseen");
    return;
  }
  if (s->count == 0 && !s->first[0]) {
    snprintf(buf, size, "not seen (written by hand)");
    return;
  }
  snprintf(buf, size, "seen %llu time%s, first %s (run %d)", (unsigned long long)s->count,
           s->count == 1 ? "" : "s", s->first[0] ? s->first : "?", s->run);
}

void learned_seen_parse(const char *comment, struct learned_seen *out) {
  memset(out, 0, sizeof(*out));
  out->baseline = comment && strstr(comment, "the baseline: ") != NULL;
  const char *p = comment ? strstr(comment, "seen ") : NULL;
  if (p == NULL)
    return;
  unsigned long long count = 0;
  char first[32] = "";
  int run = 0;
  if (sscanf(p, "seen %llu time%*[s], first %31s (run %d)", &count, first, &run) < 2 &&
      sscanf(p, "seen %llu time, first %31s (run %d)", &count, first, &run) < 2)
    return;
  out->count = count;
  /* A time as learn mode writes it (RFC 3339: digits, letters, ':' '.' '+' '-'), or unknown: a
   * hand-edited "first 21);" would otherwise be written back with its ';', and the next read
   * would take that for the start of the rule's "; N paths beneath" part (fuzz_learned_policy). */
  bool time_like = strcmp(first, "?") != 0;
  for (const char *c = first; *c && time_like; c++)
    time_like = (*c >= '0' && *c <= '9') || (*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || *c == ':' ||
                *c == '.' || *c == '+' || *c == '-';
  if (time_like)
    snprintf(out->first, sizeof(out->first), "%s", first);
  out->run = run;
}

/* --- adding ---------------------------------------------------------------------------------- */

static int compare_key(const struct learned_key *a, const struct learned_key *b) {
  if (a->n != b->n)
    return a->n - b->n;
  for (int i = 0; i < a->n; i++) {
    const struct spec_seccomp_arg *x = &a->args[i], *y = &b->args[i];
    if (x->index != y->index)
      return x->index < y->index ? -1 : 1;
    if (x->op != y->op)
      return x->op < y->op ? -1 : 1;
    if (x->value != y->value)
      return x->value < y->value ? -1 : 1;
    if (x->value_two != y->value_two)
      return x->value_two < y->value_two ? -1 : 1;
  }
  return 0;
}

void learned_policy_add_rule(struct learned_policy *p, const char *name, const struct learned_key *key,
                             const struct learned_seen *seen) {
  static const struct learned_key none = {0};
  if (key == NULL)
    key = &none;
  for (size_t i = 0; i < p->n_rules; i++)
    if (strcmp(p->rules[i].name, name) == 0 && compare_key(&p->rules[i].key, key) == 0) {
      learned_seen_merge(&p->rules[i].seen, seen);
      return;
    }
  p->rules = realloc(p->rules, (p->n_rules + 1) * sizeof(*p->rules));
  if (p->rules == NULL)
    abort();
  struct learned_rule *r = &p->rules[p->n_rules++];
  *r = (struct learned_rule){.name = xstrdup(name), .key = *key};
  learned_seen_merge(&r->seen, seen);
}

void learned_policy_add_path(struct learned_policy *p, const char *path, uint64_t access,
                             const struct learned_seen *seen, size_t paths, const char *example, bool file) {
  for (size_t i = 0; i < p->n_paths; i++) {
    struct learned_path *l = &p->paths[i];
    if (strcmp(l->path, path) == 0 && l->file == file) {
      l->access |= access;
      learned_seen_merge(&l->seen, seen);
      l->paths += paths;
      if (l->example == NULL && example)
        l->example = xstrdup(example);
      return;
    }
  }
  p->paths = realloc(p->paths, (p->n_paths + 1) * sizeof(*p->paths));
  if (p->paths == NULL)
    abort();
  struct learned_path *l = &p->paths[p->n_paths++];
  *l = (struct learned_path){.path = xstrdup(path), .access = access, .paths = paths, .file = file};
  if (example)
    l->example = xstrdup(example);
  learned_seen_merge(&l->seen, seen);
}

static void add_entry(struct learned_entry **v, size_t *n, const char *text,
                      const struct learned_seen *seen) {
  for (size_t i = 0; i < *n; i++)
    if (strcmp((*v)[i].text, text) == 0) {
      learned_seen_merge(&(*v)[i].seen, seen);
      return;
    }
  *v = realloc(*v, (*n + 1) * sizeof(**v));
  if (*v == NULL)
    abort();
  (*v)[*n] = (struct learned_entry){.text = xstrdup(text)};
  learned_seen_merge(&(*v)[*n].seen, seen);
  (*n)++;
}

void learned_policy_add_host(struct learned_policy *p, const char *rule, const struct learned_seen *seen) {
  add_entry(&p->hosts, &p->n_hosts, rule, seen);
}

void learned_policy_add_denied(struct learned_policy *p, const char *what, const struct learned_seen *seen) {
  add_entry(&p->denied, &p->n_denied, what, seen);
}

/* --- normalize ------------------------------------------------------------------------------- */

static int rule_order(const void *a, const void *b) {
  const struct learned_rule *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  return c ? c : compare_key(&x->key, &y->key);
}

static int entry_order(const void *a, const void *b) {
  return strcmp(((const struct learned_entry *)a)->text, ((const struct learned_entry *)b)->text);
}

static void normalize_rules(struct learned_policy *p) {
  if (p->n_rules)  /* qsort of NULL is undefined */
    qsort(p->rules, p->n_rules, sizeof(*p->rules), rule_order);
  size_t out = 0;
  for (size_t i = 0; i < p->n_rules;) {
    /* The rules of one name: [i, j). */
    size_t j = i;
    bool any = false;
    while (j < p->n_rules && strcmp(p->rules[j].name, p->rules[i].name) == 0) {
      any |= p->rules[j].key.n == 0;
      j++;
    }
    size_t limit = learned_key_limit(p->rules[i].name);
    /* A baseline syscall, one without argument rules, one allowed with any arguments, or more
     * sets than its limit: one unconditional rule with every sighting. */
    if (any || limit == 0 || j - i > limit || learned_is_baseline(p->rules[i].name)) {
      struct learned_rule r = {.name = p->rules[i].name};
      for (size_t k = i; k < j; k++) {
        learned_seen_merge(&r.seen, &p->rules[k].seen);
        if (k > i)
          free(p->rules[k].name);
      }
      p->rules[out++] = r;
    } else {
      for (size_t k = i; k < j; k++)
        p->rules[out++] = p->rules[k];
    }
    i = j;
  }
  p->n_rules = out;
}

void learned_policy_normalize(struct learned_policy *p) {
  normalize_rules(p);
  learned_paths_collapse(p);
  if (p->n_hosts)  /* qsort of NULL is undefined */
    qsort(p->hosts, p->n_hosts, sizeof(*p->hosts), entry_order);
  if (p->n_denied)  /* qsort of NULL is undefined */
    qsort(p->denied, p->n_denied, sizeof(*p->denied), entry_order);
}

/* --- free ------------------------------------------------------------------------------------ */

void learned_run_clear(struct learned_run *r) {
  free(r->started);
  free(r->source);
  free(r->command);
  free(r->kernel);
  free(r->seccomp_unseen);
  spec_strv_free(&r->mounts);
  memset(r, 0, sizeof(*r));
}

void learned_policy_free(struct learned_policy *p) {
  if (p == NULL)
    return;
  for (size_t i = 0; i < p->n_runs; i++)
    learned_run_clear(&p->runs[i]);
  for (size_t i = 0; i < p->n_rules; i++)
    free(p->rules[i].name);
  for (size_t i = 0; i < p->n_paths; i++) {
    free(p->paths[i].path);
    free(p->paths[i].example);
  }
  for (size_t i = 0; i < p->n_hosts; i++)
    free(p->hosts[i].text);
  for (size_t i = 0; i < p->n_denied; i++)
    free(p->denied[i].text);
  free(p->runs);
  free(p->rules);
  free(p->paths);
  free(p->hosts);
  free(p->denied);
  spec_strv_free(&p->made_dirs);
  memset(p, 0, sizeof(*p));
}

/* --- merge ----------------------------------------------------------------------------------- */

void learned_run_copy(struct learned_run *dst, const struct learned_run *src, int run) {
  *dst = (struct learned_run){.run = run,
                              .seconds = src->seconds,
                              .landlock_abi = src->landlock_abi,
                              .notifications = src->notifications};
  dst->started = src->started ? xstrdup(src->started) : NULL;
  dst->source = src->source ? xstrdup(src->source) : NULL;
  dst->command = src->command ? xstrdup(src->command) : NULL;
  dst->kernel = src->kernel ? xstrdup(src->kernel) : NULL;
  dst->seccomp_unseen = src->seccomp_unseen ? xstrdup(src->seccomp_unseen) : NULL;
  for (size_t i = 0; i < src->mounts.count; i++)
    spec_strv_push(&dst->mounts, src->mounts.items[i]);
}

void learned_policy_merge(struct learned_policy *into, const struct learned_policy *from) {
  int offset = 0;
  for (size_t i = 0; i < into->n_runs; i++)
    if (into->runs[i].run > offset)
      offset = into->runs[i].run;
  into->runs = realloc(into->runs, (into->n_runs + from->n_runs) * sizeof(*into->runs));
  if (into->runs == NULL && from->n_runs)
    abort();
  for (size_t i = 0; i < from->n_runs; i++)
    learned_run_copy(&into->runs[into->n_runs++], &from->runs[i], from->runs[i].run + offset);
  struct learned_seen s;
#define RENUMBERED(seen) (s = (seen), s.run = s.run ? s.run + offset : 0, &s)
  for (size_t i = 0; i < from->n_rules; i++)
    learned_policy_add_rule(into, from->rules[i].name, &from->rules[i].key, RENUMBERED(from->rules[i].seen));
  for (size_t i = 0; i < from->n_paths; i++)
    learned_policy_add_path(into, from->paths[i].path, from->paths[i].access, RENUMBERED(from->paths[i].seen),
                            from->paths[i].paths, from->paths[i].example, from->paths[i].file);
  for (size_t i = 0; i < from->n_hosts; i++)
    learned_policy_add_host(into, from->hosts[i].text, RENUMBERED(from->hosts[i].seen));
  for (size_t i = 0; i < from->n_denied; i++)
    learned_policy_add_denied(into, from->denied[i].text, RENUMBERED(from->denied[i].seen));
#undef RENUMBERED
  if (from->landlock_abi > into->landlock_abi)
    into->landlock_abi = from->landlock_abi;
  learned_policy_normalize(into);
}

/* --- diff ------------------------------------------------------------------------------------ */

/* "socket(arg0 == 16, arg2 == 0)" */
char *learned_rule_describe(const struct learned_rule *r) {
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  fputs(r->name, f);
  if (r->key.n) {
    fputc('(', f);
    for (int i = 0; i < r->key.n; i++) {
      const struct spec_seccomp_arg *a = &r->key.args[i];
      if (i)
        fputs(", ", f);
      if (a->op == SPEC_SECCOMP_OP_MASKED_EQ)
        fprintf(f, "arg%u & 0x%llx == 0x%llx", a->index, (unsigned long long)a->value,
                (unsigned long long)a->value_two);
      else
        fprintf(f, "arg%u == 0x%llx", a->index, (unsigned long long)a->value);
    }
    fputc(')', f);
  }
  fclose(f);
  return out;
}

void learned_policy_diff(const struct learned_policy *old, const struct learned_policy *new_,
                         struct policy_report *out) {
  /* Rules: both sides are sorted by learned_policy_normalize (the parser normalizes). */
  for (int side = 0; side < 2; side++) {
    const struct learned_policy *a = side ? old : new_, *b = side ? new_ : old;
    for (size_t i = 0; i < a->n_rules; i++) {
      /* The baseline is allowed by every learned policy, listed or not. */
      if (learned_is_baseline(a->rules[i].name))
        continue;
      bool found = false;
      for (size_t k = 0; k < b->n_rules && !found; k++)
        found = strcmp(a->rules[i].name, b->rules[k].name) == 0 &&
                compare_key(&a->rules[i].key, &b->rules[k].key) == 0;
      if (!found) {
        char *d = learned_rule_describe(&a->rules[i]);
        policy_report_add(out, "seccomp: %c %s", side ? '-' : '+', d);
        free(d);
      }
    }
  }
  if (old->landlock_abi != new_->landlock_abi)
    policy_report_add(out, "landlock: abi %d -> %d", old->landlock_abi, new_->landlock_abi);
  for (size_t i = 0; i < new_->n_paths; i++) {
    const struct learned_path *n = &new_->paths[i];
    const struct learned_path *o = NULL;
    for (size_t k = 0; k < old->n_paths && !o; k++)
      if (strcmp(old->paths[k].path, n->path) == 0)
        o = &old->paths[k];
    if (o && o->access == n->access)
      continue;
    char *now = spec_landlock_access_names(SPEC_LANDLOCK_FS, n->access);
    if (o == NULL) {
      policy_report_add(out, "landlock: + %s: %s", n->path, now);
    } else {
      char *was = spec_landlock_access_names(SPEC_LANDLOCK_FS, o->access);
      policy_report_add(out, "landlock: ~ %s: %s -> %s", n->path, was, now);
      free(was);
    }
    free(now);
  }
  for (size_t i = 0; i < old->n_paths; i++) {
    bool found = false;
    for (size_t k = 0; k < new_->n_paths && !found; k++)
      found = strcmp(old->paths[i].path, new_->paths[k].path) == 0;
    if (!found) {
      char *was = spec_landlock_access_names(SPEC_LANDLOCK_FS, old->paths[i].access);
      policy_report_add(out, "landlock: - %s: %s", old->paths[i].path, was);
      free(was);
    }
  }
  for (int side = 0; side < 2; side++) {
    const struct learned_policy *a = side ? old : new_, *b = side ? new_ : old;
    for (size_t i = 0; i < a->n_hosts; i++) {
      bool found = false;
      for (size_t k = 0; k < b->n_hosts && !found; k++)
        found = strcmp(a->hosts[i].text, b->hosts[k].text) == 0;
      if (!found)
        policy_report_add(out, "egress: %c %s", side ? '-' : '+', a->hosts[i].text);
    }
  }
}

/* --- applying -------------------------------------------------------------------------------- */

int learned_policy_seccomp(const struct learned_policy *p, struct spec_seccomp *out, struct cm_error **err) {
  /* Through Docker's format, exactly as `--seccomp` would read the section on its own. Resolved
   * for no capabilities: the mcp profile leaves the process none. */
  char *json = learned_policy_seccomp_json(p);
  struct seccomp_profile_target target = {0};
  int rc = seccomp_profile_load_string(json, strlen(json), "learned policy: .seccomp", &target, out, err);
  free(json);
  return rc;
}

void learned_policy_landlock(const struct learned_policy *p, struct spec_landlock *out) {
  memset(out, 0, sizeof(*out));
  if (p->landlock_abi <= 0)
    return;
  out->present = true;
  out->abi = p->landlock_abi;
  out->best_effort = true;
  out->source = xstrdup("learned policy");
  /* Every filesystem right of the ABI the run had: what the run never did is refused. */
  out->handled[SPEC_LANDLOCK_FS] = spec_landlock_supported(SPEC_LANDLOCK_FS, p->landlock_abi);
  for (size_t i = 0; i < p->n_paths; i++)
    spec_landlock_add_path(out, p->paths[i].path, p->paths[i].access);
}

bool learned_policy_has_syscall(const struct learned_policy *p, const char *name, bool *only_with_args) {
  bool found = false, any = false;
  for (size_t i = 0; i < p->n_rules; i++)
    if (strcmp(p->rules[i].name, name) == 0) {
      found = true;
      any |= p->rules[i].key.n == 0;
    }
  if (learned_is_baseline(name))
    found = any = true;
  if (only_with_args)
    *only_with_args = found && !any;
  return found;
}

char *learned_policy_allow_syscall(const char *name) {
  char *s, *json = learned_json_string(name);
  if (asprintf(&s, "\"seccomp\": {\"syscalls\": [{\"names\": [%s], \"action\": \"SCMP_ACT_ALLOW\"}]}", json) < 0)
    abort();
  free(json);
  return s;
}

char *learned_policy_allow_path(const char *path, uint64_t access) {
  char *names = spec_landlock_access_names(SPEC_LANDLOCK_FS, access);
  /* "read_file read_dir" → "\"read_file\", \"read_dir\"" */
  char *list = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&list, &len);
  char *save = NULL;
  int n = 0;
  for (char *w = strtok_r(names, " ", &save); w; w = strtok_r(NULL, " ", &save))
    fprintf(f, "%s\"%s\"", n++ ? ", " : "", w);
  fclose(f);
  free(names);
  char *json = learned_json_string(path);
  char *s;
  if (asprintf(&s, "\"landlock\": {\"pathBeneath\": [{\"allowedAccess\": [%s], \"parent\": [%s]}]}", list,
               json) < 0)
    abort();
  free(list);
  free(json);
  return s;
}

char *learned_policy_allow_host(const char *host, unsigned port) {
  char *rule, *s;
  if (asprintf(&rule, "allow-host %s:%u", host, port) < 0)
    abort();
  char *json = learned_json_string(rule);
  if (asprintf(&s, "\"egress\": {\"allow\": [{\"rule\": %s}]}", json) < 0)
    abort();
  free(rule);
  free(json);
  return s;
}
