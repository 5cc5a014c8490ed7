/* policy/mcp_wrap.c and spec/client_config.c (issue 29): the server-argument table, the package
 * an entry runs, what an entry becomes (against a fake home with an npm cache), and a client
 * config's round trip (keys, values and order kept; bad files named). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka.h needs the four above first. */
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/mcp_wrap.h"
#include "spec/client_config.h"

static char dir[64];

static int setup(void **state) {
  snprintf(dir, sizeof(dir), "/tmp/cm-unit-mcpwrap.XXXXXX");
  assert_non_null(mkdtemp(dir));
  return 0;
}
static int teardown(void **state) {
  char cmd[128];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  return system(cmd);
}

static void mkdirs(const char *rel) {
  char cmd[512];
  snprintf(cmd, sizeof(cmd), "mkdir -p '%s/%s'", dir, rel);
  assert_int_equal(system(cmd), 0);
}

static void test_table(void **state) {
  const struct mcp_server_paths *rows;
  assert_int_equal(mcp_server_paths_of("@modelcontextprotocol/server-filesystem", &rows), 1);
  assert_int_equal(rows[0].kind, MCP_PATH_POSITIONAL);
  assert_int_equal(mcp_server_paths_of("mcp-server-git", &rows), 2);
  assert_string_equal(rows[0].flag, "--repository");
  assert_string_equal(rows[1].flag, "-r");
  assert_int_equal(mcp_server_paths_of("mcp-server-sqlite", &rows), 1);
  assert_true(rows[0].file);
  assert_int_equal(mcp_server_paths_of("@modelcontextprotocol/server-memory", &rows), 1);
  assert_int_equal(rows[0].kind, MCP_PATH_ENV);
  assert_string_equal(rows[0].flag, "MEMORY_FILE_PATH");
  /* Known without paths (server-everything's argument is a transport), and unknown. */
  assert_int_equal(mcp_server_paths_of("@modelcontextprotocol/server-everything", &rows), 0);
  assert_int_equal(mcp_server_paths_of("left-pad", &rows), 0);
  assert_null(rows);
}

static void test_package(void **state) {
  char buf[256];
  int at;
  const char *a1[] = {"-y", "@modelcontextprotocol/server-filesystem@2025.1.1", "/d"};
  assert_string_equal(mcp_entry_package("npx", a1, 3, buf, sizeof(buf), &at),
                      "@modelcontextprotocol/server-filesystem");
  assert_int_equal(at, 1);
  const char *a2[] = {"--package", "x", "mcp-thing@latest", "--flag"};
  assert_string_equal(mcp_entry_package("/usr/bin/npx", a2, 4, buf, sizeof(buf), &at), "mcp-thing");
  assert_int_equal(at, 2);
  const char *a3[] = {"--from", "git+https://x", "mcp-server-git==0.6", "--repository", "/r"};
  assert_string_equal(mcp_entry_package("uvx", a3, 5, buf, sizeof(buf), &at), "mcp-server-git");
  const char *a4[] = {"-m", "mcp_server_sqlite", "--db-path", "/x/db"};
  assert_string_equal(mcp_entry_package("python3.11", a4, 4, buf, sizeof(buf), &at), "mcp-server-sqlite");
  assert_int_equal(at, 1);
  const char *a5[] = {"/opt/app/node_modules/@modelcontextprotocol/server-memory/dist/index.js"};
  assert_string_equal(mcp_entry_package("node", a5, 1, buf, sizeof(buf), &at),
                      "@modelcontextprotocol/server-memory");
  const char *a6[] = {"/opt/server.js"};
  assert_null(mcp_entry_package("node", a6, 1, buf, sizeof(buf), &at));
  assert_null(mcp_entry_package("npx", NULL, 0, buf, sizeof(buf), &at));
}

static void test_secret_names(void **state) {
  assert_true(mcp_env_looks_secret("GITHUB_TOKEN"));
  assert_true(mcp_env_looks_secret("api_key"));
  assert_true(mcp_env_looks_secret("GITHUB_PERSONAL_ACCESS_TOKEN"));
  assert_false(mcp_env_looks_secret("MONKEY"));
  assert_false(mcp_env_looks_secret("PATH"));
  assert_false(mcp_env_looks_secret("MEMORY_FILE_PATH"));
}

/* The args as one line, for comparing. */
static char *joined(const struct spec_strv *v) {
  size_t n = 1;
  for (size_t i = 0; i < v->count; i++)
    n += strlen(v->items[i]) + 1;
  char *s = calloc(1, n);
  for (size_t i = 0; i < v->count; i++) {
    strcat(s, v->items[i]);
    if (i + 1 < v->count)
      strcat(s, " ");
  }
  return s;
}

