/* The landlockconfig JSON format → struct spec_landlock, and back (the state's landlock.json,
 * `policy explain`). Only parsing and arithmetic on rights: no syscall here (src/linux/landlock.c
 * applies a ruleset, src/policy/profile_landlock.c derives the mcp profile's). */
#include "spec/landlock_config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec/json_gen.h"
#include "spec/json_util.h"
#include "util/cleanup.h"

struct right {
  const char *name;
  uint64_t bit;
  int abi;
};

static const struct right fs_rights[] = {
    {"execute", LL_FS_EXECUTE, 1},
    {"write_file", LL_FS_WRITE_FILE, 1},
    {"read_file", LL_FS_READ_FILE, 1},
    {"read_dir", LL_FS_READ_DIR, 1},
    {"remove_dir", LL_FS_REMOVE_DIR, 1},
    {"remove_file", LL_FS_REMOVE_FILE, 1},
    {"make_char", LL_FS_MAKE_CHAR, 1},
    {"make_dir", LL_FS_MAKE_DIR, 1},
    {"make_reg", LL_FS_MAKE_REG, 1},
    {"make_sock", LL_FS_MAKE_SOCK, 1},
    {"make_fifo", LL_FS_MAKE_FIFO, 1},
    {"make_block", LL_FS_MAKE_BLOCK, 1},
    {"make_sym", LL_FS_MAKE_SYM, 1},
    {"refer", LL_FS_REFER, 2},
    {"truncate", LL_FS_TRUNCATE, 3},
    {"ioctl_dev", LL_FS_IOCTL_DEV, 5},
    {NULL, 0, 0},
};
static const struct right net_rights[] = {
    {"bind_tcp", LL_NET_BIND_TCP, 4},
    {"connect_tcp", LL_NET_CONNECT_TCP, 4},
    {NULL, 0, 0},
};
static const struct right scope_rights[] = {
    {"abstract_unix_socket", LL_SCOPE_ABSTRACT_UNIX_SOCKET, 6},
    {"signal", LL_SCOPE_SIGNAL, 6},
    {NULL, 0, 0},
};
static const struct right *const rights[SPEC_LANDLOCK_KINDS] = {fs_rights, net_rights, scope_rights};
static const char *const kind_fields[SPEC_LANDLOCK_KINDS] = {"handledAccessFs", "handledAccessNet", "scoped"};
static const char *const kind_words[SPEC_LANDLOCK_KINDS] = {"filesystem access right", "network access right",
                                                            "scope"};

const char *spec_landlock_kind_field(enum spec_landlock_kind k) {
  return kind_fields[k];
}

uint64_t spec_landlock_supported(enum spec_landlock_kind k, int abi) {
  uint64_t mask = 0;
  for (const struct right *r = rights[k]; r->name; r++)
    if (r->abi <= abi)
      mask |= r->bit;
  return mask;
}

/* landlockconfig's groups: read_execute is what reading and running needs (refer included where
 * it exists: moving a file out of such a tree still needs the removal right there);
 * read_write is everything but execute. */
uint64_t spec_landlock_read_execute(int abi) {
  return (LL_FS_EXECUTE | LL_FS_READ_FILE | LL_FS_READ_DIR | LL_FS_REFER) &
         spec_landlock_supported(SPEC_LANDLOCK_FS, abi);
}

uint64_t spec_landlock_read_write(int abi) {
  return spec_landlock_supported(SPEC_LANDLOCK_FS, abi) & ~LL_FS_EXECUTE;
}

int spec_landlock_right_abi(enum spec_landlock_kind k, uint64_t bit) {
  for (const struct right *r = rights[k]; r->name; r++)
    if (r->bit == bit)
      return r->abi;
  return 0;
}

const char *spec_landlock_right_name(enum spec_landlock_kind k, uint64_t bit) {
  for (const struct right *r = rights[k]; r->name; r++)
    if (r->bit == bit)
      return r->name;
  return NULL;
}

char *spec_landlock_access_names(enum spec_landlock_kind k, uint64_t mask) {
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  if (f == NULL)
    abort();
  if (mask == 0)
    fputs("none", f);
  for (int b = 0; b < 64; b++) {
    uint64_t bit = 1ULL << b;
    if (!(mask & bit))
      continue;
    const char *name = spec_landlock_right_name(k, bit);
    if (ftell(f))
      fputc(' ', f);
    if (name)
      fputs(name, f);
    else
      fprintf(f, "0x%" PRIx64, bit);
  }
  fclose(f);
  return out;
}

