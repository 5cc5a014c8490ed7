/* Typed getters over yajl trees; every error names the JSON path of the offending value. */
#include "spec/json_util.h"
#include "util/log.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (p == NULL)
    abort();
  return p;
}

char *xstrdup(const char *s) {
  char *d = strdup(s);
  if (d == NULL)
    abort();
  return d;
}

void jctx_init(struct jctx *c, const char *label) {
  c->label = label;
  c->path[0] = '\0';
  c->len = 0;
}

/* Append n bytes of s; a path longer than the buffer keeps a valid, terminated prefix. Plain
 * copies, not vsnprintf: a config and the mcp profile's seccomp rules push a key for every field
 * they parse, and formatting them was about a tenth of an mcp start's instructions (callgrind,
 * issue 27). */
static void jappend(struct jctx *c, const char *s, size_t n) {
  size_t room = sizeof(c->path) - 1 - c->len;
  memcpy(c->path + c->len, s, n < room ? n : room);
  c->len += n < room ? n : room;
  c->path[c->len] = '\0';
}

static bool is_identifier(const char *key) {
  if (!(isalpha((unsigned char)key[0]) || key[0] == '_'))
    return false;
  for (const char *p = key; *p; p++)
    if (!(isalnum((unsigned char)*p) || *p == '_'))
      return false;
  return true;
}

size_t jpush_key(struct jctx *c, const char *key) {
  size_t mark = c->len;
  size_t n = strlen(key);
  if (is_identifier(key)) {
    jappend(c, ".", 1);
    jappend(c, key, n);
  } else {
    jappend(c, "[\"", 2);
    jappend(c, key, n);
    jappend(c, "\"]", 2);
  }
  return mark;
}

size_t jpush_index(struct jctx *c, size_t index) {
  size_t mark = c->len;
  char digits[24], *d = digits + sizeof(digits);
  *--d = ']';
  do
    *--d = (char)('0' + index % 10);
  while (index /= 10);
  *--d = '[';
  jappend(c, d, (size_t)(digits + sizeof(digits) - d));
  return mark;
}

void jpop(struct jctx *c, size_t mark) {
  c->len = mark;
  c->path[mark] = '\0';
}

int jerr(struct jctx *c, struct cm_error **err, const char *fmt, ...) {
  char *msg = NULL;
  va_list ap;
  va_start(ap, fmt);
  if (vasprintf(&msg, fmt, ap) < 0)
    abort();
  va_end(ap);
  cm_error_set(err, 0, "%s: %s: %s", c->label, c->len ? c->path : ".", msg);
  free(msg);
  return -1;
}

void jwarn(struct jctx *c, const char *fmt, ...) {
  char *msg = NULL;
  va_list ap;
  va_start(ap, fmt);
  if (vasprintf(&msg, fmt, ap) < 0)
    abort();
  va_end(ap);
  cm_warn("%s: %s: %s", c->label, c->len ? c->path : ".", msg);
  free(msg);
}

char *read_whole_file(const char *path, size_t *len, struct cm_error **err) {
  FILE *f = fopen(path, "re");
  if (f == NULL) {
    cm_error_set(err, errno, "open %s", path);
    return NULL;
  }
  char *text = NULL;
  *len = 0;
  FILE *mem = open_memstream(&text, len);
  if (mem == NULL)
    abort();
  char buf[16384];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
    fwrite(buf, 1, n, mem);
  int saved = ferror(f) ? (errno ? errno : EIO) : 0;
  fclose(f);
  if (fclose(mem) != 0)
    abort();
  if (saved != 0) {
    free(text);
    cm_error_set(err, saved, "read %s", path);
    return NULL;
  }
  return text;
}

/* yajl decodes "\u0000" into a NUL byte and the tree then holds a silently truncated C string;
 * refuse such input so that what we validate is exactly what the user wrote. */
static bool json_has_escaped_nul(const char *text, size_t len) {
  bool in_string = false;
  for (size_t i = 0; i < len; i++) {
    if (!in_string) {
      if (text[i] == '"')
        in_string = true;
      continue;
    }
    if (text[i] == '"') {
      in_string = false;
    } else if (text[i] == '\\' && i + 1 < len) {
      if (text[i + 1] == 'u' && i + 5 < len && strncmp(text + i + 2, "0000", 4) == 0)
        return true;
      i++; /* skip the escaped character */
    }
  }
  return false;
}

