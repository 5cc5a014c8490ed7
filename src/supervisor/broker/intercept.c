/* Secrets the container can use but not read (placeholder mode): for a host a secret is bound
 * to, the broker terminates the container's TLS with a certificate of its own per-run CA, opens
 * a verified TLS connection to the real host, and in the request head replaces the placeholder
 * CODEMODE_SECRET_<NAME> in the bound header (Authorization unless named) with the secret.
 *
 * The CA exists only for this run: its key never leaves this process's memory (no file, no
 * core dump: the broker is non-dumpable), it is valid for a week, and its name constraints
 * permit only the bound hosts, so even a stolen key could not vouch for any other name. The
 * container trusts it through its CA bundle (runtime/egress.c). Only HTTP/1.1 is offered
 * (ALPN), one request per connection (Connection: close), so every request head passes here.
 * Requests to any other host never see the secret: no interception, no substitution.
 *
 * Each intercepted connection runs on its own thread with blocking I/O: these are the few
 * connections to a bound API, and OpenSSL is simplest that way. */
#include <errno.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "supervisor/broker/broker.h"

struct tls_state {
  EVP_PKEY *ca_key, *leaf_key;
  X509 *ca;
  SSL_CTX *server, *client;
  pthread_mutex_t lock; /* the leaf cache */
  struct leaf {
    char host[256];
    X509 *cert;
  } leaves[64];
  size_t n_leaves;
};

static EVP_PKEY *new_key(void) { return EVP_EC_gen("P-256"); }

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
  X509_EXTENSION *ext = X509V3_EXT_nconf_nid(NULL, &ctx, nid, value);
  if (ext == NULL)
    return -1;
  int rc = X509_add_ext(cert, ext, -1) ? 0 : -1;
  X509_EXTENSION_free(ext);
  return rc;
}

static X509 *new_cert(EVP_PKEY *key, const char *cn) {
  X509 *c = X509_new();
  if (c == NULL)
    return NULL;
  X509_set_version(c, 2);
  unsigned char serial[16];
  RAND_bytes(serial, sizeof(serial));
  serial[0] &= 0x7f;
  BIGNUM *bn = BN_bin2bn(serial, sizeof(serial), NULL);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(c));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(c), -3600);
  X509_gmtime_adj(X509_getm_notAfter(c), 7 * 24 * 3600);
  X509_set_pubkey(c, key);
  X509_NAME *name = X509_get_subject_name(c);
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, (const unsigned char *)"codemode", -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1, 0);
  return c;
}

