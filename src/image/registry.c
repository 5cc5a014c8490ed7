/* The registry client (distribution's HTTP API v2, over HTTPS with libcurl): the manifest by tag
 * or digest, then blobs by digest, each verified before it enters the store. Authentication as
 * Docker does it: an anonymous request first; a 401 names a token service (Bearer realm=…,
 * service=…, scope=…) that is asked for a pull token, with the user's credentials from
 * $DOCKER_CONFIG/config.json or ~/.docker/config.json ("auths": {"host": {"auth": base64}}) when
 * there are some, or Basic auth with them directly. CAs: the system's, plus
 * /etc/docker/certs.d/HOST/ca.crt, /etc/containers/certs.d/HOST/ (*.crt) and --tls-ca FILE. */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "image/image.h"
#include "policy/egress.h"
#include "spec/json_util.h"
#include "util/cleanup.h"

#define MANIFEST_MAX IMAGE_MANIFEST_MAX
/* Hops of one request's redirect chain (a blob's storage URL is one or two away). */
#define MAX_REDIRECTS 5

static const char accept_manifests[] = "Accept: " MT_OCI_INDEX ", " MT_OCI_MANIFEST ", " MT_DOCKER_LIST
                                       ", " MT_DOCKER_MANIFEST;

struct buf {
  char *data;
  size_t len, cap, max;
  bool overflow;
};

static void buf_append(struct buf *b, const void *p, size_t n) {
  if (b->len + n + 1 > b->max) {
    b->overflow = true;
    return;
  }
  if (b->len + n + 1 > b->cap) {
    b->cap = (b->len + n + 1) * 2;
    b->data = realloc(b->data, b->cap);
    if (b->data == NULL)
      abort();
  }
  memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = '\0';
}

struct registry {
  const struct image_ref *ref;
  const struct pull_options *opts;
  char *base;       /* https://host/v2/ */
  char *host;       /* for certs.d and credentials */
  char *basic;      /* "user:pass" from the config file, or NULL */
  char *bearer;     /* the token we were given, or NULL */
  struct buf ca;    /* PEM bundle: system + extra */
  char name[512];   /* for messages */
  /* Where connections may go although the address is refused for redirects: the registry the
   * user named (and a proxy the environment names), resolved once before the first request. */
  struct sockaddr_storage *named;
  size_t n_named;
  struct sockaddr_storage *own; /* this machine's addresses (every interface of our netns) */
  size_t n_own;
};

/* --- where a connection may go ---------------------------------------------------------------- */

/* Why an address is not one a registry may send us to, or NULL. A redirect (or a token realm)
 * is the registry's word: without this it could make the puller reach the services of the
 * machine it runs on or of its private network (SSRF). The ranges are the egress broker's
 * (policy/egress.c: loopback, private, link-local and metadata, multicast, reserved, and their
 * IPv4-mapped, NAT64 and 6to4 forms), so both guards refuse the same addresses. */
static const char *refused_addr(const struct sockaddr *sa, char *buf, size_t len) {
  const char *why = NULL;
  bool internal;
  if (sa->sa_family == AF_INET)
    internal = egress_addr_is_internal(AF_INET, (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr, &why);
  else if (sa->sa_family == AF_INET6)
    internal = egress_addr_is_internal(AF_INET6, ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr, &why);
  else
    return "not an IP address";
  if (!internal)
    return NULL;
  snprintf(buf, len, "a %s address", why);
  return buf;
}

static bool same_addr(const struct sockaddr *a, const struct sockaddr_storage *b) {
  if (a->sa_family != b->ss_family)
    return false;
  if (a->sa_family == AF_INET)
    return ((const struct sockaddr_in *)a)->sin_addr.s_addr == ((const struct sockaddr_in *)b)->sin_addr.s_addr;
  return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr, &((const struct sockaddr_in6 *)b)->sin6_addr,
                sizeof(struct in6_addr)) == 0;
}

static bool addr_in(const struct sockaddr *a, const struct sockaddr_storage *set, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (same_addr(a, &set[i]))
      return true;
  return false;
}

static void addr_add(struct sockaddr_storage **set, size_t *n, const struct sockaddr *sa) {
  if ((sa->sa_family != AF_INET && sa->sa_family != AF_INET6) || *n >= 256 || addr_in(sa, *set, *n))
    return;
  *set = realloc(*set, (*n + 1) * sizeof(**set));
  if (*set == NULL)
    abort();
  memset(&(*set)[*n], 0, sizeof(**set));
  memcpy(&(*set)[*n], sa, sa->sa_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6));
  (*n)++;
}

