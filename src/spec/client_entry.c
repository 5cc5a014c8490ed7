/* A wrapped entry of an MCP client's config and the way back (spec/client_config.h): the entry
 * with its command and args replaced, every other key kept in its place, and the entry as it
 * was saved in its env under CLIENT_ENTRY_MARKER. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec/client_config.h"
#include "spec/json_util.h"
#include "util/cleanup.h"

static void gen_s(yajl_gen g, const char *s) {
  yajl_gen_string(g, (const unsigned char *)s, strlen(s));
}

const char *client_entry_marker(yajl_val entry) {
  yajl_val env = YAJL_IS_OBJECT(entry) ? jfind(entry, "env") : NULL;
  yajl_val m = env && YAJL_IS_OBJECT(env) ? jfind(env, CLIENT_ENTRY_MARKER) : NULL;
  return m && YAJL_IS_STRING(m) ? m->u.string : NULL;
}

/* The entry as it was, compact, its env written as true (the env is kept in the entry itself:
 * its values, tokens among them, are not copied twice). */
static char *original_text(yajl_val entry) {
  yajl_gen g = yajl_gen_alloc(NULL);
  if (g == NULL)
    abort();
  yajl_gen_map_open(g);
  for (size_t k = 0; k < entry->u.object.len; k++) {
    gen_s(g, entry->u.object.keys[k]);
    if (strcmp(entry->u.object.keys[k], "env") == 0)
      yajl_gen_bool(g, 1);
    else
      client_json_emit(g, entry->u.object.values[k]);
  }
  yajl_gen_map_close(g);
  const unsigned char *buf;
  size_t len;
  yajl_gen_get_buf(g, &buf, &len);
  char *s = strndup((const char *)buf, len);
  yajl_gen_free(g);
  if (s == NULL)
    abort();
  return s;
}

static void emit_strv(yajl_gen g, const struct spec_strv *v) {
  yajl_gen_array_open(g);
  for (size_t i = 0; i < v->count; i++)
    gen_s(g, v->items[i]);
  yajl_gen_array_close(g);
}

/* env as it is in the file less the marker, then the marker when given. */
static void emit_env(yajl_gen g, yajl_val env, const char *marker_value) {
  yajl_gen_map_open(g);
  for (size_t k = 0; env && YAJL_IS_OBJECT(env) && k < env->u.object.len; k++) {
    if (strcmp(env->u.object.keys[k], CLIENT_ENTRY_MARKER) == 0)
      continue;
    gen_s(g, env->u.object.keys[k]);
    client_json_emit(g, env->u.object.values[k]);
  }
  if (marker_value) {
    gen_s(g, CLIENT_ENTRY_MARKER);
    gen_s(g, marker_value);
  }
  yajl_gen_map_close(g);
}

void client_entry_emit_wrapped(yajl_gen g, yajl_val entry, const char *command,
                               const struct spec_strv *args) {
  cleanup_free char *orig = original_text(entry);
  bool has_args = false, has_env = false;
  yajl_gen_map_open(g);
  for (size_t k = 0; k < entry->u.object.len; k++) {
    const char *key = entry->u.object.keys[k];
    gen_s(g, key);
    if (strcmp(key, "command") == 0) {
      gen_s(g, command);
    } else if (strcmp(key, "args") == 0) {
      emit_strv(g, args);
      has_args = true;
    } else if (strcmp(key, "env") == 0) {
      emit_env(g, entry->u.object.values[k], orig);
      has_env = true;
    } else {
      client_json_emit(g, entry->u.object.values[k]);
    }
  }
  if (!has_args) {
    gen_s(g, "args");
    emit_strv(g, args);
  }
  if (!has_env) {
    gen_s(g, "env");
    emit_env(g, NULL, orig);
  }
  yajl_gen_map_close(g);
}

yajl_val client_entry_original(const struct client_config *c, size_t i, const char *marker,
                               struct cm_error **err) {
  char label[512];
  snprintf(label, sizeof(label), "%s: .%s.%s.env.%s", c->path, c->map_key, client_config_name(c, i),
           CLIENT_ENTRY_MARKER);
  yajl_val v = json_parse(marker, strlen(marker), label, err);
  if (v && !YAJL_IS_OBJECT(v)) {
    yajl_tree_free(v);
    cm_error_set(err, 0, "%s: not the entry codemode mcp wrap saved (an object)", label);
    return NULL;
  }
  return v;
}

void client_entry_emit_original(yajl_gen g, yajl_val entry, yajl_val original) {
  yajl_gen_map_open(g);
  for (size_t k = 0; k < original->u.object.len; k++) {
    gen_s(g, original->u.object.keys[k]);
    if (strcmp(original->u.object.keys[k], "env") == 0 && YAJL_IS_TRUE(original->u.object.values[k]))
      emit_env(g, jfind(entry, "env"), NULL);
    else
      client_json_emit(g, original->u.object.values[k]);
  }
  yajl_gen_map_close(g);
}
