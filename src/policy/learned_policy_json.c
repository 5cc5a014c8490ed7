/* The learned policy's file: written for people first (one rule per line, a comment on each
 * saying when it was seen and, for argument rules, what the numbers mean), read back by
 * --policy, merge and diff (policy/learned_policy.h has the layout). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_tree.h>

#include "policy/learned_internal.h"
#include "policy/seccomp_profile.h"
#include "spec/json_util.h"
#include "util/cleanup.h"
#include "util/json_escape.h"

/* --- names for the numbers in argument rules ------------------------------------------------- */

struct named {
  uint64_t value;
  const char *name;
};
static const struct named families[] = {{1, "AF_UNIX"},     {2, "AF_INET"},    {10, "AF_INET6"},
                                        {16, "AF_NETLINK"}, {17, "AF_PACKET"}, {38, "AF_ALG"},
                                        {40, "AF_VSOCK"},   {0, NULL}};
static const struct named sock_types[] = {
    {1, "SOCK_STREAM"}, {2, "SOCK_DGRAM"}, {3, "SOCK_RAW"}, {5, "SOCK_SEQPACKET"}, {0, NULL}};
static const struct named ioctls[] = {{0x5401, "TCGETS"},
                                      {0x5402, "TCSETS"},
                                      {0x5403, "TCSETSW"},
                                      {0x5404, "TCSETSF"},
                                      {0x540F, "TIOCGPGRP"},
                                      {0x5410, "TIOCSPGRP"},
                                      {0x5413, "TIOCGWINSZ"},
                                      {0x5414, "TIOCSWINSZ"},
                                      {0x541B, "FIONREAD"},
                                      {0x5421, "FIONBIO"},
                                      {0x5450, "FIONCLEX"},
                                      {0x5451, "FIOCLEX"},
                                      {0x5452, "FIOASYNC"},
                                      {0x8912, "SIOCGIFCONF"},
                                      {0x8933, "SIOCGIFINDEX"},
                                      {0x5429, "TIOCGSID"},
                                      {0x80045430, "TIOCGPTN"},
                                      {0x40045431, "TIOCSPTLCK"},
                                      {0, NULL}};
static const struct named prctls[] = {
    {1, "PR_SET_PDEATHSIG"},        {2, "PR_GET_PDEATHSIG"},     {3, "PR_GET_DUMPABLE"},
    {4, "PR_SET_DUMPABLE"},         {15, "PR_SET_NAME"},         {16, "PR_GET_NAME"},
    {22, "PR_SET_SECCOMP"},         {23, "PR_CAPBSET_READ"},     {24, "PR_CAPBSET_DROP"},
    {36, "PR_SET_CHILD_SUBREAPER"}, {38, "PR_SET_NO_NEW_PRIVS"}, {39, "PR_GET_NO_NEW_PRIVS"},
    {47, "PR_CAP_AMBIENT"},         {0x53564d41, "PR_SET_VMA"},  {0, NULL}};

static const char *name_of(const struct named *t, uint64_t v) {
  for (; t->name; t++)
    if (t->value == v)
      return t->name;
  return NULL;
}

/* What an argument rule means, for its comment ("AF_UNIX SOCK_STREAM: "); "" when nothing to say. */
static void key_meaning(const struct learned_rule *r, char *buf, size_t size) {
  buf[0] = '\0';
  if (r->key.n == 0)
    return;
  const struct spec_seccomp_arg *a = r->key.args;
  const char *n1 = NULL, *n2 = NULL;
  uint64_t v1 = a[0].op == SPEC_SECCOMP_OP_MASKED_EQ ? a[0].value_two : a[0].value;
  if (strcmp(r->name, "socket") == 0 || strcmp(r->name, "socketpair") == 0) {
    n1 = name_of(families, v1);
    if (r->key.n > 1)
      n2 = name_of(sock_types, a[1].value_two);
  } else if (strcmp(r->name, "ioctl") == 0) {
    n1 = name_of(ioctls, v1);
  } else if (strcmp(r->name, "prctl") == 0) {
    n1 = name_of(prctls, v1);
  } else if (strcmp(r->name, "clone") == 0) {
    snprintf(buf, size, "%s: ", (v1 & 0x10000) ? "a thread" : "a process");
    return;
  }
  if (n1)
    snprintf(buf, size, "%s%s%s: ", n1, n2 ? " " : "", n2 ? n2 : "");
}

/* --- writing --------------------------------------------------------------------------------- */

