/* checkpoint, restore: CRIU's commands are codemode-criu's (src/cli/criu_main.c), a separate
 * binary so that protobuf-c and the CRIU code never load into codemode; these exec it with our
 * whole command line (global options included). Also what `features` and `--version` say of CRIU. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/criu_tool.h"
#include "util/cleanup.h"
#include "util/sibling.h"

#ifndef CODEMODE_BINDIR
#define CODEMODE_BINDIR "/usr/local/bin"
#endif

static char *criu_tool(void) {
  return cm_sibling_binary("codemode-criu", "CODEMODE_CRIU_TOOL", CODEMODE_BINDIR);
}

/* Our argv as the kernel has it (the dispatcher hands commands only their part). */
static char **own_argv(void) {
  cleanup_close int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return NULL;
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap + 1);
  if (buf == NULL)
    abort();
  ssize_t n;
  while ((n = read(fd, buf + len, cap - len)) > 0) {
    len += (size_t)n;
    if (len == cap) {
      cap *= 2;
      buf = realloc(buf, cap + 1);
      if (buf == NULL)
        abort();
    }
  }
  buf[len] = '\0';
  size_t count = 0;
  for (size_t i = 0; i < len; i++)
    count += buf[i] == '\0';
  char **v = calloc(count + 1, sizeof(char *));
  if (v == NULL)
    abort();
  size_t k = 0;
  for (size_t i = 0; i < len && k < count; i += strlen(buf + i) + 1)
    v[k++] = buf + i;
  return v;
}

static int exec_criu_tool(struct cli_globals *g, const char *cmd) {
  cleanup_free char *tool = criu_tool();
  char **args = own_argv();
  if (args == NULL || args[0] == NULL) {
    fprintf(stderr, "codemode: %s: read /proc/self/cmdline: %s\n", cmd, strerror(errno));
    return 1;
  }
  args[0] = tool;
  /* The profile as codemode resolved it (a codemode-mcp name included), for restore to record. */
  if (g->profile)
    setenv("CODEMODE_CRIU_PROFILE", g->profile, 1);
  else
    unsetenv("CODEMODE_CRIU_PROFILE");
  execv(tool, args);
  fprintf(stderr, "codemode: %s: exec %s: %s (codemode-criu is installed with codemode: make install)\n", cmd, tool,
          strerror(errno));
  return 1;
}

int cmd_checkpoint(struct cli_globals *g, int argc, char **argv) {
  (void)argc;
  (void)argv;
  return exec_criu_tool(g, "checkpoint");
}

int cmd_restore(struct cli_globals *g, int argc, char **argv) {
  (void)argc;
  (void)argv;
  return exec_criu_tool(g, "restore");
}

int criu_tool_probe(struct spec_kv_list *out) {
  *out = (struct spec_kv_list){0};
  cleanup_free char *tool = criu_tool();
  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC) < 0)
    return -1;
  pid_t pid = fork();
  if (pid < 0) {
    close(pfd[0]);
    close(pfd[1]);
    return -1;
  }
  if (pid == 0) {
    dup2(pfd[1], 1);
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0)
      dup2(null, 2);
    execl(tool, tool, "probe", (char *)NULL);
    _exit(127);
  }
  close(pfd[1]);
  char buf[8192];
  size_t len = 0;
  ssize_t n;
  while (len < sizeof(buf) - 1 && (n = read(pfd[0], buf + len, sizeof(buf) - 1 - len)) != 0) {
    if (n < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    len += (size_t)n;
  }
  buf[len] = '\0';
  close(pfd[0]);
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  const char *enabled = "false", *version = "", *reason = "codemode-criu is not installed", *lazy = "false",
             *lazy_reason = "";
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    reason = "";
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
      if (strncmp(line, "enabled=", 8) == 0)
        enabled = line + 8;
      else if (strncmp(line, "version=", 8) == 0)
        version = line + 8;
      else if (strncmp(line, "reason=", 7) == 0)
        reason = line + 7;
      else if (strncmp(line, "lazy_pages=", 11) == 0)
        lazy = line + 11;
      else if (strncmp(line, "lazy_pages_reason=", 18) == 0)
        lazy_reason = line + 18;
    }
  }
  out->items = calloc(5, sizeof(struct spec_kv));
  if (out->items == NULL)
    abort();
  out->items[out->count++] = (struct spec_kv){strdup("run.codemode.checkpoint.enabled"), strdup(enabled)};
  out->items[out->count++] = (struct spec_kv){strdup("run.codemode.checkpoint.criu.version"), strdup(version)};
  if (*reason)
    out->items[out->count++] = (struct spec_kv){strdup("run.codemode.checkpoint.reason"), strdup(reason)};
  /* Whether --lazy-pages can work (CRIU's own feature check), and when not why. */
  out->items[out->count++] = (struct spec_kv){strdup("run.codemode.checkpoint.lazy-pages"), strdup(lazy)};
  if (*lazy_reason)
    out->items[out->count++] =
        (struct spec_kv){strdup("run.codemode.checkpoint.lazy-pages.reason"), strdup(lazy_reason)};
  return 0;
}

const char *criu_tool_binary_path(void) {
  /* $PATH, as criu's own exec looks it up: a stat per entry, no process started. */
  static char found[4096];
  const char *path = getenv("PATH");
  if (path == NULL || *path == '\0')
    path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  while (*path) {
    const char *end = strchr(path, ':');
    size_t l = end ? (size_t)(end - path) : strlen(path);
    if (l > 0 && l < sizeof(found) - 6) {
      snprintf(found, sizeof(found), "%.*s/criu", (int)l, path);
      struct stat st;
      if (stat(found, &st) == 0 && S_ISREG(st.st_mode) && access(found, X_OK) == 0)
        return found;
    }
    path = end ? end + 1 : path + l;
  }
  return NULL;
}
