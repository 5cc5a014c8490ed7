#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/simple_flags.h"

static const char help[] =
    "usage: codemode spec [--rootless] [-b DIR]\n"
    "\n"
    "Write a default config.json (runc-compatible) into DIR (default: the current directory).\n"
    "  --rootless       a config for a container run by an unprivileged user\n"
    "  -b, --bundle DIR where to write config.json\n";

struct spec_flags {
  bool rootless;
  const char *bundle;
};

static int on_opt(int c, const char *arg, void *data) {
  struct spec_flags *f = data;
  if (c == 'r')
    f->rootless = true;
  else if (c == 'b')
    f->bundle = arg;
  else
    return -1;
  return 0;
}

int cmd_spec(struct cli_globals *g, int argc, char **argv) {
  (void)g;
  static const struct option opts[] = {{"rootless", no_argument, NULL, 'r'},
                                       {"bundle", required_argument, NULL, 'b'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  struct spec_flags f = {0};
  int r = simple_flags_parse("spec", help, argc, argv, "b:h", opts, on_opt, &f);
  if (r != 0)
    return r < 0 ? 1 : 0;
  if (optind != argc)
    return cli_usage_error("spec", "takes no arguments");
  char *path;
  if (asprintf(&path, "%s/config.json", f.bundle ? f.bundle : ".") < 0)
    abort();
  struct cm_error *err = NULL;
  /* O_EXCL: never overwrite a config someone wrote, as runc refuses too. */
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST)
      cm_error_set(&err, 0, "spec: %s already exists; remove it first", path);
    else
      cm_error_set(&err, errno, "spec: create %s", path);
    free(path);
    return cli_fail(err);
  }
  char *json = spec_default_json(f.rootless);
  size_t len = strlen(json);
  bool ok = write(fd, json, len) == (ssize_t)len && write(fd, "\n", 1) == 1;
  int e = errno;
  close(fd);
  free(json);
  if (!ok) {
    unlink(path);
    cm_error_set(&err, e, "spec: write %s", path);
    free(path);
    return cli_fail(err);
  }
  free(path);
  return 0;
}