static char *known_names(enum spec_landlock_kind k) {
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  if (f == NULL)
    abort();
  fputs("abi.all", f);
  if (k == SPEC_LANDLOCK_FS)
    fputs(", abi.read_execute, abi.read_write", f);
  for (const struct right *r = rights[k]; r->name; r++)
    fprintf(f, ", %s", r->name);
  fclose(f);
  return out;
}

/* --- building -------------------------------------------------------------------------------- */

void spec_landlock_add_path(struct spec_landlock *l, const char *path, uint64_t access) {
  l->present = true;
  l->handled[SPEC_LANDLOCK_FS] |= access;
  for (size_t i = 0; i < l->n_paths; i++) {
    if (strcmp(l->paths[i].path, path) == 0) {
      l->paths[i].access |= access;
      return;
    }
  }
  struct spec_landlock_path_rule *grown = realloc(l->paths, (l->n_paths + 1) * sizeof(*grown));
  if (grown == NULL)
    abort();
  l->paths = grown;
  l->paths[l->n_paths++] = (struct spec_landlock_path_rule){xstrdup(path), access};
}

void spec_landlock_add_port(struct spec_landlock *l, uint64_t port, uint64_t access) {
  l->present = true;
  l->handled[SPEC_LANDLOCK_NET] |= access;
  for (size_t i = 0; i < l->n_ports; i++) {
    if (l->ports[i].port == port) {
      l->ports[i].access |= access;
      return;
    }
  }
  struct spec_landlock_port_rule *grown = realloc(l->ports, (l->n_ports + 1) * sizeof(*grown));
  if (grown == NULL)
    abort();
  l->ports = grown;
  l->ports[l->n_ports++] = (struct spec_landlock_port_rule){port, access};
}

static void strv_add(struct spec_strv *v, char *owned) {
  for (size_t i = 0; i < v->count; i++) {
    if (strcmp(v->items[i], owned) == 0) {
      free(owned);
      return;
    }
  }
  char **grown = realloc(v->items, (v->count + 2) * sizeof(char *));
  if (grown == NULL)
    abort();
  v->items = grown;
  v->items[v->count++] = owned;
  v->items[v->count] = NULL;
}

bool spec_landlock_add_deny(struct spec_landlock *l, const char *path) {
  bool dotdot = false;
  char *clean = path_is_absolute(path) ? path_clean_absolute(path, &dotdot) : NULL;
  if (clean == NULL)
    return false;
  strv_add(&l->deny, clean);
  return true;
}

void spec_landlock_clear(struct spec_landlock *l) {
  for (size_t i = 0; i < l->n_paths; i++)
    free(l->paths[i].path);
  free(l->paths);
  free(l->ports);
  spec_strv_free(&l->deny);
  free(l->source);
  memset(l, 0, sizeof(*l));
}

void spec_landlock_copy(struct spec_landlock *dst, const struct spec_landlock *src) {
  *dst = *src;
  dst->paths = xcalloc(src->n_paths, sizeof(*dst->paths));
  for (size_t i = 0; i < src->n_paths; i++)
    dst->paths[i] = (struct spec_landlock_path_rule){xstrdup(src->paths[i].path), src->paths[i].access};
  dst->ports = xcalloc(src->n_ports, sizeof(*dst->ports));
  memcpy(dst->ports, src->ports, src->n_ports * sizeof(*dst->ports));
  dst->deny = (struct spec_strv){0};
  for (size_t i = 0; i < src->deny.count; i++)
    strv_add(&dst->deny, xstrdup(src->deny.items[i]));
  dst->source = src->source ? xstrdup(src->source) : NULL;
}

/* --- ABI ------------------------------------------------------------------------------------- */

