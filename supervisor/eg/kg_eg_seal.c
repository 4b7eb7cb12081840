/*  kg_eg_seal: RSA-wrapped AES payload for the gateway, through libcrypto. */
#include "kg_eg_seal.h"

#include <cJSON.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kg_error.h"

/*  Base64 of len bytes into a new NUL-terminated string, or NULL. */
static char *
s_b64(const unsigned char *data, size_t len)
{
  if (len > (size_t) INT32_MAX / 2)
    return NULL;
  char *out = malloc(4 * ((len + 2) / 3) + 1);
  if (out)
    EVP_EncodeBlock((unsigned char *) out, data, (int) len);
  return out;
}

/*  The key's base64 body: PEM armour lines and whitespace dropped. Returns a
    new string or NULL. */
static char *
s_key_body(const char *text)
{
  size_t n = strlen(text);
  char *body = malloc(n + 1), *w = body;
  if (!body)
    return NULL;
  for (const char *p = text; *p;) {
    if (strncmp(p, "-----", 5) == 0) {           /* skip an armour line */
      const char *end = strstr(p + 5, "-----");
      p = end ? end + 5 : p + strlen(p);
      continue;
    }
    if (!strchr(" \t\r\n", *p))
      *w++ = *p;
    p++;
  }
  *w = '\0';
  return body;
}

/*  The gateway's RSA public key of at least min_bits, or NULL with err. */
static EVP_PKEY *
s_load_key(const char *pubkey_b64, unsigned min_bits, char *err, size_t errlen)
{
  char *body = s_key_body(pubkey_b64);
  size_t blen = body ? strlen(body) : 0;
  unsigned char *der = body ? malloc(blen / 4 * 3 + 3) : NULL;
  EVP_PKEY *key = NULL;
  if (body && der && blen > 0 && blen % 4 == 0 && blen < (size_t) INT32_MAX) {
    int dlen = EVP_DecodeBlock(der, (const unsigned char *) body, (int) blen);
    /* EVP_DecodeBlock counts the '=' padding as zero bytes. */
    for (size_t i = blen; dlen > 0 && i > 0 && body[i - 1] == '='; i--)
      dlen--;
    const unsigned char *p = der;
    if (dlen > 0)
      key = d2i_PUBKEY(NULL, &p, dlen);
    if (key && EVP_PKEY_get_base_id(key) != EVP_PKEY_RSA) {
      EVP_PKEY_free(key);
      key = NULL;
    }
  }
  if (!key)
    kg_errf(err, errlen, "--public-key: not the base64 of an RSA public key "
                         "(DER SubjectPublicKeyInfo, as the gateway sends it)");
  int bits = key ? EVP_PKEY_get_bits(key) : 0;
  if (key && (bits <= 0 || (unsigned) bits < min_bits)) {
    if (bits >= 1024 && min_bits > 1024)
      kg_errf(err, errlen, "--public-key: the gateway's RSA key has %d bits; keys under %u "
                           "bits are refused. Enterprise Gateway and gateway_provisioners "
                           "make 1024-bit keys: add --allow-rsa-1024 to the kernelspec's "
                           "argv to accept them (see docs/eg.md)", bits, min_bits);
    else
      kg_errf(err, errlen, "--public-key: the gateway's RSA key has %d bits; at least %u "
                           "are needed", bits, min_bits);
    EVP_PKEY_free(key);
    key = NULL;
  }
  free(body);
  free(der);
  return key;
}

/*  AES-128-ECB with PKCS#7 padding of plain under aes_key. Returns a new
    buffer (length in *out_len) or NULL. */
static unsigned char *
s_aes_ecb(const unsigned char aes_key[16], const void *plain, size_t len, size_t *out_len)
{
  if (len > (size_t) INT32_MAX - 32)
    return NULL;
  unsigned char *out = malloc(len + 16);
  EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
  int n1 = 0, n2 = 0;
  bool ok = out && ctx
            && EVP_EncryptInit_ex(ctx, EVP_aes_128_ecb(), NULL, aes_key, NULL) == 1
            && EVP_EncryptUpdate(ctx, out, &n1, plain, (int) len) == 1
            && EVP_EncryptFinal_ex(ctx, out + n1, &n2) == 1;
  EVP_CIPHER_CTX_free(ctx);
  if (!ok) {
    free(out);
    return NULL;
  }
  *out_len = (size_t) n1 + (size_t) n2;
  return out;
}

/*  RSA PKCS#1 v1.5 encryption of the AES key. Returns a new buffer or NULL. */
static unsigned char *
s_wrap_key(EVP_PKEY *key, const unsigned char aes_key[16], size_t *out_len)
{
  EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new(key, NULL);
  unsigned char *out = NULL;
  size_t n = 0;
  if (ctx && EVP_PKEY_encrypt_init(ctx) == 1
      && EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PADDING) == 1
      && EVP_PKEY_encrypt(ctx, NULL, &n, aes_key, 16) == 1 && (out = malloc(n))
      && EVP_PKEY_encrypt(ctx, out, &n, aes_key, 16) != 1) {
    free(out);
    out = NULL;
  }
  EVP_PKEY_CTX_free(ctx);
  *out_len = n;
  return out;
}

int
kg_eg_seal(const char *pubkey_b64, unsigned min_bits, const void *plain, size_t len,
           char **payload_p, char *err, size_t errlen)
{
  *payload_p = NULL;
  EVP_PKEY *key = s_load_key(pubkey_b64, min_bits, err, errlen);
  if (!key)
    return KG_EUSAGE;
  unsigned char aes_key[16];
  size_t ct_len = 0, wk_len = 0;
  unsigned char *ct = NULL, *wk = NULL;
  char *ct64 = NULL, *wk64 = NULL, *json = NULL;
  int rc = KG_EINTERNAL;
  if (RAND_bytes(aes_key, sizeof aes_key) == 1
      && (ct = s_aes_ecb(aes_key, plain, len, &ct_len))
      && (wk = s_wrap_key(key, aes_key, &wk_len))) {
    rc = KG_ENOMEM;
    cJSON *o = cJSON_CreateObject();
    if ((ct64 = s_b64(ct, ct_len)) && (wk64 = s_b64(wk, wk_len)) && o
        && cJSON_AddNumberToObject(o, "version", 1) && cJSON_AddStringToObject(o, "key", wk64)
        && cJSON_AddStringToObject(o, "conn_info", ct64)
        && (json = cJSON_PrintUnformatted(o))
        && (*payload_p = s_b64((const unsigned char *) json, strlen(json))))
      rc = 0;
    cJSON_Delete(o);
  } else {
    unsigned long e = ERR_get_error();
    const char *why = e ? ERR_reason_error_string(e) : NULL;
    kg_errf(err, errlen, "encrypting the connection info failed: %s",
            why ? why : "libcrypto error");
  }
  OPENSSL_cleanse(aes_key, sizeof aes_key);
  EVP_PKEY_free(key);
  free(ct);
  free(wk);
  free(ct64);
  free(wk64);
  free(json);
  return rc;
}
