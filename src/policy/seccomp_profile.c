/* Docker-format seccomp profiles: parse, then resolve archMap and includes/excludes for one
 * container (see seccomp_profile.h). */
#include <seccomp.h>

#include "policy/seccomp_profile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/utsname.h>

#include "spec/json_util.h"
#include "util/cleanup.h"

/* libseccomp's architecture names next to Go's (Docker's includes.arches uses Go's). */
static const struct {
  const char *scmp;
  const char *go;
} arch_names[] = {
    {"SCMP_ARCH_X86_64", "amd64"},      {"SCMP_ARCH_X86", "386"},
    {"SCMP_ARCH_X32", "x32"},           {"SCMP_ARCH_AARCH64", "arm64"},
    {"SCMP_ARCH_ARM", "arm"},           {"SCMP_ARCH_PPC64LE", "ppc64le"},
    {"SCMP_ARCH_PPC64", "ppc64"},       {"SCMP_ARCH_PPC", "ppc"},
    {"SCMP_ARCH_S390X", "s390x"},       {"SCMP_ARCH_S390", "s390"},
    {"SCMP_ARCH_RISCV64", "riscv64"},   {"SCMP_ARCH_MIPS64", "mips64"},
    {"SCMP_ARCH_MIPSEL64", "mips64le"}, {"SCMP_ARCH_LOONGARCH64", "loong64"},
};

const char *seccomp_profile_native_arch(void) {
#if defined(__x86_64__) && defined(__ILP32__)
  return "SCMP_ARCH_X32";
#elif defined(__x86_64__)
  return "SCMP_ARCH_X86_64";
#elif defined(__i386__)
  return "SCMP_ARCH_X86";
#elif defined(__aarch64__)
  return "SCMP_ARCH_AARCH64";
#elif defined(__arm__)
  return "SCMP_ARCH_ARM";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return "SCMP_ARCH_PPC64LE";
#elif defined(__s390x__)
  return "SCMP_ARCH_S390X";
#elif defined(__riscv) && __riscv_xlen == 64
  return "SCMP_ARCH_RISCV64";
#else
  return "SCMP_ARCH_NATIVE";
#endif
}

/* Does `name` (either spelling) denote the architecture `scmp`? */
static bool arch_matches(const char *name, const char *scmp) {
  if (strcmp(name, scmp) == 0)
    return true;
  for (size_t i = 0; i < sizeof(arch_names) / sizeof(arch_names[0]); i++)
    if (strcmp(arch_names[i].scmp, scmp) == 0)
      return strcmp(arch_names[i].go, name) == 0 ||
             (strcmp(scmp, "SCMP_ARCH_X86") == 0 && strcmp(name, "x86") == 0);
  return false;
}

static bool strv_contains(const struct spec_strv *v, const char *s) {
  for (size_t i = 0; i < v->count; i++)
    if (strcmp(v->items[i], s) == 0)
      return true;
  return false;
}

static void strv_push(struct spec_strv *v, const char *s) {
  char **items = realloc(v->items, (v->count + 2) * sizeof(char *));
  if (items == NULL)
    abort();
  v->items = items;
  v->items[v->count++] = xstrdup(s);
  v->items[v->count] = NULL;
}

/* "4.8" / "5.10.0-rc1" → major, minor. */
static int parse_kernel_version(const char *s, unsigned *major, unsigned *minor) {
  char *end;
  unsigned long ma = strtoul(s, &end, 10);
  if (end == s || *end != '.')
    return -1;
  const char *m = end + 1;
  unsigned long mi = strtoul(m, &end, 10);
  if (end == m)
    return -1;
  *major = (unsigned)ma;
  *minor = (unsigned)mi;
  return 0;
}

struct resolver {
  struct jctx c;
  const char *arch;
  uint64_t caps;
  unsigned kmajor, kminor;
};

/* One includes/excludes object: 1 when it says "applies" (includes: every condition holds;
 * excludes: any condition holds), 0 when not, -1 on error. `any` selects excludes semantics. */
