/* One MCP client entry → its codemode-run command line (policy/mcp_wrap.h). */
#include "policy/mcp_wrap.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "policy/profile_rules.h"
#include "spec/json_util.h"
#include "util/cleanup.h"

/* Servers whose arguments (or environment) name host paths they work on: each path is bound at
 * the same place inside, so the arguments still mean what they meant. One row per path-bearing
 * argument; add a server by adding its rows. Read-write: these are the paths the user gave the
 * server to work on (the report says how to make one read-only). */
static const struct mcp_server_paths server_paths[] = {
    {"@modelcontextprotocol/server-filesystem", MCP_PATH_POSITIONAL, NULL, false, false},
    {"@modelcontextprotocol/server-memory", MCP_PATH_ENV, "MEMORY_FILE_PATH", true, true},
    {"@modelcontextprotocol/server-git", MCP_PATH_FLAG, "--repository", false, false},
    {"mcp-server-git", MCP_PATH_FLAG, "--repository", false, false},
    {"mcp-server-git", MCP_PATH_FLAG, "-r", false, false},
    {"mcp-server-sqlite", MCP_PATH_FLAG, "--db-path", true, true},
    {"@modelcontextprotocol/server-sqlite", MCP_PATH_FLAG, "--db-path", true, true},
    {"@modelcontextprotocol/server-everything", MCP_PATH_POSITIONAL, NULL, false, false},
};
/* server-everything's positional argument is its transport ("stdio"), not a path: rows with a
 * package but no path at all are told apart by this list (known, nothing to bind). */
static const char *const known_pathless[] = {
    "@modelcontextprotocol/server-everything",
    "@modelcontextprotocol/server-sequential-thinking",
    "@modelcontextprotocol/server-puppeteer",
    "@modelcontextprotocol/server-brave-search",
    "@modelcontextprotocol/server-github",
    "mcp-server-fetch",
    "mcp-server-time",
};

static bool is_pathless(const char *package) {
  for (size_t i = 0; i < sizeof(known_pathless) / sizeof(known_pathless[0]); i++)
    if (strcmp(package, known_pathless[i]) == 0)
      return true;
  return false;
}

size_t mcp_server_paths_of(const char *package, const struct mcp_server_paths **rows) {
  *rows = NULL;
  if (package == NULL || is_pathless(package))
    return 0;
  size_t n = 0;
  for (size_t i = 0; i < sizeof(server_paths) / sizeof(server_paths[0]); i++) {
    if (strcmp(server_paths[i].package, package) != 0)
      continue;
    if (n == 0)
      *rows = &server_paths[i];
    n++;
  }
  return n;
}

static const char *base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

static bool is_python(const char *base) {
  return strcmp(base, "python") == 0 || strncmp(base, "python3", 7) == 0;
}

/* The options of npx/uvx that take a value (the package is the first argument that is neither
 * an option nor such a value). */
static bool takes_value(const char *runner, const char *opt) {
  static const char *const npx[] = {"-p", "--package", "-c", "--call", "--cache", "--registry", NULL};
  static const char *const uvx[] = {"--from",  "--with",      "--python",    "-p",
                                    "--index", "--index-url", "--cache-dir", NULL};
  const char *const *list = strcmp(runner, "uvx") == 0 ? uvx : npx;
  for (; *list; list++)
    if (strcmp(opt, *list) == 0)
      return true;
  return false;
}

