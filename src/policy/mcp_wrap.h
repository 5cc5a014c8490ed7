/* `codemode mcp wrap` (issue 29): one MCP client entry (command, args, env names) turned into
 * the codemode-run command line that runs it hardened, with a report of what it gets.
 *
 *   npx/uvx/node/python/other programs: codemode-run --host, the package cache as a :cow mount,
 *     the offline switch of npx/uvx, the env names passed with --env (values never on the
 *     command line), and the path arguments of well-known servers (the table in mcp_wrap.c)
 *     bound at the same path, so the server's own arguments still work;
 *   docker run: --runtime=RUNTIME when codemode's mcp runtime is registered with Docker.
 *
 * Nothing here touches the file (spec/client_config.h) or the disk beyond looking (stat). */
#ifndef CM_POLICY_MCP_WRAP_H
#define CM_POLICY_MCP_WRAP_H

#include <stdbool.h>
#include <stddef.h>

#include "policy/profile.h"
#include "spec/spec.h"

/* How a server's path argument is found and bound. */
enum mcp_path_kind {
  MCP_PATH_POSITIONAL, /* every argument after the package that is not an option */
  MCP_PATH_FLAG,       /* the value of `flag` (--flag VALUE or --flag=VALUE) */
  MCP_PATH_ENV,        /* the value of the environment variable `flag` */
};
struct mcp_server_paths {
  const char *package; /* as npx/uvx name it (no version), or a python module with '-' for '_' */
  enum mcp_path_kind kind;
  const char *flag; /* MCP_PATH_FLAG: "--repository"; MCP_PATH_ENV: "MEMORY_FILE_PATH" */
  bool file;        /* the path is a file: its directory is bound (sqlite's journal, a JSON store) */
  bool state;       /* bound with --state (made when missing) rather than --mount */
};
/* The table's rows for a package (NULL-terminated array in *rows), their count. */
size_t mcp_server_paths_of(const char *package, const struct mcp_server_paths **rows);

/* The package an entry runs: npx's / uvx's first argument that is not an option (its @version
 * dropped), `python -m MODULE`'s module ('_' read as '-'), a script path's node_modules package.
 * NULL when none; *at: the index in args of the package argument (-1 when it is the script). */
const char *mcp_entry_package(const char *command, const char *const *args, size_t n_args, char *buf,
                              size_t size, int *at);

struct mcp_wrap_input {
  const char *command;
  const char *const *args;
  size_t n_args;
  const char *const *env_names, *const *env_values;
  size_t n_env;
  const char *codemode_run;   /* absolute path written as the entry's command */
  const char *root;           /* --root to pass, or NULL */
  const char *profile;        /* NULL or "mcp": codemode-run's default; "mcp-audit" passed */
  const char *home;           /* the user's home (caches) */
  const char *docker_runtime; /* the codemode mcp runtime registered with Docker, or NULL */
};

enum mcp_wrap_outcome {
  MCP_LEFT,    /* left as it is; the report says why and what to do (a zeroed result too) */
  MCP_WRAPPED, /* command and args are the new ones */
};
struct mcp_wrap_result {
  enum mcp_wrap_outcome outcome;
  char *command;
  struct spec_strv args;
  struct policy_report report; /* one line per thing the server gets, or the reason it was left */
};
void mcp_wrap_entry(const struct mcp_wrap_input *in, struct mcp_wrap_result *out);
void mcp_wrap_result_free(struct mcp_wrap_result *r);

/* A name that looks like a credential (…TOKEN, …KEY, SECRET, PASSWORD, …). */
bool mcp_env_looks_secret(const char *name);

#endif