char *learned_json_string(const char *s) {
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  json_put_string(f, s);
  fclose(f);
  return out;
}

static void put_str(FILE *f, const char *s) {
  json_put_string(f, s ? s : "");
}

static void put_kv(FILE *f, const char *key, const char *value, bool comma) {
  fprintf(f, "%s\"%s\": ", comma ? ", " : "", key);
  put_str(f, value);
}

static void put_access(FILE *f, uint64_t mask) {
  fputc('[', f);
  int n = 0;
  for (int b = 0; b < 64; b++) {
    uint64_t bit = 1ULL << b;
    if (!(mask & bit))
      continue;
    const char *name = spec_landlock_right_name(SPEC_LANDLOCK_FS, bit);
    if (name)
      fprintf(f, "%s\"%s\"", n++ ? ", " : "", name);
    else
      fprintf(f, "%s%" PRIu64, n++ ? ", " : "", bit);
  }
  fputc(']', f);
}

static void write_seccomp(FILE *f, const struct learned_policy *p, const char *indent) {
  fprintf(
      f,
      "{\n%s  \"comment\": \"Docker's seccomp profile format (also for docker run --security-opt seccomp=FILE"
      " or codemode-run --seccomp FILE): every syscall the run made is allowed, nothing else; argument "
      "rules where it showed a small set.\",\n",
      indent);
  fprintf(f, "%s  \"defaultAction\": \"SCMP_ACT_ERRNO\",\n%s  \"defaultErrnoRet\": 1,\n", indent, indent);
  fprintf(f, "%s  \"archMap\": [{\"architecture\": \"%s\", \"subArchitectures\": []}],\n", indent,
          seccomp_profile_native_arch());
  fprintf(f, "%s  \"syscalls\": [\n%s    {\"names\": [", indent, indent);
  for (size_t i = 0; learned_baseline_syscalls[i]; i++)
    fprintf(f, "%s\"%s\"", i ? ", " : "", learned_baseline_syscalls[i]);
  fprintf(f, "], \"action\": \"SCMP_ACT_ALLOW\", \"comment\": \"the baseline: allowed while learning without "
             "being watched, so always allowed\"}");
  for (size_t i = 0; i < p->n_rules; i++) {
    const struct learned_rule *r = &p->rules[i];
    if (learned_is_baseline(r->name))
      continue;
    fprintf(f, ",\n%s    {\"names\": [", indent);
    put_str(f, r->name); /* the name came from a file: never trusted to be a plain word */
    fputs("], \"action\": \"SCMP_ACT_ALLOW\"", f);
    if (r->key.n) {
      fputs(", \"args\": [", f);
      for (int k = 0; k < r->key.n; k++) {
        const struct spec_seccomp_arg *a = &r->key.args[k];
        fprintf(f, "%s{\"index\": %u, \"value\": %" PRIu64, k ? ", " : "", a->index, a->value);
        if (a->op == SPEC_SECCOMP_OP_MASKED_EQ)
          fprintf(f, ", \"valueTwo\": %" PRIu64 ", \"op\": \"SCMP_CMP_MASKED_EQ\"}", a->value_two);
        else
          fputs(", \"op\": \"SCMP_CMP_EQ\"}", f);
      }
      fputc(']', f);
    }
    char meaning[96], seen[128], comment[256];
    key_meaning(r, meaning, sizeof(meaning));
    learned_seen_format(&r->seen, seen, sizeof(seen));
    snprintf(comment, sizeof(comment), "%s%s", meaning, seen);
    put_kv(f, "comment", comment, true);
    fputc('}', f);
  }
  /* Loaded after the mcp filter, this one answers first among equal actions: it must not turn
   * mcp's ENOSYS for clone3 (libc then falls back to clone) into an EPERM. */
  fprintf(f,
          ",\n%s    {\"names\": [\"clone3\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 38, \"comment\": "
          "\"as in mcp.json: its flags are behind a pointer seccomp cannot read; ENOSYS makes libc fall back "
          "to clone\"}\n%s  ]\n%s}",
          indent, indent, indent);
}

