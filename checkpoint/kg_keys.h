/*  kg_keys: the user's checkpoint signing key pair (Ed25519, libsodium).

    Location: $KGUARD_KEY_DIR if set, else $XDG_CONFIG_HOME/kguard, else
    ~/.config/kguard. The directory is created mode 0700. Files:
      ckpt-ed25519.secret  64 raw bytes (libsodium secret key, which embeds
                           the public key), mode 0600
      ckpt-ed25519.public  32 raw bytes, mode 0644 (enough to verify)
    The key id printed and stored in manifests is "b2:" + the first 16 hex
    digits of BLAKE2b-256(public key).
*/
#ifndef KG_KEYS_H
#define KG_KEYS_H

#include <stdbool.h>
#include <stddef.h>

#define KG_KEYS_PUBLIC_BYTES 32
#define KG_KEYS_SECRET_BYTES 64
#define KG_KEYS_ID_LEN 20 /* "b2:" + 16 hex + NUL */

/*  Write the key directory path (from the environment, see above) into buf.
    Returns 0, KG_ENOTFOUND if neither XDG_CONFIG_HOME nor HOME is set, or
    KG_ETOOBIG. Creates nothing. */
int kg_keys_dir(char *buf, size_t size);

/*  Create a new key pair in dir (NULL: kg_keys_dir). Fails with KG_EEXISTS
    if a secret key is already there, unless force. The secret key file
    appears atomically (written to a temporary name, fsynced, renamed), so a
    concurrent reader never sees half a key. Returns 0 or a negative code. */
int kg_keys_generate(const char *dir, bool force);

/*  Load the secret key from dir (NULL: default). If none exists and create
    is true, generate one first (logging a notice). Returns 0,
    KG_ECKPT_NOKEY if absent, KG_ECKPT_MALFORMED if the file has the wrong
    size or mode looser than 0600, or -errno. */
int kg_keys_load_secret(const char *dir, bool create, unsigned char sk[KG_KEYS_SECRET_BYTES]);

/*  Load the public key from dir (NULL: default): the public file, else the
    tail of the secret file. Returns 0, KG_ECKPT_NOKEY or -errno. */
int kg_keys_load_public(const char *dir, unsigned char pk[KG_KEYS_PUBLIC_BYTES]);

/*  Key id of pk into out (KG_KEYS_ID_LEN bytes). */
void kg_keys_id(const unsigned char pk[KG_KEYS_PUBLIC_BYTES], char out[KG_KEYS_ID_LEN]);

#endif
