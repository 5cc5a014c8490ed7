/* supervisor/broker/proto.c: the SNI of a ClientHello (whole, split over two records, cut
 * short, without SNI, with bytes that are no name), the Host of an HTTP request, an HTTP proxy
 * request (CONNECT, absolute URI rewritten to origin form with Connection: close and no Proxy-*
 * headers, refusals), and the secret substitution that touches only the bound header. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka.h needs the four above first. */
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "supervisor/broker/broker.h"
#include "supervisor/broker/http1.h"

/* A ClientHello with the given SNI (NULL: no extension), as `records` TLS records. */
static size_t client_hello(uint8_t *out, const char *sni, int records) {
  uint8_t hs[512];
  size_t p = 4;
  hs[p++] = 3, hs[p++] = 3;             /* legacy_version */
  memset(hs + p, 0xab, 32), p += 32;    /* random */
  hs[p++] = 0;                          /* session_id */
  hs[p++] = 0, hs[p++] = 2, hs[p++] = 0x13, hs[p++] = 0x01; /* cipher_suites */
  hs[p++] = 1, hs[p++] = 0;             /* compression */
  size_t ext_len_at = p;
  p += 2;
  /* An unrelated extension first (supported_versions). */
  hs[p++] = 0, hs[p++] = 43, hs[p++] = 0, hs[p++] = 3, hs[p++] = 2, hs[p++] = 3, hs[p++] = 4;
  if (sni) {
    size_t n = strlen(sni);
    hs[p++] = 0, hs[p++] = 0;                               /* server_name */
    hs[p++] = 0, hs[p++] = (uint8_t)(n + 5);                /* extension length */
    hs[p++] = 0, hs[p++] = (uint8_t)(n + 3);                /* list length */
    hs[p++] = 0;                                            /* host_name */
    hs[p++] = 0, hs[p++] = (uint8_t)n;
    memcpy(hs + p, sni, n), p += n;
  }
  size_t ext_len = p - ext_len_at - 2;
  hs[ext_len_at] = (uint8_t)(ext_len >> 8), hs[ext_len_at + 1] = (uint8_t)ext_len;
  size_t body = p - 4;
  hs[0] = 1, hs[1] = 0, hs[2] = (uint8_t)(body >> 8), hs[3] = (uint8_t)body;
  size_t o = 0, per = (p + records - 1) / records;
  for (size_t at = 0; at < p; at += per) {
    size_t n = p - at < per ? p - at : per;
    out[o++] = 0x16, out[o++] = 3, out[o++] = 1, out[o++] = (uint8_t)(n >> 8), out[o++] = (uint8_t)n;
    memcpy(out + o, hs + at, n), o += n;
  }
  return o;
}

static void test_sni(void **state) {
  (void)state;
  uint8_t buf[1024];
  char sni[256];
  size_t n = client_hello(buf, "API.Allowed.test", 1);
  assert_int_equal(proto_tls_sni(buf, n, sni, sizeof(sni)), 1);
  assert_string_equal(sni, "api.allowed.test");
  for (size_t cut = 0; cut < n; cut++) /* every prefix: "more, please", never a wrong answer */
    assert_int_equal(proto_tls_sni(buf, cut, sni, sizeof(sni)), 0);
  n = client_hello(buf, "split.example.com", 2);
  assert_int_equal(proto_tls_sni(buf, n, sni, sizeof(sni)), 1);
  assert_string_equal(sni, "split.example.com");
  n = client_hello(buf, NULL, 1);
  assert_int_equal(proto_tls_sni(buf, n, sni, sizeof(sni)), 1);
  assert_string_equal(sni, "");
  n = client_hello(buf, "bad\"name", 1);
  assert_int_equal(proto_tls_sni(buf, n, sni, sizeof(sni)), -1);
  assert_int_equal(proto_tls_sni((const uint8_t *)"GET / HTTP/1.1\r\n", 16, sni, sizeof(sni)), -1);
  /* A length pointing past the record: refused, not read past. */
  n = client_hello(buf, "a.example.com", 1);
  buf[5 + 4 + 2 + 32] = 200; /* session_id length */
  assert_int_equal(proto_tls_sni(buf, n, sni, sizeof(sni)), -1);
}

/* Each head refused with a reason, by a fresh stream (a decrypted one when tls). */
static void assert_all_refused(const char *const *bad, size_t n, bool tls) {
  for (size_t i = 0; i < n; i++) {
    struct http1_stream s;
    struct http1_request rq;
    const char *why = NULL;
    http1_stream_init(&s);
    s.tls = tls;
    assert_int_equal(http1_head(&s, (const uint8_t *)bad[i], strlen(bad[i]), &rq, &why), -1);
    assert_non_null(why);
  }
}