/* Nesting deeper than any real document needs. yajl_tree_free() recurses once per level, so a
 * few hundred KB of "[[[[…" would otherwise overflow the stack (found by fuzzing). */
#define JSON_MAX_DEPTH 512

static bool json_too_deep(const char *text, size_t len) {
  bool in_string = false;
  size_t depth = 0;
  for (size_t i = 0; i < len; i++) {
    char ch = text[i];
    if (in_string) {
      if (ch == '\\')
        i++; /* skip the escaped character */
      else if (ch == '"')
        in_string = false;
    } else if (ch == '"') {
      in_string = true;
    } else if (ch == '[' || ch == '{') {
      if (++depth > JSON_MAX_DEPTH)
        return true;
    } else if ((ch == ']' || ch == '}') && depth > 0) {
      depth--;
    }
  }
  return false;
}

/* Where a document stops being JSON: the bytes yajl consumed before its error (the tree API
 * does not say). At the end of the input for a truncated document. */
static size_t json_error_offset(const char *text, size_t len) {
  yajl_handle h = yajl_alloc(NULL, NULL, NULL);
  if (h == NULL)
    return len;
  size_t at = len;
  yajl_status st = yajl_parse(h, (const unsigned char *)text, len);
  if (st == yajl_status_error) {
    /* yajl counts the offending byte as consumed: point at it. */
    at = yajl_get_bytes_consumed(h);
    at = at > 0 && at <= len ? at - 1 : at;
  }
  /* Otherwise the document ended too early (or has garbage after it, found only here): the
   * end of the input is where. */
  yajl_free(h);
  return at;
}

yajl_val json_parse(const char *text, size_t len, const char *label, struct cm_error **err) {
  if (memchr(text, '\0', len) != NULL || json_has_escaped_nul(text, len)) {
    cm_error_set(err, 0, "%s: invalid JSON: NUL character in input", label);
    return NULL;
  }
  if (json_too_deep(text, len)) {
    cm_error_set(err, 0, "%s: invalid JSON: nested deeper than %d levels", label, JSON_MAX_DEPTH);
    return NULL;
  }
  char *copy = malloc(len + 1);
  if (copy == NULL)
    abort();
  memcpy(copy, text, len);
  copy[len] = '\0';
  char errbuf[1024] = "";
  yajl_val tree = yajl_tree_parse(copy, errbuf, sizeof(errbuf));
  free(copy);
  if (tree == NULL) {
    /* yajl's message spans lines (it quotes the input with a caret); keep the first line, and
     * say where, as an editor counts: line and column of the byte yajl stopped at. */
    errbuf[strcspn(errbuf, "\n")] = '\0';
    size_t line = 1, col = 1, at = json_error_offset(text, len);
    for (size_t i = 0; i < at && i < len; i++) {
      if (text[i] == '\n') {
        line++;
        col = 1;
      } else {
        col++;
      }
    }
    cm_error_set(err, 0, "%s: invalid JSON at line %zu, column %zu: %s", label, line, col,
                 errbuf[0] ? errbuf : "parse error");
  }
  return tree;
}

yajl_val jfind(yajl_val obj, const char *key) {
  if (!YAJL_IS_OBJECT(obj))
    return NULL;
  yajl_val found = NULL;
  for (size_t i = 0; i < obj->u.object.len; i++)
    if (strcmp(obj->u.object.keys[i], key) == 0)
      found = obj->u.object.values[i];
  if (YAJL_IS_NULL(found))
    return NULL;
  return found;
}

int jval_object(struct jctx *c, yajl_val v, struct cm_error **err) {
  return YAJL_IS_OBJECT(v) ? 0 : jerr(c, err, "must be an object");
}

int jval_array(struct jctx *c, yajl_val v, struct cm_error **err) {
  return YAJL_IS_ARRAY(v) ? 0 : jerr(c, err, "must be an array");
}

int jval_string(struct jctx *c, yajl_val v, char **out, struct cm_error **err) {
  if (!YAJL_IS_STRING(v))
    return jerr(c, err, "must be a string");
  free(*out);
  *out = xstrdup(v->u.string);
  return 0;
}

int jval_bool(struct jctx *c, yajl_val v, bool *out, struct cm_error **err) {
  if (YAJL_IS_TRUE(v))
    *out = true;
  else if (YAJL_IS_FALSE(v))
    *out = false;
  else
    return jerr(c, err, "must be a boolean");
  return 0;
}

/* Numbers are parsed from yajl's raw text: its long long cannot hold values above INT64_MAX
 * (RLIM_INFINITY is written as 18446744073709551615), and fractions must not be truncated. */
