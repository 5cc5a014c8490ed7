/* Secrets the container can use but not read (placeholder mode): for a host a secret is bound
 * to, the broker terminates the container's TLS with a certificate of its own per-run CA, opens
 * a verified TLS connection to the real host, and in each request head replaces the placeholder
 * CODEMODE_SECRET_<NAME> in the bound header (Authorization unless named) with the secret.
 *
 * The CA exists only for this run: its key never leaves this process's memory (no file, no
 * core dump: the broker is non-dumpable), it is valid for a week, and its name constraints
 * permit only the bound hosts, so even a stolen key could not vouch for any other name. The
 * container trusts it through its CA bundle (runtime/egress.c).
 *
 * Secrets follow the request, not the connection. Only HTTP/1.1 is offered in ALPN (no h2: every
 * request passes through one HTTP/1.x parser, nodejs' http-parser). Every request on the
 * connection (keep-alive, pipelined) is framed by it and decided on its own: its Host (exactly
 * one) and an absolute URI's authority must name the connection's host (its SNI) for the
 * secret to go in; a request for another host gets no secret (and is refused unless a rule
 * allows that host); an Upgrade is refused (after it the stream would no longer be HTTP). What
 * comes back is scrubbed: every occurrence of a secret's value, in headers and bodies, also
 * split across reads, is replaced by its placeholder before the container sees it (a bound
 * host that echoes headers — debug endpoints, TRACE, error pages — must not hand it over). The
 * replacement keeps the value's length (the placeholder cut or padded with '_'), so that
 * Content-Length and chunk sizes stay true; bytes that may begin a value are held back until
 * the next read or the response's end (framed by a second parser). A substituted request asks
 * for an identity encoding: a compressed echo could not be scrubbed.
 *
 * Every intercepted connection lives on the broker's event loop (non-blocking OpenSSL, no
 * thread): at most INTERCEPT_MAX at once, a deadline for the handshakes and for each request
 * head, an idle deadline after. */
#include <errno.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "supervisor/broker/intercept.h"


struct tls_state {
  EVP_PKEY *ca_key, *leaf_key;
  X509 *ca;
  SSL_CTX *server, *client;
  bool trust_loaded; /* the CA file (trust_fd) is in the client context's store */
  int trust_fd;      /* the CA file, opened at start, read at the first upstream connection */
  struct leaf {
    char host[256];
    X509 *cert;
  } leaves[64];
  size_t n_leaves;
  struct icon *live;
  size_t n_live;
  struct icon *graveyard; /* closed this round, freed at the next deadline check */
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
  for (size_t i = 0; i < t->n_leaves; i++)
    if (strcmp(t->leaves[i].host, host) == 0) {
      X509_up_ref(t->leaves[i].cert);
      return t->leaves[i].cert;
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
    return NULL;
  }
  if (t->n_leaves < sizeof(t->leaves) / sizeof(t->leaves[0])) {
    snprintf(t->leaves[t->n_leaves].host, sizeof(t->leaves[0].host), "%s", host);
    t->leaves[t->n_leaves++].cert = c;
    X509_up_ref(c);
  }
  return c;
}

