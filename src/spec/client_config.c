/* An MCP client's configuration file: load, find the server map, re-emit (spec/client_config.h). */
#include "spec/client_config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spec/json_util.h"
#include "util/cleanup.h"

/* A client config is a few kilobytes; a bound keeps a mistaken FILE (a disk image) out of memory. */
#define CLIENT_CONFIG_MAX (4 << 20)

/* The indent of the first indented line, when it is spaces or tabs only. */
static void detect_indent(const char *text, char *out, size_t size) {
  snprintf(out, size, "  ");
  const char *nl = strchr(text, '\n');
  if (nl == NULL)
    return;
  size_t n = strspn(nl + 1, " \t");
  if (n > 0 && n < size && nl[1 + n] != '\n') {
    memcpy(out, nl + 1, n);
    out[n] = '\0';
  }
}

int client_config_load(const char *path, struct client_config *c, struct cm_error **err) {
  *c = (struct client_config){0};
  struct stat st;
  if (stat(path, &st) < 0)
    return cm_error_set(err, errno, "%s", path);
  if (!S_ISREG(st.st_mode))
    return cm_error_set(err, 0, "%s: not a regular file", path);
  if (st.st_size > CLIENT_CONFIG_MAX)
    return cm_error_set(err, 0, "%s: %lld bytes: too large for an MCP client config", path,
                        (long long)st.st_size);
  size_t len = 0;
  cleanup_free char *text = read_whole_file(path, &len, err);
  if (text == NULL)
    return -1;
  c->root = json_parse(text, len, path, err);
  if (c->root == NULL)
    return -1;
  c->path = xstrdup(path);
  c->mode = st.st_mode & 07777;
  detect_indent(text, c->indent, sizeof(c->indent));
  if (!YAJL_IS_OBJECT(c->root)) {
    client_config_free(c);
    return cm_error_set(
        err, 0, "%s: the top level is not a JSON object (an MCP client config is {\"mcpServers\": {…}})",
        path);
  }
  static const char *const keys[] = {"mcpServers", "servers"};
  for (size_t k = 0; k < 2 && c->servers == NULL; k++) {
    yajl_val v = jfind(c->root, keys[k]);
    if (v && !YAJL_IS_OBJECT(v)) {
      cm_error_set(err, 0, "%s: .%s: not an object of servers", path, keys[k]);
      client_config_free(c);
      return -1;
    }
    if (v) {
      c->servers = v;
      c->map_key = keys[k];
    }
  }
  if (c->servers == NULL) {
    client_config_free(c);
    return cm_error_set(
        err, 0,
        "%s: no server map: neither .mcpServers (Claude Desktop, Claude Code, Cursor) nor .servers "
        "(VS Code) at the top level",
        path);
  }
  return 0;
}

void client_config_free(struct client_config *c) {
  if (c->root)
    yajl_tree_free(c->root);
  free(c->path);
  *c = (struct client_config){0};
}

size_t client_config_count(const struct client_config *c) {
  return c->servers->u.object.len;
}
const char *client_config_name(const struct client_config *c, size_t i) {
  return c->servers->u.object.keys[i];
}
yajl_val client_config_entry(const struct client_config *c, size_t i) {
  return c->servers->u.object.values[i];
}

int client_entry_read(const struct client_config *c, size_t i, struct client_entry *e,
                      struct cm_error **err) {
  *e = (struct client_entry){0};
  struct jctx j;
  jctx_init(&j, c->path);
  size_t m0 = jpush_key(&j, c->map_key);
  size_t m1 = jpush_key(&j, client_config_name(c, i));
  yajl_val obj = client_config_entry(c, i);
  if (!YAJL_IS_OBJECT(obj))
    return jerr(&j, err, "not an object");
  for (size_t k = 0; k < obj->u.object.len; k++) {
    const char *key = obj->u.object.keys[k];
    yajl_val v = obj->u.object.values[k];
    size_t m = jpush_key(&j, key);
    if (strcmp(key, "command") == 0 || strcmp(key, "type") == 0 || strcmp(key, "url") == 0) {
      if (!YAJL_IS_STRING(v)) {
        client_entry_free(e);
        return jerr(&j, err, "not a string");
      }
      *(key[0] == 'c' ? &e->command : key[0] == 't' ? &e->type : &e->url) = v->u.string;
    } else if (strcmp(key, "args") == 0) {
      e->has_args = true;
      if (!YAJL_IS_ARRAY(v)) {
        client_entry_free(e);
        return jerr(&j, err, "not an array of strings");
      }
      for (size_t a = 0; a < v->u.array.len; a++) {
        if (!YAJL_IS_STRING(v->u.array.values[a])) {
          jpush_index(&j, a);
          client_entry_free(e);
          return jerr(&j, err, "not a string");
        }
        spec_strv_push(&e->args, v->u.array.values[a]->u.string);
      }
    } else if (strcmp(key, "env") == 0) {
      e->has_env = true;
      if (!YAJL_IS_OBJECT(v)) {
        client_entry_free(e);
        return jerr(&j, err, "not an object of strings");
      }
      for (size_t a = 0; a < v->u.object.len; a++) {
        if (!YAJL_IS_STRING(v->u.object.values[a])) {
          jpush_key(&j, v->u.object.keys[a]);
          client_entry_free(e);
          return jerr(&j, err, "not a string");
        }
        spec_strv_push(&e->env_names, v->u.object.keys[a]);
        spec_strv_push(&e->env_values, v->u.object.values[a]->u.string);
      }
    }
    jpop(&j, m);
  }
  jpop(&j, m1);
  jpop(&j, m0);
  return 0;
}