static int eval_conditions(struct resolver *r, yajl_val rule, const char *key, bool any,
                           struct cm_error **err) {
  yajl_val cond;
  int has = jget_object(&r->c, rule, key, &cond, err);
  if (has <= 0)
    return has < 0 ? -1 : (any ? 0 : 1);
  size_t mark = jpush_key(&r->c, key);
  struct spec_strv caps = {0}, arches = {0};
  cleanup_free char *min_kernel = NULL;
  int rc = -1;
  if (jget_strv(&r->c, cond, "caps", &caps, err) < 0 || jget_strv(&r->c, cond, "arches", &arches, err) < 0 ||
      jget_string(&r->c, cond, "minKernel", &min_kernel, err) < 0)
    goto out;
  int hits = 0, tests = 0;
  for (size_t i = 0; i < caps.count; i++) {
    cap_value_t cap;
    if (cap_from_name(caps.items[i], &cap) != 0 || cap < 0 || cap >= 64) {
      jpush_key(&r->c, "caps");
      jpush_index(&r->c, i);
      jerr(&r->c, err, "unknown capability \"%s\"", caps.items[i]);
      goto out;
    }
    tests++;
    hits += (r->caps >> cap) & 1;
  }
  if (arches.count) {
    bool match = false;
    for (size_t i = 0; i < arches.count; i++)
      match = match || arch_matches(arches.items[i], r->arch);
    tests++;
    hits += match;
  }
  if (min_kernel) {
    unsigned ma, mi;
    if (parse_kernel_version(min_kernel, &ma, &mi) < 0) {
      jpush_key(&r->c, "minKernel");
      jerr(&r->c, err, "\"%s\" is not a kernel version like \"4.8\"", min_kernel);
      goto out;
    }
    tests++;
    hits += r->kmajor > ma || (r->kmajor == ma && r->kminor >= mi);
  }
  rc = any ? hits > 0 : hits == tests;
out:
  spec_strv_free(&caps);
  spec_strv_free(&arches);
  jpop(&r->c, mark);
  return rc;
}

static int parse_args(struct jctx *c, yajl_val rule, struct spec_seccomp_syscall *out,
                      struct cm_error **err) {
  yajl_val args;
  if (jget_array(c, rule, "args", &args, err) < 0)
    return -1;
  if (args == NULL || args->u.array.len == 0)
    return 0;
  size_t mark = jpush_key(c, "args");
  out->args = xcalloc(args->u.array.len, sizeof(*out->args));
  for (size_t i = 0; i < args->u.array.len; i++) {
    yajl_val a = args->u.array.values[i];
    struct spec_seccomp_arg *arg = &out->args[i];
    out->n_args = i + 1;
    size_t m2 = jpush_index(c, i);
    uint64_t index = 0;
    cleanup_free char *op = NULL;
    /* A syscall has 6 arguments; a larger index would read past seccomp_data.args. */
    if (jval_object(c, a, err) < 0 || jrequire(c, a, "index", err) < 0 ||
        jget_u64(c, a, "index", 5, &index, err) < 0 ||
        jget_u64(c, a, "value", UINT64_MAX, &arg->value, err) < 0 ||
        jget_u64(c, a, "valueTwo", UINT64_MAX, &arg->value_two, err) < 0 || jrequire(c, a, "op", err) < 0 ||
        jget_string(c, a, "op", &op, err) < 0)
      return -1;
    arg->index = (unsigned)index;
    const struct spec_name_value *nv = spec_name_lookup(spec_seccomp_op_names, op);
    if (nv == NULL) {
      jpush_key(c, "op");
      return jerr(c, err, "unknown seccomp operator \"%s\"", op);
    }
    arg->op = (enum spec_seccomp_op)nv->value;
    jpop(c, m2);
  }
  jpop(c, mark);
  return 0;
}