const char *mcp_entry_package(const char *command, const char *const *args, size_t n_args, char *buf,
                              size_t size, int *at) {
  const char *base = base_name(command);
  *at = -1;
  if (strcmp(base, "npx") == 0 || strcmp(base, "uvx") == 0 || strcmp(base, "bunx") == 0 ||
      strcmp(base, "pnpx") == 0) {
    for (size_t i = 0; i < n_args; i++) {
      if (args[i][0] == '-') {
        if (strchr(args[i], '=') == NULL && takes_value(base, args[i]))
          i++;
        continue;
      }
      snprintf(buf, size, "%s", args[i]);
      /* "@scope/name@1.2.3", "name@latest", uvx's "name==1.0": the name only. */
      char *ver = strchr(buf + (buf[0] == '@'), '@');
      if (ver)
        *ver = '\0';
      if ((ver = strstr(buf, "==")) != NULL)
        *ver = '\0';
      *at = (int)i;
      return buf;
    }
    return NULL;
  }
  if (is_python(base)) {
    for (size_t i = 0; i + 1 < n_args; i++)
      if (strcmp(args[i], "-m") == 0) {
        snprintf(buf, size, "%s", args[i + 1]);
        for (char *p = buf; *p; p++)
          if (*p == '_')
            *p = '-';
        *at = (int)(i + 1);
        return buf;
      }
  }
  /* node …/node_modules/@scope/name/dist/index.js: the package the script belongs to. */
  for (size_t i = 0; i < n_args; i++) {
    if (args[i][0] == '-')
      continue;
    const char *nm = strstr(args[i], "/node_modules/");
    if (nm == NULL)
      return NULL;
    const char *name = nm + strlen("/node_modules/");
    const char *end = strchr(name, '/');
    if (end && name[0] == '@')
      end = strchr(end + 1, '/');
    size_t len = end ? (size_t)(end - name) : strlen(name);
    snprintf(buf, size, "%.*s", (int)len, name);
    *at = (int)i;
    return buf;
  }
  return NULL;
}

bool mcp_env_looks_secret(const char *name) {
  static const char *const words[] = {"TOKEN",  "KEY",        "SECRET", "PASSWORD",
                                      "PASSWD", "CREDENTIAL", "AUTH",   "PAT"};
  cleanup_free char *up = xstrdup(name);
  for (char *p = up; *p; p++)
    if (*p >= 'a' && *p <= 'z')
      *p = (char)(*p - 'a' + 'A');
  for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
    const char *at = strstr(up, words[i]);
    /* A whole word of the name: GITHUB_TOKEN, API_KEY, not MONKEY or PATH. */
    size_t n = strlen(words[i]);
    for (; at; at = strstr(at + 1, words[i]))
      if ((at == up || at[-1] == '_') && (at[n] == '\0' || at[n] == '_'))
        return true;
  }
  return false;
}

static bool is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* npx keeps each package set it installed in CACHE/_npx/HASH/node_modules/NAME. */
static bool npx_cache_has(const char *cache, const char *pkg) {
  char dir[PATH_MAX + 8];
  snprintf(dir, sizeof(dir), "%s/_npx", cache);
  DIR *d = opendir(dir);
  if (d == NULL)
    return false;
  bool found = false;
  for (struct dirent *e; !found && (e = readdir(d)) != NULL;) {
    char probe[PATH_MAX + 800];
    struct stat st;
    if (e->d_name[0] == '.')
      continue;
    snprintf(probe, sizeof(probe), "%s/%s/node_modules/%s/package.json", dir, e->d_name, pkg);
    found = stat(probe, &st) == 0;
  }
  closedir(d);
  return found;
}

static void push2(struct spec_strv *v, const char *a, const char *b) {
  spec_strv_push(v, a);
  spec_strv_push(v, b);
}

static void pushf(struct spec_strv *v, const char *fmt, const char *a, const char *b) {
  char *s = NULL;
  if (asprintf(&s, fmt, a, b) < 0)
    abort();
  spec_strv_push(v, s);
  free(s);
}

static const char *env_value(const struct mcp_wrap_input *in, const char *name) {
  for (size_t i = 0; i < in->n_env; i++)
    if (strcmp(in->env_names[i], name) == 0)
      return in->env_values[i];
  return NULL;
}

/* The https:// host an entry names in its arguments or environment (an API's base URL), or NULL. */
static bool entry_host(const struct mcp_wrap_input *in, char *host, size_t size) {
  for (size_t k = 0; k < in->n_args + in->n_env; k++) {
    const char *v = k < in->n_args ? in->args[k] : in->env_values[k - in->n_args];
    const char *p = strstr(v, "https://");
    if (p == NULL)
      continue;
    p += 8;
    size_t n = strcspn(p, "/:?#\"' ");
    if (n == 0 || n >= size)
      continue;
    snprintf(host, size, "%.*s", (int)n, p);
    return true;
  }
  return false;
}

