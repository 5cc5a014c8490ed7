/* Image references as users write them:
 *   oci:DIR[:TAG]              an OCI image layout directory (TAG: the ref.name annotation)
 *   docker-archive:FILE        a `docker save` archive (its first image)
 *   [REGISTRY/]NAME[:TAG][@sha256:…]   a registry image, Docker's rules: no registry part means
 *                              Docker Hub, a one-component name is under library/, TAG defaults to
 *                              latest unless a digest pins the image. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image/image.h"
#include "util/cleanup.h"

static char *xdup(const char *s) {
  char *d = strdup(s);
  if (d == NULL)
    abort();
  return d;
}

void image_ref_clear(struct image_ref *r) {
  free(r->registry);
  free(r->repository);
  free(r->tag);
  free(r->digest);
  free(r->path);
  free(r->canonical);
  memset(r, 0, sizeof(*r));
}

/* A repository path component: lower-case alnum separated by one '.', one or two '_', or any
 * number of '-' (distribution's grammar, simplified to the characters it allows). */
static bool repo_component_ok(const char *s, size_t n) {
  if (n == 0)
    return false;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alnum && c != '.' && c != '_' && c != '-')
      return false;
  }
  char first = s[0], last = s[n - 1];
  return first != '.' && first != '_' && first != '-' && last != '.' && last != '_' && last != '-';
}

static bool tag_ok(const char *t) {
  size_t n = strlen(t);
  if (n == 0 || n > 128 || t[0] == '.' || t[0] == '-')
    return false;
  for (size_t i = 0; i < n; i++) {
    char c = t[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
          c == '-'))
      return false;
  }
  return true;
}

static int parse_local(const char *text, const char *prefix, enum image_source src, struct image_ref *out,
                       struct cm_error **err) {
  cleanup_free char *rest = xdup(text + strlen(prefix));
  char *tag = NULL;
  if (src == IMAGE_SRC_OCI_LAYOUT) {
    /* The tag follows the last ':' that comes after the last '/': a directory may have ':'s. */
    char *slash = strrchr(rest, '/');
    char *colon = strrchr(slash ? slash : rest, ':');
    if (colon) {
      *colon = '\0';
      tag = colon + 1;
      if (!tag_ok(tag))
        return cm_error_set(err, 0, "image %s: \"%s\" is not a valid tag", text, tag);
    }
  }
  if (*rest == '\0')
    return cm_error_set(err, 0, "image %s: the %s path is missing (e.g. %s/path/to/%s)", text, prefix, prefix,
                        src == IMAGE_SRC_OCI_LAYOUT ? "layout" : "image.tar");
  char real[PATH_MAX];
  if (realpath(rest, real) == NULL)
    return cm_error_set(err, errno, "image %s: %s", text, rest);
  out->source = src;
  out->path = xdup(real);
  out->tag = tag ? xdup(tag) : NULL;
  if (asprintf(&out->canonical, "%s%s%s%s", prefix, real, tag ? ":" : "", tag ? tag : "") < 0)
    abort();
  return 0;
}

int image_ref_parse(const char *text, struct image_ref *out, struct cm_error **err) {
  memset(out, 0, sizeof(*out));
  if (strncmp(text, "oci:", 4) == 0)
    return parse_local(text, "oci:", IMAGE_SRC_OCI_LAYOUT, out, err);
  if (strncmp(text, "docker-archive:", 15) == 0)
    return parse_local(text, "docker-archive:", IMAGE_SRC_DOCKER_ARCHIVE, out, err);
  if (strncmp(text, "docker://", 9) == 0)
    text += 9;
  cleanup_free char *s = xdup(text);
  char *at = strchr(s, '@');
  if (at) {
    *at = '\0';
    if (!digest_valid(at + 1)) {
      cm_error_set(err, 0, "image %s: \"%s\" is not a sha256 digest (sha256:<64 lower-case hex digits>)", text,
                   at + 1);
      goto bad;
    }
    out->digest = xdup(at + 1);
  }
  /* The registry is the first component if it looks like a host: has '.' or ':', or is localhost. */
  char *name = s;
  char *slash = strchr(s, '/');
  if (slash && (memchr(s, '.', (size_t)(slash - s)) || memchr(s, ':', (size_t)(slash - s)) ||
                ((size_t)(slash - s) == 9 && strncmp(s, "localhost", 9) == 0))) {
    *slash = '\0';
    out->registry = xdup(s);
    name = slash + 1;
  } else {
    out->registry = xdup("docker.io");
  }
  char *colon = strrchr(name, ':');
  if (colon) {
    *colon = '\0';
    if (!tag_ok(colon + 1)) {
      cm_error_set(err, 0, "image %s: \"%s\" is not a valid tag", text, colon + 1);
      goto bad;
    }
    out->tag = xdup(colon + 1);
  }
  if (*name == '\0') {
    cm_error_set(err, 0, "image %s: the repository name is missing", text);
    goto bad;
  }
  for (const char *c = name; *c;) {
    const char *e = strchr(c, '/');
    size_t n = e ? (size_t)(e - c) : strlen(c);
    if (!repo_component_ok(c, n)) {
      cm_error_set(err, 0, "image %s: \"%.*s\" is not a valid repository name component (lower-case letters, "
                           "digits and . _ -)", text, (int)n, c);
      goto bad;
    }
    c += n + (e ? 1 : 0);
    if (e && *c == '\0') {
      cm_error_set(err, 0, "image %s: the repository name ends with /", text);
      goto bad;
    }
  }
  bool hub = strcmp(out->registry, "docker.io") == 0 || strcmp(out->registry, "index.docker.io") == 0;
  if (hub) {
    free(out->registry);
    out->registry = xdup("docker.io");
  }
  if (hub && strchr(name, '/') == NULL) {
    if (asprintf(&out->repository, "library/%s", name) < 0)
      abort();
  } else {
    out->repository = xdup(name);
  }
  if (out->tag == NULL && out->digest == NULL)
    out->tag = xdup("latest");
  out->source = IMAGE_SRC_REGISTRY;
  if (asprintf(&out->canonical, "%s/%s%s%s%s%s", out->registry, out->repository, out->tag ? ":" : "",
               out->tag ? out->tag : "", out->digest ? "@" : "", out->digest ? out->digest : "") < 0)
    abort();
  return 0;
bad:
  image_ref_clear(out);
  return -1;
}
