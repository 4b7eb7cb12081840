/*  kg_keys: the user's checkpoint signing key pair (Ed25519, libsodium) and
    the public keys the user trusts.

    Key directory: $KGUARD_KEY_DIR if set, else $XDG_CONFIG_HOME/kguard,
    else ~/.config/kguard (the home from $HOME, else the passwd entry). It
    is created 0700 and must be private (kg_safepath.h: owned by the user,
    not writable by others, nor any directory above it): whoever can write
    it could replace the keys that decide what verifies. Files:
      ckpt-ed25519.secret  64 raw bytes (libsodium secret key, which embeds
                           the public key), mode 0600
      ckpt-ed25519.public  32 raw bytes, mode 0644 (enough to verify)
      trusted/NAME.pub     the public keys of other signers the user trusts
                           (a colleague, another node of a job), one
                           export line each (below), mode 0644
    The key id printed and stored in manifests is "b2:" + the first 16 hex
    digits of BLAKE2b-256(public key).

    The trust store's contract (also for programs that distribute keys,
    such as kguard exec's multi-node coordinator; see docs/checkpoints.md):
    - `kguard keys export` prints the user's public key as one line
        kguard-ckpt-ed25519 <base64 of the 32 bytes> <key id> <comment>
      (base64 with padding, libsodium's original variant; the comment is
      user@host and may be empty; only the first two fields are read).
    - `kguard keys import NAME FILE` (FILE "-": stdin) trusts the key of
      such a line (or of a raw 32-byte .public file) under NAME: 1-64 bytes
      of [A-Za-z0-9._-], not starting with '.'. Importing the key NAME
      already holds is a success that changes nothing; a different key
      under a taken NAME needs --replace; a key already trusted under
      another name is not added twice. `--trusted-dir DIR` imports into DIR
      instead of KEYDIR/trusted.
    - Verification (verify, list, latest, restore, resume-prepare,
      manifest, prune) accepts an archive whose manifest signature verifies
      with the user's own key or any trusted key, and names the signer.
      Trusted keys are read from KEYDIR/trusted/ and, when
      $KGUARD_TRUSTED_KEYS_DIR is set, from that directory too (a job's
      own keys, kept apart from the user's). Every directory read must be
      private; one that is not is an error, never skipped silently.
    - Only the user's own secret key ever signs: trusting a key lets its
      holder's archives be restored, nothing more.
*/
#ifndef KG_KEYS_H
#define KG_KEYS_H

#include <stdbool.h>
#include <stddef.h>

#define KG_KEYS_PUBLIC_BYTES 32
#define KG_KEYS_SECRET_BYTES 64
#define KG_KEYS_ID_LEN 20 /* "b2:" + 16 hex + NUL */
#define KG_KEYS_NAME_MAX 64
#define KG_KEYS_LINE_TYPE "kguard-ckpt-ed25519"
/* Longest export line: type, base64 (44), id (19), a comment of up to 256. */
#define KG_KEYS_LINE_MAX 400

/*  Write the key directory path (from the environment, see above) into buf.
    Returns 0, KG_ENOTFOUND if no home is known either, or KG_ETOOBIG.
    Creates nothing. */
int kg_keys_dir(char *buf, size_t size);

/*  Create a new key pair in dir (NULL: kg_keys_dir). Fails with KG_EEXISTS
    if a secret key is already there, unless force. The directory is
    created 0700 if missing and must be private (KG_EUNSAFEPATH otherwise).
    The secret key file appears atomically (written to a temporary name,
    fsynced, renamed), so a concurrent reader never sees half a key.
    Returns 0 or a negative code, with one line in why (may be NULL). */
int kg_keys_generate(const char *dir, bool force, char *why, size_t whylen);

/*  Load the secret key from dir (NULL: default). If none exists and create
    is true, generate one first (logging a notice). Returns 0,
    KG_ECKPT_NOKEY if absent, KG_ECKPT_MALFORMED if the file has the wrong
    size or mode looser than 0600, KG_EUNSAFEPATH for a directory others
    could change, or -errno; why (may be NULL) names the file and what to
    do. */
int kg_keys_load_secret(const char *dir, bool create, unsigned char sk[KG_KEYS_SECRET_BYTES],
                        char *why, size_t whylen);

/*  Load the public key from dir (NULL: default): the public file, else the
    tail of the secret file. Returns 0, KG_ECKPT_NOKEY, KG_EUNSAFEPATH or
    -errno, with why (may be NULL). */