/* One path the server works on: bound at the same place. false: the entry cannot be wrapped
 * (the profile would refuse the bind; the report says why). */
static bool bind_path(const struct mcp_server_paths *row, const char *path, struct spec_strv *flags,
                      struct policy_report *r) {
  if (path[0] != '/') {
    policy_report_add(r, "path %s: not absolute, not bound (write it absolute, then wrap again)", path);
    return true;
  }
  char dir[PATH_MAX];
  snprintf(dir, sizeof(dir), "%s", path);
  if (row->file) {
    char *slash = strrchr(dir, '/');
    if (slash == dir)
      slash[1] = '\0';
    else
      *slash = '\0';
  }
  if (!row->state && !is_dir(dir)) {
    policy_report_add(r, "path %s: no such directory, not bound (make it, then wrap again)", dir);
    return true;
  }
  struct cm_error *err = NULL;
  if (policy_check_bind_source(dir, NULL, &err) < 0) {
    policy_report_add(
        r, "not wrapped: %s is refused by the mcp profile (%s): give the server a directory of its own", dir,
        err->msg);
    cm_error_free(err);
    return false;
  }
  if (row->state) {
    spec_strv_push(flags, "--state");
    pushf(flags, "%s:%s", dir, dir);
    policy_report_add(r, "files: %s read-write (--state, made if missing)", dir);
  } else {
    spec_strv_push(flags, "--mount");
    pushf(flags, "%s:%s:rw", dir, dir);
    policy_report_add(r, "files: %s read-write (make it read-only: its --mount …:%s:ro)", dir, dir);
  }
  return true;
}

/* A script given by its absolute path: the directory of the node_modules it is in, else the
 * nearest directory above it with a project file (package.json, pyproject.toml, setup.py),
 * never the home itself; else its own directory. Bound read-only. false: the profile would
 * refuse it (the report says why). */
static bool bind_project(const char *script, const char *home, struct spec_strv *flags,
                         struct policy_report *r) {
  struct stat st;
  if (stat(script, &st) < 0 || !S_ISREG(st.st_mode))
    return true;
  char dir[PATH_MAX];
  snprintf(dir, sizeof(dir), "%s", script);
  char *nm = strstr(dir, "/node_modules/");
  if (nm) {
    *nm = '\0';
  } else {
    *strrchr(dir, '/') = '\0';
    char probe[PATH_MAX];
    snprintf(probe, sizeof(probe), "%s", dir);
    for (;;) {
      static const char *const marks[] = {"package.json", "pyproject.toml", "setup.py"};
      bool found = false;
      for (size_t k = 0; k < 3 && !found; k++) {
        char f[PATH_MAX + 32];
        snprintf(f, sizeof(f), "%s/%s", probe, marks[k]);
        found = stat(f, &st) == 0;
      }
      if (found) {
        snprintf(dir, sizeof(dir), "%s", probe);
        break;
      }
      char *slash = strrchr(probe, '/');
      if (slash == NULL || slash == probe)
        break;
      *slash = '\0';
      if (home && strcmp(probe, home) == 0)
        break;
    }
  }
  if (dir[0] == '\0')
    return true;
  struct cm_error *err = NULL;
  if (policy_check_bind_source(dir, NULL, &err) < 0) {
    policy_report_add(
        r,
        "not wrapped: the script's directory %s is refused by the mcp profile (%s): move it to a "
        "directory of its own",
        dir, err->msg);
    cm_error_free(err);
    return false;
  }
  spec_strv_push(flags, "--mount");
  pushf(flags, "%s:%s:ro", dir, dir);
  policy_report_add(r, "files: %s read-only (the script's project)", dir);
  return true;
}

