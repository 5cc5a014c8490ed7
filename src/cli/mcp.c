/* codemode mcp wrap|unwrap FILE (issue 29): every stdio server of an MCP client's config run
 * under codemode-run, and back. The file is spec/client_config.h's; what an entry becomes is
 * policy/mcp_wrap.h's; this is the flags, the marker that makes unwrap exact, and the report. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "policy/mcp_wrap.h"
#include "runtime/doctor.h"
#include "spec/client_config.h"
#include "spec/json_util.h"
#include "util/cleanup.h"
#include "util/sibling.h"

static const char help[] =
    "usage: codemode [--root DIR] mcp wrap FILE [--dry-run] [--server NAME]... [--profile mcp|mcp-audit]\n"
    "       codemode mcp unwrap FILE [--dry-run] [--server NAME]...\n"
    "\n"
    "wrap: every stdio server of an MCP client's config (Claude Desktop's claude_desktop_config.json,\n"
    "Claude Code's .mcp.json, Cursor's ~/.cursor/mcp.json, VS Code's .vscode/mcp.json), or the\n"
    "--server ones, runs under codemode-run --profile mcp: npx/uvx/node/python entries with --host,\n"
    "the package cache copy-on-write, no network, the env block passed by name, and the paths\n"
    "of well-known servers bound at the same place; `docker run` entries get codemode's mcp\n"
    "runtime when it is registered. A report per server says what it gets and how to widen it.\n"
    "Entries already wrapped and url entries stay as they are; wrapping twice is wrapping once.\n"
    "The file is backed up next to it (FILE.codemode-backup) before any change; the rest of it\n"
    "keeps its keys and values. --root DIR (a global option) is passed to codemode-run.\n"
    "unwrap: every entry wrap changed, exactly as it was.\n"
    "\n"
    "Options:\n"
    "  --dry-run         print the new entries and the report; change nothing\n"
    "  --server NAME     only this server (repeatable)\n"
    "  --profile NAME    mcp (default) or mcp-audit (learn mode)\n"
    "  -h, --help        this help\n";

struct plan {
  bool unwrap;
  struct mcp_wrap_result *results; /* per entry; outcome MCP_WRAPPED: replace */
  yajl_val *originals;             /* unwrap: the entry as it was (from its marker) */
};

static bool emit_entry(yajl_gen g, const struct client_config *c, size_t i, void *ctx) {
  struct plan *p = ctx;
  yajl_val entry = client_config_entry(c, i);
  if (!p->unwrap) {
    const struct mcp_wrap_result *r = &p->results[i];
    if (r->outcome != MCP_WRAPPED)
      return false;
    client_entry_emit_wrapped(g, entry, r->command, &r->args);
    return true;
  }
  if (p->originals[i] == NULL)
    return false;
  client_entry_emit_original(g, entry, p->originals[i]);
  return true;
}

static bool selected(const struct spec_strv *names, const char *name) {
  if (names->count == 0)
    return true;
  for (size_t i = 0; i < names->count; i++)
    if (strcmp(names->items[i], name) == 0)
      return true;
  return false;
}

/* codemode-run beside the codemode being run (the build directory), else where it is installed. */
static char *codemode_run_path(struct cm_error **err) {
  char *p = cm_sibling_binary("codemode-run", NULL, CODEMODE_BINDIR);
  if (p[0] != '/' || access(p, X_OK) != 0) {
    cm_error_set(err, 0, "codemode-run is neither next to this codemode nor at %s: install it (make install)",
                 p);
    free(p);
    return NULL;
  }
  return p;
}

static void print_entry(const struct client_config *c, struct plan *p, size_t i) {
  yajl_gen g = client_config_gen(c);
  yajl_gen_map_open(g);
  const char *name = client_config_name(c, i);
  yajl_gen_string(g, (const unsigned char *)name, strlen(name));
  emit_entry(g, c, i, p);
  yajl_gen_map_close(g);
  const unsigned char *buf;
  size_t len;
  yajl_gen_get_buf(g, &buf, &len);
  fwrite(buf, 1, len, stdout);
  if (len && buf[len - 1] != '\n')
    putchar('\n');
  yajl_gen_free(g);
}

