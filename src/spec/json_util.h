/* Internal to src/spec: typed getters over yajl trees that build "<label>: <path>: <problem>"
 * errors. A jctx carries the label and the JSON path of the value being looked at; getters push
 * the key they read and pop it again, so error messages always name the exact field. */
#ifndef CM_SPEC_JSON_UTIL_H
#define CM_SPEC_JSON_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <yajl/yajl_tree.h>

#include "spec/spec.h"
#include "util/error.h"

struct jctx {
  const char *label; /* "config.json", "process.json", … */
  char path[1024];   /* ".process.args[0]"; "" means the document root */
  size_t len;
};

void jctx_init(struct jctx *c, const char *label);
/* Append ".key" (or ["key"] when key is not an identifier) / "[i]"; return a mark for jpop. */
size_t jpush_key(struct jctx *c, const char *key);
size_t jpush_index(struct jctx *c, size_t index);
void jpop(struct jctx *c, size_t mark);
/* Set "<label>: <path>: <fmt…>" with errnum 0; returns -1. */
int jerr(struct jctx *c, struct cm_error **err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Log "<label>: <path>: <fmt…>" as a warning (cm_warn): for what runc also only warns about. */
void jwarn(struct jctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Read a whole file; on failure errno and "open <path>" / "read <path>". */
char *read_whole_file(const char *path, size_t *len, struct cm_error **err);
/* Parse text into a tree; on failure "<label>: invalid JSON: <yajl message>". */
yajl_val json_parse(const char *text, size_t len, const char *label, struct cm_error **err);

/* The value of key in obj (the last one if repeated, as Go's encoding/json does); NULL when
 * absent or JSON null, which we treat the same as absent everywhere. */
yajl_val jfind(yajl_val obj, const char *key);

/* Convert the value at the current path. */
int jval_object(struct jctx *c, yajl_val v, struct cm_error **err);
int jval_array(struct jctx *c, yajl_val v, struct cm_error **err);
int jval_string(struct jctx *c, yajl_val v, char **out, struct cm_error **err);
int jval_bool(struct jctx *c, yajl_val v, bool *out, struct cm_error **err);
int jval_i64(struct jctx *c, yajl_val v, int64_t min, int64_t max, int64_t *out, struct cm_error **err);
int jval_u64(struct jctx *c, yajl_val v, uint64_t max, uint64_t *out, struct cm_error **err);
int jval_strv(struct jctx *c, yajl_val v, struct spec_strv *out, struct cm_error **err);

/* Field getters: return 1 when present, 0 when absent (out untouched), -1 on error. */
int jget_object(struct jctx *c, yajl_val obj, const char *key, yajl_val *out, struct cm_error **err);
int jget_array(struct jctx *c, yajl_val obj, const char *key, yajl_val *out, struct cm_error **err);
int jget_string(struct jctx *c, yajl_val obj, const char *key, char **out, struct cm_error **err);
int jget_bool(struct jctx *c, yajl_val obj, const char *key, bool *out, struct cm_error **err);
int jget_i64(struct jctx *c, yajl_val obj, const char *key, int64_t min, int64_t max, int64_t *out,
             struct cm_error **err);
int jget_u64(struct jctx *c, yajl_val obj, const char *key, uint64_t max, uint64_t *out,
             struct cm_error **err);
int jget_u32(struct jctx *c, yajl_val obj, const char *key, uint32_t *out, struct cm_error **err);
int jget_int(struct jctx *c, yajl_val obj, const char *key, int min, int max, int *out,
             struct cm_error **err);
int jget_strv(struct jctx *c, yajl_val obj, const char *key, struct spec_strv *out, struct cm_error **err);
/* A JSON object of string values (annotations, sysctl, unified). */
int jget_kv(struct jctx *c, yajl_val obj, const char *key, struct spec_kv_list *out, struct cm_error **err);
/* Like the getters, but absence is an error "<path>.key: missing". */
int jrequire(struct jctx *c, yajl_val obj, const char *key, struct cm_error **err);

/* Parse the optional sub-value obj[key] (fetched with getter: jget_object, jget_array) with
 * `parser`, which sees it as `sub_`, keeping the JSON path right. Returns -1 from the caller on
 * error. */
#define JSON_PARSE_SUB(obj, key, getter, parser)                                                             \
  do {                                                                                                       \
    yajl_val sub_;                                                                                           \
    int r_ = getter(c, obj, key, &sub_, err);                                                                \
    if (r_ < 0)                                                                                              \
      return -1;                                                                                             \
    if (r_ == 1) {                                                                                           \
      size_t mark_ = jpush_key(c, key);                                                                      \
      if ((parser) < 0)                                                                                      \
        return -1;                                                                                           \
      jpop(c, mark_);                                                                                        \
    }                                                                                                        \
  } while (0)


/* Allocation that cannot fail (aborts: a runtime without memory cannot do anything useful). */
void *xcalloc(size_t n, size_t size);
char *xstrdup(const char *s);

void spec_strv_free(struct spec_strv *v);
/* Append a copy of s; items stays NULL-terminated. */
void spec_strv_push(struct spec_strv *v, const char *s);
/* Set NAME=VALUE in an environment list: replaces NAME's entry, or appends. */
void spec_env_set(struct spec_strv *env, const char *kv);
void spec_kv_list_free(struct spec_kv_list *l);

/* Path helpers. */
bool path_is_absolute(const char *p);
/* Clean an absolute path: collapse "//", drop "." and trailing "/". Returns NULL (and sets
 * *dotdot) when a ".." component is present. */
char *path_clean_absolute(const char *p, bool *dotdot);

/* Shared parsers between config.json, process.json and `update --resources`. */
int spec_parse_process(struct jctx *c, yajl_val v, struct spec_process *p, struct cm_error **err);
void spec_process_clear(struct spec_process *p);
int spec_parse_linux(struct jctx *c, yajl_val v, struct spec_linux *l, struct cm_error **err);
void spec_linux_clear(struct spec_linux *l);
int spec_parse_resources(struct jctx *c, yajl_val v, struct spec_resources *r, struct cm_error **err);
int spec_parse_seccomp(struct jctx *c, yajl_val v, struct spec_seccomp *s, struct cm_error **err);
/* obj[key] as an SCMP_ACT_* name (required); shared with policy/'s Docker-format loader. */
int spec_parse_seccomp_action(struct jctx *c, yajl_val obj, const char *key, enum spec_seccomp_action *out,
                              struct cm_error **err);
void spec_seccomp_clear(struct spec_seccomp *s);
int spec_parse_id_mappings(struct jctx *c, yajl_val obj, const char *key, struct spec_id_mapping **out,
                           size_t *n, struct cm_error **err);
/* Decode m->options into flags/clear_flags/propagation/data/rro/idmap. */
void spec_mount_decode_options(struct spec_mount *m);

/* Name tables shared with features.c. */
struct spec_name_value {
  const char *name;
  unsigned long value;
};
extern const struct spec_name_value spec_seccomp_action_names[];
extern const struct spec_name_value spec_seccomp_op_names[];
extern const struct spec_name_value spec_seccomp_flag_names[];
extern const char *const spec_seccomp_arch_names[];
extern const char *const spec_mount_option_names[]; /* sorted, NULL-terminated */
int spec_ns_type_from_name(const char *name);       /* -1 when unknown */
const struct spec_name_value *spec_name_lookup(const struct spec_name_value *table, const char *name);

#endif
