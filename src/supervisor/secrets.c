/* codemode-run's --secret: a value the server gets without it ever being on a command line
 * (ps, /proc/PID/cmdline), in the state directory or in the kept config.json: it is read from a
 * file or from codemode-run's own environment, lives only in memory, and reaches either the
 * process's env (plain) or only the broker (bound to a host by --secret-host: the server sees
 * the placeholder CODEMODE_SECRET_<NAME>, and the broker puts the value into the requests to
 * that host; supervisor/broker/intercept.c). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spec/json_util.h"
#include "supervisor/supervisor.h"
#include "util/cleanup.h"

extern char **environ;

#define SECRET_MAX 3500 /* fits one control message to the broker with its name and host */

static bool name_valid(const char *n, size_t len) {
  if (len == 0 || (!isalpha((unsigned char)n[0]) && n[0] != '_'))
    return false;
  for (size_t i = 0; i < len; i++)
    if (!isalnum((unsigned char)n[i]) && n[i] != '_')
      return false;
  return true;
}

static char *read_secret_file(const char *name, const char *path, struct cm_error **err) {
  cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0)
    return cm_error_set(err, errno, "--secret %s=@%s", name, path), NULL;
  char *buf = calloc(1, SECRET_MAX + 2);
  ssize_t n = buf ? read(fd, buf, SECRET_MAX + 1) : -1;
  if (n < 0) {
    free(buf);
    return cm_error_set(err, errno, "--secret %s=@%s", name, path), NULL;
  }
  if (n > SECRET_MAX) {
    explicit_bzero(buf, SECRET_MAX + 2);
    free(buf);
    return cm_error_set(err, EFBIG, "--secret %s=@%s: longer than %d bytes", name, path, SECRET_MAX), NULL;
  }
  /* One trailing newline is the file's, not the secret's (echo token > file). */
  if (n > 0 && buf[n - 1] == '\n')
    buf[--n] = '\0';
  if (n > 0 && buf[n - 1] == '\r')
    buf[--n] = '\0';
  return buf;
}

/* Take NAME's value from our environment and wipe it there: /proc/PID/environ shows the
 * environment's original memory, which we overwrite in place. */
static char *take_from_environ(const char *name, struct cm_error **err) {
  size_t nl = strlen(name);
  for (char **e = environ; e && *e; e++) {
    if (strncmp(*e, name, nl) == 0 && (*e)[nl] == '=') {
      char *v = *e + nl + 1;
      size_t vl = strlen(v);
      if (vl > SECRET_MAX)
        return cm_error_set(err, EFBIG, "--secret %s: longer than %d bytes", name, SECRET_MAX), NULL;
      char *copy = strdup(v);
      explicit_bzero(v, vl);
      return copy;
    }
  }
  return cm_error_set(err, 0, "--secret %s: %s is not set in codemode-run's environment (or use --secret %s=@FILE)",
                      name, name, name), NULL;
}

static void set_env(struct spec_strv *env, const char *name, const char *value) {
  size_t nl = strlen(name);
  char *kv = malloc(nl + strlen(value) + 2);
  if (kv == NULL)
    abort();
  sprintf(kv, "%s=%s", name, value);
  for (size_t i = 0; i < env->count; i++)
    if (strncmp(env->items[i], name, nl) == 0 && env->items[i][nl] == '=') {
      explicit_bzero(env->items[i], strlen(env->items[i]));
      free(env->items[i]);
      env->items[i] = kv;
      return;
    }
  spec_strv_push(env, kv);
  explicit_bzero(kv, strlen(kv));
  free(kv);
}

int run_secrets_apply(const struct run_options *o, struct spec *s, struct run_secrets *out, struct cm_error **err) {
  memset(out, 0, sizeof(*out));
  /* Every --secret-host names a --secret. */
  for (size_t j = 0; j < o->secret_hosts.count; j++) {
    const char *h = o->secret_hosts.items[j];
    const char *eq = strchr(h, '=');
    if (eq == NULL || eq[1] == '\0' || !name_valid(h, (size_t)(eq - h)))
      return cm_error_set(err, 0, "--secret-host %s: expects NAME=HOST[,HEADER]", h);
    bool found = false;
    for (size_t i = 0; i < o->secrets.count; i++) {
      const char *sv = o->secrets.items[i];
      size_t sl = strcspn(sv, "=");
      if (sl == (size_t)(eq - h) && strncmp(sv, h, sl) == 0)
        found = true;
    }
    if (!found)
      return cm_error_set(err, 0, "--secret-host %s: no --secret %.*s", h, (int)(eq - h), h);
  }
  for (size_t i = 0; i < o->secrets.count; i++) {
    const char *arg = o->secrets.items[i];
    const char *eq = strchr(arg, '=');
    size_t nl = eq ? (size_t)(eq - arg) : strlen(arg);
    char name[256];
    if (!name_valid(arg, nl) || nl >= sizeof(name))
      return cm_error_set(err, 0, "--secret %s: expects NAME=@FILE or NAME (an environment variable name)", arg);
    memcpy(name, arg, nl);
    name[nl] = '\0';
    if (eq && eq[1] != '@')
      /* The value itself on our command line would be in ps and /proc/PID/cmdline for all. */
      return cm_error_set(err, 0,
                          "--secret %s=…: a value on the command line is visible to every user (ps); use --secret "
                          "%s=@FILE or --secret %s with %s in codemode-run's environment",
                          name, name, name, name);
    char *value = eq ? read_secret_file(name, eq + 2, err) : take_from_environ(name, err);
    if (value == NULL)
      return -1;
    const char *binding = NULL;
    for (size_t j = 0; j < o->secret_hosts.count; j++) {
      const char *h = o->secret_hosts.items[j];
      if (strncmp(h, name, nl) == 0 && h[nl] == '=')
        binding = h + nl + 1;
    }
    if (binding == NULL) {
      set_env(&s->process->env, name, value);
      explicit_bzero(value, strlen(value));
      free(value);
      continue;
    }
    if (strpbrk(value, "\r\n") != NULL || value[0] == '\0') {
      explicit_bzero(value, strlen(value));
      free(value);
      return cm_error_set(err, 0, "--secret %s: empty, or a line break (it goes into an HTTP header)", name);
    }
    struct egress_secret *grown = realloc(out->bound, (out->n_bound + 1) * sizeof(*grown));
    if (grown == NULL)
      abort();
    out->bound = grown;
    struct egress_secret *sec = &out->bound[out->n_bound++];
    const char *comma = strchr(binding, ',');
    sec->name = strdup(name);
    sec->value = value;
    sec->host = comma ? strndup(binding, (size_t)(comma - binding)) : strdup(binding);
    sec->header = strdup(comma && comma[1] ? comma + 1 : "Authorization");
    for (char *c = sec->host; *c; c++)
      *c = (char)tolower((unsigned char)*c);
    char placeholder[300];
    snprintf(placeholder, sizeof(placeholder), "CODEMODE_SECRET_%s", name);
    set_env(&s->process->env, name, placeholder);
  }
  return 0;
}

void run_secrets_free(struct run_secrets *r) {
  for (size_t i = 0; i < r->n_bound; i++) {
    explicit_bzero(r->bound[i].value, strlen(r->bound[i].value));
    free(r->bound[i].value);
    free(r->bound[i].name);
    free(r->bound[i].host);
    free(r->bound[i].header);
  }
  free(r->bound);
  memset(r, 0, sizeof(*r));
}