/* Only http/1.1: an h2 client would carry requests this parser does not frame. */
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
  t->trust_fd = -1;
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
   * SSL_CERT_DIR when set in our environment), its name checked against the certificate. The
   * directory is looked up on demand (OpenSSL's hashed-dir lookup); the CA file is opened now,
   * with our privileges of now, and parsed at the first upstream connection (upstream_trust). */
  SSL_CTX_set_verify(t->client, SSL_VERIFY_PEER, NULL);
  const char *dir = getenv(X509_get_default_cert_dir_env()), *file = getenv(X509_get_default_cert_file_env());
  X509_LOOKUP *lu = X509_STORE_add_lookup(SSL_CTX_get_cert_store(t->client), X509_LOOKUP_hash_dir());
  if (lu == NULL || !X509_LOOKUP_add_dir(lu, dir ? dir : X509_get_default_cert_dir(), X509_FILETYPE_PEM)) {
    snprintf(why, why_len, "the host's trust store: %s", ERR_error_string(ERR_get_error(), NULL));
    return -1;
  }
  /* Absent or unreadable: no CA file, as OpenSSL's own default paths would have it. */
  t->trust_fd = open(file ? file : X509_get_default_cert_file(), O_RDONLY | O_CLOEXEC);
  for (int i = 0; i < 2; i++) {
    SSL_CTX *ctx = i ? t->client : t->server;
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
  }
  BIO *mem = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(mem, t->ca);
  char *data;
  long len = BIO_get_mem_data(mem, &data);
  *ca_pem = strndup(data, (size_t)len);
  BIO_free(mem);
  b->tls = t;
  return 0;
}

/* The CA file into the upstream context's store, once, at the first intercepted connection
 * rather than at start: parsing the system's bundle was two thirds of a --secret broker's
 * start-up CPU (measured, issue 25), spent even when the server never connects. It is read
 * from the descriptor opened at start: the broker has dropped to nobody since, and a CA file
 * only its user can read (SSL_CERT_FILE in a private directory) must still count. */
static void upstream_trust(struct tls_state *t) {
  if (t->trust_loaded)
    return;
  t->trust_loaded = true;
  if (t->trust_fd < 0)
    return;
  BIO *bio = BIO_new_fd(t->trust_fd, BIO_CLOSE);
  STACK_OF(X509_INFO) *infos = bio ? PEM_X509_INFO_read_bio(bio, NULL, NULL, "") : NULL;
  if (bio == NULL)
    close(t->trust_fd);
  t->trust_fd = -1;
  BIO_free(bio);
  X509_STORE *st = SSL_CTX_get_cert_store(t->client);
  for (int i = 0; infos && i < sk_X509_INFO_num(infos); i++) {
    X509_INFO *x = sk_X509_INFO_value(infos, i);
    if (x->x509)
      X509_STORE_add_cert(st, x->x509);
    if (x->crl)
      X509_STORE_add_crl(st, x->crl);
  }
  sk_X509_INFO_pop_free(infos, X509_INFO_free);
  ERR_clear_error(); /* a bad file verifies nothing: the handshake says so, as before */
}

/* --- one intercepted connection --------------------------------------------------------------- */

static struct icon *from_cw(struct watch *w) { return (struct icon *)((char *)w - offsetof(struct icon, cw)); }
static struct icon *from_uw(struct watch *w) { return (struct icon *)((char *)w - offsetof(struct icon, uw)); }