int spec_landlock_check_abi(const struct spec_landlock *l, int kernel_abi, struct cm_error **err) {
  const char *src = l->source ? l->source : "ruleset";
  if (kernel_abi <= 0)
    return cm_error_set(err, 0,
                        "%s: Landlock is not available on this kernel (not built in, or not in the lsm= boot "
                        "list): the ruleset cannot be enforced",
                        src);
  if (l->abi > kernel_abi)
    return cm_error_set(err, 0,
                        "%s: \"abi\": %d needs Landlock ABI %d; this kernel has ABI %d (lower \"abi\" to %d)",
                        src, l->abi, l->abi, kernel_abi, kernel_abi);
  if (l->groups_beyond_known)
    return cm_error_set(
        err, 0, "%s: \"abi\": %d: codemode knows the abi.* groups up to ABI %d only (name the rights)", src,
        l->abi, SPEC_LANDLOCK_ABI_KNOWN);
  for (int k = 0; k < SPEC_LANDLOCK_KINDS; k++) {
    for (int b = 0; b < 64; b++) {
      uint64_t bit = 1ULL << b;
      if (!(l->handled[k] & bit))
        continue;
      int need = spec_landlock_right_abi(k, bit);
      if (need == 0 && kernel_abi <= SPEC_LANDLOCK_ABI_KNOWN)
        return cm_error_set(err, 0,
                            "%s: %s 0x%" PRIx64
                            " is not a %s of Landlock ABI %d or older; this kernel has ABI %d "
                            "(remove it)",
                            src, kind_fields[k], bit, kind_words[k], kernel_abi, kernel_abi);
      if (need > kernel_abi)
        return cm_error_set(err, 0, "%s: %s \"%s\" needs Landlock ABI %d; this kernel has ABI %d (remove it)",
                            src, kind_fields[k], spec_landlock_right_name(k, bit), need, kernel_abi);
    }
  }
  return 0;
}

void spec_landlock_mask_abi(struct spec_landlock *l, int kernel_abi) {
  for (int k = 0; k < SPEC_LANDLOCK_KINDS; k++)
    l->handled[k] &= spec_landlock_supported(k, kernel_abi);
  size_t kept = 0;
  for (size_t i = 0; i < l->n_paths; i++) {
    l->paths[i].access &= l->handled[SPEC_LANDLOCK_FS];
    if (l->paths[i].access)
      l->paths[kept++] = l->paths[i];
    else
      free(l->paths[i].path);
  }
  l->n_paths = kept;
  kept = 0;
  for (size_t i = 0; i < l->n_ports; i++) {
    l->ports[i].access &= l->handled[SPEC_LANDLOCK_NET];
    if (l->ports[i].access)
      l->ports[kept++] = l->ports[i];
  }
  l->n_ports = kept;
  if (l->abi > kernel_abi)
    l->abi = kernel_abi;
}

/* --- parsing --------------------------------------------------------------------------------- */

struct variable {
  char *name;
  struct spec_strv values;
};
struct parse_state {
  struct spec_landlock *out;
  struct variable *vars;
  size_t n_vars;
};

static void vars_free(struct parse_state *ps) {
  for (size_t i = 0; i < ps->n_vars; i++) {
    free(ps->vars[i].name);
    spec_strv_free(&ps->vars[i].values);
  }
  free(ps->vars);
}

/* Refuse keys the format does not have: a typo ("pathbeneath") must not silently drop rules.
 * A "comment" string is allowed in every object (a codemode extension, as Docker's seccomp
 * format has one): the learned policy says there when each rule was seen. */
static int only_keys(struct jctx *c, yajl_val obj, const char *const *known, struct cm_error **err) {
  for (size_t i = 0; i < obj->u.object.len; i++) {
    const char *key = obj->u.object.keys[i];
    bool ok = strcmp(key, "comment") == 0 && YAJL_IS_STRING(obj->u.object.values[i]);
    for (const char *const *k = known; *k && !ok; k++)
      ok = strcmp(*k, key) == 0;
    if (!ok) {
      size_t mark = jpush_key(c, key);
      char list[256] = "";
      for (const char *const *k = known; *k; k++)
        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", list[0] ? ", " : "", *k);
      jerr(c, err, "unknown field (known: %s)", list);
      jpop(c, mark);
      return -1;
    }
  }
  return 0;
}

/* obj[key] as a non-empty array (schema: minItems 1). 1 present, 0 absent, -1 error. */
static int get_nonempty_array(struct jctx *c, yajl_val obj, const char *key, yajl_val *out,
                              struct cm_error **err) {
  int r = jget_array(c, obj, key, out, err);
  if (r == 1 && (*out)->u.array.len == 0) {
    size_t mark = jpush_key(c, key);
    jerr(c, err, "must not be empty");
    jpop(c, mark);
    return -1;
  }
  return r;
}