static int run(struct cli_globals *g, const char *file, bool unwrap, bool dry_run,
               const struct spec_strv *names, const char *profile) {
  struct cm_error *err = NULL;
  struct client_config c;
  if (client_config_load(file, &c, &err) < 0)
    return cli_fail(err);
  size_t n = client_config_count(&c);
  for (size_t k = 0; k < names->count; k++) {
    bool found = false;
    for (size_t i = 0; i < n && !found; i++)
      found = strcmp(client_config_name(&c, i), names->items[k]) == 0;
    if (!found) {
      cm_error_set(&err, 0, "%s: --server %s: no such server in .%s", file, names->items[k], c.map_key);
      client_config_free(&c);
      return cli_fail(err);
    }
  }
  cleanup_free char *runner = NULL;
  if (!unwrap && (runner = codemode_run_path(&err)) == NULL) {
    client_config_free(&c);
    return cli_fail(err);
  }
  char docker_rt[128];
  const char *docker =
      doctor_docker_mcp_runtime("/etc/docker/daemon.json", docker_rt, sizeof(docker_rt)) ? docker_rt : NULL;
  struct plan p = {.unwrap = unwrap};
  p.results = calloc(n ? n : 1, sizeof(*p.results));
  p.originals = calloc(n ? n : 1, sizeof(*p.originals));
  if (p.results == NULL || p.originals == NULL)
    abort();
  size_t changed = 0;
  int rc = 0;
  struct spec_strv lines = {0};
  for (size_t i = 0; i < n && rc == 0; i++) {
    const char *name = client_config_name(&c, i);
    if (!selected(names, name))
      continue;
    struct client_entry e;
    if (client_entry_read(&c, i, &e, &err) < 0) {
      rc = cli_fail(err);
      break;
    }
    const char *marker = client_entry_marker(client_config_entry(&c, i));
    char *line = NULL;
    if (unwrap) {
      if (marker == NULL) {
        if (asprintf(&line, "%s: not wrapped by codemode mcp wrap: unchanged", name) < 0)
          abort();
      } else {
        p.originals[i] = client_entry_original(&c, i, marker, &err);
        if (p.originals[i] == NULL) {
          rc = cli_fail(err);
        } else {
          changed++;
          if (asprintf(&line, "%s: restored", name) < 0)
            abort();
        }
      }
    } else if (marker) {
      if (asprintf(&line, "%s: already wrapped: unchanged", name) < 0)
        abort();
    } else if (e.command == NULL || e.url || (e.type && strcmp(e.type, "stdio") != 0)) {
      if (asprintf(&line, "%s: not a stdio server (%s): unchanged", name,
                   e.url    ? e.url
                   : e.type ? e.type
                            : "no command") < 0)
        abort();
    } else if (strcmp(strrchr(e.command, '/') ? strrchr(e.command, '/') + 1 : e.command, "codemode-run") ==
               0) {
      if (asprintf(&line, "%s: already runs under codemode-run: unchanged", name) < 0)
        abort();
    } else {
      const char *home = getenv("HOME");
      struct mcp_wrap_input in = {
          .command = e.command,
          .args = (const char *const *)e.args.items,
          .n_args = e.args.count,
          .env_names = (const char *const *)e.env_names.items,
          .env_values = (const char *const *)e.env_values.items,
          .n_env = e.env_names.count,
          .codemode_run = runner,
          .root = g->root_given ? g->ctx.root : NULL,
          .profile = profile,
          .home = home && home[0] == '/' ? home : NULL,
          .docker_runtime = docker,
      };
      mcp_wrap_entry(&in, &p.results[i]);
      const struct mcp_wrap_result *r = &p.results[i];
      changed += r->outcome == MCP_WRAPPED;
      size_t len = 0;
      FILE *f = open_memstream(&line, &len);
      fprintf(f, "%s: %s", name, r->outcome == MCP_WRAPPED ? "wrapped" : "NOT wrapped");
      for (size_t k = 0; k < r->report.count; k++)
        fprintf(f, "\n  %s", r->report.lines[k]);
      fclose(f);
    }
    client_entry_free(&e);
    if (line) {
      spec_strv_push(&lines, line);
      free(line);
    }
  }
  if (rc == 0) {
    if (dry_run)
      for (size_t i = 0; i < n; i++)
        if ((unwrap && p.originals[i]) || (!unwrap && p.results[i].outcome == MCP_WRAPPED))
          print_entry(&c, &p, i);
    for (size_t k = 0; k < lines.count; k++)
      printf("%s\n", lines.items[k]);
    if (changed == 0) {
      printf("%s: nothing to change\n", file);
    } else if (dry_run) {
      printf("%s: %zu entr%s would change (--dry-run: nothing written)\n", file, changed,
             changed == 1 ? "y" : "ies");
    } else {
      cleanup_free char *text = client_config_render(&c, emit_entry, &p);
      char backup[4096];
      if (client_config_write(&c, text, backup, sizeof(backup), &err) < 0) {
        rc = cli_fail(err);
      } else {
        printf("%s: %zu entr%s %s (backup: %s); restart the client\n", file, changed,
               changed == 1 ? "y" : "ies", unwrap ? "restored" : "wrapped", backup);
      }
    }
  }
  for (size_t i = 0; i < n; i++) {
    mcp_wrap_result_free(&p.results[i]);
    if (p.originals[i])
      yajl_tree_free(p.originals[i]);
  }
  free(p.results);
  free(p.originals);
  spec_strv_free(&lines);
  client_config_free(&c);
  return rc;
}

