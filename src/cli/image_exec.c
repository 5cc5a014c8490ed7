/* pull, images, rmi: the image commands are codemode-image's (src/cli/image.c), a separate
 * binary so that libcurl and libarchive never load into codemode; these exec it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "util/cleanup.h"
#include "util/sibling.h"

#ifndef CODEMODE_BINDIR
#define CODEMODE_BINDIR "/usr/local/bin"
#endif

static int exec_image_tool(const char *cmd, int argc, char **argv) {
  cleanup_free char *tool = cm_sibling_binary("codemode-image", "CODEMODE_IMAGE", CODEMODE_BINDIR);
  char **args = calloc((size_t)argc + 3, sizeof(char *));
  if (args == NULL)
    abort();
  args[0] = tool;
  args[1] = (char *)cmd;
  for (int i = 1; i < argc; i++)
    args[i + 1] = argv[i];
  execv(tool, args);
  fprintf(stderr, "codemode: %s: exec %s: %s (codemode-image is installed with codemode: make install)\n", cmd,
          tool, strerror(errno));
  free(args);
  return 1;
}

int cmd_pull(struct cli_globals *g, int argc, char **argv) {
  (void)g;
  return exec_image_tool("pull", argc, argv);
}
int cmd_images(struct cli_globals *g, int argc, char **argv) {
  (void)g;
  return exec_image_tool("images", argc, argv);
}
int cmd_rmi(struct cli_globals *g, int argc, char **argv) {
  (void)g;
  return exec_image_tool("rmi", argc, argv);
}