/* One item of an access array: a right's name, an abi.* group, or a raw UAPI bit mask. */
static int parse_access_item(struct jctx *c, yajl_val v, enum spec_landlock_kind k, struct spec_landlock *out,
                             uint64_t *mask, struct cm_error **err) {
  if (YAJL_IS_INTEGER(v)) {
    if (YAJL_GET_INTEGER(v) <= 0)
      return jerr(c, err, "a raw access right must be a positive bit mask");
    *mask |= (uint64_t)YAJL_GET_INTEGER(v);
    return 0;
  }
  if (!YAJL_IS_STRING(v))
    return jerr(c, err, "must be a string (a %s) or a bit mask", kind_words[k]);
  const char *name = YAJL_GET_STRING(v);
  if (strncmp(name, "abi.", 4) == 0) {
    const char *group = name + 4;
    bool fs = k == SPEC_LANDLOCK_FS;
    if (strcmp(group, "all") != 0 &&
        !(fs && (strcmp(group, "read_execute") == 0 || strcmp(group, "read_write") == 0))) {
      cleanup_free char *known = known_names(k);
      return jerr(c, err, "unknown group \"%s\" (known: %s)", name, known);
    }
    /* A group means "every such right of ABI N": without N it has no meaning. */
    if (out->abi == 0)
      return jerr(c, err, "\"%s\" needs the document's \"abi\" (the Landlock ABI whose rights it means)",
                  name);
    int abi = out->abi;
    if (abi > SPEC_LANDLOCK_ABI_KNOWN) {
      out->groups_beyond_known = true;
      abi = SPEC_LANDLOCK_ABI_KNOWN;
    }
    if (strcmp(group, "all") == 0)
      *mask |= spec_landlock_supported(k, abi);
    else if (strcmp(group, "read_execute") == 0)
      *mask |= spec_landlock_read_execute(abi);
    else
      *mask |= spec_landlock_read_write(abi);
    return 0;
  }
  for (const struct right *r = rights[k]; r->name; r++) {
    if (strcmp(r->name, name) == 0) {
      *mask |= r->bit;
      return 0;
    }
  }
  cleanup_free char *known = known_names(k);
  return jerr(c, err, "unknown %s \"%s\" (known: %s)", kind_words[k], name, known);
}

static int parse_access(struct jctx *c, yajl_val obj, const char *key, enum spec_landlock_kind k,
                        struct spec_landlock *out, uint64_t *mask, struct cm_error **err) {
  yajl_val arr;
  int r = get_nonempty_array(c, obj, key, &arr, err);
  if (r <= 0)
    return r;
  size_t mark = jpush_key(c, key);
  for (size_t i = 0; i < arr->u.array.len; i++) {
    size_t m = jpush_index(c, i);
    if (parse_access_item(c, arr->u.array.values[i], k, out, mask, err) < 0)
      return -1;
    jpop(c, m);
  }
  jpop(c, mark);
  return 1;
}

static bool valid_var_name(const char *n) {
  if (!isalpha((unsigned char)n[0]))
    return false;
  for (const char *p = n; *p; p++)
    if (!isalnum((unsigned char)*p) && *p != '_')
      return false;
  return true;
}

static int parse_variables(struct jctx *c, yajl_val arr, struct parse_state *ps, struct cm_error **err) {
  static const char *const keys[] = {"name", "literal", NULL};
  for (size_t i = 0; i < arr->u.array.len; i++) {
    yajl_val v = arr->u.array.values[i];
    size_t mark = jpush_index(c, i);
    cleanup_free char *name = NULL;
    if (jval_object(c, v, err) < 0 || only_keys(c, v, keys, err) < 0 || jrequire(c, v, "name", err) < 0 ||
        jget_string(c, v, "name", &name, err) < 0)
      return -1;
    if (!valid_var_name(name)) {
      size_t m = jpush_key(c, "name");
      jerr(c, err, "\"%s\": a name starts with a letter and has only letters, digits and '_'", name);
      jpop(c, m);
      return -1;
    }
    struct variable *var = NULL;
    for (size_t k = 0; k < ps->n_vars && !var; k++)
      if (strcmp(ps->vars[k].name, name) == 0)
        var = &ps->vars[k];
    if (var == NULL) {
      struct variable *grown = realloc(ps->vars, (ps->n_vars + 1) * sizeof(*grown));
      if (grown == NULL)
        abort();
      ps->vars = grown;
      var = &ps->vars[ps->n_vars++];
      *var = (struct variable){.name = xstrdup(name)};
    }
    yajl_val lit;
    int r = get_nonempty_array(c, v, "literal", &lit, err);
    if (r < 0)
      return -1;
    if (r == 1) {
      /* Declared again: the values add up, as when landlockconfig composes documents. */
      struct spec_strv values = {0};
      size_t m = jpush_key(c, "literal");
      if (jval_strv(c, lit, &values, err) < 0)
        return -1;
      jpop(c, m);
      for (size_t k = 0; k < values.count; k++)
        strv_add(&var->values, xstrdup(values.items[k]));
      spec_strv_free(&values);
    }
    jpop(c, mark);
  }
  return 0;
}