static void test_wrap_npx_filesystem(void **state) {
  mkdirs("home/.npm/_npx/abc/node_modules/@modelcontextprotocol/server-filesystem");
  mkdirs("served");
  char home[128], served[128], pj[256];
  snprintf(home, sizeof(home), "%s/home", dir);
  snprintf(served, sizeof(served), "%s/served", dir);
  snprintf(pj, sizeof(pj),
           "%s/.npm/_npx/abc/node_modules/@modelcontextprotocol/server-filesystem/package.json", home);
  FILE *f = fopen(pj, "w");
  assert_non_null(f);
  fclose(f);
  const char *args[] = {"-y", "@modelcontextprotocol/server-filesystem", served, "relative/dir"};
  const char *names[] = {"DEBUG"}, *values[] = {"1"};
  struct mcp_wrap_input in = {.command = "npx",
                              .args = args,
                              .n_args = 4,
                              .env_names = names,
                              .env_values = values,
                              .n_env = 1,
                              .codemode_run = "/opt/bin/codemode-run",
                              .root = "/run/x",
                              .home = home};
  struct mcp_wrap_result r;
  mcp_wrap_entry(&in, &r);
  assert_int_equal(r.outcome, MCP_WRAPPED);
  assert_string_equal(r.command, "/opt/bin/codemode-run");
  char *line = joined(&r.args), want[1024];
  snprintf(want, sizeof(want),
           "--root /run/x --host --mount %s/.npm:/root/.npm:cow --env npm_config_offline=true --env "
           "npm_config_update_notifier=false --mount %s:%s:rw --env DEBUG -- npx -y "
           "@modelcontextprotocol/server-filesystem %s relative/dir",
           home, served, served, served);
  assert_string_equal(line, want);
  free(line);
  /* The report: the warm cache, the bound path, the relative one not bound, no network. */
  bool warm = false, rel = false, net = false;
  for (size_t i = 0; i < r.report.count; i++) {
    warm |= strstr(r.report.lines[i], "in it: starts offline") != NULL;
    rel |= strstr(r.report.lines[i], "relative/dir: not absolute") != NULL;
    net |= strstr(r.report.lines[i], "network: none") != NULL;
  }
  assert_true(warm && rel && net);
  mcp_wrap_result_free(&r);
}

static void test_wrap_memory_git_and_secrets(void **state) {
  char mem[160], repo[160];
  snprintf(mem, sizeof(mem), "%s/mem/memory.json", dir);
  snprintf(repo, sizeof(repo), "%s/repo", dir);
  mkdirs("repo");
  const char *margs[] = {"-y", "@modelcontextprotocol/server-memory"};
  const char *names[] = {"MEMORY_FILE_PATH", "GITHUB_TOKEN"}, *values[] = {mem, "ghp_x"};
  struct mcp_wrap_input in = {.command = "npx",
                              .args = margs,
                              .n_args = 2,
                              .env_names = names,
                              .env_values = values,
                              .n_env = 2,
                              .codemode_run = "/b/codemode-run",
                              .profile = "mcp-audit"};
  struct mcp_wrap_result r;
  mcp_wrap_entry(&in, &r);
  assert_int_equal(r.outcome, MCP_WRAPPED);
  char *line = joined(&r.args), want[1024];
  /* --state for the store's directory (made when missing); the token by name, no host named. */
  snprintf(want, sizeof(want),
           "--profile mcp-audit --host --env npm_config_offline=true --env npm_config_update_notifier=false "
           "--state %s/mem:%s/mem --env MEMORY_FILE_PATH --env GITHUB_TOKEN -- npx -y "
           "@modelcontextprotocol/server-memory",
           dir, dir);
  assert_string_equal(line, want);
  free(line);
  mcp_wrap_result_free(&r);
  /* uvx mcp-server-git --repository R, a token and the API's host named: the token a secret
   * bound to that host, which the container may reach. */
  const char *gargs[] = {"mcp-server-git", "--repository", repo};
  const char *gnames[] = {"API_URL", "API_TOKEN"}, *gvalues[] = {"https://api.example.com/v1", "t"};
  struct mcp_wrap_input g = {.command = "uvx",
                             .args = gargs,
                             .n_args = 3,
                             .env_names = gnames,
                             .env_values = gvalues,
                             .n_env = 2,
                             .codemode_run = "/b/codemode-run"};
  mcp_wrap_entry(&g, &r);
  assert_int_equal(r.outcome, MCP_WRAPPED);
  line = joined(&r.args);
  snprintf(want, sizeof(want),
           "--host --env UV_OFFLINE=1 --mount %s:%s:rw --env API_URL --secret API_TOKEN --secret-host "
           "API_TOKEN=api.example.com --allow-host api.example.com -- uvx mcp-server-git --repository %s",
           repo, repo, repo);
  assert_string_equal(line, want);
  free(line);
  mcp_wrap_result_free(&r);
}