/* The addresses a host name (or "host:port", "[v6]:port", a URL's authority) resolves to. */
static void resolve_into(struct registry *r, const char *authority) {
  char host[256];
  const char *h = authority;
  size_t len;
  if (*h == '[') {
    h++;
    len = strcspn(h, "]");
  } else {
    len = strcspn(h, ":/");
  }
  if (len == 0 || len >= sizeof(host))
    return;
  memcpy(host, h, len);
  host[len] = '\0';
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
  if (getaddrinfo(host, NULL, &hints, &res) != 0)
    return;
  for (struct addrinfo *ai = res; ai; ai = ai->ai_next)
    addr_add(&r->named, &r->n_named, ai->ai_addr);
  freeaddrinfo(res);
}

/* The proxy curl will connect to for an https URL (its environment variables): the user named
 * it, as they named the registry. */
static void resolve_proxy(struct registry *r) {
  static const char *const vars[] = {"https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"};
  for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
    const char *v = getenv(vars[i]);
    if (v == NULL || *v == '\0')
      continue;
    const char *auth = strstr(v, "://");
    auth = auth ? auth + 3 : v;
    const char *at = strchr(auth, '@');
    if (at && at < auth + strcspn(auth, "/"))
      auth = at + 1;
    resolve_into(r, auth);
  }
}

static void own_addresses(struct registry *r) {
  struct ifaddrs *ifa = NULL;
  if (getifaddrs(&ifa) < 0)
    return;
  for (struct ifaddrs *i = ifa; i; i = i->ifa_next)
    if (i->ifa_addr)
      addr_add(&r->own, &r->n_own, i->ifa_addr);
  freeifaddrs(ifa);
}

/* --- credentials ------------------------------------------------------------------------------ */

static char *b64_decode(const char *in) {
  size_t n = strlen(in);
  unsigned char *out = malloc(n + 1);
  if (out == NULL)
    abort();
  int r = EVP_DecodeBlock(out, (const unsigned char *)in, (int)n);
  if (r < 0) {
    free(out);
    return NULL;
  }
  /* EVP_DecodeBlock counts padding as bytes. */
  while (n && in[n - 1] == '=') {
    n--;
    r--;
  }
  out[r] = '\0';
  return (char *)out;
}

static char *credentials_for(const char *host, const char *auth_file) {
  cleanup_free char *dflt = NULL;
  if (auth_file == NULL) {
    const char *dc = getenv("DOCKER_CONFIG");
    const char *home = getenv("HOME");
    if (dc && *dc) {
      if (asprintf(&dflt, "%s/config.json", dc) < 0)
        abort();
    } else if (home && *home) {
      if (asprintf(&dflt, "%s/.docker/config.json", home) < 0)
        abort();
    } else {
      return NULL;
    }
    auth_file = dflt;
  }
  size_t len;
  cleanup_error struct cm_error *ignored = NULL;
  cleanup_free char *json = read_whole_file(auth_file, &len, &ignored);
  if (json == NULL)
    return NULL;
  yajl_val t = yajl_tree_parse(json, NULL, 0);
  if (t == NULL)
    return NULL;
  yajl_val auths = jfind(t, "auths");
  char *creds = NULL;
  if (YAJL_IS_OBJECT(auths)) {
    bool hub = strcmp(host, "registry-1.docker.io") == 0;
    for (size_t i = 0; i < YAJL_GET_OBJECT(auths)->len && creds == NULL; i++) {
      const char *key = YAJL_GET_OBJECT(auths)->keys[i];
      /* Keys are "host", "https://host", "https://host/v1/" (Docker Hub: index.docker.io). */
      const char *k = strncmp(key, "https://", 8) == 0 ? key + 8 : strncmp(key, "http://", 7) == 0 ? key + 7 : key;
      size_t kl = strcspn(k, "/");
      bool match = (strlen(host) == kl && strncmp(k, host, kl) == 0) ||
                   (hub && ((kl == 15 && strncmp(k, "index.docker.io", 15) == 0) ||
                            (kl == 9 && strncmp(k, "docker.io", 9) == 0)));
      if (!match)
        continue;
      const char *a = YAJL_GET_STRING(jfind(YAJL_GET_OBJECT(auths)->values[i], "auth"));
      if (a)
        creds = b64_decode(a);
    }
  }
  yajl_tree_free(t);
  return creds;
}

/* --- TLS -------------------------------------------------------------------------------------- */