int cmd_mcp(struct cli_globals *g, int argc, char **argv) {
  static const struct option opts[] = {
      {"dry-run", no_argument, NULL, 'n'},
      {"server", required_argument, NULL, 's'},
      {"profile", required_argument, NULL, 'p'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    fputs(help, argc < 2 ? stderr : stdout);
    return argc < 2;
  }
  const char *sub = argv[1];
  bool unwrap = strcmp(sub, "unwrap") == 0;
  if (!unwrap && strcmp(sub, "wrap") != 0)
    return cli_usage_error("mcp", "unknown subcommand \"%s\": wrap or unwrap", sub);
  bool dry_run = false;
  const char *profile = g->profile && strcmp(g->profile, "default") != 0 ? g->profile : NULL;
  struct spec_strv names = {0};
  int c;
  opterr = 0;
  /* Options may come before or after FILE (getopt permutes). */
  while ((c = getopt_long(argc - 1, argv + 1, "h", opts, NULL)) != -1) {
    switch (c) {
    case 'n': dry_run = true; break;
    case 's': spec_strv_push(&names, optarg); break;
    case 'p':
      if (unwrap || (strcmp(optarg, "mcp") != 0 && strcmp(optarg, "mcp-audit") != 0)) {
        spec_strv_free(&names);
        return cli_usage_error("mcp", "--profile %s: wrap takes mcp or mcp-audit", optarg);
      }
      profile = optarg;
      break;
    case 'h':
      fputs(help, stdout);
      spec_strv_free(&names);
      return 0;
    default:
      spec_strv_free(&names);
      return cli_usage_error("mcp", "unknown or incomplete option \"%s\"",
                             argv[optind]); /* (argv + 1)[optind - 1] */
    }
  }
  if (optind + 1 != argc - 1) {
    spec_strv_free(&names);
    return cli_usage_error("mcp", "%s needs exactly one FILE", sub);
  }
  int rc = run(g, argv[optind + 1], unwrap, dry_run, &names, profile);
  spec_strv_free(&names);
  return rc;
}