static void write_landlock(FILE *f, const struct learned_policy *p) {
  fprintf(f,
          "{\n    \"comment\": \"The landlockconfig format of the run.codemode.landlock annotation: one more "
          "Landlock layer; every filesystem right of ABI %d is handled, so what the run never did is "
          "refused.\",\n",
          p->landlock_abi);
  fprintf(f, "    \"abi\": %d,\n    \"ruleset\": [{\"handledAccessFs\": ", p->landlock_abi);
  put_access(f, spec_landlock_supported(SPEC_LANDLOCK_FS, p->landlock_abi));
  fputs("}],\n    \"pathBeneath\": [", f);
  for (size_t i = 0; i < p->n_paths; i++) {
    const struct learned_path *l = &p->paths[i];
    fprintf(f, "%s\n      {\"allowedAccess\": ", i ? "," : "");
    put_access(f, l->access);
    fputs(", \"parent\": [", f);
    put_str(f, l->path);
    fputc(']', f);
    char seen[128], comment[PATH_MAX + 256];
    learned_seen_format(&l->seen, seen, sizeof(seen));
    if (l->paths > 1 && l->example)
      snprintf(comment, sizeof(comment), "%s; %zu paths beneath, e.g. %s", seen, l->paths, l->example);
    else if (l->example && strcmp(l->example, l->path) != 0)
      snprintf(comment, sizeof(comment), "%s; %s", seen, l->example);
    else
      snprintf(comment, sizeof(comment), "%s", seen);
    put_kv(f, "comment", comment, true);
    fputc('}', f);
  }
  fputs(p->n_paths ? "\n    ]\n  }" : "]\n  }", f);
}

static void write_entries(FILE *f, const char *key, const char *field, const struct learned_entry *v,
                          size_t n, const char *prefix) {
  fprintf(f, "\"%s\": [", key);
  for (size_t i = 0; i < n; i++) {
    char seen[128], comment[256];
    learned_seen_format(&v[i].seen, seen, sizeof(seen));
    snprintf(comment, sizeof(comment), "%s%s", prefix, seen);
    fprintf(f, "%s\n    {", i ? "," : "");
    put_kv(f, field, v[i].text, false);
    put_kv(f, "comment", comment, true);
    fputc('}', f);
  }
  fputs(n ? "\n  ]" : "]", f);
}

char *learned_policy_seccomp_json(const struct learned_policy *p) {
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  write_seccomp(f, p, "");
  fputc('\n', f);
  fclose(f);
  return out;
}

char *learned_policy_json(const struct learned_policy *p) {
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  fprintf(f, "{\n  \"codemodePolicy\": %d,\n", LEARNED_POLICY_FORMAT);
  fprintf(f,
          "  \"comment\": \"What %zu observed run%s of this server used, learned by codemode. Apply it with "
          "codemode-run --policy FILE: on top of the mcp profile, never instead of it. Merge runs with "
          "codemode learn --merge; compare versions with codemode policy diff. codemode-profiles(5).\",\n",
          p->n_runs, p->n_runs == 1 ? "" : "s");
  fputs("  \"runs\": [", f);
  for (size_t i = 0; i < p->n_runs; i++) {
    const struct learned_run *r = &p->runs[i];
    fprintf(f, "%s\n    {\"run\": %d", i ? "," : "", r->run);
    if (r->started)
      put_kv(f, "started", r->started, true);
    fprintf(f, ", \"seconds\": %.2f", r->seconds);
    if (r->source)
      put_kv(f, "source", r->source, true);
    if (r->command)
      put_kv(f, "command", r->command, true);
    if (r->kernel)
      put_kv(f, "kernel", r->kernel, true);
    fprintf(f, ", \"landlockAbi\": %d, \"notifications\": %" PRIu64 ", \"mounts\": [", r->landlock_abi,
            r->notifications);
    for (size_t k = 0; k < r->mounts.count; k++) {
      fputs(k ? ", " : "", f);
      put_str(f, r->mounts.items[k]);
    }
    fputs("]", f);
    if (r->seccomp_unseen)
      put_kv(f, "seccompDenialsUnseen", r->seccomp_unseen, true);
    fputs("}", f);
  }
  fputs(p->n_runs ? "\n  ],\n" : "],\n", f);
  fputs("  \"seccomp\": ", f);
  write_seccomp(f, p, "  ");
  fputs(",\n", f);
  if (p->landlock_abi > 0) {
    fputs("  \"landlock\": ", f);
    write_landlock(f, p);
    fputs(",\n", f);
  }
  fputs("  \"egress\": {\n    \"comment\": \"The hosts the egress broker let the run reach, as codemode-run "
        "--allow-host rules.\",\n    ",
        f);
  write_entries(f, "allow", "rule", p->hosts, p->n_hosts, "");
  fputs("\n  },\n  ", f);
  write_entries(f, "deniedDuringLearning", "what", p->denied, p->n_denied,
                "denied while learning (by the profile underneath; a policy cannot allow it): ");
  fputs("\n}\n", f);
  fclose(f);
  return out;
}

