/*  kg_ckpt_util: small helpers the checkpoint classes share: time stamps,
    member-name checks, directory fsync, careful tree removal and the
    writers' lock.

    Nothing here allocates on behalf of the caller unless it says so.
*/
#ifndef KG_CKPT_UTIL_H
#define KG_CKPT_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <dirent.h>

/*  Why there is no sodium_init(): seal, verify and restore deliberately do not call
    sodium_init(). Its only effect on what they use (crypto_generichash,
    crypto_sign_detached / _verify_detached, sodium_memcmp, none of which
    keeps state that needs it) is to swap the portable BLAKE2b for a SIMD
    one, and libsodium 1.0.18's SIMD BLAKE2b is about half as fast as the
    portable code on current AMD cores (measured on the project machine,
    AMD EPYC with AVX2/AVX-512: 2.0 s/GiB with sodium_init, 1.05 s/GiB
    without; `b2sum` takes 1.4 s/GiB), which decides verify/seal/restore
    speed. Key generation still initialises (randombytes); a process that
    has initialised libsodium for other reasons hashes correctly, just more
    slowly on such CPUs. */

/*  Longest member path accepted anywhere (bytes, without the NUL). */
#define KG_CKPT_PATH_MAX 1024

/*  Parse text as either an integer count of ms since the epoch or an ISO 8601
    time "YYYY-MM-DDTHH:MM:SS[.fff][Z|+HH:MM|-HH:MM]" (a space may replace the
    T; no zone means UTC). Returns 0 and sets *ms, or KG_EUSAGE. */
int kg_ckpt_parse_time(const char *text, int64_t *ms);

/*  True if the len bytes at s are well-formed UTF-8 (no overlongs, no
    surrogates, nothing above U+10FFFF). */
bool kg_ckpt_utf8_valid(const char *s, size_t len);

/*  Check that path is a safe relative member name: non-empty, at most
    KG_CKPT_PATH_MAX bytes, UTF-8, no control characters or backslash, not
    absolute, no empty, "." or ".." component, each component at most 255
    bytes. Returns NULL if safe, else a static phrase saying what is wrong. */
const char *kg_ckpt_path_problem(const char *path);

/*  fsync the directory at path. Returns 0 or -errno. */
int kg_ckpt_fsync_dir(const char *path);

/*  Directory part of path into buf ("." when path has no slash).
    Returns 0, or KG_ETOOBIG if it does not fit. */
int kg_ckpt_dirname(const char *path, char *buf, size_t size);

/*  Remove name (a file or a whole tree) under dirfd without following any
    symbolic link; a directory of the user's without write permission (a
    read-only restored copy) is made writable first. Returns 0 or -errno
    (ENOENT counts as success). */
int kg_ckpt_remove_tree_at(int dirfd, const char *name);

struct cJSON;

/*  cJSON_ParseWithLength, telling an allocation failure apart from bad
    JSON (cJSON returns NULL for both): the tree (the caller owns it) or
    NULL with *rc KG_ENOMEM when an allocation failed while parsing, else
    KG_ECKPT_MALFORMED. Installs allocation hooks in cJSON once per process
    (plain malloc/free that note a failure, per thread). */
struct cJSON *kg_ckpt_json_parse(const char *json, size_t len, int *rc);

/*  Lower-case hex of len bytes into out (at least 2*len+1 bytes). */
/*  Open dir for reading its entries (O_DIRECTORY, close-on-exec): 1 with
    *d set (closedir it), 0 if dir does not exist (*d NULL), or -errno. */
int kg_ckpt_opendir(const char *dir, DIR **d);

/*  Fill why (size bytes) from fmt, which takes two strings: arg and rc's
    message (kg_strerror); return rc. fmt must be a literal of the caller's. */
int kg_ckpt_fail(char *why, size_t size, int rc, const char *fmt, const char *arg);

void kg_ckpt_hex(const unsigned char *bin, size_t len, char *out);

/*  Take the writer's lock on the open fd (exclusive, non-blocking):
    every writer holds it on what it writes, and a gc removes only what it
    can lock (kg_ckpt_gc.h). Returns 0 or -errno. */
int kg_ckpt_writer_lock(int fd);

/*  Wait (blocking) until no writer holds the lock on path (a staging
    directory or temporary), then return 0. A path that does not exist has
    no writer: 0 at once. Returns -errno on other errors. */
int kg_ckpt_writer_wait(const char *path);

#endif
