/* config.json top level: ociVersion, root, process, hostname, mounts, hooks, annotations, linux. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "spec/json_util.h"
#include "spec/landlock_config.h"
#include "util/cleanup.h"

static int check_oci_version(struct jctx *c, const char *version, struct cm_error **err) {
  /* Only the 1.x schema is understood; a 2.x document may mean something else entirely. */
  char *end = NULL;
  errno = 0;
  unsigned long major = strtoul(version, &end, 10);
  if (end == version || errno != 0 || (*end != '.' && *end != '\0') || major != 1) {
    jpush_key(c, "ociVersion");
    return jerr(c, err, "unsupported version \"%s\" (major version must be 1)", version);
  }
  return 0;
}

static int parse_root(struct jctx *c, yajl_val v, struct spec *s, struct cm_error **err) {
  if (jval_object(c, v, err) < 0 || jrequire(c, v, "path", err) < 0 ||
      jget_string(c, v, "path", &s->root_path, err) < 0)
    return -1;
  if (s->root_path[0] == '\0') {
    jpush_key(c, "path");
    return jerr(c, err, "must be a non-empty string");
  }
  return jget_bool(c, v, "readonly", &s->root_readonly, err) < 0 ? -1 : 0;
}

static int parse_mount(struct jctx *c, yajl_val v, struct spec_mount *m, struct cm_error **err) {
  if (jval_object(c, v, err) < 0 || jrequire(c, v, "destination", err) < 0 ||
      jget_string(c, v, "destination", &m->destination, err) < 0)
    return -1;
  /* The spec (config.md, Linux): a relative destination "MUST be interpreted as relative to /"
   * (deprecated); runc 1.1 does so with a warning, which create prints. */
  if (!path_is_absolute(m->destination)) {
    char *abs = NULL;
    if (asprintf(&abs, "/%s", m->destination) < 0)
      abort();
    free(m->destination);
    m->destination = abs;
    m->relative_destination = true;
  }
  bool dotdot;
  char *clean = path_clean_absolute(m->destination, &dotdot);
  if (clean == NULL) {
    jpush_key(c, "destination");
    /* ".." in a mount target is how symlink/path tricks start (CVE-2021-30465 class). */
    return jerr(c, err, "must not contain \"..\"");
  }
  free(m->destination);
  m->destination = clean;
  if (jget_string(c, v, "type", &m->type, err) < 0 || jget_string(c, v, "source", &m->source, err) < 0 ||
      jget_strv(c, v, "options", &m->options, err) < 0 ||
      spec_parse_id_mappings(c, v, "uidMappings", &m->uid_mappings, &m->n_uid_mappings, err) < 0 ||
      spec_parse_id_mappings(c, v, "gidMappings", &m->gid_mappings, &m->n_gid_mappings, err) < 0)
    return -1;
  spec_mount_decode_options(m);
  return 0;
}

static int parse_mounts(struct jctx *c, yajl_val arr, struct spec *s, struct cm_error **err) {
  size_t n = arr->u.array.len;
  if (n == 0)
    return 0;
  s->mounts = xcalloc(n, sizeof(*s->mounts));
  for (size_t i = 0; i < n; i++) {
    size_t mark = jpush_index(c, i);
    s->n_mounts = i + 1;
    if (parse_mount(c, arr->u.array.values[i], &s->mounts[i], err) < 0)
      return -1;
    jpop(c, mark);
  }
  return 0;
}

static int parse_hook(struct jctx *c, yajl_val v, struct spec_hook *h, struct cm_error **err) {
  if (jval_object(c, v, err) < 0 || jrequire(c, v, "path", err) < 0 ||
      jget_string(c, v, "path", &h->path, err) < 0)
    return -1;
  if (!path_is_absolute(h->path)) {
    jpush_key(c, "path");
    return jerr(c, err, "must be an absolute path");
  }
  if (jget_strv(c, v, "args", &h->args, err) < 0 || jget_strv(c, v, "env", &h->env, err) < 0)
    return -1;
  int r = jget_int(c, v, "timeout", INT32_MIN, INT32_MAX, &h->timeout, err);
  if (r < 0)
    return -1;
  h->has_timeout = r == 1;
  if (h->has_timeout && h->timeout <= 0) {
    jpush_key(c, "timeout");
    return jerr(c, err, "must be greater than 0");
  }
  return 0;
}

static int parse_hooks(struct jctx *c, yajl_val obj, struct spec *s, struct cm_error **err) {
  for (int k = 0; k < SPEC_HOOK_KIND_COUNT; k++) {
    const char *key = spec_hook_kind_name(k);
    yajl_val arr;
    int r = jget_array(c, obj, key, &arr, err);
    if (r < 0)
      return -1;
    if (r == 0 || arr->u.array.len == 0)
      continue;
    struct spec_hook_list *list = &s->hooks[k];
    size_t mark = jpush_key(c, key);
    list->items = xcalloc(arr->u.array.len, sizeof(*list->items));
    for (size_t i = 0; i < arr->u.array.len; i++) {
      size_t m2 = jpush_index(c, i);
      list->count = i + 1;
      if (parse_hook(c, arr->u.array.values[i], &list->items[i], err) < 0)
        return -1;
      jpop(c, m2);
    }
    jpop(c, mark);
  }
  return 0;
}

/* Landlock for any caller (Docker, containerd, Kubernetes pod annotations): the ruleset in the
 * landlockconfig format and the paths to deny, checked here so a bad one fails before anything
 * is made, with the JSON path inside the annotation. */
