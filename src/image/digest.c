/* SHA-256 digests, "sha256:<hex>", with OpenSSL's EVP interface. */
#include <ctype.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image/image.h"

struct digest_ctx {
  EVP_MD_CTX *md;
};

bool digest_valid(const char *d) {
  if (d == NULL || strncmp(d, "sha256:", 7) != 0 || strlen(d) != 7 + DIGEST_HEX_LEN)
    return false;
  /* Lower-case hex only: the digest names a file in the store, and two spellings of one digest
   * must not be two files. */
  for (const char *p = d + 7; *p; p++)
    if (!isdigit((unsigned char)*p) && !(*p >= 'a' && *p <= 'f'))
      return false;
  return true;
}

struct digest_ctx *digest_new(void) {
  struct digest_ctx *d = calloc(1, sizeof(*d));
  if (d == NULL || (d->md = EVP_MD_CTX_new()) == NULL || EVP_DigestInit_ex(d->md, EVP_sha256(), NULL) != 1)
    abort();
  return d;
}

void digest_update(struct digest_ctx *d, const void *buf, size_t len) {
  if (len && EVP_DigestUpdate(d->md, buf, len) != 1)
    abort();
}

char *digest_finish(struct digest_ctx *d) {
  unsigned char raw[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_DigestFinal_ex(d->md, raw, &n) != 1 || n != 32)
    abort();
  EVP_MD_CTX_free(d->md);
  free(d);
  char *out = malloc(7 + 2 * 32 + 1);
  if (out == NULL)
    abort();
  memcpy(out, "sha256:", 7);
  for (unsigned i = 0; i < n; i++)
    snprintf(out + 7 + 2 * i, 3, "%02x", raw[i]);
  return out;
}

char *digest_of_buffer(const void *buf, size_t len) {
  struct digest_ctx *d = digest_new();
  digest_update(d, buf, len);
  return digest_finish(d);
}