static void wrap_docker(const struct mcp_wrap_input *in, struct mcp_wrap_result *out) {
  if (in->n_args == 0 || strcmp(in->args[0], "run") != 0) {
    policy_report_add(&out->report, "left as it is: docker %s is not `docker run`",
                      in->n_args ? in->args[0] : "");
    return;
  }
  for (size_t i = 1; i < in->n_args; i++)
    if (strncmp(in->args[i], "--runtime", 9) == 0) {
      policy_report_add(&out->report, "left as it is: it names its own runtime (%s)", in->args[i]);
      return;
    }
  if (in->docker_runtime == NULL) {
    policy_report_add(&out->report,
                      "left as it is: no codemode mcp runtime is registered with Docker (README: Registering "
                      "codemode with Docker; then wrap again)");
    return;
  }
  out->outcome = MCP_WRAPPED;
  out->command = xstrdup(in->command);
  spec_strv_push(&out->args, "run");
  pushf(&out->args, "--runtime=%s%s", in->docker_runtime, "");
  for (size_t i = 1; i < in->n_args; i++)
    spec_strv_push(&out->args, in->args[i]);
  policy_report_add(&out->report, "docker run --runtime=%s: the mcp profile applies to the container",
                    in->docker_runtime);
}

void mcp_wrap_entry(const struct mcp_wrap_input *in, struct mcp_wrap_result *out) {
  *out = (struct mcp_wrap_result){.outcome = MCP_LEFT};
  const char *base = base_name(in->command);
  if (strcmp(base, "docker") == 0 || strcmp(base, "podman") == 0) {
    wrap_docker(in, out);
    return;
  }
  struct spec_strv flags = {0};
  if (in->root)
    push2(&flags, "--root", in->root);
  if (in->profile && strcmp(in->profile, "mcp") != 0)
    push2(&flags, "--profile", in->profile);
  spec_strv_push(&flags, "--host");
  char pkg_buf[256];
  int at = -1;
  const char *pkg = mcp_entry_package(in->command, in->args, in->n_args, pkg_buf, sizeof(pkg_buf), &at);
  struct policy_report *r = &out->report;
  char path[PATH_MAX];
  bool npx = strcmp(base, "npx") == 0, uvx = strcmp(base, "uvx") == 0;
  if (npx) {
    /* HOME is /root inside (codemode-run --host): npx looks for its cache at /root/.npm. */
    snprintf(path, sizeof(path), "%s/.npm", in->home ? in->home : "~");
    if (in->home && is_dir(path)) {
      spec_strv_push(&flags, "--mount");
      pushf(&flags, "%s:%s", path, "/root/.npm:cow");
      bool warm = pkg && npx_cache_has(path, pkg);
      if (warm)
        policy_report_add(r, "cache: %s as /root/.npm (:cow, never changed), %s in it: starts offline", path,
                          pkg);
      else
        policy_report_add(
            r,
            "cache: %s as /root/.npm (:cow, never changed); %s is not in it yet: run `npx -y %s` "
            "once online (it starts offline from the cache)",
            path, pkg ? pkg : "the package", pkg ? pkg : "PACKAGE");
    } else {
      policy_report_add(r, "cache: no %s: run `npx -y %s` once online, then unwrap and wrap again", path,
                        pkg ? pkg : "PACKAGE");
    }
    push2(&flags, "--env", "npm_config_offline=true");
    push2(&flags, "--env", "npm_config_update_notifier=false");
  } else if (uvx) {
    static const char *const uv_dirs[][2] = {{".cache/uv", "/root/.cache/uv"},
                                             {".local/share/uv", "/root/.local/share/uv"}};
    for (size_t i = 0; i < 2 && in->home; i++) {
      snprintf(path, sizeof(path), "%s/%s", in->home, uv_dirs[i][0]);
      if (!is_dir(path))
        continue;
      spec_strv_push(&flags, "--mount");
      pushf(&flags, "%s:%s:cow", path, uv_dirs[i][1]);
      policy_report_add(r, "cache: %s as %s (:cow, never changed)", path, uv_dirs[i][1]);
    }
    push2(&flags, "--env", "UV_OFFLINE=1");
  }
  /* node/python SCRIPT: the script's project, read-only (what it imports lives there too). */
  bool ok = true;
  if (!npx && !uvx && !(at >= 0 && is_python(base))) {
    for (size_t i = at >= 0 ? (size_t)at : 0; i < in->n_args; i++) {
      if (in->args[i][0] == '-')
        continue;
      if (in->args[i][0] == '/' && strncmp(in->args[i], "/usr/", 5) != 0)
        ok = bind_project(in->args[i], in->home, &flags, r);
      break;
    }
  }
  if (!ok) {
    spec_strv_free(&flags);
    return;
  }
  const struct mcp_server_paths *rows;
  size_t n_rows = mcp_server_paths_of(pkg, &rows);
  for (size_t k = 0; k < n_rows && ok; k++) {
    const struct mcp_server_paths *row = &rows[k];
    if (row->kind == MCP_PATH_ENV) {
      const char *v = env_value(in, row->flag);
      if (v)
        ok = bind_path(row, v, &flags, r);
      else
        policy_report_add(
            r,
            "%s not set: the server keeps its data inside, thrown away at exit (set it to a host "
            "path, then unwrap and wrap again)",
            row->flag);
      continue;
    }
    for (size_t i = (size_t)(at + 1); i < in->n_args && ok; i++) {
      const char *a = in->args[i];
      if (row->kind == MCP_PATH_POSITIONAL && a[0] != '-') {
        ok = bind_path(row, a, &flags, r);
      } else if (row->kind == MCP_PATH_FLAG) {
        size_t n = strlen(row->flag);
        if (strcmp(a, row->flag) == 0 && i + 1 < in->n_args)
          ok = bind_path(row, in->args[++i], &flags, r);
        else if (strncmp(a, row->flag, n) == 0 && a[n] == '=')
          ok = bind_path(row, a + n + 1, &flags, r);
      }
    }
  }
  if (!ok) {
    spec_strv_free(&flags);
    return;
  }
  if (pkg && n_rows == 0 && !is_pathless(pkg))
    policy_report_add(r,
                      "%s: not in the table of known servers: none of your files is bound (add \"--mount\", "
                      "\"SRC:DST\" before \"--\" in its args)",
                      pkg);
  else if (pkg == NULL && !npx && !uvx && at < 0)
    policy_report_add(r, "%s: not a known server: none of your files is bound but what is listed", base);
  char host[256];
  bool has_host = entry_host(in, host, sizeof(host));
  bool allowed = false;
  for (size_t i = 0; i < in->n_env; i++) {
    const char *name = in->env_names[i];
    if (mcp_env_looks_secret(name) && has_host) {
      /* The server never sees the value: the broker puts it in its requests to HOST only. */
      push2(&flags, "--secret", name);
      spec_strv_push(&flags, "--secret-host");
      pushf(&flags, "%s=%s", name, host);
      if (!allowed)
        push2(&flags, "--allow-host", host);
      allowed = true;
      policy_report_add(r, "secret: %s, sent only to %s (the server sees a placeholder)", name, host);
    } else {
      push2(&flags, "--env", name);
      if (mcp_env_looks_secret(name))
        policy_report_add(r,
                          "env: %s looks like a credential: the server gets it; to keep it from the server, "
                          "\"--secret\", \"%s\", \"--secret-host\", \"%s=HOST\", \"--allow-host\", \"HOST\"",
                          name, name, name);
    }
  }
  if (allowed)
    policy_report_add(r, "network: %s only (port 443)", host);
  else
    policy_report_add(
        r, "network: none (loopback only); to let it reach a host: \"--allow-host\", \"HOST\" before "
           "\"--\" in its args (codemode-run --learn shows which)");
  spec_strv_push(&flags, "--");
  spec_strv_push(&flags, in->command);
  for (size_t i = 0; i < in->n_args; i++)
    spec_strv_push(&flags, in->args[i]);
  out->outcome = MCP_WRAPPED;
  out->command = xstrdup(in->codemode_run);
  out->args = flags;
}

void mcp_wrap_result_free(struct mcp_wrap_result *r) {
  free(r->command);
  spec_strv_free(&r->args);
  policy_report_free(&r->report);
  *r = (struct mcp_wrap_result){0};
}