/* --- reading --------------------------------------------------------------------------------- */

static void free_tree(yajl_val *v) {
  if (*v)
    yajl_tree_free(*v);
}

static int get_comment(struct jctx *c, yajl_val obj, struct learned_seen *seen, struct cm_error **err) {
  cleanup_free char *comment = NULL;
  if (jget_string(c, obj, "comment", &comment, err) < 0)
    return -1;
  learned_seen_parse(comment, seen);
  return 0;
}

static int parse_arg(struct jctx *c, yajl_val v, struct spec_seccomp_arg *a, struct cm_error **err) {
  cleanup_free char *op = NULL;
  uint64_t index = 0;
  if (jval_object(c, v, err) < 0 || jrequire(c, v, "index", err) < 0 || jrequire(c, v, "value", err) < 0 ||
      jrequire(c, v, "op", err) < 0 || jget_u64(c, v, "index", 5, &index, err) < 0 ||
      jget_u64(c, v, "value", UINT64_MAX, &a->value, err) < 0 ||
      jget_u64(c, v, "valueTwo", UINT64_MAX, &a->value_two, err) < 0 || jget_string(c, v, "op", &op, err) < 0)
    return -1;
  a->index = (unsigned)index;
  if (strcmp(op, "SCMP_CMP_EQ") == 0)
    a->op = SPEC_SECCOMP_OP_EQ;
  else if (strcmp(op, "SCMP_CMP_MASKED_EQ") == 0)
    a->op = SPEC_SECCOMP_OP_MASKED_EQ;
  else
    return jerr(c, err, "op \"%s\": a learned rule compares with SCMP_CMP_EQ or SCMP_CMP_MASKED_EQ", op);
  return 0;
}

static int parse_seccomp(struct jctx *c, yajl_val sec, struct learned_policy *out, struct cm_error **err) {
  yajl_val syscalls = NULL;
  if (jval_object(c, sec, err) < 0 || jget_array(c, sec, "syscalls", &syscalls, err) < 0)
    return -1;
  for (size_t i = 0; syscalls && i < syscalls->u.array.len; i++) {
    yajl_val e = syscalls->u.array.values[i];
    size_t mark = jpush_key(c, "syscalls");
    jpush_index(c, i);
    cleanup_free char *action = NULL;
    struct spec_strv names = {0};
    if (jval_object(c, e, err) < 0 || jget_string(c, e, "action", &action, err) < 0 ||
        jget_strv(c, e, "names", &names, err) < 0)
      return -1;
    /* Only what is allowed is the policy; the writer adds its fixed denials (clone3) itself. */
    if (action && strcmp(action, "SCMP_ACT_ALLOW") == 0) {
      struct learned_key key = {0};
      yajl_val args = NULL;
      struct learned_seen seen;
      if (jget_array(c, e, "args", &args, err) < 0 || get_comment(c, e, &seen, err) < 0) {
        spec_strv_free(&names);
        return -1;
      }
      if (args && args->u.array.len > LEARNED_KEY_ARGS) {
        spec_strv_free(&names);
        return jerr(c, err, "args: at most %d conditions in a learned rule", LEARNED_KEY_ARGS);
      }
      for (size_t k = 0; args && k < args->u.array.len; k++) {
        size_t m2 = jpush_key(c, "args");
        jpush_index(c, k);
        if (parse_arg(c, args->u.array.values[k], &key.args[key.n++], err) < 0) {
          spec_strv_free(&names);
          return -1;
        }
        jpop(c, m2);
      }
      for (size_t k = 0; k < names.count; k++)
        learned_policy_add_rule(out, names.items[k], &key, &seen);
    }
    spec_strv_free(&names);
    jpop(c, mark);
  }
  return 0;
}

