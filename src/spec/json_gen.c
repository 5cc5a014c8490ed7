/* yajl_gen helpers for the JSON documents spec/ writes (default config, features). */
#include "spec/json_gen.h"

#include <stdlib.h>
#include <string.h>

yajl_gen gen_new_pretty(const char *indent) {
  yajl_gen g = yajl_gen_alloc(NULL);
  if (g == NULL)
    abort();
  yajl_gen_config(g, yajl_gen_beautify, 1);
  yajl_gen_config(g, yajl_gen_indent_string, indent);
  return g;
}

void gen_str(yajl_gen g, const char *s) {
  yajl_gen_string(g, (const unsigned char *)s, strlen(s));
}

void gen_strv(yajl_gen g, const char *const *v) {
  yajl_gen_array_open(g);
  for (; *v; v++)
    gen_str(g, *v);
  yajl_gen_array_close(g);
}

void gen_kv_str(yajl_gen g, const char *key, const char *value) {
  gen_str(g, key);
  gen_str(g, value);
}

void gen_kv_int(yajl_gen g, const char *key, long long value) {
  gen_str(g, key);
  yajl_gen_integer(g, value);
}

void gen_kv_bool(yajl_gen g, const char *key, int value) {
  gen_str(g, key);
  yajl_gen_bool(g, value);
}

char *gen_finish(yajl_gen g) {
  const unsigned char *buf = NULL;
  size_t len = 0;
  if (yajl_gen_get_buf(g, &buf, &len) != yajl_gen_status_ok)
    abort();
  while (len > 0 && buf[len - 1] == '\n')
    len--;
  char *out = malloc(len + 1);
  if (out == NULL)
    abort();
  memcpy(out, buf, len);
  out[len] = '\0';
  yajl_gen_free(g);
  return out;
}
