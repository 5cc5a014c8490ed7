/* An MCP client's configuration file (issue 29): Claude Desktop's claude_desktop_config.json,
 * Claude Code's .mcp.json and Cursor's mcp.json ({"mcpServers": {NAME: {command, args, env}}}),
 * VS Code's .vscode/mcp.json ({"servers": {NAME: {"type": "stdio", …}}}).
 *
 * Read with yajl's tree; written back by re-emitting that tree with yajl_gen, so every key and
 * value outside the entries we replace comes back as it was, in its order (numbers as their
 * original text). Only the whitespace is ours (the file's own indent when we can tell it). */
#ifndef CM_SPEC_CLIENT_CONFIG_H
#define CM_SPEC_CLIENT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "spec/spec.h"
#include "util/error.h"

struct client_config {
  char *path;
  yajl_val root;
  yajl_val servers;    /* the server map (an object) */
  const char *map_key; /* "mcpServers" or "servers" (VS Code) */
  char indent[9];      /* the file's indent ("  " when it cannot be told) */
  mode_t mode;         /* the file's permission bits: kept by the rewrite */
};

/* Load and find the server map. Errors name the file and the problem: not JSON (with line and
 * column), no "mcpServers"/"servers" object at the top. */
int client_config_load(const char *path, struct client_config *c, struct cm_error **err);
void client_config_free(struct client_config *c);

size_t client_config_count(const struct client_config *c);
const char *client_config_name(const struct client_config *c, size_t i);
yajl_val client_config_entry(const struct client_config *c, size_t i);

/* One entry as a client launches it. command NULL: no stdio command (a url entry, or none). */
struct client_entry {
  const char *command;
  const char *type; /* "stdio", "sse", "http", … or NULL */
  const char *url;
  bool has_args, has_env;
  struct spec_strv args;
  struct spec_strv env_names, env_values; /* in file order */
};
/* Read entry i; args must be an array of strings and env an object of strings (else an error
 * with the file and the JSON path). */
int client_entry_read(const struct client_config *c, size_t i, struct client_entry *e, struct cm_error **err);
void client_entry_free(struct client_entry *e);

/* Emit v (any JSON value) as it is. */
void client_json_emit(yajl_gen g, yajl_val v);
/* A generator in the file's style. */
yajl_gen client_config_gen(const struct client_config *c);

/* The whole document again; entry i goes through emit(g, i, ctx), which returns false to have it
 * emitted as it is. Malloc'd text with a final newline. */
typedef bool (*client_entry_emitter)(yajl_gen g, const struct client_config *c, size_t i, void *ctx);
char *client_config_render(const struct client_config *c, client_entry_emitter emit, void *ctx);

/* Replace the file with text: first a backup of the file as it is, next to it (PATH.codemode-backup,
 * its name in backup), then the new text written to a temporary file beside it and renamed over
 * (never a half-written config), with the file's permission bits. */
int client_config_write(const struct client_config *c, const char *text, char *backup, size_t size,
                        struct cm_error **err);

/* Wrapped entries (spec/client_entry.c). The env variable that holds the entry as it was (its
 * "env" written as true: the env block is then the one the entry has, less this variable). In
 * env rather than a key of our own because clients check their entries' keys (VS Code's
 * schema); codemode-run passes no variable into the container that --env does not name. */
#define CLIENT_ENTRY_MARKER "CODEMODE_MCP_ORIGINAL"
/* The marker's text of an entry, or NULL (not wrapped by us). */
const char *client_entry_marker(yajl_val entry);
/* entry with command and args replaced, its other keys in their places, the marker added. */
void client_entry_emit_wrapped(yajl_gen g, yajl_val entry, const char *command, const struct spec_strv *args);
/* The marker of entry i parsed (an object), or NULL with err naming the file and its JSON path. */
yajl_val client_entry_original(const struct client_config *c, size_t i, const char *marker,
                               struct cm_error **err);
/* original as it was, its env the entry's env of now less the marker. */
void client_entry_emit_original(yajl_gen g, yajl_val entry, yajl_val original);

#endif
