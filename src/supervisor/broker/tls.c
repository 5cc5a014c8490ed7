/* Loading the TLS interceptor (intercept.c, built as codemode-broker-tls.so) when a secret is
 * bound to a host: the broker of a plain allowlist never maps OpenSSL (measured: libssl and
 * libcrypto are most of a broker's loader work). The module is found next to our binary, the
 * same directory create found us in; it uses audit_write, now_mono, broker_(re|un)watch,
 * egress_check_host and egress_host_matches from this executable (exported for it, Makefile). */
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "supervisor/broker/broker.h"

int tls_load(struct broker *b, char *why, size_t why_len) {
  char self[PATH_MAX], path[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) {
    snprintf(why, why_len, "TLS interception: cannot tell where codemode-broker is");
    return -1;
  }
  self[n] = '\0';
  snprintf(path, sizeof(path), "%s/codemode-broker-tls.so", dirname(self));
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    snprintf(why, why_len, "TLS interception: %s", dlerror());
    return -1;
  }
  b->tls_ops = dlsym(h, BROKER_TLS_OPS_SYMBOL);
  if (b->tls_ops == NULL) {
    snprintf(why, why_len, "TLS interception: %s has no %s", path, BROKER_TLS_OPS_SYMBOL);
    return -1;
  }
  return 0;
}

const struct secret_binding *intercept_binding(struct broker *b, const char *host) {
  for (size_t i = 0; i < b->n_secrets; i++)
    if (egress_host_matches(b->secrets[i].host, host))
      return &b->secrets[i];
  return NULL;
}