static void ca_add_file(struct buf *ca, const char *path) {
  size_t len;
  cleanup_error struct cm_error *ignored = NULL;
  cleanup_free char *pem = read_whole_file(path, &len, &ignored);
  if (pem) {
    buf_append(ca, pem, len);
    buf_append(ca, "\n", 1);
  }
}

static void ca_add_dir(struct buf *ca, const char *dir) {
  DIR *d = opendir(dir);
  if (d == NULL)
    return;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    size_t n = strlen(de->d_name);
    if (n > 4 && strcmp(de->d_name + n - 4, ".crt") == 0) {
      char p[4096];
      snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
      ca_add_file(ca, p);
    }
  }
  closedir(d);
}

static void ca_build(struct registry *r) {
  r->ca.max = 64u << 20;
  ca_add_file(&r->ca, "/etc/ssl/certs/ca-certificates.crt");
  char p[4096];
  snprintf(p, sizeof(p), "/etc/docker/certs.d/%s", r->host);
  ca_add_dir(&r->ca, p);
  snprintf(p, sizeof(p), "/etc/containers/certs.d/%s", r->host);
  ca_add_dir(&r->ca, p);
  const char *home = getenv("HOME");
  if (home) {
    snprintf(p, sizeof(p), "%s/.config/containers/certs.d/%s", home, r->host);
    ca_add_dir(&r->ca, p);
  }
  const char *extra = r->opts->ca_file ? r->opts->ca_file : getenv("CODEMODE_REGISTRY_CA");
  if (extra && *extra)
    ca_add_file(&r->ca, extra);
}

/* --- requests --------------------------------------------------------------------------------- */

struct response {
  long status;
  struct buf body;
  char *www_authenticate;
  char *content_type;
  /* blob downloads stream here instead of body */
  struct image_store *st;
  struct blob_writer *w;
  int64_t limit; /* w: the size the descriptor declares; a byte more stops the transfer */
  struct cm_error **err;
  bool write_failed, too_big;
  char *location;     /* the last redirect's target */
  struct registry *r; /* for the connection check */
  char refused[768];  /* why a connection was not made */
};

static size_t on_body(char *p, size_t size, size_t n, void *arg) {
  struct response *res = arg;
  size_t len = size * n;
  if (res->w && res->status / 100 == 2) {
    /* Counted as it streams: a registry that sends more than the manifest declares is cut off
     * at the declared size, not read to its end and refused afterwards. */
    if ((int64_t)len > res->limit - res->w->written) {
      res->too_big = true;
      return 0;
    }
    if (store_blob_write(res->w, p, len, res->err) < 0) {
      res->write_failed = true;
      return 0;
    }
    return len;
  }
  buf_append(&res->body, p, len);
  /* A short count stops the transfer: a buffered response never grows past its bound. */
  return res->body.overflow ? 0 : len;
}

/* Called for every connection curl makes (the registry, a token realm, each redirect's target),
 * with the address it is about to connect to: what is checked is what is connected, so a name
 * that resolves differently the second time (DNS rebinding) changes nothing. */