static void ic_free(struct icon *ic, const char *reason) {
  struct broker *b = ic->b;
  struct tls_state *t = b->tls;
  struct audit_record r = {.event = "connect",
                           .decision = "allow",
                           .via = ic->via,
                           .host = ic->host,
                           .port = ic->port,
                           .sni = ic->host,
                           .addr = ic->addr,
                           .rule = ic->rule[0] ? ic->rule : NULL,
                           .reason = reason,
                           .intercepted = true,
                           .secret = ic->secret_used,
                           .bytes_up = ic->up,
                           .bytes_down = ic->down,
                           .duration_ms = (now_mono() - ic->started) * 1000};
  audit_write(b, &r);
  if (reason && ic->cw.fd >= 0) {
    /* The container's client gets a reset rather than a hang. */
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    setsockopt(ic->cw.fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
  }
  for (int i = 0; i < 2; i++) {
    struct watch *w = i ? &ic->uw : &ic->cw;
    if (w->fd >= 0) {
      broker_unwatch(b, w);
      close(w->fd);
    }
  }
  SSL_free(ic->cs);
  SSL_free(ic->us);
  ic->cs = ic->us = NULL;
  if (ic->upbuf)
    OPENSSL_cleanse(ic->upbuf, ic->up_cap); /* it held the secret */
  OPENSSL_cleanse(ic->head, sizeof(ic->head));
  free(ic->upbuf);
  free(ic->downbuf);
  ic->upbuf = ic->downbuf = NULL;
  if (ic->prev)
    ic->prev->next = ic->next;
  else
    t->live = ic->next;
  if (ic->next)
    ic->next->prev = ic->prev;
  t->n_live--;
  /* Freed later: the same round of epoll events may still hold the other socket's event. */
  ic->closed = true;
  ic->next = t->graveyard;
  t->graveyard = ic;
}

static void reap(struct tls_state *t) {
  while (t->graveyard) {
    struct icon *ic = t->graveyard;
    t->graveyard = ic->next;
    free(ic);
  }
}

/* --- moving bytes -------------------------------------------------------------------------------- */

/* 1 progress, 0 would block (*want: EPOLLIN/EPOLLOUT on that socket), -1 closed or failed. */
static int ssl_result(SSL *s, int n, uint32_t *want) {
  if (n > 0)
    return 1;
  int e = SSL_get_error(s, n);
  if (e == SSL_ERROR_WANT_READ) {
    *want |= EPOLLIN;
    return 0;
  }
  if (e == SSL_ERROR_WANT_WRITE) {
    *want |= EPOLLOUT;
    return 0;
  }
  return -1;
}

static void set_interest(struct icon *ic, struct watch *w, uint32_t *cur, uint32_t want) {
  if (w->fd >= 0 && *cur != want) {
    broker_rewatch(ic->b, w, want);
    *cur = want;
  }
}

/* Move what can move, both ways; false when the connection is over (reason set). */
static bool pump(struct icon *ic, uint32_t *cwant, uint32_t *uwant, const char **reason) {
  for (int round = 0; round < 16; round++) {
    bool moved = false;
    uint8_t buf[IC_CHUNK];
    if (!ic->client_eof && !ic->closing && ic->up_len <= ic->up_cap - (IC_CHUNK + 2 * BROKER_HEAD_MAX)) {
      int n = SSL_read(ic->cs, buf, sizeof(buf));
      int r = ssl_result(ic->cs, n, cwant);
      if (r > 0) {
        moved = true;
        if (!filter_request(ic, buf, (size_t)n))
          return false; /* refused: the answer is written and audited; the connection ends */
      } else if (r < 0) {
        ic->client_eof = true;
      }
    }
    if (ic->up_len) {
      int n = SSL_write(ic->us, ic->upbuf, (int)ic->up_len);
      int r = ssl_result(ic->us, n, uwant);
      if (r > 0) {
        ic->up += n;
        OPENSSL_cleanse(ic->upbuf, (size_t)n);
        memmove(ic->upbuf, ic->upbuf + n, ic->up_len - (size_t)n);
        ic->up_len -= (size_t)n;
        moved = true;
      } else if (r < 0) {
        *reason = "upstream write failed";
        return false;
      }
    }
    if (!ic->upstream_eof && ic->down_len <= BROKER_BUF) {
      int n = SSL_read(ic->us, buf, sizeof(buf));
      int r = ssl_result(ic->us, n, uwant);
      if (r > 0) {
        moved = true;
        if (!filter_response(ic, buf, (size_t)n)) {
          *reason = "a malformed response from the bound host";
          return false;
        }
      } else if (r < 0) {
        ic->upstream_eof = true;
        filter_response_end(ic);
      }
    }
    if (ic->down_len) {
      int n = SSL_write(ic->cs, ic->downbuf, (int)ic->down_len);
      int r = ssl_result(ic->cs, n, cwant);
      if (r > 0) {
        ic->down += n;
        memmove(ic->downbuf, ic->downbuf + n, ic->down_len - (size_t)n);
        ic->down_len -= (size_t)n;
        moved = true;
      } else if (r < 0) {
        ic->client_eof = true;
        return false;
      }
    }
    if (ic->upstream_eof && ic->down_len == 0)
      return false; /* the response is delivered */
    if (ic->client_eof && ic->up_len == 0 && ic->n_inflight == 0 && ic->down_len == 0)
      return false;
    if (ic->closing && ic->down_len == 0)
      return false;
    if (!moved)
      break;
    *cwant = *uwant = 0;
  }
  if (!ic->client_eof && !ic->closing)
    *cwant |= EPOLLIN;
  if (!ic->upstream_eof)
    *uwant |= EPOLLIN;
  if (ic->down_len)
    *cwant |= EPOLLOUT;
  if (ic->up_len)
    *uwant |= EPOLLOUT;
  return true;
}

static void step(struct icon *ic) {
  struct tls_state *t = ic->b->tls;
  uint32_t cwant = 0, uwant = 0;
  char why[300];
  if (ic->st == IC_UP_HANDSHAKE) {
    int r = ssl_result(ic->us, SSL_connect(ic->us), &uwant);
    if (r < 0) {
      long v = SSL_get_verify_result(ic->us);
      snprintf(why, sizeof(why), "upstream TLS: %s",
               v != X509_V_OK ? X509_verify_cert_error_string(v) : ERR_error_string(ERR_get_error(), NULL));
      ic_free(ic, why);
      return;
    }
    if (r == 0)
      goto wait;
    X509 *leaf = leaf_for(t, ic->host);
    ic->cs = SSL_new(t->server);
    if (leaf == NULL || ic->cs == NULL || SSL_use_certificate(ic->cs, leaf) != 1 ||
        SSL_use_PrivateKey(ic->cs, t->leaf_key) != 1) {
      X509_free(leaf);
      ic_free(ic, "could not make a certificate for the host");
      return;
    }
    X509_free(leaf);
    SSL_set_fd(ic->cs, ic->cw.fd);
    ic->st = IC_CLIENT_HANDSHAKE;
    uwant = 0;
  }
  if (ic->st == IC_CLIENT_HANDSHAKE) {
    int r = ssl_result(ic->cs, SSL_accept(ic->cs), &cwant);
    if (r < 0) {
      snprintf(why, sizeof(why), "the container's TLS client refused the per-run CA (%s)",
               ERR_error_string(ERR_get_error(), NULL));
      ic_free(ic, why);
      return;
    }
    if (r == 0)
      goto wait;
    ic->st = IC_RELAY;
    ic->deadline = now_mono() + IC_HEAD_TIMEOUT;
  }
  const char *reason = NULL;
  double before_up = (double)ic->up, before_down = (double)ic->down;
  if (!pump(ic, &cwant, &uwant, &reason)) {
    if (reason == NULL && ic->cs)
      SSL_shutdown(ic->cs); /* the end, or a refusal answered */
    ic_free(ic, reason);
    return;
  }
  if (!ic->in_head && ((double)ic->up != before_up || (double)ic->down != before_down))
    ic->deadline = now_mono() + IC_IDLE_TIMEOUT;
  else if (ic->in_head && ic->head_len == 0 && ((double)ic->down != before_down))
    ic->deadline = now_mono() + IC_IDLE_TIMEOUT;
wait:
  set_interest(ic, &ic->cw, &ic->cw_ev, cwant);
  set_interest(ic, &ic->uw, &ic->uw_ev, uwant);
}

static void ic_on_client(struct broker *b, struct watch *w, uint32_t ev) {
  if (!from_cw(w)->closed)
    step(from_cw(w));
}

static void ic_on_upstream(struct broker *b, struct watch *w, uint32_t ev) {
  if (!from_uw(w)->closed)
    step(from_uw(w));
}

static void intercept_start(struct broker *b, int client_fd, int upstream_fd, const char *host, uint16_t port,
                            const char *via, const char *addr, const char *rule, double started) {
  struct tls_state *t = b->tls;
  struct icon *ic = calloc(1, sizeof(*ic));
  if (ic == NULL || t->n_live >= INTERCEPT_MAX) {
    struct audit_record r = {.event = "connect", .decision = "deny", .via = via, .host = host, .port = port,
                             .sni = host, .addr = addr, .rule = rule, .intercepted = true,
                             .reason = ic ? "too many intercepted connections (at most 64 at once)" : "out of memory",
                             .bytes_up = -1, .bytes_down = -1, .duration_ms = -1};
    audit_write(b, &r);
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    setsockopt(client_fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    close(client_fd);
    close(upstream_fd);
    free(ic);
    return;
  }
  ic->b = b;
  ic->cw = (struct watch){ic_on_client, client_fd};
  ic->uw = (struct watch){ic_on_upstream, upstream_fd};
  ic->port = port;
  ic->started = started;
  ic->deadline = now_mono() + IC_HANDSHAKE_TIMEOUT;
  snprintf(ic->host, sizeof(ic->host), "%s", host);
  snprintf(ic->via, sizeof(ic->via), "%s", via);
  snprintf(ic->addr, sizeof(ic->addr), "%s", addr ? addr : "");
  snprintf(ic->rule, sizeof(ic->rule), "%s", rule ? rule : "");
  ic->up_cap = BROKER_BUF + 2 * BROKER_HEAD_MAX + IC_CHUNK + 8192;
  ic->upbuf = malloc(ic->up_cap);
  /* A read of IC_CHUNK may add the held bytes and chunk framing to what it brings. */
  ic->downbuf = malloc(BROKER_BUF + 2 * IC_CHUNK + sizeof(ic->hold) + 1024);
  icon_http_init(ic);
  ic->next = t->live;
  if (t->live)
    t->live->prev = ic;
  t->live = ic;
  t->n_live++;
  upstream_trust(t);
  ic->us = SSL_new(t->client);
  if (ic->upbuf == NULL || ic->downbuf == NULL || ic->us == NULL) {
    ic_free(ic, "out of memory");
    return;
  }
  SSL_set_fd(ic->us, upstream_fd);
  SSL_set_tlsext_host_name(ic->us, ic->host);
  SSL_set1_host(ic->us, ic->host);
  if (broker_watch(b, &ic->cw, 0) < 0 || broker_watch(b, &ic->uw, EPOLLOUT) < 0) {
    ic_free(ic, "epoll");
    return;
  }
  ic->uw_ev = EPOLLOUT;
  step(ic);
}

static double intercept_next_deadline(struct broker *b) {
  struct tls_state *t = b->tls;
  double next = 0;
  for (struct icon *ic = t->live; ic; ic = ic->next)
    if (next == 0 || ic->deadline < next)
      next = ic->deadline;
  return next;
}

static void intercept_check_deadlines(struct broker *b, double now) {
  struct tls_state *t = b->tls;
  reap(t); /* after the round of events that closed them */
  for (struct icon *ic = t->live, *next; ic; ic = next) {
    next = ic->next;
    if (now < ic->deadline)
      continue;
    ic_free(ic, ic->st != IC_RELAY                 ? "the TLS handshakes did not finish within 10 s"
                : ic->in_head && (ic->head_len || !ic->up) ? "a request head did not arrive within 10 s"
                                                           : "idle for 120 s");
  }
}

static void intercept_close_all(struct broker *b, const char *why) {
  struct tls_state *t = b->tls;
  while (t->live)
    ic_free(t->live, why);
  reap(t);
}

static size_t intercept_count(struct broker *b) { return ((struct tls_state *)b->tls)->n_live; }

/* What tls.c looks up after dlopen. */
__attribute__((visibility("default"))) const struct broker_tls_ops codemode_broker_tls_ops = {
    .init = intercept_init,
    .start = intercept_start,
    .next_deadline = intercept_next_deadline,
    .check_deadlines = intercept_check_deadlines,
    .close_all = intercept_close_all,
    .count = intercept_count,
};
