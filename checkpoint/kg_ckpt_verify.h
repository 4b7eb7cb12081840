/*  kg_ckpt_verify: check a checkpoint archive in one streaming pass.

    Order of checks (see FORMAT.md): the first member must be the manifest
    (capped at KG_CKPT_MANIFEST_MAX bytes), the second its detached Ed25519
    signature; the signature is checked against the given public key before
    any payload byte is read. Then every payload header is checked (regular
    file, safe UTF-8 name, listed in the manifest, not seen before, header
    size equal to the manifest size) before its data is read, and the data is
    hashed (BLAKE2b-256) as it streams past; the manifest's sizes cap what is
    ever decompressed. Memory use is bounded by the manifest cap plus the
    reader's 1 MiB block, whatever the archive size.

    A sink, when given, receives each member's bytes as they are read
    (restore uses it); it must not treat anything as final until verify
    returns 0. A sink with `finish` checks the digests itself (restore
    hashes the files it wrote, several at once: kg_ckpt_hashpool.h); verify
    then hashes nothing, and says valid only if finish agrees.
*/
#ifndef KG_CKPT_VERIFY_H
#define KG_CKPT_VERIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kg_ckpt_manifest.h"

/* Verdicts, which are also `kguard ckpt verify`'s exit codes. */
typedef enum {
  KG_CKPT_VALID = 0,      /* signed by our key, complete, every digest matches */
  KG_CKPT_UNSIGNED = 1,   /* no signature, unknown key, or a plain zip */
  KG_CKPT_CORRUPT = 2,    /* a member or the manifest does not match */
  KG_CKPT_INCOMPLETE = 3, /* truncated, empty, or a listed member missing */
  KG_CKPT_MALFORMED = 4,  /* not an archive, no manifest, bad manifest */
  KG_CKPT_UNSAFE = 5,     /* links, devices, bad names, unlisted/duplicate
                             members, sizes above the manifest's */
} kg_ckpt_status_t;

/* Stop after authenticating the manifest: no payload byte is read. */
#define KG_CKPT_VERIFY_MANIFEST_ONLY 1u

typedef struct {
  void *arg;
  /* Called before a listed member's data; return 0 or a negative code. */
  int (*begin)(void *arg, const kg_ckpt_member_t *member);
  /* Called with each block of that member's data, in order. */
  int (*data)(void *arg, const void *buf, size_t len);
  /* Called after the member's last byte: once its digest matched, or, for
     a sink with finish, before its digest is known. */
  int (*end)(void *arg, const kg_ckpt_member_t *member);
  /* Optional. Called once, after every member passed every other check:
     return 0 when every member's digest matched, KG_ECKPT_CORRUPT with *bad
     set to the first one that did not, or a negative code (with *bad set
     to the member concerned, or NULL). */
  int (*finish)(void *arg, const kg_ckpt_member_t **bad);
  /* Optional. Called once before the first byte (done 0), then whenever
     at least a second has passed since the last call and more bytes of
     the archive file were read, and once at the end: done is the bytes of
     the archive file read so far, total its size. */
  void (*progress)(void *arg, uint64_t done, uint64_t total);
} kg_ckpt_sink_t;

/*  Test hook (documented in FORMAT.md): when the environment variable
    KGUARD_TEST_READ_BPS holds a positive integer, every archive read by
    verify, restore and resume-prepare is slowed to that many bytes per
    second, so that tests can make a small checkpoint take as long as a big
    one on a slow disk. */
#define KG_CKPT_TEST_READ_BPS_ENV "KGUARD_TEST_READ_BPS"

typedef struct {
  int rc;                          /* 0, a KG_ECKPT_* code, or -errno */
  bool authenticated;              /* manifest signature verified */
  char signer[KG_KEYS_NAME_MAX + 1]; /* the key that signed it: its trusted
                                      name, "" for the user's own key */
  char signer_id[KG_KEYS_ID_LEN];  /* that key's id, once authenticated */
  bool zip;                        /* input was a zip (torch.save file) */
  char reason[512];                /* one line: why not valid (or "valid") */
  char member[KG_CKPT_PATH_MAX + 1]; /* member concerned, or "" */
  kg_ckpt_manifest_t *manifest;    /* owned; set once authenticated */
  char manifest_digest[65];        /* hex BLAKE2b-256 of the manifest bytes */
  uint64_t archive_size;           /* bytes of the archive file */
} kg_ckpt_report_t;

/*  Verify the archive at path: its manifest must be signed by one of keys
    (the user's own and the trusted ones: kg_keyring_load; NULL or empty:
    no key known, so at best UNSIGNED). flags: KG_CKPT_VERIFY_MANIFEST_ONLY. sink may be NULL.
    Fills *report (clear it with kg_ckpt_report_clear) and returns report->rc:
    0 when valid, KG_ECKPT_UNSIGNED/CORRUPT/TRUNC/MALFORMED/UNSAFE for a bad
    archive, -errno when the file could not be read, or the sink's error. */
int kg_ckpt_verify(const char *path, const kg_keyring_t *keys, unsigned flags,
                   const kg_ckpt_sink_t *sink, kg_ckpt_report_t *report);

/*  Free what the report owns and zero it. */
void kg_ckpt_report_clear(kg_ckpt_report_t *report);

/*  Verdict (kg_ckpt_status_t, 0..5) of a return code, or -1 for a system
    or sink error that says nothing about the archive. */
int kg_ckpt_status_of(int rc);

/*  "valid", "unsigned", "corrupt", "incomplete", "malformed", "unsafe", or
    "error" for rc. */
const char *kg_ckpt_status_name(int rc);

#endif