/* One syscalls[] entry: appended to out when its conditions hold. */
static int resolve_rule(struct resolver *r, yajl_val rule, struct spec_seccomp *out, struct cm_error **err) {
  struct jctx *c = &r->c;
  if (jval_object(c, rule, err) < 0)
    return -1;
  int inc = eval_conditions(r, rule, "includes", false, err);
  if (inc < 0)
    return -1;
  int exc = eval_conditions(r, rule, "excludes", true, err);
  if (exc < 0)
    return -1;
  struct spec_seccomp_syscall sc = {0};
  cleanup_free char *single = NULL;
  if (jget_strv(c, rule, "names", &sc.names, err) < 0 || jget_string(c, rule, "name", &single, err) < 0)
    goto fail;
  if (single)
    strv_push(&sc.names, single);
  if (sc.names.count == 0) {
    jpush_key(c, "names");
    jerr(c, err, "must be a non-empty array of strings");
    goto fail;
  }
  if (spec_parse_seccomp_action(c, rule, "action", &sc.action, err) < 0)
    goto fail;
  int has = jget_u32(c, rule, "errnoRet", &sc.errno_ret, err);
  if (has < 0)
    goto fail;
  sc.has_errno_ret = has == 1;
  if (parse_args(c, rule, &sc, err) < 0)
    goto fail;
  if (!inc || exc) {
    spec_strv_free(&sc.names);
    free(sc.args);
    return 0;
  }
  struct spec_seccomp_syscall *grown = realloc(out->syscalls, (out->n_syscalls + 1) * sizeof(*grown));
  if (grown == NULL)
    abort();
  out->syscalls = grown;
  out->syscalls[out->n_syscalls++] = sc;
  return 0;
fail:
  spec_strv_free(&sc.names);
  free(sc.args);
  return -1;
}

static bool known_arch(const char *name) {
  for (const char *const *a = spec_seccomp_arch_names; *a; a++)
    if (strcmp(*a, name) == 0)
      return true;
  return false;
}

/* archMap: the native entry and its sub-architectures; `architectures`: taken as is. */
static int resolve_architectures(struct resolver *r, yajl_val root, struct spec_seccomp *out,
                                 struct cm_error **err) {
  struct jctx *c = &r->c;
  if (jget_strv(c, root, "architectures", &out->architectures, err) < 0)
    return -1;
  yajl_val map;
  if (jget_array(c, root, "archMap", &map, err) < 0)
    return -1;
  for (size_t i = 0; map && i < map->u.array.len; i++) {
    yajl_val entry = map->u.array.values[i];
    size_t mark = jpush_key(c, "archMap");
    jpush_index(c, i);
    cleanup_free char *arch = NULL;
    struct spec_strv subs = {0};
    if (jval_object(c, entry, err) < 0 || jrequire(c, entry, "architecture", err) < 0 ||
        jget_string(c, entry, "architecture", &arch, err) < 0 ||
        jget_strv(c, entry, "subArchitectures", &subs, err) < 0)
      return -1;
    if (strcmp(arch, r->arch) == 0) {
      if (!strv_contains(&out->architectures, arch))
        strv_push(&out->architectures, arch);
      for (size_t k = 0; k < subs.count; k++)
        if (!strv_contains(&out->architectures, subs.items[k]))
          strv_push(&out->architectures, subs.items[k]);
    }
    spec_strv_free(&subs);
    jpop(c, mark);
  }
  for (size_t i = 0; i < out->architectures.count; i++)
    if (!known_arch(out->architectures.items[i])) {
      jpush_key(c, "architectures");
      jpush_index(c, i);
      return jerr(c, err, "unknown seccomp architecture \"%s\"", out->architectures.items[i]);
    }
  return 0;
}

static void free_tree(yajl_val *v) {
  if (*v)
    yajl_tree_free(*v);
}