static bool number_is_integer(yajl_val v) {
  if (!YAJL_IS_NUMBER(v))
    return false;
  const char *r = YAJL_GET_NUMBER(v);
  return r != NULL && strpbrk(r, ".eE") == NULL;
}

int jval_i64(struct jctx *c, yajl_val v, int64_t min, int64_t max, int64_t *out, struct cm_error **err) {
  if (!number_is_integer(v))
    return jerr(c, err, "must be an integer");
  errno = 0;
  char *end = NULL;
  long long n = strtoll(YAJL_GET_NUMBER(v), &end, 10);
  if (errno != 0 || *end != '\0' || n < min || n > max)
    return jerr(c, err, "must be an integer between %" PRId64 " and %" PRId64, min, max);
  *out = n;
  return 0;
}

int jval_u64(struct jctx *c, yajl_val v, uint64_t max, uint64_t *out, struct cm_error **err) {
  if (!number_is_integer(v))
    return jerr(c, err, "must be an integer");
  const char *r = YAJL_GET_NUMBER(v);
  if (r[0] == '-')
    return jerr(c, err, "must be a non-negative integer");
  errno = 0;
  char *end = NULL;
  unsigned long long n = strtoull(r, &end, 10);
  if (errno != 0 || *end != '\0' || n > max)
    return jerr(c, err, "must be an integer between 0 and %" PRIu64, max);
  *out = n;
  return 0;
}

int jval_strv(struct jctx *c, yajl_val v, struct spec_strv *out, struct cm_error **err) {
  if (!YAJL_IS_ARRAY(v))
    return jerr(c, err, "must be an array of strings");
  spec_strv_free(out);
  size_t n = v->u.array.len;
  if (n == 0)
    return 0;
  out->items = xcalloc(n + 1, sizeof(char *));
  for (size_t i = 0; i < n; i++) {
    yajl_val item = v->u.array.values[i];
    if (!YAJL_IS_STRING(item)) {
      size_t mark = jpush_index(c, i);
      jerr(c, err, "must be a string");
      jpop(c, mark);
      /* Nothing half-built goes back: a caller with the list on its stack just returns. */
      spec_strv_free(out);
      return -1;
    }
    out->items[i] = xstrdup(item->u.string);
    out->count = i + 1;
  }
  return 0;
}

/* Look up key; 0 = absent, 1 = present (path pushed; caller must jpop(mark)). */
static int jenter(struct jctx *c, yajl_val obj, const char *key, yajl_val *v, size_t *mark) {
  *v = jfind(obj, key);
  if (*v == NULL)
    return 0;
  *mark = jpush_key(c, key);
  return 1;
}

#define JGET_BODY(call)                                                                                      \
  do {                                                                                                       \
    yajl_val v;                                                                                              \
    size_t mark;                                                                                             \
    if (!jenter(c, obj, key, &v, &mark))                                                                     \
      return 0;                                                                                              \
    int r = (call);                                                                                          \
    jpop(c, mark);                                                                                           \
    return r < 0 ? -1 : 1;                                                                                   \
  } while (0)

int jget_object(struct jctx *c, yajl_val obj, const char *key, yajl_val *out, struct cm_error **err) {
  *out = NULL;
  JGET_BODY((*out = v, jval_object(c, v, err)));
}

int jget_array(struct jctx *c, yajl_val obj, const char *key, yajl_val *out, struct cm_error **err) {
  *out = NULL;
  JGET_BODY((*out = v, jval_array(c, v, err)));
}

int jget_string(struct jctx *c, yajl_val obj, const char *key, char **out, struct cm_error **err) {
  JGET_BODY(jval_string(c, v, out, err));
}

int jget_bool(struct jctx *c, yajl_val obj, const char *key, bool *out, struct cm_error **err) {
  JGET_BODY(jval_bool(c, v, out, err));
}

int jget_i64(struct jctx *c, yajl_val obj, const char *key, int64_t min, int64_t max, int64_t *out,
             struct cm_error **err) {
  JGET_BODY(jval_i64(c, v, min, max, out, err));
}

int jget_u64(struct jctx *c, yajl_val obj, const char *key, uint64_t max, uint64_t *out,
             struct cm_error **err) {
  JGET_BODY(jval_u64(c, v, max, out, err));
}