static int parse_rights(struct jctx *c, yajl_val arr, int abi, uint64_t *out, struct cm_error **err) {
  *out = 0;
  if (jval_array(c, arr, err) < 0)
    return -1;
  for (size_t i = 0; i < arr->u.array.len; i++) {
    yajl_val v = arr->u.array.values[i];
    size_t mark = jpush_index(c, i);
    if (YAJL_IS_INTEGER(v) && YAJL_GET_INTEGER(v) > 0) {
      *out |= (uint64_t)YAJL_GET_INTEGER(v);
    } else if (YAJL_IS_STRING(v)) {
      const char *name = YAJL_GET_STRING(v);
      uint64_t bit = 0;
      if (strcmp(name, "abi.all") == 0)
        bit = spec_landlock_supported(SPEC_LANDLOCK_FS, abi);
      else if (strcmp(name, "abi.read_execute") == 0)
        bit = spec_landlock_read_execute(abi);
      else if (strcmp(name, "abi.read_write") == 0)
        bit = spec_landlock_read_write(abi);
      for (int b = 0; b < 64 && !bit; b++) {
        const char *n = spec_landlock_right_name(SPEC_LANDLOCK_FS, 1ULL << b);
        if (n && strcmp(n, name) == 0)
          bit = 1ULL << b;
      }
      if (!bit)
        return jerr(c, err, "unknown filesystem access right \"%s\"", name);
      *out |= bit;
    } else {
      return jerr(c, err, "an access right is a name or a positive integer");
    }
    jpop(c, mark);
  }
  return 0;
}

static int parse_landlock(struct jctx *c, yajl_val ll, struct learned_policy *out, struct cm_error **err) {
  yajl_val paths = NULL;
  if (jval_object(c, ll, err) < 0 ||
      jget_int(c, ll, "abi", 1, SPEC_LANDLOCK_ABI_KNOWN, &out->landlock_abi, err) < 0 ||
      jrequire(c, ll, "abi", err) < 0 || jget_array(c, ll, "pathBeneath", &paths, err) < 0)
    return -1;
  for (size_t i = 0; paths && i < paths->u.array.len; i++) {
    yajl_val e = paths->u.array.values[i];
    size_t mark = jpush_key(c, "pathBeneath");
    jpush_index(c, i);
    yajl_val access = NULL;
    struct spec_strv parents = {0};
    struct learned_seen seen;
    uint64_t mask = 0;
    cleanup_free char *comment = NULL;
    if (jval_object(c, e, err) < 0 || jrequire(c, e, "allowedAccess", err) < 0 ||
        jrequire(c, e, "parent", err) < 0 || jget_array(c, e, "allowedAccess", &access, err) < 0 ||
        jget_string(c, e, "comment", &comment, err) < 0)
      return -1;
    learned_seen_parse(comment, &seen);
    /* "…; 14 paths beneath, e.g. /x/y" or "…; /x/y": what the rule stands for */
    size_t paths = 0;
    const char *example = NULL, *semi = comment ? strstr(comment, "; ") : NULL;
    if (semi) {
      char *endp;
      unsigned long long n = strtoull(semi + 2, &endp, 10);
      if (endp != semi + 2 && strncmp(endp, " paths beneath, e.g. ", 21) == 0) {
        paths = (size_t)n;
        example = endp + 21;
      } else if (semi[2] == '/') {
        example = semi + 2;
      }
    }
    size_t m2 = jpush_key(c, "allowedAccess");
    if (parse_rights(c, access, out->landlock_abi, &mask, err) < 0)
      return -1;
    jpop(c, m2);
    if (jget_strv(c, e, "parent", &parents, err) < 0)
      return -1;
    for (size_t k = 0; k < parents.count; k++) {
      bool dotdot = false;
      cleanup_free char *clean =
          path_is_absolute(parents.items[k]) ? path_clean_absolute(parents.items[k], &dotdot) : NULL;
      if (clean == NULL) {
        jpush_key(c, "parent");
        jpush_index(c, k);
        spec_strv_free(&parents);
        return jerr(c, err, "a learned rule's path is absolute, without \"..\"");
      }
      learned_policy_add_path(out, clean, mask, &seen, paths, example, false);
    }
    spec_strv_free(&parents);
    jpop(c, mark);
  }
  return 0;
}

static int parse_entries(struct jctx *c, yajl_val obj, const char *key, const char *field,
                         struct learned_policy *out,
                         void (*add)(struct learned_policy *, const char *, const struct learned_seen *),
                         struct cm_error **err) {
  yajl_val arr = NULL;
  if (jget_array(c, obj, key, &arr, err) < 0)
    return -1;
  for (size_t i = 0; arr && i < arr->u.array.len; i++) {
    yajl_val e = arr->u.array.values[i];
    size_t mark = jpush_key(c, key);
    jpush_index(c, i);
    cleanup_free char *text = NULL;
    struct learned_seen seen;
    if (jval_object(c, e, err) < 0 || jrequire(c, e, field, err) < 0 ||
        jget_string(c, e, field, &text, err) < 0 || get_comment(c, e, &seen, err) < 0)
      return -1;
    add(out, text, &seen);
    jpop(c, mark);
  }
  return 0;
}

