/* linux.seccomp: parsed and validated here, compiled into BPF by linux/seccomp.c. */
#include <stdlib.h>
#include <string.h>

#include "spec/json_util.h"
#include "util/cleanup.h"

const struct spec_name_value spec_seccomp_action_names[] = {
    {"SCMP_ACT_KILL", SPEC_SECCOMP_KILL},
    {"SCMP_ACT_KILL_PROCESS", SPEC_SECCOMP_KILL_PROCESS},
    {"SCMP_ACT_KILL_THREAD", SPEC_SECCOMP_KILL_THREAD},
    {"SCMP_ACT_TRAP", SPEC_SECCOMP_TRAP},
    {"SCMP_ACT_ERRNO", SPEC_SECCOMP_ERRNO},
    {"SCMP_ACT_TRACE", SPEC_SECCOMP_TRACE},
    {"SCMP_ACT_ALLOW", SPEC_SECCOMP_ALLOW},
    {"SCMP_ACT_LOG", SPEC_SECCOMP_LOG},
    {"SCMP_ACT_NOTIFY", SPEC_SECCOMP_NOTIFY},
    {NULL, 0},
};

const struct spec_name_value spec_seccomp_op_names[] = {
    {"SCMP_CMP_NE", SPEC_SECCOMP_OP_NE},
    {"SCMP_CMP_LT", SPEC_SECCOMP_OP_LT},
    {"SCMP_CMP_LE", SPEC_SECCOMP_OP_LE},
    {"SCMP_CMP_EQ", SPEC_SECCOMP_OP_EQ},
    {"SCMP_CMP_GE", SPEC_SECCOMP_OP_GE},
    {"SCMP_CMP_GT", SPEC_SECCOMP_OP_GT},
    {"SCMP_CMP_MASKED_EQ", SPEC_SECCOMP_OP_MASKED_EQ},
    {NULL, 0},
};

/* Values are the kernel's SECCOMP_FILTER_FLAG_* bits. NEW_LISTENER is deliberately absent: the
 * runtime sets it itself when a rule uses SCMP_ACT_NOTIFY. */
const struct spec_name_value spec_seccomp_flag_names[] = {
    {"SECCOMP_FILTER_FLAG_TSYNC", 1UL << 0},
    {"SECCOMP_FILTER_FLAG_LOG", 1UL << 1},
    {"SECCOMP_FILTER_FLAG_SPEC_ALLOW", 1UL << 2},
    {"SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV", 1UL << 5},
    {NULL, 0},
};

/* The architectures the runtime-spec names. */
const char *const spec_seccomp_arch_names[] = {
    "SCMP_ARCH_X86",     "SCMP_ARCH_X86_64",   "SCMP_ARCH_X32",         "SCMP_ARCH_ARM",
    "SCMP_ARCH_AARCH64", "SCMP_ARCH_MIPS",     "SCMP_ARCH_MIPS64",      "SCMP_ARCH_MIPS64N32",
    "SCMP_ARCH_MIPSEL",  "SCMP_ARCH_MIPSEL64", "SCMP_ARCH_MIPSEL64N32", "SCMP_ARCH_PPC",
    "SCMP_ARCH_PPC64",   "SCMP_ARCH_PPC64LE",  "SCMP_ARCH_S390",        "SCMP_ARCH_S390X",
    "SCMP_ARCH_PARISC",  "SCMP_ARCH_PARISC64", "SCMP_ARCH_RISCV64",     "SCMP_ARCH_LOONGARCH64",
    "SCMP_ARCH_M68K",    "SCMP_ARCH_SH",       "SCMP_ARCH_SHEB",        NULL,
};

int spec_parse_seccomp_action(struct jctx *c, yajl_val obj, const char *key, enum spec_seccomp_action *out,
                              struct cm_error **err) {
  cleanup_free char *name = NULL;
  if (jrequire(c, obj, key, err) < 0 || jget_string(c, obj, key, &name, err) < 0)
    return -1;
  const struct spec_name_value *nv = spec_name_lookup(spec_seccomp_action_names, name);
  if (nv == NULL) {
    jpush_key(c, key);
    return jerr(c, err, "unknown seccomp action \"%s\"", name);
  }
  *out = (enum spec_seccomp_action)nv->value;
  return 0;
}

static int parse_arg(struct jctx *c, yajl_val v, struct spec_seccomp_arg *a, struct cm_error **err) {
  if (jval_object(c, v, err) < 0 || jrequire(c, v, "index", err) < 0)
    return -1;
  uint64_t index = 0;
  /* A syscall has at most 6 arguments; a larger index would read past seccomp_data.args. */
  if (jget_u64(c, v, "index", 5, &index, err) < 0)
    return -1;
  a->index = (unsigned)index;
  if (jrequire(c, v, "value", err) < 0 || jget_u64(c, v, "value", UINT64_MAX, &a->value, err) < 0 ||
      jget_u64(c, v, "valueTwo", UINT64_MAX, &a->value_two, err) < 0)
    return -1;
  cleanup_free char *op = NULL;
  if (jrequire(c, v, "op", err) < 0 || jget_string(c, v, "op", &op, err) < 0)
    return -1;
  const struct spec_name_value *nv = spec_name_lookup(spec_seccomp_op_names, op);
  if (nv == NULL) {
    jpush_key(c, "op");
    return jerr(c, err, "unknown seccomp operator \"%s\"", op);
  }
  a->op = (enum spec_seccomp_op)nv->value;
  return 0;
}