int seccomp_profile_load_string(const char *json, size_t len, const char *label,
                                const struct seccomp_profile_target *target, struct spec_seccomp *out,
                                struct cm_error **err) {
  memset(out, 0, sizeof(*out));
  struct resolver r = {.arch = target && target->arch ? target->arch : seccomp_profile_native_arch(),
                       .caps = target ? target->capabilities : 0};
  jctx_init(&r.c, label);
  if (target && target->kernel_major) {
    r.kmajor = target->kernel_major;
    r.kminor = target->kernel_minor;
  } else {
    struct utsname u;
    if (uname(&u) < 0 || parse_kernel_version(u.release, &r.kmajor, &r.kminor) < 0)
      return cm_error_set(err, errno, "%s: cannot read the kernel version", label);
  }
  __attribute__((cleanup(free_tree))) yajl_val root = json_parse(json, len, label, err);
  if (root == NULL)
    return -1;
  if (jval_object(&r.c, root, err) < 0)
    return -1;
  out->present = true;
  if (spec_parse_seccomp_action(&r.c, root, "defaultAction", &out->default_action, err) < 0)
    goto fail;
  /* A NOTIFY default would make every syscall, the runtime's last ones included, wait for an
   * agent that has no listener fd yet. */
  if (out->default_action == SPEC_SECCOMP_NOTIFY) {
    jpush_key(&r.c, "defaultAction");
    jerr(&r.c, err, "SCMP_ACT_NOTIFY cannot be the default action");
    goto fail;
  }
  int has = jget_u32(&r.c, root, "defaultErrnoRet", &out->default_errno_ret, err);
  if (has < 0)
    goto fail;
  out->has_default_errno_ret = has == 1;
  if (resolve_architectures(&r, root, out, err) < 0 || jget_strv(&r.c, root, "flags", &out->flags, err) < 0 ||
      jget_string(&r.c, root, "listenerPath", &out->listener_path, err) < 0 ||
      jget_string(&r.c, root, "listenerMetadata", &out->listener_metadata, err) < 0)
    goto fail;
  for (size_t i = 0; i < out->flags.count; i++)
    if (spec_name_lookup(spec_seccomp_flag_names, out->flags.items[i]) == NULL) {
      jpush_key(&r.c, "flags");
      jpush_index(&r.c, i);
      jerr(&r.c, err, "unknown seccomp flag \"%s\"", out->flags.items[i]);
      goto fail;
    }
  yajl_val syscalls;
  if (jget_array(&r.c, root, "syscalls", &syscalls, err) < 0)
    goto fail;
  for (size_t i = 0; syscalls && i < syscalls->u.array.len; i++) {
    size_t mark = jpush_key(&r.c, "syscalls");
    jpush_index(&r.c, i);
    if (resolve_rule(&r, syscalls->u.array.values[i], out, err) < 0)
      goto fail;
    struct spec_seccomp_syscall *last = out->n_syscalls ? &out->syscalls[out->n_syscalls - 1] : NULL;
    if (last && last->action == SPEC_SECCOMP_NOTIFY && (out->listener_path == NULL || !*out->listener_path)) {
      jerr(&r.c, err, "SCMP_ACT_NOTIFY requires listenerPath");
      goto fail;
    }
    jpop(&r.c, mark);
  }
  return 0;
fail:
  seccomp_profile_free(out);
  return -1;
}

int seccomp_profile_load_file(const char *path, const struct seccomp_profile_target *target,
                              struct spec_seccomp *out, struct cm_error **err) {
  size_t len;
  cleanup_free char *text = read_whole_file(path, &len, err);
  if (text == NULL)
    return cm_error_prefix(err, "seccomp profile");
  return seccomp_profile_load_string(text, len, path, target, out, err);
}

int seccomp_profile_load(const char *name_or_path, const struct seccomp_profile_target *target,
                         struct spec_seccomp *out, struct cm_error **err) {
  size_t len;
  const char *builtin = strchr(name_or_path, '/') ? NULL : seccomp_profile_builtin(name_or_path, &len);
  if (builtin) {
    char label[64];
    snprintf(label, sizeof(label), "%s.json (built in)", name_or_path);
    return seccomp_profile_load_string(builtin, len, label, target, out, err);
  }
  return seccomp_profile_load_file(name_or_path, target, out, err);
}

void seccomp_profile_free(struct spec_seccomp *s) {
  spec_seccomp_clear(s);
}

size_t seccomp_profile_count_allowed(const struct spec_seccomp *sc) {
  /* Distinct names, each once whatever its argument rules, that this architecture has. */
  size_t n = 0;
  const char **seen = NULL;
  for (size_t i = 0; i < sc->n_syscalls; i++) {
    if (sc->syscalls[i].action != SPEC_SECCOMP_ALLOW && sc->syscalls[i].action != SPEC_SECCOMP_LOG)
      continue;
    for (size_t k = 0; k < sc->syscalls[i].names.count; k++) {
      const char *name = sc->syscalls[i].names.items[k];
      if (seccomp_syscall_resolve_name(name) == __NR_SCMP_ERROR)
        continue;
      bool dup = false;
      for (size_t j = 0; j < n && !dup; j++)
        dup = strcmp(seen[j], name) == 0;
      if (dup)
        continue;
      seen = realloc(seen, (n + 1) * sizeof(*seen));
      if (seen == NULL)
        abort();
      seen[n++] = name;
    }
  }
  free(seen);
  return n;
}
