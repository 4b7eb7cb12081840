/*  kg_signer: HMAC-SHA256 over the four dict frames.

    The keyed HMAC state (key already absorbed into the inner and outer
    hashes) is computed once and copied per message, so signing costs only
    the hashing of the frames themselves.
*/
#include "kg_signer.h"

#include <assert.h>
#include <pthread.h>
#include <sodium.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kg_error.h"

#define KG_MAC_BYTES crypto_auth_hmacsha256_BYTES

struct kg_signer_t {
  bool enabled;
  crypto_auth_hmacsha256_state keyed;   /*  state after init with the key  */
  unsigned char key_id[KG_SIGNER_KEY_ID_BYTES];
  unsigned long macs;                   /*  HMACs computed                 */
};

static pthread_once_t s_sodium_once = PTHREAD_ONCE_INIT;
static int s_sodium_rc;

static void
s_sodium_init(void)
{
  s_sodium_rc = sodium_init();
}

kg_signer_t *
kg_signer_new(const void *key, size_t key_len)
{
  pthread_once(&s_sodium_once, s_sodium_init);
  if (s_sodium_rc < 0)
    return NULL;
  kg_signer_t *self = calloc(1, sizeof *self);
  if (!self)
    return NULL;
  self->enabled = key_len > 0;
  if (self->enabled) {
    crypto_auth_hmacsha256_init(&self->keyed, key, key_len);
    crypto_generichash(self->key_id, sizeof self->key_id, key, key_len, NULL, 0);
  }
  return self;
}

void
kg_signer_destroy(kg_signer_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_signer_t *self = *self_p;
  sodium_memzero(&self->keyed, sizeof self->keyed);
  free(self);
  *self_p = NULL;
}

bool
kg_signer_enabled(const kg_signer_t *self)
{
  return self && self->enabled;
}

unsigned long
kg_signer_mac_count(const kg_signer_t *self)
{
  assert(self);
  return self->macs;
}

const unsigned char *
kg_signer_key_id(const kg_signer_t *self)
{
  assert(self);
  return kg_signer_enabled(self) ? self->key_id : NULL;
}

bool
kg_signer_same_key(const kg_signer_t *a, const kg_signer_t *b)
{
  if (!kg_signer_enabled(a) || !kg_signer_enabled(b))
    return false;
  return a == b || sodium_memcmp(a->key_id, b->key_id, sizeof a->key_id) == 0;
}

static void
s_mac(kg_signer_t *self, const kg_frame_t parts[4], unsigned char mac[KG_MAC_BYTES])
{
  assert(self);
  crypto_auth_hmacsha256_state st = self->keyed;
  self->macs++;
  for (int i = 0; i < 4; i++)
    if (parts[i].size > 0)
      crypto_auth_hmacsha256_update(&st, parts[i].data, parts[i].size);
  crypto_auth_hmacsha256_final(&st, mac);
  sodium_memzero(&st, sizeof st);
}

void
kg_signer_sign(kg_signer_t *self, const kg_frame_t parts[4], char out[65])
{
  if (!self->enabled) {
    out[0] = '\0';
    return;
  }
  unsigned char mac[KG_MAC_BYTES];
  s_mac(self, parts, mac);
  sodium_bin2hex(out, 65, mac, sizeof mac);
}

int
kg_signer_verify(kg_signer_t *self, const void *sig, size_t sig_len,
                 const kg_frame_t parts[4])
{
  if (!self->enabled)
    return 0;
  if (sig_len == 0)
    return KG_ENOSIG;
  if (sig_len != 2 * KG_MAC_BYTES)
    return KG_EBADSIG;
  /*  Decode first: sodium_hex2bin accepts either case, so the comparison
      is of the raw bytes (constant time), not of a particular spelling.
      Rejecting non-hex early reveals nothing about the expected MAC. */
  unsigned char given[KG_MAC_BYTES];
  size_t got = 0;
  if (sodium_hex2bin(given, sizeof given, sig, sig_len, NULL, &got, NULL) != 0
      || got != KG_MAC_BYTES)
    return KG_EBADSIG;
  unsigned char mac[KG_MAC_BYTES];
  s_mac(self, parts, mac);
  if (sodium_memcmp(mac, given, KG_MAC_BYTES) != 0)
    return KG_EBADSIG;
  return 0;
}