static int parse_runs(struct jctx *c, yajl_val root, struct learned_policy *out, struct cm_error **err) {
  yajl_val runs = NULL;
  if (jget_array(c, root, "runs", &runs, err) < 0)
    return -1;
  for (size_t i = 0; runs && i < runs->u.array.len; i++) {
    yajl_val e = runs->u.array.values[i];
    size_t mark = jpush_key(c, "runs");
    jpush_index(c, i);
    out->runs = realloc(out->runs, (out->n_runs + 1) * sizeof(*out->runs));
    if (out->runs == NULL)
      abort();
    struct learned_run *r = &out->runs[out->n_runs++];
    *r = (struct learned_run){0};
    yajl_val secs = jfind(e, "seconds");
    if (jval_object(c, e, err) < 0 || jget_int(c, e, "run", 0, 1 << 20, &r->run, err) < 0 ||
        jget_string(c, e, "started", &r->started, err) < 0 ||
        jget_string(c, e, "source", &r->source, err) < 0 ||
        jget_string(c, e, "command", &r->command, err) < 0 ||
        jget_string(c, e, "kernel", &r->kernel, err) < 0 ||
        jget_int(c, e, "landlockAbi", 0, 1 << 10, &r->landlock_abi, err) < 0 ||
        jget_u64(c, e, "notifications", UINT64_MAX, &r->notifications, err) < 0 ||
        jget_strv(c, e, "mounts", &r->mounts, err) < 0 ||
        jget_string(c, e, "seccompDenialsUnseen", &r->seccomp_unseen, err) < 0)
      return -1;
    if (secs && YAJL_IS_NUMBER(secs))
      r->seconds = YAJL_GET_DOUBLE(secs);
    if (r->run == 0)
      r->run = (int)out->n_runs;
    jpop(c, mark);
  }
  return 0;
}

int learned_policy_parse(const char *json, size_t len, const char *label, struct learned_policy *out,
                         struct cm_error **err) {
  memset(out, 0, sizeof(*out));
  struct jctx ctx, *c = &ctx;
  jctx_init(c, label);
  __attribute__((cleanup(free_tree))) yajl_val root = json_parse(json, len, label, err);
  if (root == NULL)
    return -1;
  int format = 0;
  yajl_val sec = NULL, ll = NULL, eg = NULL;
  if (jval_object(c, root, err) < 0 || jrequire(c, root, "codemodePolicy", err) < 0 ||
      jget_int(c, root, "codemodePolicy", 0, 1 << 20, &format, err) < 0)
    goto fail;
  if (format != LEARNED_POLICY_FORMAT) {
    jpush_key(c, "codemodePolicy");
    jerr(c, err, "format %d is not one this codemode reads (%d)", format, LEARNED_POLICY_FORMAT);
    goto fail;
  }
  if (parse_runs(c, root, out, err) < 0 || jget_object(c, root, "seccomp", &sec, err) < 0 ||
      jget_object(c, root, "landlock", &ll, err) < 0 || jget_object(c, root, "egress", &eg, err) < 0)
    goto fail;
  size_t mark;
  if (sec) {
    mark = jpush_key(c, "seccomp");
    if (parse_seccomp(c, sec, out, err) < 0)
      goto fail;
    jpop(c, mark);
  }
  if (ll) {
    mark = jpush_key(c, "landlock");
    if (parse_landlock(c, ll, out, err) < 0)
      goto fail;
    jpop(c, mark);
  }
  if (eg) {
    mark = jpush_key(c, "egress");
    if (jval_object(c, eg, err) < 0 ||
        parse_entries(c, eg, "allow", "rule", out, learned_policy_add_host, err) < 0)
      goto fail;
    jpop(c, mark);
  }
  if (parse_entries(c, root, "deniedDuringLearning", "what", out, learned_policy_add_denied, err) < 0)
    goto fail;
  learned_policy_normalize(out);
  return 0;
fail:
  learned_policy_free(out);
  return -1;
}

int learned_policy_load_file(const char *path, struct learned_policy *out, struct cm_error **err) {
  size_t len;
  cleanup_free char *text = read_whole_file(path, &len, err);
  if (text == NULL)
    return -1;
  return learned_policy_parse(text, len, path, out, err);
}
