/* Internal to src/spec: small yajl_gen helpers for the JSON documents we write. */
#ifndef CM_SPEC_JSON_GEN_H
#define CM_SPEC_JSON_GEN_H

#include <yajl/yajl_gen.h>

/* A beautifying generator indenting with `indent`; aborts when out of memory. */
yajl_gen gen_new_pretty(const char *indent);
void gen_str(yajl_gen g, const char *s);
void gen_strv(yajl_gen g, const char *const *v); /* NULL-terminated → JSON array */
void gen_kv_str(yajl_gen g, const char *key, const char *value);
void gen_kv_int(yajl_gen g, const char *key, long long value);
void gen_kv_bool(yajl_gen g, const char *key, int value);
/* The generated text as a malloc'd NUL-terminated string without a trailing newline; frees g. */
char *gen_finish(yajl_gen g);

#endif
