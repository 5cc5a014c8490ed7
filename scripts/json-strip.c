/* Build helper (make): JSON on stdin, written to stdout with no whitespace and without the
 * "comment" members, at any depth. The built-in seccomp profiles are embedded in this form:
 * every mcp-profile start parses mcp.json, and its comments and indentation were half of the
 * bytes yajl tokenized and allocated nodes for (callgrind, issue 27). Docker's format ignores
 * "comment" (policy/seccomp_profile.h), so the profile resolves to the same rules; a unit test
 * compiles both forms and compares the programs. The installed files keep their comments. */
#include <stdio.h>
#include <string.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_parse.h>

struct strip {
  yajl_gen g;
  int skip;     /* nesting depth inside a skipped value */
  int skipping; /* the next value is a comment's */
};

/* A scalar, or the start of a container, while skipping: 1 if it is skipped. */
static int skip_value(struct strip *s, int opens) {
  if (!s->skipping)
    return 0;
  if (opens)
    s->skip++;
  else if (s->skip == 0)
    s->skipping = 0;
  return 1;
}

static int skip_close(struct strip *s) {
  if (!s->skipping)
    return 0;
  if (--s->skip == 0)
    s->skipping = 0;
  return 1;
}

static int on_null(void *ctx) {
  struct strip *s = ctx;
  return skip_value(s, 0) || yajl_gen_null(s->g) == yajl_gen_status_ok;
}
static int on_bool(void *ctx, int b) {
  struct strip *s = ctx;
  return skip_value(s, 0) || yajl_gen_bool(s->g, b) == yajl_gen_status_ok;
}
static int on_number(void *ctx, const char *n, size_t len) {
  struct strip *s = ctx;
  return skip_value(s, 0) || yajl_gen_number(s->g, n, len) == yajl_gen_status_ok;
}
static int on_string(void *ctx, const unsigned char *v, size_t len) {
  struct strip *s = ctx;
  return skip_value(s, 0) || yajl_gen_string(s->g, v, len) == yajl_gen_status_ok;
}
static int on_key(void *ctx, const unsigned char *k, size_t len) {
  struct strip *s = ctx;
  if (s->skipping)
    return 1;
  if (len == 7 && memcmp(k, "comment", 7) == 0) {
    s->skipping = 1;
    return 1;
  }
  return yajl_gen_string(s->g, k, len) == yajl_gen_status_ok;
}
static int on_start_map(void *ctx) {
  struct strip *s = ctx;
  return skip_value(s, 1) || yajl_gen_map_open(s->g) == yajl_gen_status_ok;
}
static int on_end_map(void *ctx) {
  struct strip *s = ctx;
  return skip_close(s) || yajl_gen_map_close(s->g) == yajl_gen_status_ok;
}
static int on_start_array(void *ctx) {
  struct strip *s = ctx;
  return skip_value(s, 1) || yajl_gen_array_open(s->g) == yajl_gen_status_ok;
}
static int on_end_array(void *ctx) {
  struct strip *s = ctx;
  return skip_close(s) || yajl_gen_array_close(s->g) == yajl_gen_status_ok;
}

int main(void) {
  static const yajl_callbacks cb = {on_null,      on_bool,    NULL,           NULL,        on_number, on_string,
                                    on_start_map, on_key,     on_end_map,     on_start_array, on_end_array};
  struct strip s = {.g = yajl_gen_alloc(NULL)};
  yajl_handle h = yajl_alloc(&cb, NULL, &s);
  if (s.g == NULL || h == NULL)
    return 1;
  unsigned char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), stdin)) > 0)
    if (yajl_parse(h, buf, n) != yajl_status_ok)
      goto bad;
  if (ferror(stdin) || yajl_complete_parse(h) != yajl_status_ok)
    goto bad;
  const unsigned char *out;
  size_t len;
  yajl_gen_get_buf(s.g, &out, &len);
  if (fwrite(out, 1, len, stdout) != len || fflush(stdout) != 0)
    return 1;
  return 0;
bad:;
  unsigned char *msg = yajl_get_error(h, 1, buf, n);
  fprintf(stderr, "json-strip: %s", msg);
  yajl_free_error(h, msg);
  return 1;
}