/* The leaf certificate for host, signed by the CA (cached). */
static X509 *leaf_for(struct tls_state *t, const char *host) {
  pthread_mutex_lock(&t->lock);
  for (size_t i = 0; i < t->n_leaves; i++)
    if (strcmp(t->leaves[i].host, host) == 0) {
      X509 *c = t->leaves[i].cert;
      X509_up_ref(c);
      pthread_mutex_unlock(&t->lock);
      return c;
    }
  X509 *c = new_cert(t->leaf_key, host);
  char san[300];
  snprintf(san, sizeof(san), "DNS:%s", host);
  if (c == NULL || !X509_set_issuer_name(c, X509_get_subject_name(t->ca)) ||
      add_ext(c, t->ca, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
      add_ext(c, t->ca, NID_key_usage, "critical,digitalSignature") < 0 ||
      add_ext(c, t->ca, NID_ext_key_usage, "serverAuth") < 0 || add_ext(c, t->ca, NID_subject_alt_name, san) < 0 ||
      add_ext(c, t->ca, NID_subject_key_identifier, "hash") < 0 ||
      add_ext(c, t->ca, NID_authority_key_identifier, "keyid:always") < 0 ||
      X509_sign(c, t->ca_key, EVP_sha256()) == 0) {
    X509_free(c);
    pthread_mutex_unlock(&t->lock);
    return NULL;
  }
  if (t->n_leaves < sizeof(t->leaves) / sizeof(t->leaves[0])) {
    snprintf(t->leaves[t->n_leaves].host, sizeof(t->leaves[0].host), "%s", host);
    t->leaves[t->n_leaves++].cert = c;
    X509_up_ref(c);
  }
  pthread_mutex_unlock(&t->lock);
  return c;
}

static int alpn_http11(SSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
                       unsigned int inlen, void *arg) {
  static const unsigned char h11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  unsigned char *sel;
  if (SSL_select_next_proto(&sel, outlen, h11, sizeof(h11), in, inlen) != OPENSSL_NPN_NEGOTIATED)
    return SSL_TLSEXT_ERR_NOACK;
  *out = sel;
  return SSL_TLSEXT_ERR_OK;
}

static int intercept_init(struct broker *b, char **ca_pem, char *why, size_t why_len) {
  struct tls_state *t = calloc(1, sizeof(*t));
  if (t == NULL)
    return -1;
  pthread_mutex_init(&t->lock, NULL);
  t->ca_key = new_key();
  t->leaf_key = new_key();
  char cn[200];
  snprintf(cn, sizeof(cn), "codemode egress CA for %.120s", b->id);
  t->ca = t->ca_key ? new_cert(t->ca_key, cn) : NULL;
  /* Name constraints: this CA can vouch for the bound hosts and nothing else. */
  char permitted[2048] = "critical";
  size_t off = strlen(permitted);
  for (size_t i = 0; i < b->n_secrets; i++) {
    const char *h = b->secrets[i].host;
    if (strncmp(h, "*.", 2) == 0)
      h += 2;
    off += (size_t)snprintf(permitted + off, sizeof(permitted) - off, ",permitted;DNS:%s", h);
  }
  if (t->leaf_key == NULL || t->ca == NULL || !X509_set_issuer_name(t->ca, X509_get_subject_name(t->ca)) ||
      add_ext(t->ca, t->ca, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") < 0 ||
      add_ext(t->ca, t->ca, NID_key_usage, "critical,keyCertSign,cRLSign") < 0 ||
      add_ext(t->ca, t->ca, NID_subject_key_identifier, "hash") < 0 ||
      add_ext(t->ca, t->ca, NID_authority_key_identifier, "keyid:always") < 0 ||
      add_ext(t->ca, t->ca, NID_name_constraints, permitted) < 0 || X509_sign(t->ca, t->ca_key, EVP_sha256()) == 0) {
    snprintf(why, why_len, "make the per-run CA: %s", ERR_error_string(ERR_get_error(), NULL));
    return -1;
  }
  t->server = SSL_CTX_new(TLS_server_method());
  t->client = SSL_CTX_new(TLS_client_method());
  if (t->server == NULL || t->client == NULL) {
    snprintf(why, why_len, "TLS contexts: %s", ERR_error_string(ERR_get_error(), NULL));
    return -1;
  }
  SSL_CTX_set_min_proto_version(t->server, TLS1_2_VERSION);
  SSL_CTX_set_min_proto_version(t->client, TLS1_2_VERSION);
  SSL_CTX_set_alpn_select_cb(t->server, alpn_http11, NULL);
  static const unsigned char h11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  SSL_CTX_set_alpn_protos(t->client, h11, sizeof(h11));
  /* The real host is verified as any client would: the system's trust store (SSL_CERT_FILE /
   * SSL_CERT_DIR when set in our environment), its name checked against the certificate. */
  SSL_CTX_set_verify(t->client, SSL_VERIFY_PEER, NULL);
  if (SSL_CTX_set_default_verify_paths(t->client) != 1) {
    snprintf(why, why_len, "the host's trust store: %s", ERR_error_string(ERR_get_error(), NULL));
    return -1;
  }
  /* Blocking sockets: a post-handshake message (a TLS 1.3 session ticket) must not make a read
   * wait for application data that poll() did not promise. */
  SSL_CTX_clear_mode(t->server, SSL_MODE_AUTO_RETRY);
  SSL_CTX_clear_mode(t->client, SSL_MODE_AUTO_RETRY);
  BIO *mem = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(mem, t->ca);
  char *data;
  long len = BIO_get_mem_data(mem, &data);
  *ca_pem = strndup(data, (size_t)len);
  BIO_free(mem);
  b->tls = t;
  return 0;
}

/* --- one intercepted connection --------------------------------------------------------------- */

struct job {
  struct broker *b;
  int cfd, ufd;
  char host[256], via[16], addr[64], rule[300];
  uint16_t port;
  double started;
};

static bool ssl_write_all(SSL *s, const void *buf, size_t len) {
  const char *p = buf;
  while (len) {
    int n = SSL_write(s, p, (int)len);
    if (n <= 0) {
      int e = SSL_get_error(s, n);
      if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
        continue;
      return false;
    }
    p += n;
    len -= (size_t)n;
  }
  return true;
}

/* Read into buf; >0 bytes, 0 EOF, -1 nothing now (try after poll), -2 error. */
static int ssl_read_some(SSL *s, void *buf, int len) {
  int n = SSL_read(s, buf, len);
  if (n > 0)
    return n;
  int e = SSL_get_error(s, n);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
    return -1;
  if (e == SSL_ERROR_ZERO_RETURN)
    return 0;
  return e == SSL_ERROR_SYSCALL && n == 0 ? 0 : -2;
}

static void *intercept_thread(void *arg) {
  struct job *j = arg;
  struct broker *b = j->b;
  struct tls_state *t = b->tls;
  const char *reason = NULL;
  char why[300] = "";
  long long up = 0, down = 0;
  const char *secret_used = NULL;
  SSL *cs = NULL, *us = NULL;
  X509 *leaf = NULL;
  fcntl(j->cfd, F_SETFL, fcntl(j->cfd, F_GETFL) & ~O_NONBLOCK);
  fcntl(j->ufd, F_SETFL, fcntl(j->ufd, F_GETFL) & ~O_NONBLOCK);
  /* The client has this long to finish the handshakes and send its request head. */
  struct timeval tmo = {.tv_sec = 30};
  setsockopt(j->cfd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo));
  setsockopt(j->ufd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo));

  us = SSL_new(t->client);
  SSL_set_fd(us, j->ufd);
  SSL_set_tlsext_host_name(us, j->host);
  SSL_set1_host(us, j->host);
  if (SSL_connect(us) != 1) {
    long v = SSL_get_verify_result(us);
    snprintf(why, sizeof(why), "upstream TLS: %s",
             v != X509_V_OK ? X509_verify_cert_error_string(v) : ERR_error_string(ERR_get_error(), NULL));
    reason = why;
    goto out;
  }
  leaf = leaf_for(t, j->host);
  cs = SSL_new(t->server);
  if (leaf == NULL || cs == NULL || SSL_use_certificate(cs, leaf) != 1 || SSL_use_PrivateKey(cs, t->leaf_key) != 1) {
    reason = "could not make a certificate for the host";
    goto out;
  }
  SSL_set_fd(cs, j->cfd);
  if (SSL_accept(cs) != 1) {
    snprintf(why, sizeof(why), "the container's TLS client refused the per-run CA (%s)",
             ERR_error_string(ERR_get_error(), NULL));
    reason = why;
    goto out;
  }
  /* The request head, to its blank line. */
  char head[BROKER_HEAD_MAX + 1];
  size_t hl = 0;
  const char *hend = NULL;
  while (hend == NULL && hl < BROKER_HEAD_MAX) {
    int n = ssl_read_some(cs, head + hl, (int)(BROKER_HEAD_MAX - hl));
    if (n == -1)
      continue;
    if (n <= 0)
      break;
    hl += (size_t)n;
    head[hl] = '\0';
    hend = memmem(head, hl, "\r\n\r\n", 4);
  }
  if (hend == NULL) {
    reason = "no HTTP/1.1 request head from the container";
    goto out;
  }
  size_t head_len = (size_t)(hend + 4 - head);
  char *out_head = NULL;
  size_t out_len = 0;
  for (size_t i = 0; i < b->n_secrets; i++) {
    const struct secret_binding *s = &b->secrets[i];
    if (!egress_host_matches(s->host, j->host))
      continue;
    int subs = 0;
    char *next = proto_substitute_header(out_head ? out_head : head, out_head ? out_len : head_len, s->header,
                                         s->placeholder, s->value, &out_len, &subs);
    free(out_head);
    out_head = next;
    if (subs)
      secret_used = s->name;
  }
  bool ok = out_head && ssl_write_all(us, out_head, out_len) && ssl_write_all(us, head + head_len, hl - head_len);
  if (out_head) {
    OPENSSL_cleanse(out_head, out_len); /* it held the secret */
    free(out_head);
  }
  if (!ok) {
    reason = "upstream write failed";
    goto out;
  }
  up = (long long)hl;
  tmo.tv_sec = 0;
  setsockopt(j->cfd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo));
  setsockopt(j->ufd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo));
  /* The rest, both ways, until the upstream ends (the client's EOF only stops its side). */
  char buf[16384];
  bool client_done = false;
  for (;;) {
    struct pollfd p[2] = {{.fd = client_done ? -1 : j->cfd, .events = POLLIN}, {.fd = j->ufd, .events = POLLIN}};
    if (SSL_pending(cs) == 0 && SSL_pending(us) == 0 && poll(p, 2, -1) < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    if (!client_done && (SSL_pending(cs) > 0 || p[0].revents)) {
      int n = ssl_read_some(cs, buf, sizeof(buf));
      if (n > 0) {
        up += n;
        if (!ssl_write_all(us, buf, (size_t)n))
          break;
      } else if (n != -1) {
        client_done = true;
      }
    }
    if (SSL_pending(us) > 0 || p[1].revents) {
      int n = ssl_read_some(us, buf, sizeof(buf));
      if (n > 0) {
        down += n;
        if (!ssl_write_all(cs, buf, (size_t)n))
          break;
      } else if (n != -1) {
        break;
      }
    }
  }
  SSL_shutdown(cs);
out:;
  struct audit_record r = {.event = "connect",
                           .decision = "allow",
                           .via = j->via,
                           .host = j->host,
                           .port = j->port,
                           .sni = j->host,
                           .addr = j->addr,
                           .rule = j->rule,
                           .reason = reason,
                           .intercepted = true,
                           .secret = secret_used,
                           .bytes_up = up,
                           .bytes_down = down,
                           .duration_ms = (now_mono() - j->started) * 1000};
  audit_write(b, &r);
  if (reason) {
    /* The container's client gets a reset rather than a hang. */
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    setsockopt(j->cfd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
  }
  SSL_free(cs);
  SSL_free(us);
  X509_free(leaf);
  close(j->cfd);
  close(j->ufd);
  free(j);
  return NULL;
}

static void intercept_start(struct broker *b, int client_fd, int upstream_fd, const char *host, uint16_t port,
                     const char *via, const char *addr, const char *rule, double started) {
  struct job *j = calloc(1, sizeof(*j));
  if (j == NULL) {
    close(client_fd);
    close(upstream_fd);
    return;
  }
  *j = (struct job){.b = b, .cfd = client_fd, .ufd = upstream_fd, .port = port, .started = started};
  snprintf(j->host, sizeof(j->host), "%s", host);
  snprintf(j->via, sizeof(j->via), "%s", via);
  snprintf(j->addr, sizeof(j->addr), "%s", addr ? addr : "");
  snprintf(j->rule, sizeof(j->rule), "%s", rule ? rule : "");
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t th;
  if (pthread_create(&th, &attr, intercept_thread, j) != 0) {
    close(client_fd);
    close(upstream_fd);
    free(j);
  }
  pthread_attr_destroy(&attr);
}

/* What tls.c looks up after dlopen. */
__attribute__((visibility("default"))) const struct broker_tls_ops codemode_broker_tls_ops = {
    .init = intercept_init,
    .start = intercept_start,
};
