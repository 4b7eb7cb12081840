/*  kg_coord_keys: key derivation from the job's secret (libsodium). */
#include "kg_coord_keys.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zmq.h>

#include "kg_error.h"
#include "kg_file.h"

static void
s_derive(const unsigned char *root, const char *label, unsigned char *out)
{
  crypto_generichash(out, 32, (const unsigned char *) label, strlen(label), root, 32);
}

int
kg_coord_keys_load(const char *path, kg_coord_keys_t *keys, char *err, size_t errlen)
{
  struct stat st;
  if (stat(path, &st) != 0) {
    kg_errf(err, errlen, "cannot read the job secret %s", path);
    return KG_EUSAGE;
  }
  if (st.st_mode & 077) {
    kg_errf(err, errlen, "the job secret %s is readable by others (chmod 600 it)", path);
    return KG_EUSAGE;
  }
  char *data = NULL;
  size_t len = 0;
  if (kg_file_read(path, 1 << 16, &data, &len) != 0 || len < 32) {
    free(data);
    kg_errf(err, errlen, "the job secret %s must hold at least 32 bytes", path);
    return KG_EUSAGE;
  }
  if (sodium_init() < 0) {
    free(data);
    kg_errf(err, errlen, "libsodium cannot start");
    return KG_EINTERNAL;
  }
  unsigned char root[32], seed[32], pk[32], sk[32];
  crypto_generichash(root, sizeof root, (unsigned char *) data, len, NULL, 0);
  sodium_memzero(data, len);
  free(data);
  s_derive(root, "kguard coordinator curve v1", seed);
  crypto_box_seed_keypair(pk, sk, seed);
  zmq_z85_encode(keys->server_public, pk, 32);
  zmq_z85_encode(keys->server_secret, sk, 32);
  s_derive(root, "kguard node curve v1", seed);
  crypto_box_seed_keypair(pk, sk, seed);
  zmq_z85_encode(keys->client_public, pk, 32);
  zmq_z85_encode(keys->client_secret, sk, 32);
  memcpy(keys->client_public_raw, pk, 32);
  s_derive(root, "kguard decision mac v1", keys->mac_key);
  sodium_memzero(root, sizeof root);
  sodium_memzero(seed, sizeof seed);
  sodium_memzero(sk, sizeof sk);
  return 0;
}

void
kg_coord_keys_mac(const kg_coord_keys_t *keys, const char *text, size_t len, char *hex)
{
  unsigned char mac[crypto_auth_BYTES];
  crypto_auth(mac, (const unsigned char *) text, len, keys->mac_key);
  sodium_bin2hex(hex, 65, mac, sizeof mac);
}
