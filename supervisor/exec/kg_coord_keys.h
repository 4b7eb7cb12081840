/*  kg_coord_keys: the job's keys, derived from its shared secret file.

    Every node of a job is given the same secret file (at least 32 bytes,
    readable by its owner only; e.g. `head -c 32 /dev/urandom > secret`,
    distributed like an SSH key or a Kubernetes Secret). From it, with
    libsodium's BLAKE2b and crypto_box_seed_keypair:
      - the coordinator's CURVE key pair (server),
      - the nodes' CURVE key pair (clients; the coordinator's ZAP handler
        admits only this public key, so nobody without the secret connects),
      - a MAC key for the decisions written to shared storage.
    The secret never travels; there is no unauthenticated control port.
*/
#ifndef KG_COORD_KEYS_H
#define KG_COORD_KEYS_H

#include <stddef.h>

typedef struct {
  char server_public[41], server_secret[41];   /* Z85, for ZMQ_CURVE_*     */
  char client_public[41], client_secret[41];
  unsigned char client_public_raw[32];         /* what ZAP compares          */
  unsigned char mac_key[32];
} kg_coord_keys_t;

/*  Derive keys from the secret file at path. Returns 0, or KG_EUSAGE with
    a message naming the problem (missing, too short, readable by others)
    in err. */
int kg_coord_keys_load(const char *path, kg_coord_keys_t *keys, char *err, size_t errlen);

/*  MAC of text (len bytes) as 64 hex digits + NUL into hex (65 bytes). */
void kg_coord_keys_mac(const kg_coord_keys_t *keys, const char *text, size_t len, char *hex);

#endif