int jget_u32(struct jctx *c, yajl_val obj, const char *key, uint32_t *out, struct cm_error **err) {
  uint64_t n = 0;
  int r = jget_u64(c, obj, key, UINT32_MAX, &n, err);
  if (r == 1)
    *out = (uint32_t)n;
  return r;
}

int jget_int(struct jctx *c, yajl_val obj, const char *key, int min, int max, int *out,
             struct cm_error **err) {
  int64_t n = 0;
  int r = jget_i64(c, obj, key, min, max, &n, err);
  if (r == 1)
    *out = (int)n;
  return r;
}

int jget_strv(struct jctx *c, yajl_val obj, const char *key, struct spec_strv *out, struct cm_error **err) {
  JGET_BODY(jval_strv(c, v, out, err));
}

static int jval_kv(struct jctx *c, yajl_val v, struct spec_kv_list *out, struct cm_error **err) {
  if (!YAJL_IS_OBJECT(v))
    return jerr(c, err, "must be an object of strings");
  spec_kv_list_free(out);
  size_t n = v->u.object.len;
  if (n == 0)
    return 0;
  out->items = xcalloc(n, sizeof(struct spec_kv));
  for (size_t i = 0; i < n; i++) {
    const char *k = v->u.object.keys[i];
    yajl_val item = v->u.object.values[i];
    if (!YAJL_IS_STRING(item)) {
      size_t mark = jpush_key(c, k);
      jerr(c, err, "must be a string");
      jpop(c, mark);
      return -1;
    }
    /* A repeated key replaces the earlier value, as in Go's encoding/json. */
    size_t j;
    for (j = 0; j < out->count; j++)
      if (strcmp(out->items[j].key, k) == 0)
        break;
    if (j < out->count) {
      free(out->items[j].value);
      out->items[j].value = xstrdup(item->u.string);
      continue;
    }
    out->items[out->count].key = xstrdup(k);
    out->items[out->count].value = xstrdup(item->u.string);
    out->count++;
  }
  return 0;
}

int jget_kv(struct jctx *c, yajl_val obj, const char *key, struct spec_kv_list *out, struct cm_error **err) {
  JGET_BODY(jval_kv(c, v, out, err));
}

int jrequire(struct jctx *c, yajl_val obj, const char *key, struct cm_error **err) {
  if (jfind(obj, key) != NULL)
    return 0;
  size_t mark = jpush_key(c, key);
  jerr(c, err, "missing");
  jpop(c, mark);
  return -1;
}

void spec_strv_free(struct spec_strv *v) {
  for (size_t i = 0; i < v->count; i++)
    free(v->items[i]);
  free(v->items);
  v->items = NULL;
  v->count = 0;
}

void spec_strv_push(struct spec_strv *v, const char *s) {
  char **grown = realloc(v->items, (v->count + 2) * sizeof(char *));
  if (grown == NULL)
    abort();
  v->items = grown;
  v->items[v->count++] = xstrdup(s);
  v->items[v->count] = NULL;
}

void spec_env_set(struct spec_strv *env, const char *kv) {
  const char *eq = strchr(kv, '=');
  size_t klen = eq ? (size_t)(eq - kv) + 1 : strlen(kv);
  for (size_t i = 0; i < env->count; i++) {
    if (strncmp(env->items[i], kv, klen) == 0) {
      free(env->items[i]);
      env->items[i] = xstrdup(kv);
      return;
    }
  }
  spec_strv_push(env, kv);
}

void spec_kv_list_free(struct spec_kv_list *l) {
  for (size_t i = 0; i < l->count; i++) {
    free(l->items[i].key);
    free(l->items[i].value);
  }
  free(l->items);
  l->items = NULL;
  l->count = 0;
}

bool path_is_absolute(const char *p) {
  return p != NULL && p[0] == '/';
}

char *path_clean_absolute(const char *p, bool *dotdot) {
  *dotdot = false;
  size_t len = strlen(p);
  char *out = xcalloc(len + 2, 1);
  size_t o = 0;
  const char *s = p;
  while (*s) {
    while (*s == '/')
      s++;
    if (!*s)
      break;
    size_t n = strcspn(s, "/");
    if (n == 1 && s[0] == '.') {
      s += n;
      continue;
    }
    if (n == 2 && s[0] == '.' && s[1] == '.') {
      *dotdot = true;
      free(out);
      return NULL;
    }
    out[o++] = '/';
    memcpy(out + o, s, n);
    o += n;
    s += n;
  }
  if (o == 0)
    out[o++] = '/';
  out[o] = '\0';
  return out;
}