/* Expand "${name}" references (each one over every value of its variable; "$$" is a '$') into
 * the paths of one `parent` entry. */
static int expand_template(struct jctx *c, const struct parse_state *ps, const char *t,
                           struct spec_strv *prefixes, struct cm_error **err) {
  for (const char *p = t; *p;) {
    const char *dollar = strchr(p, '$');
    size_t lit_len = dollar ? (size_t)(dollar - p) : strlen(p);
    const char *add = p;
    size_t add_len = lit_len;
    const struct variable *var = NULL;
    if (dollar && dollar[1] == '$') {
      add_len++; /* keep one '$' */
      p = dollar + 2;
    } else if (dollar && dollar[1] == '{') {
      const char *end = strchr(dollar + 2, '}');
      if (end == NULL)
        return jerr(c, err, "\"%s\": unclosed variable reference at position %zu", t, (size_t)(dollar - t));
      cleanup_free char *name = strndup(dollar + 2, (size_t)(end - dollar - 2));
      for (size_t k = 0; k < ps->n_vars && !var; k++)
        if (strcmp(ps->vars[k].name, name) == 0)
          var = &ps->vars[k];
      if (var == NULL)
        return jerr(c, err, "\"%s\": unknown variable \"%s\" (declare it in \"variable\")", t, name);
      p = end + 1;
    } else if (dollar) {
      add_len++; /* a lone '$' is text */
      p = dollar + 1;
    } else {
      p += lit_len;
    }
    /* Every prefix so far, extended by the text and then by each value of the variable. */
    struct spec_strv next = {0};
    size_t nvals = var ? var->values.count : 1;
    for (size_t i = 0; i < prefixes->count; i++) {
      for (size_t k = 0; k < nvals; k++) {
        char *s = NULL;
        if (asprintf(&s, "%s%.*s%s", prefixes->items[i], (int)add_len, add, var ? var->values.items[k] : "") <
            0)
          abort();
        strv_add(&next, s);
      }
    }
    spec_strv_free(prefixes);
    *prefixes = next;
  }
  return 0;
}

static int parse_path_beneath(struct jctx *c, yajl_val arr, struct parse_state *ps, struct cm_error **err) {
  static const char *const keys[] = {"allowedAccess", "parent", NULL};
  for (size_t i = 0; i < arr->u.array.len; i++) {
    yajl_val v = arr->u.array.values[i];
    size_t mark = jpush_index(c, i);
    uint64_t access = 0;
    yajl_val parents;
    if (jval_object(c, v, err) < 0 || only_keys(c, v, keys, err) < 0 ||
        jrequire(c, v, "allowedAccess", err) < 0 || jrequire(c, v, "parent", err) < 0 ||
        parse_access(c, v, "allowedAccess", SPEC_LANDLOCK_FS, ps->out, &access, err) < 0 ||
        get_nonempty_array(c, v, "parent", &parents, err) < 0)
      return -1;
    size_t pm = jpush_key(c, "parent");
    for (size_t k = 0; k < parents->u.array.len; k++) {
      size_t m = jpush_index(c, k);
      yajl_val pv = parents->u.array.values[k];
      if (!YAJL_IS_STRING(pv))
        return jerr(c, err, "must be a string (a path)");
      struct spec_strv paths = {0};
      strv_add(&paths, xstrdup(""));
      if (expand_template(c, ps, YAJL_GET_STRING(pv), &paths, err) < 0) {
        spec_strv_free(&paths);
        return -1;
      }
      for (size_t n = 0; n < paths.count; n++) {
        if (paths.items[n][0] == '\0') {
          spec_strv_free(&paths);
          return jerr(c, err, "an empty path");
        }
        spec_landlock_add_path(ps->out, paths.items[n], access);
      }
      spec_strv_free(&paths);
      jpop(c, m);
    }
    jpop(c, pm);
    jpop(c, mark);
  }
  return 0;
}

