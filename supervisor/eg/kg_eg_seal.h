/*  kg_eg_seal: the launcher payload Enterprise Gateway expects (launcher
    version 1): the connection info encrypted with a fresh AES-128 key (ECB,
    PKCS#7 padding), that key wrapped with the gateway's RSA public key
    (PKCS#1 v1.5), both base64 in {"version":1,"key":...,"conn_info":...},
    and that JSON base64-encoded. The only user of libcrypto in kguard; it
    lives in the separate kguard-eg executable. */
#ifndef KG_EG_SEAL_H
#define KG_EG_SEAL_H

#include <stddef.h>

/*  Seal plain (len bytes) for the gateway whose public key is pubkey_b64:
    the base64 of a DER SubjectPublicKeyInfo RSA key, as the gateway passes
    it (a PEM body, with or without its BEGIN/END lines and newlines).
    A key shorter than min_bits is refused (KG_EUSAGE; the caller's
    policy: 2048 unless the operator accepted 1024). On success *payload_p
    is a NUL-terminated base64 string the caller frees. Returns 0;
    KG_EUSAGE with err for a key that is not a base64 RSA public key or is
    too short; KG_EINTERNAL with err when libcrypto fails; KG_ENOMEM. */
int kg_eg_seal(const char *pubkey_b64, unsigned min_bits, const void *plain, size_t len,
               char **payload_p, char *err, size_t errlen);

#endif