static int parse_landlock_annotations(struct jctx *c, struct spec *s, struct cm_error **err) {
  const char *v = spec_kv_get(&s->annotations, SPEC_LANDLOCK_ANNOTATION);
  char label[256];
  if (v) {
    snprintf(label, sizeof(label), "%s: .annotations[\"%s\"]", c->label, SPEC_LANDLOCK_ANNOTATION);
    s->landlock = xcalloc(1, sizeof(*s->landlock));
    if (spec_landlock_parse(v, strlen(v), label, s->landlock, err) < 0)
      return -1;
    /* (spec_landlock_parse labelled it with the same text) */
  }
  v = spec_kv_get(&s->annotations, SPEC_LANDLOCK_DENY_ANNOTATION);
  if (v) {
    snprintf(label, sizeof(label), "%s: .annotations[\"%s\"]", c->label, SPEC_LANDLOCK_DENY_ANNOTATION);
    if (spec_landlock_parse_deny(v, strlen(v), label, &s->landlock_deny, err) < 0)
      return -1;
  }
  return 0;
}

static int parse_spec(struct jctx *c, yajl_val root, struct spec *s, struct cm_error **err) {
  if (jval_object(c, root, err) < 0)
    return -1;
  if (jrequire(c, root, "ociVersion", err) < 0 ||
      jget_string(c, root, "ociVersion", &s->oci_version, err) < 0 ||
      check_oci_version(c, s->oci_version, err) < 0)
    return -1;

  yajl_val sub;
  if (jrequire(c, root, "root", err) < 0)
    return -1;
  size_t mark = jpush_key(c, "root");
  if (parse_root(c, jfind(root, "root"), s, err) < 0)
    return -1;
  jpop(c, mark);

  /* The spec lets create run without .process, but every command we have needs one. */
  if (jrequire(c, root, "process", err) < 0)
    return -1;
  s->process = xcalloc(1, sizeof(*s->process));
  mark = jpush_key(c, "process");
  if (spec_parse_process(c, jfind(root, "process"), s->process, err) < 0)
    return -1;
  jpop(c, mark);

  if (jget_string(c, root, "hostname", &s->hostname, err) < 0 ||
      jget_string(c, root, "domainname", &s->domainname, err) < 0)
    return -1;

  int r = jget_array(c, root, "mounts", &sub, err);
  if (r < 0)
    return -1;
  if (r == 1) {
    mark = jpush_key(c, "mounts");
    if (parse_mounts(c, sub, s, err) < 0)
      return -1;
    jpop(c, mark);
  }

  r = jget_object(c, root, "hooks", &sub, err);
  if (r < 0)
    return -1;
  if (r == 1) {
    mark = jpush_key(c, "hooks");
    if (parse_hooks(c, sub, s, err) < 0)
      return -1;
    jpop(c, mark);
  }

  if (jget_kv(c, root, "annotations", &s->annotations, err) < 0)
    return -1;
  if (parse_landlock_annotations(c, s, err) < 0)
    return -1;

  r = jget_object(c, root, "linux", &sub, err);
  if (r < 0)
    return -1;
  if (r == 1) {
    s->has_linux = true;
    mark = jpush_key(c, "linux");
    if (spec_parse_linux(c, sub, &s->linux_, err) < 0)
      return -1;
    jpop(c, mark);
  }
  return 0;
}

struct spec *spec_load_string(const char *json, size_t len, const char *label, struct cm_error **err) {
  yajl_val tree = json_parse(json, len, label, err);
  if (tree == NULL)
    return NULL;
  struct jctx c;
  jctx_init(&c, label);
  struct spec *s = xcalloc(1, sizeof(*s));
  int r = parse_spec(&c, tree, s, err);
  yajl_tree_free(tree);
  if (r < 0) {
    spec_free(s);
    return NULL;
  }
  return s;
}

struct spec *spec_load_file(const char *path, const char *label, struct cm_error **err) {
  size_t len = 0;
  cleanup_free char *text = read_whole_file(path, &len, err);
  if (text == NULL)
    return NULL;
  return spec_load_string(text, len, label, err);
}

void spec_free(struct spec *s) {
  if (s == NULL)
    return;
  free(s->oci_version);
  free(s->root_path);
  spec_process_free(s->process);
  free(s->hostname);
  free(s->domainname);
  for (size_t i = 0; i < s->n_mounts; i++) {
    struct spec_mount *m = &s->mounts[i];
    free(m->destination);
    free(m->type);
    free(m->source);
    spec_strv_free(&m->options);
    free(m->data);
    free(m->uid_mappings);
    free(m->gid_mappings);
  }
  free(s->mounts);
  for (int k = 0; k < SPEC_HOOK_KIND_COUNT; k++) {
    for (size_t i = 0; i < s->hooks[k].count; i++) {
      struct spec_hook *h = &s->hooks[k].items[i];
      free(h->path);
      spec_strv_free(&h->args);
      spec_strv_free(&h->env);
    }
    free(s->hooks[k].items);
  }
  spec_kv_list_free(&s->annotations);
  if (s->landlock) {
    spec_landlock_clear(s->landlock);
    free(s->landlock);
  }
  spec_strv_free(&s->landlock_deny);
  spec_strv_free(&s->root_tree_mounts);
  spec_linux_clear(&s->linux_);
  free(s);
}