static int parse_net_port(struct jctx *c, yajl_val arr, struct parse_state *ps, struct cm_error **err) {
  static const char *const keys[] = {"allowedAccess", "port", NULL};
  for (size_t i = 0; i < arr->u.array.len; i++) {
    yajl_val v = arr->u.array.values[i];
    size_t mark = jpush_index(c, i);
    uint64_t access = 0;
    yajl_val ports;
    if (jval_object(c, v, err) < 0 || only_keys(c, v, keys, err) < 0 ||
        jrequire(c, v, "allowedAccess", err) < 0 || jrequire(c, v, "port", err) < 0 ||
        parse_access(c, v, "allowedAccess", SPEC_LANDLOCK_NET, ps->out, &access, err) < 0 ||
        get_nonempty_array(c, v, "port", &ports, err) < 0)
      return -1;
    size_t pm = jpush_key(c, "port");
    for (size_t k = 0; k < ports->u.array.len; k++) {
      size_t m = jpush_index(c, k);
      uint64_t port;
      if (jval_u64(c, ports->u.array.values[k], 65535, &port, err) < 0)
        return -1;
      spec_landlock_add_port(ps->out, port, access);
      jpop(c, m);
    }
    jpop(c, pm);
    jpop(c, mark);
  }
  return 0;
}

static int parse_rulesets(struct jctx *c, yajl_val arr, struct parse_state *ps, struct cm_error **err) {
  static const char *const keys[] = {"handledAccessFs", "handledAccessNet", "scoped", NULL};
  for (size_t i = 0; i < arr->u.array.len; i++) {
    yajl_val v = arr->u.array.values[i];
    size_t mark = jpush_index(c, i);
    if (jval_object(c, v, err) < 0 || only_keys(c, v, keys, err) < 0)
      return -1;
    int any = 0;
    for (int k = 0; k < SPEC_LANDLOCK_KINDS; k++) {
      int r = parse_access(c, v, kind_fields[k], k, ps->out, &ps->out->handled[k], err);
      if (r < 0)
        return -1;
      any |= r;
    }
    if (!any)
      return jerr(c, err, "an empty ruleset (give handledAccessFs, handledAccessNet or scoped)");
    jpop(c, mark);
  }
  return 0;
}

static int parse_doc(struct jctx *c, yajl_val root, struct spec_landlock *out, struct cm_error **err) {
  static const char *const keys[] = {"abi", "variable", "ruleset", "pathBeneath", "netPort", NULL};
  memset(out, 0, sizeof(*out));
  struct parse_state ps = {.out = out};
  int rc = -1;
  yajl_val sub;
  if (jval_object(c, root, err) < 0 || only_keys(c, root, keys, err) < 0)
    goto out;
  if (jget_int(c, root, "abi", 1, INT32_MAX, &out->abi, err) < 0)
    goto out;
  int r, any = 0;
  /* Variables first: the paths refer to them, wherever they are written. */
  static const char *const order[] = {"variable", "ruleset", "pathBeneath", "netPort"};
  for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
    r = get_nonempty_array(c, root, order[i], &sub, err);
    if (r < 0)
      goto out;
    if (r == 0)
      continue;
    any = 1;
    size_t mark = jpush_key(c, order[i]);
    int pr = i == 0   ? parse_variables(c, sub, &ps, err)
             : i == 1 ? parse_rulesets(c, sub, &ps, err)
             : i == 2 ? parse_path_beneath(c, sub, &ps, err)
                      : parse_net_port(c, sub, &ps, err);
    if (pr < 0)
      goto out;
    jpop(c, mark);
  }
  if (!any) {
    jerr(c, err, "an empty configuration (give ruleset, pathBeneath or netPort)");
    goto out;
  }
  out->present = true;
  rc = 0;