static curl_socket_t on_open_socket(void *arg, curlsocktype purpose, struct curl_sockaddr *a) {
  struct response *res = arg;
  struct registry *r = res->r;
  (void)purpose;
  const struct sockaddr *sa = &a->addr;
  char ip[INET6_ADDRSTRLEN] = "?";
  if (sa->sa_family == AF_INET)
    inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, ip, sizeof(ip));
  else if (sa->sa_family == AF_INET6)
    inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, ip, sizeof(ip));
  /* The registry the user named may be anywhere (a local mirror, a registry on this host). */
  if (!addr_in(sa, r->named, r->n_named)) {
    char why_buf[96];
    const char *why = refused_addr(sa, why_buf, sizeof(why_buf));
    if (why == NULL && addr_in(sa, r->own, r->n_own))
      why = "an address of this machine";
    if (why) {
      snprintf(res->refused, sizeof(res->refused),
               "%s%s connects to %s, %s: refused (only the registry named, %s, may be on this machine or a private "
               "network)",
               res->location ? "the redirect to " : "", res->location ? res->location : "it", ip, why,
               r->host);
      return CURL_SOCKET_BAD;
    }
  }
  int fd = socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
  return fd < 0 ? CURL_SOCKET_BAD : fd;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg) {
  struct response *res = arg;
  size_t len = size * n;
  if (len > 5 && strncmp(p, "HTTP/", 5) == 0) {
    /* A new response (after a redirect): forget the previous one's headers. */
    free(res->www_authenticate);
    res->www_authenticate = NULL;
    sscanf(p, "HTTP/%*s %ld", &res->status);
  }
  const char *wa = "www-authenticate:", *ct = "content-type:", *loc = "location:", *cl = "content-length:";
  char **dst = NULL;
  size_t skip = 0;
  if (len > strlen(wa) && strncasecmp(p, wa, strlen(wa)) == 0) {
    dst = &res->www_authenticate;
    skip = strlen(wa);
  } else if (len > strlen(ct) && strncasecmp(p, ct, strlen(ct)) == 0) {
    dst = &res->content_type;
    skip = strlen(ct);
  } else if (len > strlen(loc) && strncasecmp(p, loc, strlen(loc)) == 0 && res->status / 100 == 3) {
    dst = &res->location;
    skip = strlen(loc);
  } else if (len > strlen(cl) && strncasecmp(p, cl, strlen(cl)) == 0 && res->w && res->status / 100 == 2) {
    /* A blob announced larger than declared: refused before its first byte. */
    long long n = strtoll(p + strlen(cl), NULL, 10);
    if (n > res->limit) {
      res->too_big = true;
      return 0;
    }
  }
  if (dst) {
    const char *v = p + skip;
    size_t vl = len - skip;
    while (vl && (*v == ' ' || *v == '\t')) {
      v++;
      vl--;
    }
    while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
      vl--;
    free(*dst);
    *dst = strndup(v, vl);
  }
  return len;
}

static void response_clear(struct response *res) {
  free(res->body.data);
  free(res->www_authenticate);
  free(res->content_type);
  free(res->location);
  memset(res, 0, sizeof(*res));
}

/* One GET; auth: "Bearer x", "Basic user:pass" (encoded here), or NULL. */
static int http_get(struct registry *r, const char *url, const char *accept, const char *auth, struct response *res,
                    struct cm_error **err) {
  CURL *c = curl_easy_init();
  if (c == NULL)
    abort();
  struct curl_slist *hdrs = NULL;
  if (accept)
    hdrs = curl_slist_append(hdrs, accept);
  cleanup_free char *authz = NULL;
  if (auth) {
    if (asprintf(&authz, "Authorization: %s", auth) < 0)
      abort();
    hdrs = curl_slist_append(hdrs, authz);
  }
  if (res->body.max == 0)
    res->body.max = MANIFEST_MAX;
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, res);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, res);
  /* Blob downloads are redirected to storage hosts; curl does not send our Authorization header
   * to another host. Only HTTPS, also after a redirect (a plain-http hop would hand the blob,
   * or a token in its URL, to anyone on the path), a bounded chain, and every connection's
   * address checked (on_open_socket). */
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, (long)MAX_REDIRECTS);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "https");
  res->r = r;
  curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, on_open_socket);
  curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, res);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "codemode/" CODEMODE_VERSION);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  if (r->ca.len) {
    struct curl_blob blob = {.data = r->ca.data, .len = r->ca.len, .flags = CURL_BLOB_NOCOPY};
    curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &blob);
  }
  char errbuf[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  CURLcode rc = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &res->status);
  curl_slist_free_all(hdrs);
  curl_easy_cleanup(c);
  if (res->write_failed)
    return -1;
  /* (A refused address among several curl tried, one of which was fine, is no failure.) */
  if (rc != CURLE_OK && res->refused[0])
    return cm_error_set(err, 0, "GET %s: %s", url, res->refused);
  if (res->too_big)
    return cm_error_set(err, 0, "GET %s: the registry sends more than the %lld bytes the descriptor declares: cut off "
                        "and refused", url, (long long)res->limit);
  if (res->body.overflow)
    return cm_error_set(err, 0, "GET %s: the response is larger than %zu bytes: cut off and refused", url,
                        res->body.max);
  if (rc == CURLE_UNSUPPORTED_PROTOCOL && res->location)
    return cm_error_set(err, 0, "GET %s: the redirect to %s is refused: redirects are followed over https only", url,
                        res->location);
  if (rc == CURLE_TOO_MANY_REDIRECTS)
    return cm_error_set(err, 0, "GET %s: more than %d redirects (the last to %s): refused", url, MAX_REDIRECTS,
                        res->location ? res->location : "?");
  if (rc != CURLE_OK)
    return cm_error_set(err, 0, "GET %s: %s", url, errbuf[0] ? errbuf : curl_easy_strerror(rc));
  return 0;
}

