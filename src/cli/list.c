#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <yajl/yajl_gen.h>

#include "cli/cli.h"
#include "cli/simple_flags.h"

static const char help[] =
    "usage: codemode list [--format table|json] [-q]\n"
    "\n"
    "List the containers under --root.\n"
    "  -f, --format table|json   output format (default table)\n"
    "  -q, --quiet               only the IDs\n";

struct list_flags {
  bool json, quiet;
  const char *bad_format;
};

static int on_opt(int c, const char *arg, void *data) {
  struct list_flags *f = data;
  if (c == 'q') {
    f->quiet = true;
    return 0;
  }
  if (c == 'f') {
    if (strcmp(arg, "json") == 0)
      f->json = true;
    else if (strcmp(arg, "table") != 0)
      f->bad_format = arg;
    return 0;
  }
  return -1;
}

static void gen_str(yajl_gen g, const char *s) { yajl_gen_string(g, (const unsigned char *)s, strlen(s)); }

static void print_json(const struct container_summary *s, size_t n) {
  yajl_gen g = yajl_gen_alloc(NULL);
  yajl_gen_array_open(g);
  for (size_t i = 0; i < n; i++) {
    yajl_gen_map_open(g);
    gen_str(g, "ociVersion"), gen_str(g, SPEC_OCI_VERSION);
    gen_str(g, "id"), gen_str(g, s[i].id);
    gen_str(g, "pid"), yajl_gen_integer(g, s[i].pid);
    gen_str(g, "status"), gen_str(g, s[i].status);
    gen_str(g, "bundle"), gen_str(g, s[i].bundle);
    gen_str(g, "rootfs"), gen_str(g, s[i].rootfs);
    gen_str(g, "created"), gen_str(g, s[i].created);
    gen_str(g, "owner"), gen_str(g, s[i].owner);
    yajl_gen_map_close(g);
  }
  yajl_gen_array_close(g);
  const unsigned char *buf;
  size_t len;
  yajl_gen_get_buf(g, &buf, &len);
  fwrite(buf, 1, len, stdout);
  putchar('\n');
  yajl_gen_free(g);
}

int cmd_list(struct cli_globals *g, int argc, char **argv) {
  static const struct option opts[] = {{"format", required_argument, NULL, 'f'},
                                       {"quiet", no_argument, NULL, 'q'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  struct list_flags f = {0};
  int r = simple_flags_parse("list", help, argc, argv, "f:qh", opts, on_opt, &f);
  if (r != 0)
    return r < 0 ? 1 : 0;
  if (f.bad_format)
    return cli_usage_error("list", "--format: \"%s\" must be table or json", f.bad_format);
  if (optind != argc)
    return cli_usage_error("list", "takes no arguments");
  struct container_summary *s;
  size_t n;
  struct cm_error *err = NULL;
  if (runtime_list(&g->ctx, &s, &n, &err) < 0)
    return cli_fail(err);
  if (f.quiet) {
    for (size_t i = 0; i < n; i++)
      puts(s[i].id);
  } else if (f.json) {
    print_json(s, n);
  } else {
    printf("%-20s %-8s %-10s %-40s %-31s %s\n", "ID", "PID", "STATUS", "BUNDLE", "CREATED", "OWNER");
    for (size_t i = 0; i < n; i++)
      printf("%-20s %-8d %-10s %-40s %-31s %s\n", s[i].id, s[i].pid, s[i].status, s[i].bundle, s[i].created,
             s[i].owner);
  }
  container_summaries_free(s, n);
  return 0;
}