out:
  vars_free(&ps);
  if (rc < 0)
    spec_landlock_clear(out);
  return rc;
}

int spec_landlock_parse(const char *json, size_t len, const char *label, struct spec_landlock *out,
                        struct cm_error **err) {
  memset(out, 0, sizeof(*out));
  yajl_val tree = json_parse(json, len, label, err);
  if (tree == NULL)
    return -1;
  struct jctx c;
  jctx_init(&c, label);
  int r = parse_doc(&c, tree, out, err);
  yajl_tree_free(tree);
  if (r == 0)
    out->source = xstrdup(label);
  return r;
}

int spec_landlock_parse_deny(const char *json, size_t len, const char *label, struct spec_strv *out,
                             struct cm_error **err) {
  yajl_val tree = json_parse(json, len, label, err);
  if (tree == NULL)
    return -1;
  struct jctx c;
  jctx_init(&c, label);
  int rc = -1;
  struct spec_landlock tmp = {0};
  if (!YAJL_IS_ARRAY(tree)) {
    jerr(&c, err, "must be an array of absolute paths");
    goto out;
  }
  for (size_t i = 0; i < tree->u.array.len; i++) {
    size_t m = jpush_index(&c, i);
    yajl_val v = tree->u.array.values[i];
    if (!YAJL_IS_STRING(v)) {
      jerr(&c, err, "must be a string (an absolute path)");
      goto out;
    }
    if (!spec_landlock_add_deny(&tmp, YAJL_GET_STRING(v))) {
      jerr(&c, err, "\"%s\": must be an absolute path without \"..\"", YAJL_GET_STRING(v));
      goto out;
    }
    jpop(&c, m);
  }
  for (size_t i = 0; i < tmp.deny.count; i++)
    strv_add(out, xstrdup(tmp.deny.items[i]));
  rc = 0;
out:
  spec_landlock_clear(&tmp);
  yajl_tree_free(tree);
  return rc;
}

/* --- writing --------------------------------------------------------------------------------- */

/* A path as a template that expands to exactly itself: the kept form is read back by the same
 * parser, which expands "${name}" and "$$", so every '$' of a literal path is written "$$"
 * (found by fuzz_landlock: a path "${ws}/out", from "$${ws}/out", did not read back). */
static void gen_template_literal(yajl_gen g, const char *path) {
  size_t n = 0;
  for (const char *p = path; *p; p++)
    n += *p == '$' ? 2 : 1;
  char *t = xcalloc(n + 1, 1), *o = t;
  for (const char *p = path; *p; p++) {
    *o++ = *p;
    if (*p == '$')
      *o++ = '$';
  }
  gen_str(g, t);
  free(t);
}

static void gen_access(yajl_gen g, enum spec_landlock_kind k, uint64_t mask) {
  yajl_gen_array_open(g);
  for (int b = 0; b < 64; b++) {
    uint64_t bit = 1ULL << b;
    if (!(mask & bit))
      continue;
    const char *name = spec_landlock_right_name(k, bit);
    if (name)
      gen_str(g, name);
    else
      yajl_gen_integer(g, (long long)bit);
  }
  yajl_gen_array_close(g);
}