int kg_keys_load_public(const char *dir, unsigned char pk[KG_KEYS_PUBLIC_BYTES],
                        char *why, size_t whylen);

/*  Key id of pk into out (KG_KEYS_ID_LEN bytes). */
void kg_keys_id(const unsigned char pk[KG_KEYS_PUBLIC_BYTES], char out[KG_KEYS_ID_LEN]);

/*  The export line of pk (with a trailing newline) into out; comment may
    be NULL or "" (no comment) and must not hold a newline. Returns 0 or
    KG_ETOOBIG. */
int kg_keys_format_line(const unsigned char pk[KG_KEYS_PUBLIC_BYTES], const char *comment,
                        char *out, size_t size);

/*  Parse a public key from data (len bytes): an export line (leading blank
    lines and '#' comment lines are skipped), or exactly 32 raw bytes.
    Returns 0, or KG_EUSAGE with why saying what is wrong. */
int kg_keys_parse(const void *data, size_t len, unsigned char pk[KG_KEYS_PUBLIC_BYTES],
                  char *why, size_t whylen);

/*  True if name is usable as a trusted key's name (see above). */
bool kg_keys_name_ok(const char *name);

/* ---- the keyring: the keys verification accepts ------------------------ */

typedef struct {
  char name[KG_KEYS_NAME_MAX + 1];     /* trusted name; "" for the user's own */
  char id[KG_KEYS_ID_LEN];             /* "b2:..." */
  unsigned char pk[KG_KEYS_PUBLIC_BYTES];
  char *file;                          /* where it was read, or NULL */
} kg_key_t;

typedef struct {
  kg_key_t *keys;                      /* the user's own first, when known */
  size_t count;
  bool own;                            /* keys[0] is the user's own key */
} kg_keyring_t;

/*  An empty keyring (NULL on ENOMEM). */
kg_keyring_t *kg_keyring_new(void);

/*  Add pk under name ("" or NULL: the user's own, which goes first), with
    the file it came from (copied; may be NULL). A key already present is
    not added again. Returns 0 or KG_ENOMEM. */
int kg_keyring_add(kg_keyring_t *self, const unsigned char pk[KG_KEYS_PUBLIC_BYTES],
                   const char *name, const char *file);

/*  The user's own public key of dir (NULL: default; absent is fine) and
    every trusted key: dir/trusted/ *.pub and $KGUARD_TRUSTED_KEYS_DIR/ *.pub
    (sorted by name). Returns the keyring (caller destroys), or NULL with
    *rc (KG_EUNSAFEPATH for a directory others could change, a malformed
    trusted key file, -errno) and why saying which file and what to do. */
kg_keyring_t *kg_keyring_load(const char *dir, int *rc, char *why, size_t whylen);

/*  The keyring's key whose id is id, or NULL. */
const kg_key_t *kg_keyring_find(const kg_keyring_t *self, const char *id);

/*  The key of the keyring (NULL: none) whose Ed25519 detached signature
    sig over the len bytes at msg verifies, or NULL. Every key is tried
    (each try is one verification; keyrings hold a few keys). */
const kg_key_t *kg_keyring_verify(const kg_keyring_t *self,
                                  const unsigned char sig[64], const void *msg, size_t len);

/*  One phrase saying which keys the keyring holds, for messages: "yours is
    b2:..., and 2 trusted keys", "you have no key of your own". */
void kg_keyring_describe(const kg_keyring_t *self, char *buf, size_t size);

/*  Free the keyring and NULL *p. Safe on NULL. */
void kg_keyring_destroy(kg_keyring_t **p);

/*  The trusted keys directory of dir (NULL: default): "<dir>/trusted". */
int kg_keys_trusted_dir(const char *dir, char *buf, size_t size);

/*  Trust pk under name in tdir (created 0700 when missing, must be
    private): tdir/NAME.pub holding its export line. Returns 0 (written),
    1 (NAME already holds this key: nothing changed), 2 (the key is trusted
    already under another name, written into *other: nothing changed),
    KG_EEXISTS (NAME holds another key and replace is false), KG_EUSAGE
    (bad name), or a negative code, with why. */
int kg_keys_trust(const char *tdir, const char *name,
                  const unsigned char pk[KG_KEYS_PUBLIC_BYTES], bool replace,
                  char other[KG_KEYS_NAME_MAX + 1], char *why, size_t whylen);

#endif