/* key="value" out of a WWW-Authenticate challenge. */
static char *challenge_param(const char *ch, const char *key) {
  size_t kl = strlen(key);
  for (const char *p = ch; (p = strstr(p, key)) != NULL; p += kl) {
    if ((p == ch || p[-1] == ' ' || p[-1] == ',') && p[kl] == '=' && p[kl + 1] == '"') {
      const char *v = p + kl + 2, *e = strchr(v, '"');
      return e ? strndup(v, (size_t)(e - v)) : NULL;
    }
  }
  return NULL;
}

static char *url_escape(const char *s) {
  CURL *c = curl_easy_init();
  char *e = curl_easy_escape(c, s, 0);
  char *out = strdup(e);
  curl_free(e);
  curl_easy_cleanup(c);
  return out;
}

static char *basic_header(const char *userpass) {
  size_t n = strlen(userpass);
  char *enc = malloc(4 * ((n + 2) / 3) + 1);
  if (enc == NULL)
    abort();
  EVP_EncodeBlock((unsigned char *)enc, (const unsigned char *)userpass, (int)n);
  char *out;
  if (asprintf(&out, "Basic %s", enc) < 0)
    abort();
  free(enc);
  return out;
}

/* After a 401: get a token (Bearer) or fall back to Basic with the stored credentials. */
static int authenticate(struct registry *r, const char *challenge, struct cm_error **err) {
  if (challenge == NULL)
    return cm_error_set(err, 0, "401 Unauthorized without a WWW-Authenticate challenge");
  if (strncasecmp(challenge, "Basic", 5) == 0) {
    if (r->basic == NULL)
      return cm_error_set(err, 0, "the registry wants a login (docker login %s, or an \"auths\" entry in "
                                  "~/.docker/config.json)", r->host);
    free(r->bearer);
    r->bearer = basic_header(r->basic);
    return 0;
  }
  if (strncasecmp(challenge, "Bearer", 6) != 0)
    return cm_error_set(err, 0, "unsupported authentication scheme: %s", challenge);
  cleanup_free char *realm = challenge_param(challenge, "realm");
  cleanup_free char *service = challenge_param(challenge, "service");
  cleanup_free char *scope = challenge_param(challenge, "scope");
  if (realm == NULL || strncmp(realm, "https://", 8) != 0)
    return cm_error_set(err, 0, "the token realm %s is not an https URL", realm ? realm : "(none)");
  cleanup_free char *def_scope = NULL;
  if (scope == NULL && asprintf(&def_scope, "repository:%s:pull", r->ref->repository) < 0)
    abort();
  cleanup_free char *esc_service = service ? url_escape(service) : NULL;
  cleanup_free char *esc_scope = url_escape(scope ? scope : def_scope);
  cleanup_free char *url = NULL;
  if (asprintf(&url, "%s%sscope=%s%s%s", realm, strchr(realm, '?') ? "&" : "?", esc_scope,
               esc_service ? "&service=" : "", esc_service ? esc_service : "") < 0)
    abort();
  struct response res = {0};
  cleanup_free char *basic = r->basic ? basic_header(r->basic) : NULL;
  int rc = http_get(r, url, NULL, basic, &res, err);
  if (rc == 0 && res.status != 200)
    rc = cm_error_set(err, 0, "the token service answered %ld%s", res.status,
                      res.status == 401 ? " (wrong credentials in ~/.docker/config.json?)" : "");
  if (rc == 0) {
    yajl_val t = res.body.data ? yajl_tree_parse(res.body.data, NULL, 0) : NULL;
    const char *tok = t ? YAJL_GET_STRING(jfind(t, "token")) : NULL;
    if (tok == NULL && t)
      tok = YAJL_GET_STRING(jfind(t, "access_token"));
    if (tok == NULL) {
      rc = cm_error_set(err, 0, "the token service gave no token");
    } else {
      free(r->bearer);
      if (asprintf(&r->bearer, "Bearer %s", tok) < 0)
        abort();
    }
    if (t)
      yajl_tree_free(t);
  }
  response_clear(&res);
  return rc;
}