static void gen_config(yajl_gen g, const struct spec_landlock *l) {
  yajl_gen_map_open(g);
  if (l->abi)
    gen_kv_int(g, "abi", l->abi);
  if (l->handled[0] || l->handled[1] || l->handled[2]) {
    gen_str(g, "ruleset");
    yajl_gen_array_open(g);
    yajl_gen_map_open(g);
    for (int k = 0; k < SPEC_LANDLOCK_KINDS; k++) {
      if (l->handled[k]) {
        gen_str(g, kind_fields[k]);
        gen_access(g, k, l->handled[k]);
      }
    }
    yajl_gen_map_close(g);
    yajl_gen_array_close(g);
  }
  if (l->n_paths) {
    gen_str(g, "pathBeneath");
    yajl_gen_array_open(g);
    for (size_t i = 0; i < l->n_paths; i++) {
      yajl_gen_map_open(g);
      gen_str(g, "allowedAccess");
      gen_access(g, SPEC_LANDLOCK_FS, l->paths[i].access);
      gen_str(g, "parent");
      yajl_gen_array_open(g);
      gen_template_literal(g, l->paths[i].path);
      yajl_gen_array_close(g);
      yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
  }
  if (l->n_ports) {
    gen_str(g, "netPort");
    yajl_gen_array_open(g);
    for (size_t i = 0; i < l->n_ports; i++) {
      yajl_gen_map_open(g);
      gen_str(g, "allowedAccess");
      gen_access(g, SPEC_LANDLOCK_NET, l->ports[i].access);
      gen_str(g, "port");
      yajl_gen_array_open(g);
      yajl_gen_integer(g, (long long)l->ports[i].port);
      yajl_gen_array_close(g);
      yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
  }
  yajl_gen_map_close(g);
}

char *spec_landlock_config_json(const struct spec_landlock *l, bool pretty) {
  yajl_gen g = pretty ? gen_new_pretty("  ") : yajl_gen_alloc(NULL);
  if (g == NULL)
    abort();
  gen_config(g, l);
  return gen_finish(g);
}

char *spec_landlock_kept_json(const struct spec_landlock *layers, size_t n, int abi) {
  yajl_gen g = yajl_gen_alloc(NULL);
  if (g == NULL)
    abort();
  yajl_gen_map_open(g);
  gen_kv_int(g, "abi", abi);
  gen_str(g, "layers");
  yajl_gen_array_open(g);
  for (size_t i = 0; i < n; i++) {
    yajl_gen_map_open(g);
    if (layers[i].source)
      gen_kv_str(g, "source", layers[i].source);
    gen_kv_bool(g, "bestEffort", layers[i].best_effort);
    if (layers[i].deny.count) {
      gen_str(g, "deny");
      gen_strv(g, (const char *const *)layers[i].deny.items);
    }
    gen_str(g, "config");
    gen_config(g, &layers[i]);
    yajl_gen_map_close(g);
  }
  yajl_gen_array_close(g);
  yajl_gen_map_close(g);
  return gen_finish(g);
}

int spec_landlock_kept_parse(const char *json, size_t len, const char *label, struct spec_landlock **layers,
                             size_t *n, int *abi, struct cm_error **err) {
  *layers = NULL;
  *n = 0;
  yajl_val tree = json_parse(json, len, label, err);
  if (tree == NULL)
    return -1;
  struct jctx ctx, *c = &ctx;
  jctx_init(c, label);
  int rc = -1;
  yajl_val arr;
  if (jval_object(c, tree, err) < 0 || jrequire(c, tree, "abi", err) < 0 ||
      jget_int(c, tree, "abi", 0, INT32_MAX, abi, err) < 0 || jrequire(c, tree, "layers", err) < 0 ||
      jget_array(c, tree, "layers", &arr, err) < 0)
    goto out;
  size_t lm = jpush_key(c, "layers");
  *layers = xcalloc(arr->u.array.len, sizeof(**layers));
  for (size_t i = 0; i < arr->u.array.len; i++) {
    yajl_val v = arr->u.array.values[i];
    size_t m = jpush_index(c, i);
    struct spec_landlock *l = &(*layers)[i];
    yajl_val cfg;
    cleanup_free char *source = NULL;
    struct spec_strv deny = {0};
    bool best_effort = false;
    if (jval_object(c, v, err) < 0 || jrequire(c, v, "config", err) < 0 ||
        jget_object(c, v, "config", &cfg, err) < 0 || jget_string(c, v, "source", &source, err) < 0 ||
        jget_bool(c, v, "bestEffort", &best_effort, err) < 0 || jget_strv(c, v, "deny", &deny, err) < 0)
      goto out;
    size_t cm = jpush_key(c, "config");
    int r = parse_doc(c, cfg, l, err);
    if (r < 0) {
      spec_strv_free(&deny);
      goto out;
    }
    jpop(c, cm);
    (*n)++;
    l->best_effort = best_effort;
    l->source = source;
    source = NULL;
    for (size_t k = 0; k < deny.count; k++)
      spec_landlock_add_deny(l, deny.items[k]);
    spec_strv_free(&deny);
    jpop(c, m);
  }
  jpop(c, lm);
  rc = 0;
out:
  if (rc < 0) {
    for (size_t i = 0; i < *n; i++)
      spec_landlock_clear(&(*layers)[i]);
    free(*layers);
    *layers = NULL;
    *n = 0;
  }
  yajl_tree_free(tree);
  return rc;
}
