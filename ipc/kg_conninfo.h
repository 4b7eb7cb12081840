/*  kg_conninfo: a Jupyter connection file (transport, ip, five ports,
    signature scheme, key).

    Reading rejects malformed files with a message naming the field; writing is
    atomic (temporary file in the same directory, fsync, rename) with mode 0600,
    because the file holds the signing key.
*/
#ifndef KG_CONNINFO_H
#define KG_CONNINFO_H

#include <stddef.h>

/*  The five channels, in the order used everywhere in kguard. */
typedef enum {
  KG_CH_SHELL = 0,
  KG_CH_IOPUB,
  KG_CH_STDIN,
  KG_CH_CONTROL,
  KG_CH_HB,
  KG_CH_COUNT
} kg_channel_t;

/*  "shell", "iopub", "stdin", "control", "hb". Static storage. */
const char *kg_channel_name(kg_channel_t channel);

typedef struct {
  char transport[8];            /*  "tcp" or "ipc"                         */
  char ip[256];                 /*  address (tcp) or path prefix (ipc)     */
  int ports[KG_CH_COUNT];       /*  indexed by kg_channel_t                */
  char scheme[32];              /*  "hmac-sha256", or "" with an empty key */
  unsigned char *key;           /*  owned; key_len bytes, may be empty     */
  size_t key_len;               /*  0 means: no signing                    */
  char kernel_name[128];        /*  optional, "" if absent                 */
} kg_conninfo_t;

/*  Create an empty connection info (tcp, 127.0.0.1, ports 0, no key).
    Returns NULL on allocation failure. Owned by the caller. */
kg_conninfo_t *kg_conninfo_new(void);

/*  Free self and set *self_p to NULL. Safe on NULL and on a NULL *self_p. */
void kg_conninfo_destroy(kg_conninfo_t **self_p);

/*  Read the connection file at path into self (replacing its contents).
    Returns 0; -errno if the file cannot be read; KG_ECONNFILE if it is not a
    JSON object or a field is missing, of the wrong type or out of range, with
    a message such as "shell_port: expected an integer in 1..65535" written
    into err (errlen bytes, always NUL-terminated). Accepts key "" (no
    signing) and signature_scheme "hmac-sha256"; any other scheme is
    KG_ESCHEME. */
int kg_conninfo_load(kg_conninfo_t *self, const char *path, char *err, size_t errlen);

/*  Write self to path atomically with mode 0600, in the format jupyter_client
    writes (ports as integers, key as a string). Returns 0 or -errno; on
    failure no file exists under path that was not there before. */
int kg_conninfo_save(const kg_conninfo_t *self, const char *path);

/*  Replace the key with 32 random bytes, hex-encoded (64 ASCII characters,
    as jupyter_client does with a uuid), and set scheme "hmac-sha256".
    Returns 0 or KG_ENOMEM. */
int kg_conninfo_set_random_key(kg_conninfo_t *self);

/*  The key of a relay's inner link: a copy of front's key and scheme when
    front has a key (so a relay can forward the inner peer's signatures to
    the front as they are, and the front's to the inner peer, instead of
    checking with one key and signing again with another), else a fresh
    random key as kg_conninfo_set_random_key. Returns 0 or KG_ENOMEM. */
int kg_conninfo_share_key(kg_conninfo_t *self, const kg_conninfo_t *front);

/*  Format the ZeroMQ endpoint of channel into buf: "tcp://IP:PORT" or, for
    the ipc transport, "ipc://IP-PORT" (jupyter_client's convention). Returns
    0, or KG_ETOOBIG if buf is too small. */
int kg_conninfo_endpoint(const kg_conninfo_t *self, kg_channel_t channel,
                         char *buf, size_t len);

#endif