void client_entry_free(struct client_entry *e) {
  spec_strv_free(&e->args);
  spec_strv_free(&e->env_names);
  spec_strv_free(&e->env_values);
  *e = (struct client_entry){0};
}

void client_json_emit(yajl_gen g, yajl_val v) {
  if (v == NULL) {
    yajl_gen_null(g);
  } else if (YAJL_IS_STRING(v)) {
    yajl_gen_string(g, (const unsigned char *)v->u.string, strlen(v->u.string));
  } else if (YAJL_IS_NUMBER(v)) {
    /* The number's own text: 1.0 stays 1.0, 1e3 stays 1e3. */
    yajl_gen_number(g, v->u.number.r, strlen(v->u.number.r));
  } else if (YAJL_IS_OBJECT(v)) {
    yajl_gen_map_open(g);
    for (size_t i = 0; i < v->u.object.len; i++) {
      yajl_gen_string(g, (const unsigned char *)v->u.object.keys[i], strlen(v->u.object.keys[i]));
      client_json_emit(g, v->u.object.values[i]);
    }
    yajl_gen_map_close(g);
  } else if (YAJL_IS_ARRAY(v)) {
    yajl_gen_array_open(g);
    for (size_t i = 0; i < v->u.array.len; i++)
      client_json_emit(g, v->u.array.values[i]);
    yajl_gen_array_close(g);
  } else if (YAJL_IS_TRUE(v)) {
    yajl_gen_bool(g, 1);
  } else if (YAJL_IS_FALSE(v)) {
    yajl_gen_bool(g, 0);
  } else {
    yajl_gen_null(g);
  }
}

yajl_gen client_config_gen(const struct client_config *c) {
  yajl_gen g = yajl_gen_alloc(NULL);
  if (g == NULL)
    abort();
  yajl_gen_config(g, yajl_gen_beautify, 1);
  yajl_gen_config(g, yajl_gen_indent_string, c->indent);
  /* Non-ASCII text as it was (yajl validates it), not \u escapes. */
  yajl_gen_config(g, yajl_gen_validate_utf8, 1);
  return g;
}

char *client_config_render(const struct client_config *c, client_entry_emitter emit, void *ctx) {
  yajl_gen g = client_config_gen(c);
  yajl_gen_map_open(g);
  for (size_t k = 0; k < c->root->u.object.len; k++) {
    const char *key = c->root->u.object.keys[k];
    yajl_val v = c->root->u.object.values[k];
    yajl_gen_string(g, (const unsigned char *)key, strlen(key));
    if (v != c->servers) {
      client_json_emit(g, v);
      continue;
    }
    yajl_gen_map_open(g);
    for (size_t i = 0; i < client_config_count(c); i++) {
      const char *name = client_config_name(c, i);
      yajl_gen_string(g, (const unsigned char *)name, strlen(name));
      if (!emit(g, c, i, ctx))
        client_json_emit(g, client_config_entry(c, i));
    }
    yajl_gen_map_close(g);
  }
  yajl_gen_map_close(g);
  const unsigned char *buf;
  size_t len;
  yajl_gen_get_buf(g, &buf, &len);
  char *out = malloc(len + 2);
  if (out == NULL)
    abort();
  memcpy(out, buf, len);
  while (len > 0 && out[len - 1] == '\n')
    len--;
  out[len++] = '\n';
  out[len] = '\0';
  yajl_gen_free(g);
  return out;
}

static int write_all(int fd, const char *buf, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, buf, len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return -1;
    buf += n;
    len -= (size_t)n;
  }
  return 0;
}

/* path's text into a new file dst (O_EXCL after removing an older one), mode bits kept. */
static int copy_file(const char *path, const char *dst, mode_t mode, struct cm_error **err) {
  size_t len = 0;
  cleanup_free char *text = read_whole_file(path, &len, err);
  if (text == NULL)
    return -1;
  if (unlink(dst) < 0 && errno != ENOENT)
    return cm_error_set(err, errno, "remove the old backup %s", dst);
  cleanup_close int fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode & 0600);
  if (fd < 0 || write_all(fd, text, len) < 0 || fsync(fd) < 0)
    return cm_error_set(err, errno, "write the backup %s", dst);
  return 0;
}

int client_config_write(const struct client_config *c, const char *text, char *backup, size_t size,
                        struct cm_error **err) {
  /* A config that is a symlink (into a dotfiles repository) stays one: its target is rewritten. */
  char real[PATH_MAX];
  if (realpath(c->path, real) == NULL)
    return cm_error_set(err, errno, "%s", c->path);
  if ((size_t)snprintf(backup, size, "%s.codemode-backup", real) >= size)
    return cm_error_set(err, ENAMETOOLONG, "%s", real);
  /* The backup is the user's config, tokens included: never readable by more than the owner. */
  if (copy_file(real, backup, c->mode, err) < 0)
    return -1;
  char tmp[PATH_MAX];
  if ((size_t)snprintf(tmp, sizeof(tmp), "%s.codemode-new", real) >= sizeof(tmp))
    return cm_error_set(err, ENAMETOOLONG, "%s", real);
  unlink(tmp);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    return cm_error_set(err, errno, "create %s", tmp);
  if (write_all(fd, text, strlen(text)) < 0 || fchmod(fd, c->mode) < 0 || fsync(fd) < 0) {
    cm_error_set(err, errno, "write %s", tmp);
    close(fd);
    unlink(tmp);
    return -1;
  }
  close(fd);
  if (rename(tmp, real) < 0) {
    cm_error_set(err, errno, "rename %s to %s", tmp, real);
    unlink(tmp);
    return -1;
  }
  return 0;
}
