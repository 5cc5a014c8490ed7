/* The process object: config.json's .process and exec's process.json. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/resource.h>

#include "spec/json_util.h"
#include "util/cleanup.h"

#ifndef SCHED_ISO
#define SCHED_ISO 4 /* reserved by the kernel; setting it fails there with EINVAL */
#endif
#ifndef SCHED_DEADLINE
#define SCHED_DEADLINE 6
#endif

static const struct spec_name_value rlimit_names[] = {
    {"RLIMIT_AS", RLIMIT_AS},
    {"RLIMIT_CORE", RLIMIT_CORE},
    {"RLIMIT_CPU", RLIMIT_CPU},
    {"RLIMIT_DATA", RLIMIT_DATA},
    {"RLIMIT_FSIZE", RLIMIT_FSIZE},
    {"RLIMIT_LOCKS", RLIMIT_LOCKS},
    {"RLIMIT_MEMLOCK", RLIMIT_MEMLOCK},
    {"RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE},
    {"RLIMIT_NICE", RLIMIT_NICE},
    {"RLIMIT_NOFILE", RLIMIT_NOFILE},
    {"RLIMIT_NPROC", RLIMIT_NPROC},
    {"RLIMIT_RSS", RLIMIT_RSS},
    {"RLIMIT_RTPRIO", RLIMIT_RTPRIO},
    {"RLIMIT_RTTIME", RLIMIT_RTTIME},
    {"RLIMIT_SIGPENDING", RLIMIT_SIGPENDING},
    {"RLIMIT_STACK", RLIMIT_STACK},
    {NULL, 0},
};

static const struct spec_name_value sched_policy_names[] = {
    {"SCHED_OTHER", SCHED_OTHER},
    {"SCHED_FIFO", SCHED_FIFO},
    {"SCHED_RR", SCHED_RR},
    {"SCHED_BATCH", SCHED_BATCH},
    {"SCHED_ISO", SCHED_ISO},
    {"SCHED_IDLE", SCHED_IDLE},
    {"SCHED_DEADLINE", SCHED_DEADLINE},
    {NULL, 0},
};

/* SCHED_FLAG_* from linux/sched.h (which clashes with glibc's sched.h). */
static const struct spec_name_value sched_flag_names[] = {
    {"SCHED_FLAG_RESET_ON_FORK", 0x01},  {"SCHED_FLAG_RECLAIM", 0x02},
    {"SCHED_FLAG_DL_OVERRUN", 0x04},     {"SCHED_FLAG_KEEP_POLICY", 0x08},
    {"SCHED_FLAG_KEEP_PARAMS", 0x10},    {"SCHED_FLAG_UTIL_CLAMP_MIN", 0x20},
    {"SCHED_FLAG_UTIL_CLAMP_MAX", 0x40}, {NULL, 0},
};

/* IOPRIO_CLASS_* from linux/ioprio.h. */
static const struct spec_name_value ioprio_class_names[] = {
    {"IOPRIO_CLASS_RT", 1},
    {"IOPRIO_CLASS_BE", 2},
    {"IOPRIO_CLASS_IDLE", 3},
    {NULL, 0},
};

static int parse_user(struct jctx *c, yajl_val v, struct spec_user *u, struct cm_error **err) {
  if (jval_object(c, v, err) < 0)
    return -1;
  if (jrequire(c, v, "uid", err) < 0 || jget_u32(c, v, "uid", &u->uid, err) < 0)
    return -1;
  if (jrequire(c, v, "gid", err) < 0 || jget_u32(c, v, "gid", &u->gid, err) < 0)
    return -1;
  /* (uid_t)-1 is no uid: setresuid/setresgid read it as "leave unchanged", so the process would
   * keep the runtime's root (crun CVE-2026-30892 class: parsing yields the wrong user). */
  static const char *const id_keys[] = {"uid", "gid"};
  for (int k = 0; k < 2; k++) {
    if ((k ? u->gid : u->uid) == UINT32_MAX) {
      size_t mark = jpush_key(c, id_keys[k]);
      jerr(c, err, "4294967295 is not a valid %s ((%s_t)-1 means \"unchanged\" to the kernel)", id_keys[k],
           id_keys[k]);
      jpop(c, mark);
      return -1;
    }
  }
  int r = jget_u32(c, v, "umask", &u->umask, err);
  if (r < 0)
    return -1;
  u->has_umask = r == 1;
  if (u->has_umask && u->umask > 0777) {
    size_t mark = jpush_key(c, "umask");
    jerr(c, err, "must be between 0 and 0777");
    jpop(c, mark);
    return -1;
  }
  yajl_val gids;
  if (jget_array(c, v, "additionalGids", &gids, err) < 0)
    return -1;
  if (gids != NULL && gids->u.array.len > 0) {
    size_t mark = jpush_key(c, "additionalGids");
    u->additional_gids = xcalloc(gids->u.array.len, sizeof(uint32_t));
    for (size_t i = 0; i < gids->u.array.len; i++) {
      size_t m2 = jpush_index(c, i);
      uint64_t gid;
      if (jval_u64(c, gids->u.array.values[i], UINT32_MAX, &gid, err) < 0)
        return -1;
      jpop(c, m2);
      u->additional_gids[i] = (uint32_t)gid;
      u->n_additional_gids = i + 1;
    }
    jpop(c, mark);
  }
  return jget_string(c, v, "username", &u->username, err) < 0 ? -1 : 0;
}

static int cap_set_from_names(struct jctx *c, yajl_val obj, const char *key, uint64_t *mask,
                              struct cm_error **err) {
  struct spec_strv names = {0};
  int r = jget_strv(c, obj, key, &names, err);
  if (r <= 0)
    return r;
  size_t mark = jpush_key(c, key);
  for (size_t i = 0; i < names.count; i++) {
    cap_value_t cap;
    const char *name = names.items[i];
    /* Only the canonical "CAP_X" spelling: libcap also accepts numbers and lowercase names,
     * which would let typos and odd spellings through that other runtimes reject. */
    bool ok = strncmp(name, "CAP_", 4) == 0 && cap_from_name(name, &cap) == 0 && cap >= 0 && cap < 64;
    for (const char *p = name; ok && *p; p++)
      if (*p >= 'a' && *p <= 'z')
        ok = false;
    if (!ok) {
      /* runc and crun only warn (runtime-spec: a capability that cannot be granted SHOULD NOT
       * fail the container), and Docker's newer capability lists reach older kernels: the name
       * is ignored, which can only leave the process with less. */
      jpush_index(c, i);
      jwarn(c, "unknown capability \"%s\" ignored", name);
      jpop(c, mark);
      continue;
    }
    *mask |= 1ULL << cap;
  }
  jpop(c, mark);
  spec_strv_free(&names);
  return 0;
}

static int parse_capabilities(struct jctx *c, yajl_val v, struct spec_capabilities *caps,
                              struct cm_error **err) {
  caps->present = true;
  if (cap_set_from_names(c, v, "bounding", &caps->bounding, err) < 0 ||
      cap_set_from_names(c, v, "effective", &caps->effective, err) < 0 ||
      cap_set_from_names(c, v, "inheritable", &caps->inheritable, err) < 0 ||
      cap_set_from_names(c, v, "permitted", &caps->permitted, err) < 0 ||
      cap_set_from_names(c, v, "ambient", &caps->ambient, err) < 0)
    return -1;
  return 0;
}

static int parse_rlimit(struct jctx *c, yajl_val v, struct spec_rlimit *rl, struct cm_error **err) {
  if (jval_object(c, v, err) < 0)
    return -1;
  if (jrequire(c, v, "type", err) < 0 || jget_string(c, v, "type", &rl->type, err) < 0)
    return -1;
  const struct spec_name_value *nv = spec_name_lookup(rlimit_names, rl->type);
  if (nv == NULL) {
    size_t mark = jpush_key(c, "type");
    jerr(c, err, "unknown rlimit type \"%s\"", rl->type);
    jpop(c, mark);
    return -1;
  }
  rl->resource = (int)nv->value;
  if (jrequire(c, v, "soft", err) < 0 || jget_u64(c, v, "soft", UINT64_MAX, &rl->soft, err) < 0)
    return -1;
  if (jrequire(c, v, "hard", err) < 0 || jget_u64(c, v, "hard", UINT64_MAX, &rl->hard, err) < 0)
    return -1;
  if (rl->soft > rl->hard)
    return jerr(c, err, "soft limit %llu exceeds hard limit %llu", (unsigned long long)rl->soft,
                (unsigned long long)rl->hard);
  return 0;
}

static int parse_rlimits(struct jctx *c, yajl_val arr, struct spec_process *p, struct cm_error **err) {
  size_t n = arr->u.array.len;
  if (n == 0)
    return 0;
  p->rlimits = xcalloc(n, sizeof(*p->rlimits));
  for (size_t i = 0; i < n; i++) {
    size_t mark = jpush_index(c, i);
    p->n_rlimits = i + 1;
    if (parse_rlimit(c, arr->u.array.values[i], &p->rlimits[i], err) < 0)
      return -1;
    for (size_t j = 0; j < i; j++)
      if (p->rlimits[j].resource == p->rlimits[i].resource) {
        jpush_key(c, "type");
        return jerr(c, err, "duplicate rlimit type \"%s\"", p->rlimits[i].type);
      }
    jpop(c, mark);
  }
  return 0;
}

static int parse_io_priority(struct jctx *c, yajl_val v, struct spec_process *p, struct cm_error **err) {
  cleanup_free char *cls = NULL;
  if (jrequire(c, v, "class", err) < 0 || jget_string(c, v, "class", &cls, err) < 0)
    return -1;
  const struct spec_name_value *nv = spec_name_lookup(ioprio_class_names, cls);
  if (nv == NULL) {
    jpush_key(c, "class");
    return jerr(c, err, "unknown I/O priority class \"%s\"", cls);
  }
  p->io_priority_class = (int)nv->value;
  if (jget_int(c, v, "priority", 0, 7, &p->io_priority, err) < 0)
    return -1;
  p->has_io_priority = true;
  return 0;
}

static int parse_scheduler(struct jctx *c, yajl_val v, struct spec_scheduler *s, struct cm_error **err) {
  cleanup_free char *policy = NULL;
  if (jrequire(c, v, "policy", err) < 0 || jget_string(c, v, "policy", &policy, err) < 0)
    return -1;
  const struct spec_name_value *nv = spec_name_lookup(sched_policy_names, policy);
  if (nv == NULL) {
    jpush_key(c, "policy");
    return jerr(c, err, "unknown scheduler policy \"%s\"", policy);
  }
  s->policy = (int)nv->value;
  if (jget_int(c, v, "nice", -20, 19, &s->nice, err) < 0 ||
      jget_int(c, v, "priority", 0, 99, &s->priority, err) < 0 ||
      jget_u64(c, v, "runtime", UINT64_MAX, &s->runtime, err) < 0 ||
      jget_u64(c, v, "deadline", UINT64_MAX, &s->deadline, err) < 0 ||
      jget_u64(c, v, "period", UINT64_MAX, &s->period, err) < 0)
    return -1;
  struct spec_strv flags = {0};
  if (jget_strv(c, v, "flags", &flags, err) < 0)
    return -1;
  size_t mark = jpush_key(c, "flags");
  for (size_t i = 0; i < flags.count; i++) {
    const struct spec_name_value *f = spec_name_lookup(sched_flag_names, flags.items[i]);
    if (f == NULL) {
      jpush_index(c, i);
      jerr(c, err, "unknown scheduler flag \"%s\"", flags.items[i]);
      spec_strv_free(&flags);
      return -1;
    }
    s->flags |= f->value;
  }
  jpop(c, mark);
  spec_strv_free(&flags);
  s->present = true;
  return 0;
}

/* user_required: config.json's process must name its user; an `exec --process` file may leave it
 * out and then runs as uid 0, gid 0, as with runc. */
static int parse_process(struct jctx *c, yajl_val v, struct spec_process *p, bool user_required,
                         struct cm_error **err) {
  if (jval_object(c, v, err) < 0)
    return -1;
  if (jget_bool(c, v, "terminal", &p->terminal, err) < 0)
    return -1;

  yajl_val sub;
  int r = jget_object(c, v, "consoleSize", &sub, err);
  if (r < 0)
    return -1;
  if (r == 1) {
    size_t mark = jpush_key(c, "consoleSize");
    uint32_t h = 0, w = 0;
    if (jrequire(c, sub, "height", err) < 0 || jget_u32(c, sub, "height", &h, err) < 0 ||
        jrequire(c, sub, "width", err) < 0 || jget_u32(c, sub, "width", &w, err) < 0)
      return -1;
    jpop(c, mark);
    p->has_console_size = true;
    p->console_height = h;
    p->console_width = w;
  }

  size_t mark;
  if (user_required || jfind(v, "user") != NULL) {
    if (jrequire(c, v, "user", err) < 0)
      return -1;
    mark = jpush_key(c, "user");
    if (parse_user(c, jfind(v, "user"), &p->user, err) < 0)
      return -1;
    jpop(c, mark);
  }

  if (jget_strv(c, v, "args", &p->args, err) < 0)
    return -1;
  if (p->args.count == 0) {
    jpush_key(c, "args");
    return jerr(c, err, "must be a non-empty array of strings");
  }
  if (jget_string(c, v, "commandLine", &p->command_line, err) < 0 || jget_strv(c, v, "env", &p->env, err) < 0)
    return -1;

  if (jrequire(c, v, "cwd", err) < 0 || jget_string(c, v, "cwd", &p->cwd, err) < 0)
    return -1;
  if (!path_is_absolute(p->cwd)) {
    jpush_key(c, "cwd");
    return jerr(c, err, "must be an absolute path");
  }

  r = jget_object(c, v, "capabilities", &sub, err);
  if (r < 0)
    return -1;
  if (r == 1) {
    mark = jpush_key(c, "capabilities");
    if (parse_capabilities(c, sub, &p->capabilities, err) < 0)
      return -1;
    jpop(c, mark);
  }

  r = jget_array(c, v, "rlimits", &sub, err);
  if (r < 0)
    return -1;
  if (r == 1) {
    mark = jpush_key(c, "rlimits");
    if (parse_rlimits(c, sub, p, err) < 0)
      return -1;
    jpop(c, mark);
  }

  if (jget_bool(c, v, "noNewPrivileges", &p->no_new_privileges, err) < 0)
    return -1;
  r = jget_int(c, v, "oomScoreAdj", -1000, 1000, &p->oom_score_adj, err);
  if (r < 0)
    return -1;
  p->has_oom_score_adj = r == 1;
  if (jget_string(c, v, "apparmorProfile", &p->apparmor_profile, err) < 0 ||
      jget_string(c, v, "selinuxLabel", &p->selinux_label, err) < 0)
    return -1;

  r = jget_object(c, v, "ioPriority", &sub, err);
  if (r < 0)
    return -1;
  if (r == 1) {
    mark = jpush_key(c, "ioPriority");
    if (parse_io_priority(c, sub, p, err) < 0)
      return -1;
    jpop(c, mark);
  }

  r = jget_object(c, v, "scheduler", &sub, err);
  if (r < 0)
    return -1;
  if (r == 1) {
    mark = jpush_key(c, "scheduler");
    if (parse_scheduler(c, sub, &p->scheduler, err) < 0)
      return -1;
    jpop(c, mark);
  }
  return 0;
}

void spec_process_clear(struct spec_process *p) {
  free(p->user.additional_gids);
  free(p->user.username);
  spec_strv_free(&p->args);
  free(p->command_line);
  spec_strv_free(&p->env);
  free(p->cwd);
  for (size_t i = 0; i < p->n_rlimits; i++)
    free(p->rlimits[i].type);
  free(p->rlimits);
  free(p->apparmor_profile);
  free(p->selinux_label);
  memset(p, 0, sizeof(*p));
}

void spec_process_free(struct spec_process *p) {
  if (p == NULL)
    return;
  spec_process_clear(p);
  free(p);
}

int spec_parse_process(struct jctx *c, yajl_val v, struct spec_process *p, struct cm_error **err) {
  return parse_process(c, v, p, true, err);
}

struct spec_process *spec_process_load_file(const char *path, struct cm_error **err) {
  const char *slash = strrchr(path, '/');
  const char *label = slash ? slash + 1 : path;
  size_t len = 0;
  cleanup_free char *text = read_whole_file(path, &len, err);
  if (text == NULL)
    return NULL;
  yajl_val tree = json_parse(text, len, label, err);
  if (tree == NULL)
    return NULL;
  struct jctx c;
  jctx_init(&c, label);
  struct spec_process *p = xcalloc(1, sizeof(*p));
  int r = parse_process(&c, tree, p, false, err);
  yajl_tree_free(tree);
  if (r < 0) {
    spec_process_free(p);
    return NULL;
  }
  return p;
}