static int parse_syscall(struct jctx *c, yajl_val v, struct spec_seccomp_syscall *s, struct cm_error **err) {
  if (jval_object(c, v, err) < 0 || jget_strv(c, v, "names", &s->names, err) < 0)
    return -1;
  if (s->names.count == 0) {
    jpush_key(c, "names");
    return jerr(c, err, "must be a non-empty array of strings");
  }
  if (spec_parse_seccomp_action(c, v, "action", &s->action, err) < 0)
    return -1;
  int r = jget_u32(c, v, "errnoRet", &s->errno_ret, err);
  if (r < 0)
    return -1;
  s->has_errno_ret = r == 1;
  yajl_val args;
  if (jget_array(c, v, "args", &args, err) < 0)
    return -1;
  if (args != NULL && args->u.array.len > 0) {
    size_t mark = jpush_key(c, "args");
    s->args = xcalloc(args->u.array.len, sizeof(*s->args));
    for (size_t i = 0; i < args->u.array.len; i++) {
      size_t m2 = jpush_index(c, i);
      s->n_args = i + 1;
      if (parse_arg(c, args->u.array.values[i], &s->args[i], err) < 0)
        return -1;
      jpop(c, m2);
    }
    jpop(c, mark);
  }
  return 0;
}

static int check_names(struct jctx *c, const char *key, const struct spec_strv *v, const char *what,
                       bool (*known)(const char *), struct cm_error **err) {
  for (size_t i = 0; i < v->count; i++)
    if (!known(v->items[i])) {
      jpush_key(c, key);
      jpush_index(c, i);
      return jerr(c, err, "unknown seccomp %s \"%s\"", what, v->items[i]);
    }
  return 0;
}

static bool known_arch(const char *name) {
  for (const char *const *a = spec_seccomp_arch_names; *a; a++)
    if (strcmp(*a, name) == 0)
      return true;
  return false;
}

static bool known_flag(const char *name) {
  return spec_name_lookup(spec_seccomp_flag_names, name) != NULL;
}

int spec_parse_seccomp(struct jctx *c, yajl_val v, struct spec_seccomp *s, struct cm_error **err) {
  s->present = true;
  if (spec_parse_seccomp_action(c, v, "defaultAction", &s->default_action, err) < 0)
    return -1;
  /* After loading the filter the runtime must still send the notify fd to the listener; with
   * NOTIFY as the default, those very syscalls would wait on a listener that has no fd yet. */
  if (s->default_action == SPEC_SECCOMP_NOTIFY) {
    jpush_key(c, "defaultAction");
    return jerr(c, err, "SCMP_ACT_NOTIFY cannot be the default action");
  }
  int r = jget_u32(c, v, "defaultErrnoRet", &s->default_errno_ret, err);
  if (r < 0)
    return -1;
  s->has_default_errno_ret = r == 1;
  if (jget_strv(c, v, "architectures", &s->architectures, err) < 0 ||
      check_names(c, "architectures", &s->architectures, "architecture", known_arch, err) < 0 ||
      jget_strv(c, v, "flags", &s->flags, err) < 0 ||
      check_names(c, "flags", &s->flags, "flag", known_flag, err) < 0 ||
      jget_string(c, v, "listenerPath", &s->listener_path, err) < 0 ||
      jget_string(c, v, "listenerMetadata", &s->listener_metadata, err) < 0)
    return -1;

  yajl_val syscalls;
  if (jget_array(c, v, "syscalls", &syscalls, err) < 0)
    return -1;
  if (syscalls != NULL && syscalls->u.array.len > 0) {
    size_t mark = jpush_key(c, "syscalls");
    s->syscalls = xcalloc(syscalls->u.array.len, sizeof(*s->syscalls));
    for (size_t i = 0; i < syscalls->u.array.len; i++) {
      size_t m2 = jpush_index(c, i);
      s->n_syscalls = i + 1;
      if (parse_syscall(c, syscalls->u.array.values[i], &s->syscalls[i], err) < 0)
        return -1;
      if (s->syscalls[i].action == SPEC_SECCOMP_NOTIFY &&
          (s->listener_path == NULL || s->listener_path[0] == '\0')) {
        jpush_key(c, "action");
        return jerr(c, err, "SCMP_ACT_NOTIFY requires .linux.seccomp.listenerPath");
      }
      jpop(c, m2);
    }
    jpop(c, mark);
  }
  return 0;
}

void spec_seccomp_clear(struct spec_seccomp *s) {
  spec_strv_free(&s->architectures);
  spec_strv_free(&s->flags);
  free(s->listener_path);
  free(s->listener_metadata);
  for (size_t i = 0; i < s->n_syscalls; i++) {
    spec_strv_free(&s->syscalls[i].names);
    free(s->syscalls[i].args);
  }
  free(s->syscalls);
  memset(s, 0, sizeof(*s));
}
