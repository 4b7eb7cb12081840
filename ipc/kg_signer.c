/*  kg_signer: HMAC-SHA256 over the four dict frames, and replay detection.

    The keyed HMAC state (key already absorbed into the inner and outer
    hashes) is computed once and copied per message, so signing costs only
    the hashing of the frames themselves.

    Replay history: a ring of the last N accepted MACs (32 raw bytes each)
    plus an open-addressing hash set (linear probing, backward-shift
    deletion) of ring indexes. The MAC bytes are uniformly distributed and an
    attacker cannot choose them without the key, so their first 8 bytes are
    the hash. Lookup, insert and evict are O(1) and allocate nothing.
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
  unsigned long macs;                   /*  HMACs computed                 */             /*  BLAKE2b of the key: same key?  */
  /*  Replay history; capacity 0 disables it. */
  size_t capacity;                      /*  ring slots                      */
  size_t count;                         /*  ring slots in use               */
  size_t head;                          /*  next slot to write (oldest)     */
  unsigned char (*ring)[KG_MAC_BYTES];
  uint32_t *table;                      /*  ring index + 1; 0 = empty       */
  size_t table_mask;                    /*  table size - 1 (power of two)   */
};

static pthread_once_t s_sodium_once = PTHREAD_ONCE_INIT;
static int s_sodium_rc;

static void
s_sodium_init(void)
{
  s_sodium_rc = sodium_init();
}

kg_signer_t *
kg_signer_new(const void *key, size_t key_len, size_t replay_history)
{
  pthread_once(&s_sodium_once, s_sodium_init);
  if (s_sodium_rc < 0)
    return NULL;
  /*  The table stores ring indexes as uint32 + 1 and must stay half empty. */
  if (replay_history > (SIZE_MAX >> 2) || replay_history >= UINT32_MAX / 2)
    return NULL;
  kg_signer_t *self = calloc(1, sizeof *self);
  if (!self)
    return NULL;
  self->enabled = key_len > 0;
  if (self->enabled) {
    crypto_auth_hmacsha256_init(&self->keyed, key, key_len);
    crypto_generichash(self->key_id, sizeof self->key_id, key, key_len, NULL, 0);
  }
  if (self->enabled && replay_history > 0) {
    size_t tsize = 16;
    while (tsize < replay_history * 2)
      tsize *= 2;
    self->capacity = replay_history;
    self->ring = calloc(replay_history, KG_MAC_BYTES);
    self->table = calloc(tsize, sizeof *self->table);
    self->table_mask = tsize - 1;
    if (!self->ring || !self->table) {
      kg_signer_destroy(&self);
      return NULL;
    }
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
  free(self->ring);
  free(self->table);
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

static size_t
s_slot(const kg_signer_t *self, const unsigned char *mac)
{
  assert(self);
  uint64_t h;
  memcpy(&h, mac, sizeof h);
  return (size_t) h & self->table_mask;
}

/*  True if mac is in the history. */
static bool
s_seen(const kg_signer_t *self, const unsigned char *mac)
{
  assert(self);
  for (size_t i = s_slot(self, mac);; i = (i + 1) & self->table_mask) {
    uint32_t v = self->table[i];
    if (v == 0)
      return false;
    if (memcmp(self->ring[v - 1], mac, KG_MAC_BYTES) == 0)
      return true;
  }
}

/*  Remove the table entry pointing at ring index idx (which must be there),
    shifting later entries of the probe run back so lookups stay correct. */
static void
s_unlink(kg_signer_t *self, size_t idx)
{
  assert(self);
  size_t mask = self->table_mask;
  size_t i = s_slot(self, self->ring[idx]);
  while (self->table[i] != idx + 1)
    i = (i + 1) & mask;
  for (size_t j = (i + 1) & mask;; j = (j + 1) & mask) {
    uint32_t v = self->table[j];
    if (v == 0)
      break;
    size_t home = s_slot(self, self->ring[v - 1]);
    /*  Entry at j may move to the hole at i only if its home slot is not in
        the cyclic range (i, j]. */
    bool in_range = i <= j ? (home > i && home <= j) : (home > i || home <= j);
    if (!in_range) {
      self->table[i] = v;
      i = j;
    }
  }
  self->table[i] = 0;
}

static void
s_remember(kg_signer_t *self, const unsigned char *mac)
{
  assert(self);
  size_t idx = self->head;
  if (self->count == self->capacity)
    s_unlink(self, idx);            /*  evict the oldest, which lives here */
  else
    self->count++;
  memcpy(self->ring[idx], mac, KG_MAC_BYTES);
  size_t i = s_slot(self, mac);
  while (self->table[i] != 0)
    i = (i + 1) & self->table_mask;
  self->table[i] = (uint32_t) idx + 1;
  self->head = (idx + 1) % self->capacity;
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
  if (self->capacity == 0)
    return 0;
  if (s_seen(self, mac))
    return KG_EREPLAY;
  s_remember(self, mac);
  return 0;
}