static void test_wrap_refused_and_docker(void **state) {
  /* A path the profile would refuse: not wrapped, the reason in the report. */
  const char *args[] = {"-y", "@modelcontextprotocol/server-filesystem", "/etc"};
  struct mcp_wrap_input in = {.command = "npx", .args = args, .n_args = 3, .codemode_run = "/b/codemode-run"};
  struct mcp_wrap_result r;
  mcp_wrap_entry(&in, &r);
  assert_int_equal(r.outcome, MCP_LEFT);
  assert_non_null(strstr(r.report.lines[r.report.count - 1], "not wrapped: /etc is refused"));
  mcp_wrap_result_free(&r);
  const char *dargs[] = {"run", "-i", "--rm", "mcp/fetch"};
  struct mcp_wrap_input d = {
      .command = "docker", .args = dargs, .n_args = 4, .codemode_run = "/b/codemode-run"};
  mcp_wrap_entry(&d, &r);
  assert_int_equal(r.outcome, MCP_LEFT); /* no mcp runtime registered */
  mcp_wrap_result_free(&r);
  d.docker_runtime = "codemode-mcp";
  mcp_wrap_entry(&d, &r);
  assert_int_equal(r.outcome, MCP_WRAPPED);
  char *line = joined(&r.args);
  assert_string_equal(r.command, "docker");
  assert_string_equal(line, "run --runtime=codemode-mcp -i --rm mcp/fetch");
  free(line);
  mcp_wrap_result_free(&r);
}

static void touch(const char *rel) {
  char path[256];
  snprintf(path, sizeof(path), "%s/%s", dir, rel);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fclose(f);
}

