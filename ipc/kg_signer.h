/*  kg_signer: HMAC-SHA256 signing and checking of Jupyter messages.

    The signature covers the four dict frames only (header, parent_header,
    metadata, content), never identities or buffers. An empty key means an
    empty signature and no check. Comparison is constant time.
    Replays are judged apart, by the sender's clock (kg_replay.h).
*/
#ifndef KG_SIGNER_H
#define KG_SIGNER_H

#include <stdbool.h>
#include <stddef.h>

/*  A borrowed view of one frame. */
typedef struct {
  const void *data;
  size_t size;
} kg_frame_t;

typedef struct kg_signer_t kg_signer_t;

/*  Create a signer for key (key_len bytes, any length; 0 disables signing).
    The key is copied. Returns NULL on allocation failure. */
kg_signer_t *kg_signer_new(const void *key, size_t key_len);

/*  Free self and set *self_p to NULL. Safe on NULL. */
void kg_signer_destroy(kg_signer_t **self_p);

/*  True if the signer has a non-empty key. */
bool kg_signer_enabled(const kg_signer_t *self);

/*  True if a and b sign with the same non-empty key (so a signature one
    checked is exactly the one the other would write: a relay may forward it
    instead of signing again). Compares keyed digests of the keys, not the
    keys, in constant time. False if either is NULL or disabled. */
bool kg_signer_same_key(const kg_signer_t *a, const kg_signer_t *b);

/*  How many HMACs self has computed (signing and checking), for tests and
    benchmarks that show what a relay path costs. */
unsigned long kg_signer_mac_count(const kg_signer_t *self);

/*  The 32-byte unkeyed digest (BLAKE2b) identifying self's key, for a
    message that must remember which key checked it after the signer is
    gone; NULL if signing is disabled. Borrowed, valid while self lives. */
#define KG_SIGNER_KEY_ID_BYTES 32
const unsigned char *kg_signer_key_id(const kg_signer_t *self);

/*  Write the lowercase hex HMAC of the four frames into out (64 characters
    and a NUL). With signing disabled, out is "". */
void kg_signer_sign(kg_signer_t *self, const kg_frame_t parts[4], char out[65]);

/*  Check signature sig (sig_len bytes, not NUL-terminated) against the four
    frames. Returns 0 if it matches, KG_ENOSIG if signing is enabled and sig
    is empty, KG_EBADSIG if it does not match (wrong length, not hex, or
    wrong value). With signing disabled, every signature passes. */
int kg_signer_verify(kg_signer_t *self, const void *sig, size_t sig_len,
                     const kg_frame_t parts[4]);

#endif
