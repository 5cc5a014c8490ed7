#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/simple_flags.h"

static const char help[] =
    "usage: codemode ps [--format table|json] ID [PS-ARGS...]\n"
    "\n"
    "List the processes of a container. json: an array of host pids. table (default): the\n"
    "host's ps (with PS-ARGS, default -ef) filtered to the container's processes.\n"
    "  -f, --format FORMAT   table or json\n";

static int on_opt(int c, const char *arg, void *data) {
  if (c != 'f')
    return -1;
  *(const char **)data = arg;
  return 0;
}

static bool pid_listed(long pid, const pid_t *pids, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (pids[i] == pid)
      return true;
  return false;
}

/* Run ps (no shell: PS-ARGS are never interpreted) and keep the header and our pids' lines. */
static int print_table(char **ps_args, int n_args, const pid_t *pids, size_t n) {
  int pipefd[2];
  if (pipe(pipefd) < 0)
    return perror("codemode: ps: pipe"), 1;
  pid_t child = fork();
  if (child < 0)
    return perror("codemode: ps: fork"), 1;
  if (child == 0) {
    char **argv = calloc((size_t)n_args + 3, sizeof(char *));
    argv[0] = "ps";
    if (n_args == 0)
      argv[1] = "-ef";
    for (int i = 0; i < n_args; i++)
      argv[i + 1] = ps_args[i];
    dup2(pipefd[1], STDOUT_FILENO);
    close(pipefd[0]);
    close(pipefd[1]);
    execvp("ps", argv);
    perror("codemode: ps: exec ps");
    _exit(127);
  }
  close(pipefd[1]);
  FILE *in = fdopen(pipefd[0], "r");
  char *line = NULL;
  size_t cap = 0;
  int pid_column = -1;
  while (getline(&line, &cap, in) > 0) {
    if (pid_column < 0) {
      /* The header names the columns: find PID. */
      int col = 0;
      char *save = NULL, *copy = strdup(line);
      for (char *tok = strtok_r(copy, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save), col++)
        if (strcmp(tok, "PID") == 0 && pid_column < 0)
          pid_column = col;
      free(copy);
      fputs(line, stdout);
      if (pid_column < 0) {
        fprintf(stderr, "codemode: ps: no PID column in the output of ps\n");
        break;
      }
      continue;
    }
    char *save = NULL, *copy = strdup(line);
    char *tok = strtok_r(copy, " \t\n", &save);
    for (int col = 0; tok && col < pid_column; col++)
      tok = strtok_r(NULL, " \t\n", &save);
    if (tok && pid_listed(strtol(tok, NULL, 10), pids, n))
      fputs(line, stdout);
    free(copy);
  }
  free(line);
  fclose(in);
  int status;
  waitpid(child, &status, 0);
  return pid_column < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
}

int cmd_ps(struct cli_globals *g, int argc, char **argv) {
  static const struct option opts[] = {
      {"format", required_argument, NULL, 'f'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  const char *format = "table";
  int r = simple_flags_parse("ps", help, argc, argv, "+f:h", opts, on_opt, &format);
  if (r != 0)
    return r < 0 ? 1 : 0;
  if (strcmp(format, "table") != 0 && strcmp(format, "json") != 0)
    return cli_usage_error("ps", "--format: \"%s\" must be table or json", format);
  if (optind >= argc)
    return cli_usage_error("ps", "missing container ID");
  const char *id = argv[optind];
  struct cm_error *err = NULL;
  pid_t *pids = NULL;
  size_t n = 0;
  if (runtime_pids(&g->ctx, id, &pids, &n, &err) < 0)
    return cli_fail(err);
  int rc = 0;
  if (strcmp(format, "json") == 0) {
    if (argc - optind > 1) {
      free(pids);
      return cli_usage_error("ps", "PS-ARGS need --format table");
    }
    fputc('[', stdout);
    for (size_t i = 0; i < n; i++)
      printf("%s%d", i ? "," : "", pids[i]);
    fputs("]\n", stdout);
  } else {
    fflush(stdout);
    rc = print_table(argv + optind + 1, argc - optind - 1, pids, n);
  }
  free(pids);
  return rc;
}