/* GET with the current credentials, authenticating once on a 401. */
static int registry_get(struct registry *r, const char *url, const char *accept, struct response *res,
                        struct cm_error **err) {
  struct response saved = *res;
  for (int attempt = 0; attempt < 2; attempt++) {
    if (http_get(r, url, accept, r->bearer, res, err) < 0)
      return -1;
    if (res->status != 401 || attempt == 1)
      break;
    cleanup_free char *challenge = res->www_authenticate ? strdup(res->www_authenticate) : NULL;
    response_clear(res);
    *res = (struct response){
        .st = saved.st, .w = saved.w, .limit = saved.limit, .err = saved.err, .body.max = saved.body.max};
    if (authenticate(r, challenge, err) < 0)
      return -1;
  }
  if (res->status == 401 || res->status == 403)
    return cm_error_set(err, 0, "access denied (HTTP %ld)%s", res->status,
                        r->basic ? "" : ": log in first (docker login, or an \"auths\" entry in ~/.docker/config.json)");
  if (res->status == 404)
    return cm_error_set(err, 0, "not found (HTTP 404 from %s)", url);
  if (res->status != 200)
    return cm_error_set(err, 0, "HTTP %ld from %s", res->status, url);
  return 0;
}

static bool is_manifest_type(const char *mt) {
  return mt && (strcmp(mt, MT_OCI_INDEX) == 0 || strcmp(mt, MT_OCI_MANIFEST) == 0 || strcmp(mt, MT_DOCKER_LIST) == 0 ||
                strcmp(mt, MT_DOCKER_MANIFEST) == 0);
}

static int registry_fetch(void *ctx, struct image_store *st, const struct image_descriptor *d, struct cm_error **err) {
  struct registry *r = ctx;
  /* An index's entries are manifests: they live under /manifests/, blobs under /blobs/. */
  bool manifest = is_manifest_type(d->media_type);
  cleanup_free char *url = NULL;
  if (asprintf(&url, "%s%s/%s/%s", r->base, r->ref->repository, manifest ? "manifests" : "blobs", d->digest) < 0)
    abort();
  struct blob_writer w;
  if (store_blob_begin(st, &w, err) < 0)
    return -1;
  struct response res = {.st = st, .w = &w, .limit = d->size, .err = err, .body.max = 1 << 16};
  int rc = registry_get(r, url, manifest ? accept_manifests : NULL, &res, err);
  response_clear(&res);
  if (rc < 0) {
    store_blob_abort(st, &w);
    return -1;
  }
  return store_blob_commit(st, &w, d->digest, d->size, err);
}

int registry_pull(struct image_store *st, const struct image_ref *ref, const struct pull_options *o,
                  char **manifest_digest, struct cm_error **err) {
  static bool curl_ready;
  if (!curl_ready) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    curl_ready = true;
  }
  struct registry r = {.ref = ref, .opts = o};
  const char *host = strcmp(ref->registry, "docker.io") == 0 ? "registry-1.docker.io" : ref->registry;
  r.host = strdup(host);
  if (asprintf(&r.base, "https://%s/v2/", host) < 0)
    abort();
  snprintf(r.name, sizeof(r.name), "%s", ref->canonical);
  r.basic = credentials_for(host, o->auth_file);
  ca_build(&r);
  resolve_into(&r, host);
  resolve_proxy(&r);
  own_addresses(&r);
  int rc = -1;
  cleanup_free char *url = NULL, *top = NULL;
  if (asprintf(&url, "%s%s/manifests/%s", r.base, ref->repository, ref->digest ? ref->digest : ref->tag) < 0)
    abort();
  struct response res = {.body.max = MANIFEST_MAX};
  if (registry_get(&r, url, accept_manifests, &res, err) < 0) {
    cm_error_prefix(err, "%s", r.name);
    goto out;
  }
  if (res.body.data == NULL) {
    cm_error_set(err, EIO, "%s: an empty manifest", r.name);
    goto out;
  }
  top = digest_of_buffer(res.body.data, res.body.len);
  /* Pinned by digest: what the registry served must be exactly that document. */
  if (ref->digest && strcmp(top, ref->digest) != 0) {
    cm_error_set(err, EIO, "%s: the registry served a manifest with digest %s, not the pinned one: refused", r.name,
                 top);
    goto out;
  }
  if (store_put_blob(st, res.body.data, res.body.len, top, err) < 0)
    goto out;
  struct blob_source src = {.ctx = &r, .fetch = registry_fetch, .name = r.name, .quiet = o->quiet};
  rc = pull_tree(st, &src, top, manifest_digest, err);
out:
  response_clear(&res);
  free(r.base);
  free(r.host);
  if (r.basic) {
    explicit_bzero(r.basic, strlen(r.basic));
    free(r.basic);
  }
  free(r.bearer);
  free(r.ca.data);
  free(r.named);
  free(r.own);
  return rc;
}