/* node SCRIPT: the script's project (package.json above it, or the node_modules it is in), read-only. */
static void test_wrap_node_script(void **state) {
  mkdirs("proj/build");
  mkdirs("app/node_modules/@modelcontextprotocol/server-filesystem/dist");
  touch("proj/package.json");
  touch("proj/build/index.js");
  touch("app/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
  mkdirs("served");
  char script[256], script2[256], served[160], want[1024];
  snprintf(script, sizeof(script), "%s/proj/build/index.js", dir);
  snprintf(script2, sizeof(script2),
           "%s/app/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", dir);
  snprintf(served, sizeof(served), "%s/served", dir);
  const char *args[] = {script, "--port", "0"};
  struct mcp_wrap_input in = {
      .command = "/usr/bin/node", .args = args, .n_args = 3, .codemode_run = "/b/codemode-run"};
  struct mcp_wrap_result r;
  mcp_wrap_entry(&in, &r);
  assert_int_equal(r.outcome, MCP_WRAPPED);
  char *line = joined(&r.args);
  snprintf(want, sizeof(want), "--host --mount %s/proj:%s/proj:ro -- /usr/bin/node %s --port 0", dir, dir,
           script);
  assert_string_equal(line, want);
  free(line);
  mcp_wrap_result_free(&r);
  const char *args2[] = {script2, served};
  struct mcp_wrap_input in2 = {
      .command = "node", .args = args2, .n_args = 2, .codemode_run = "/b/codemode-run"};
  mcp_wrap_entry(&in2, &r);
  assert_int_equal(r.outcome, MCP_WRAPPED);
  line = joined(&r.args);
  snprintf(want, sizeof(want), "--host --mount %s/app:%s/app:ro --mount %s:%s:rw -- node %s %s", dir, dir,
           served, served, script2, served);
  assert_string_equal(line, want);
  free(line);
  mcp_wrap_result_free(&r);
}

static const char *write_file(const char *name, const char *text) {
  static char path[256];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  return path;
}

static bool never(yajl_gen g, const struct client_config *c, size_t i, void *ctx) {
  return false;
}

static bool wrap_all(yajl_gen g, const struct client_config *c, size_t i, void *ctx) {
  const char *v[] = {"--host", "--", "npx", "-y", NULL};
  struct spec_strv args = {.items = (char **)v, .count = 4};
  client_entry_emit_wrapped(g, client_config_entry(c, i), "/x/codemode-run", &args);
  return true;
}

static bool unwrap_all(yajl_gen g, const struct client_config *c, size_t i, void *ctx) {
  const char *marker = client_entry_marker(client_config_entry(c, i));
  assert_non_null(marker);
  struct cm_error *err = NULL;
  yajl_val orig = client_entry_original(c, i, marker, &err);
  assert_non_null(orig);
  client_entry_emit_original(g, client_config_entry(c, i), orig);
  yajl_tree_free(orig);
  return true;
}

static char *load_render(const char *path, client_entry_emitter emit) {
  struct client_config c;
  struct cm_error *err = NULL;
  assert_int_equal(client_config_load(path, &c, &err), 0);
  char *out = client_config_render(&c, emit, NULL);
  client_config_free(&c);
  return out;
}

/* Wrapped then unwrapped: the text again, byte for byte, whether the entry had args and env
 * or not, and whatever keys of its own it had, in their order. */
static void test_wrap_unwrap_entries(void **state) {
  const char *text = "{\n"
                     "  \"servers\": {\n"
                     "    \"a\": {\n"
                     "      \"type\": \"stdio\",\n"
                     "      \"command\": \"npx\",\n"
                     "      \"env\": {\n"
                     "        \"K\": \"${input:token}\"\n"
                     "      },\n"
                     "      \"args\": [\n"
                     "        \"-y\"\n"
                     "      ],\n"
                     "      \"disabled\": false\n"
                     "    },\n"
                     "    \"b\": {\n"
                     "      \"command\": \"uvx\"\n"
                     "    }\n"
                     "  }\n"
                     "}\n";
  const char *p = write_file("w.json", text);
  char *wrapped = load_render(p, wrap_all);
  assert_non_null(strstr(wrapped, "\"command\": \"/x/codemode-run\""));
  assert_non_null(strstr(wrapped, "\"CODEMODE_MCP_ORIGINAL\": \"{\\\"type\\\":\\\"stdio\\\",\\\"command\\\":\\\"npx\\\",\\\"env\\\":true"));
  assert_null(strstr(wrapped, "\\\"K\\\"")); /* the env's values are not copied into the marker */
  p = write_file("w.json", wrapped);
  free(wrapped);
  char *back = load_render(p, unwrap_all);
  assert_string_equal(back, text);
  free(back);
}

static void test_config_round_trip_and_errors(void **state) {
  const char *text = "{\n"
                     "    \"a\": 1.50,\n"
                     "    \"mcpServers\": {\n"
                     "        \"x\": {\n"
                     "            \"command\": \"npx\",\n"
                     "            \"args\": [\n"
                     "                \"-y\"\n"
                     "            ]\n"
                     "        }\n"
                     "    },\n"
                     "    \"z\": [\n"
                     "        \"\xc3\xa9\",\n"
                     "        null,\n"
                     "        -2e-3\n"
                     "    ]\n"
                     "}\n";
  const char *p = write_file("c.json", text);
  struct client_config c;
  struct cm_error *err = NULL;
  assert_int_equal(client_config_load(p, &c, &err), 0);
  assert_string_equal(c.map_key, "mcpServers");
  assert_string_equal(c.indent, "    ");
  /* Nothing replaced: the same text, byte for byte (its own indent, numbers as written). */
  char *out = client_config_render(&c, never, NULL);
  assert_string_equal(out, text);
  free(out);
  client_config_free(&c);
  /* Bad entries and files: the file and the JSON path named. */
  p = write_file("bad-args.json",
                 "{\"servers\": {\"s\": {\"type\": \"stdio\", \"command\": \"x\", \"args\": [1]}}}");
  assert_int_equal(client_config_load(p, &c, &err), 0);
  struct client_entry e;
  assert_int_equal(client_entry_read(&c, 0, &e, &err), -1);
  assert_non_null(strstr(err->msg, "bad-args.json: .servers.s.args[0]: not a string"));
  cm_error_freep(&err);
  client_config_free(&c);
  p = write_file("array.json", "[1]");
  assert_int_equal(client_config_load(p, &c, &err), -1);
  assert_non_null(strstr(err->msg, "array.json: the top level is not a JSON object"));
  cm_error_freep(&err);
  p = write_file("map.json", "{\"mcpServers\": []}");
  assert_int_equal(client_config_load(p, &c, &err), -1);
  assert_non_null(strstr(err->msg, "map.json: .mcpServers: not an object"));
  cm_error_freep(&err);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_table),
      cmocka_unit_test(test_package),
      cmocka_unit_test(test_secret_names),
      cmocka_unit_test_setup_teardown(test_wrap_npx_filesystem, setup, teardown),
      cmocka_unit_test_setup_teardown(test_wrap_memory_git_and_secrets, setup, teardown),
      cmocka_unit_test_setup_teardown(test_wrap_refused_and_docker, setup, teardown),
      cmocka_unit_test_setup_teardown(test_wrap_node_script, setup, teardown),
      cmocka_unit_test_setup_teardown(test_config_round_trip_and_errors, setup, teardown),
      cmocka_unit_test_setup_teardown(test_wrap_unwrap_entries, setup, teardown),
  };
  return cmocka_run_group_tests_name("mcp_wrap", tests, NULL, NULL);
}