static void test_http1_head(void **state) {
  (void)state;
  struct http1_request rq;
  const char *why = NULL;
  const char *req = "GET /x HTTP/1.1\r\nUser-Agent: t\r\nhost:  Plain.Allowed.test:8080 \r\n\r\n";
  assert_int_equal(http1_peek((const uint8_t *)req, strlen(req), &rq, &why), 1);
  assert_string_equal(rq.host, "plain.allowed.test");
  assert_int_equal(rq.host_port, 8080);
  assert_true(rq.complete);
  assert_int_equal(http1_peek((const uint8_t *)req, 20, &rq, &why), 0);
  assert_int_equal(http1_peek((const uint8_t *)"\x16\x03\x01", 3, &rq, &why), -1);
  /* Another protocol's verb is not HTTP: it goes where a CIDR rule allows, not to a 400. */
  assert_int_equal(http1_looks_like((const uint8_t *)"PING raw\r\n", 10), -1);
  assert_int_equal(http1_looks_like((const uint8_t *)"OPTIONS * HTTP/1.1", 18), 1);
  assert_int_equal(http1_looks_like((const uint8_t *)"POS", 3), 0);
  const char *nohost = "GET / HTTP/1.0\r\n\r\n";
  assert_int_equal(http1_peek((const uint8_t *)nohost, strlen(nohost), &rq, &why), 1);
  assert_false(rq.has_host);
  /* The shapes a smuggler uses, each refused with a reason. */
  static const char *const bad[] = {
      "GET / HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n",
      "POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
      "POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
      "POST / HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a.test\r\nX: a\r\n b\r\n\r\n",
      "GET / HTTP/1.1\nHost: a.test\n\n",
      "GET / HTTP/1.1\r\nHost: a.test\rX: y\r\n\r\n",
      "GET / HTTP/1.1\r\nHost : a.test\r\n\r\n",
      "GET / HTTP/1.1\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a.test\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n",
      "\r\nGET / HTTP/1.1\r\nHost: a.test\r\n\r\n",
  };
  assert_all_refused(bad, sizeof(bad) / sizeof(bad[0]), false);
}

/* Pipelined requests: each head found where the previous message (its body) ends. */
static void test_http1_stream(void **state) {
  (void)state;
  const char *two = "POST /a HTTP/1.1\r\nHost: a.test\r\nContent-Length: 4\r\n\r\nGET GET /b HTTP/1.1\r\nHost: b.test\r\n\r\n";
  const uint8_t *p = (const uint8_t *)two;
  size_t len = strlen(two);
  struct http1_stream s;
  http1_stream_init(&s);
  struct http1_request rq;
  const char *why = NULL;
  assert_int_equal(http1_head(&s, p, len, &rq, &why), 1);
  assert_false(rq.complete);
  size_t off = rq.head_len;
  bool done = false;
  assert_int_equal(http1_body(&s, p + off, 2, &done, &why), 2); /* the body, in pieces */
  assert_false(done);
  off += 2;
  assert_int_equal(http1_body(&s, p + off, len - off, &done, &why), 2);
  assert_true(done);
  off += 2;
  assert_int_equal(http1_head(&s, p + off, len - off, &rq, &why), 1);
  assert_string_equal(rq.host, "b.test");
  /* A chunked body, then a request after one that closes the connection: refused. */
  const char *ch = "POST / HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                   "3\r\nabc\r\n0\r\n\r\nGET / HTTP/1.1\r\nHost: b.test\r\n\r\n";
  p = (const uint8_t *)ch;
  len = strlen(ch);
  http1_stream_init(&s);
  assert_int_equal(http1_head(&s, p, len, &rq, &why), 1);
  off = rq.head_len;
  ssize_t n = http1_body(&s, p + off, len - off, &done, &why);
  assert_true(done);
  assert_int_equal(n, 13);
  off += (size_t)n;
  assert_int_equal(http1_head(&s, p + off, len - off, &rq, &why), -1);
}

static void test_proxy_request(void **state) {
  (void)state;
  struct proxy_request pr;
  struct http1_stream st;
  const char *why = NULL;
  const char *c = "CONNECT api.allowed.test:8443 HTTP/1.1\r\nHost: api.allowed.test:8443\r\n\r\n\x16\x03";
  assert_int_equal(proto_proxy_request((http1_stream_init(&st), &st), (const uint8_t *)c, strlen(c), &pr, &why), 1);
  assert_true(pr.connect);
  assert_string_equal(pr.host, "api.allowed.test");
  assert_int_equal(pr.port, 8443);
  assert_int_equal(pr.head_len, strlen(c) - 2);

  const char *g = "GET http://Plain.allowed.test/a/b?c=d HTTP/1.1\r\nHost: plain.allowed.test\r\n"
                  "Proxy-Connection: keep-alive\r\nProxy-Authorization: Basic eA==\r\nConnection: keep-alive\r\n"
                  "Accept: */*\r\n\r\nBODY";
  assert_int_equal(proto_proxy_request((http1_stream_init(&st), &st), (const uint8_t *)g, strlen(g), &pr, &why), 1);
  assert_false(pr.connect);
  assert_string_equal(pr.host, "plain.allowed.test");
  assert_int_equal(pr.port, 80);
  assert_string_equal(pr.rewritten, "GET /a/b?c=d HTTP/1.1\r\nHost: plain.allowed.test\r\nAccept: */*\r\n"
                                    "Connection: close\r\n\r\n");
  free(pr.rewritten);
  const char *nohost = "GET http://[2001:db8::1]:81 HTTP/1.0\r\n\r\n";
  assert_int_equal(proto_proxy_request((http1_stream_init(&st), &st), (const uint8_t *)nohost, strlen(nohost), &pr, &why), 1);
  assert_string_equal(pr.host, "2001:db8::1");
  assert_int_equal(pr.port, 81);
  assert_string_equal(pr.rewritten, "GET / HTTP/1.0\r\nHost: [2001:db8::1]:81\r\nConnection: close\r\n\r\n");
  free(pr.rewritten);

  static const char *const bad[] = {
      "GET /origin-form HTTP/1.1\r\n\r\n",      "GET https://x.test/ HTTP/1.1\r\n\r\n",
      "CONNECT x.test HTTP/1.1\r\n\r\n",        "GET http://user:pw@x.test/ HTTP/1.1\r\n\r\n",
      "GET http://x.test:99999/ HTTP/1.1\r\n\r\n", "\x16\x03\x01\x02\x00",
      "GET http://x.te\"st/ HTTP/1.1\r\n\r\n",
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    why = NULL;
    assert_int_equal(proto_proxy_request((http1_stream_init(&st), &st), (const uint8_t *)bad[i], strlen(bad[i]), &pr, &why), -1);
    assert_non_null(why);
  }
  assert_int_equal(proto_proxy_request((http1_stream_init(&st), &st), (const uint8_t *)"GET http://x.test/ HTTP/1.1\r\nA: b\r\n", 35, &pr, &why), 0);
}

/* Decrypted requests (the TLS interceptor's stream): the absolute form is https://, with the
 * same checks as any other head. */
static void test_http1_tls(void **state) {
  (void)state;
  struct http1_stream s;
  struct http1_request rq;
  const char *why = NULL;
  const char *abs = "GET https://API.allowed.test:8443/x?y HTTP/1.1\r\nHost: api.allowed.test:8443\r\n\r\n";
  http1_stream_init(&s);
  s.tls = true;
  assert_int_equal(http1_head(&s, (const uint8_t *)abs, strlen(abs), &rq, &why), 1);
  assert_true(rq.absolute);
  assert_string_equal(rq.url_host, "api.allowed.test");
  assert_int_equal(rq.url_port, 8443);
  const char *opt = "OPTIONS * HTTP/1.1\r\nHost: api.allowed.test\r\n\r\n";
  http1_stream_init(&s);
  s.tls = true;
  assert_int_equal(http1_head(&s, (const uint8_t *)opt, strlen(opt), &rq, &why), 1);
  assert_false(rq.absolute);
  static const char *const bad[] = {
      "GET http://api.allowed.test/ HTTP/1.1\r\nHost: api.allowed.test\r\n\r\n",
      "GET * HTTP/1.1\r\nHost: api.allowed.test\r\n\r\n",
      "GET / HTTP/1.1\nHost: api.allowed.test\n\n",
      "POST / HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
  };
  assert_all_refused(bad, sizeof(bad) / sizeof(bad[0]), true);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sni),
      cmocka_unit_test(test_http1_head),
      cmocka_unit_test(test_http1_stream),
      cmocka_unit_test(test_proxy_request),
      cmocka_unit_test(test_http1_tls),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
