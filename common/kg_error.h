/*  kg_error: the one table of kguard error codes.

    Every fallible function in kguard returns 0 (or a non-negative count) on
    success and a negative code on failure. A code is either -errno (system
    failures) or one of the project codes below, which live far below any errno
    value. Names and messages come from this single X-macro table, as in
    libuv's UV_ERRNO_MAP, so kg_strerror and kg_errname never drift from it.

    To add a code: append one XX() line. Keep the message short, lower case,
    and say what is wrong with the input, not what the code was doing.
*/
#ifndef KG_ERROR_H
#define KG_ERROR_H

#include <stddef.h>

#define KG_ERROR_MAP(XX)                                                        \
  /* generic */                                                                 \
  XX(USAGE,       "invalid usage")                                              \
  XX(NOMEM,       "out of memory")                                              \
  XX(INTERNAL,    "internal error")                                             \
  XX(TOOBIG,      "input exceeds its size limit")                               \
  XX(TIMEOUT,     "timed out")                                                  \
  XX(NOTFOUND,    "not found")                                                  \
  XX(EXISTS,      "already exists")                                             \
  XX(UNSAFEPATH,  "another user could change this directory or file")          \
  /* ipc: connection files and the wire protocol */                            \
  XX(CONNFILE,    "malformed connection file")                                  \
  XX(NODELIM,     "message has no <IDS|MSG> delimiter")                         \
  XX(SHORTMSG,    "message has fewer than the 5 frames after the delimiter")    \
  XX(NOSIG,       "message is not signed")                                      \
  XX(BADSIG,      "message signature does not match")                           \
  XX(REPLAY,      "message signature was already seen (replay)")                \
  XX(BADJSON,     "message frame is not a JSON object")                         \
  XX(BADHEADER,   "message header lacks msg_id, msg_type or session")           \
  XX(SCHEME,      "unsupported signature scheme")                               \
  XX(NODATE,      "message header has no valid date")                           \
  XX(EXPIRED,     "message is dated before the replay window")                  \
  XX(REFLECTED,   "message is the kernel's own, sent back to it (reflected)")   \
  XX(QFULL,       "the peer is not reading: its send queue is full")           \
  /* supervisor */                                                              \
  XX(SPAWN,       "unable to start the kernel")                                 \
  XX(NOKERNEL,    "no such kernel")                                             \
  XX(KERNELSPEC,  "malformed kernelspec")                                       \
  XX(RULES,       "invalid classification rules")                               \
  XX(DOWN,        "kernel is down")                                             \
  XX(NOTEBOOK,    "malformed notebook")                                         \
  /* checkpoint: each maps to its own exit code of `kguard ckpt verify` */     \
  XX(CKPT_UNSIGNED, "checkpoint is unsigned or signed by an unknown key")       \
  XX(CKPT_CORRUPT,  "checkpoint member does not match its digest")              \
  XX(CKPT_TRUNC,    "checkpoint is incomplete (truncated)")                     \
  XX(CKPT_MALFORMED,"checkpoint is malformed")                                  \
  XX(CKPT_UNSAFE,   "checkpoint contains an unsafe member")                     \
  XX(CKPT_NOKEY,    "no signing key")                                           \
  XX(CKPT_NONE,     "no consistent checkpoint")

#define KG_ERROR_BASE (-10000)

typedef enum {
  KG_OK = 0,
  KG_E__FIRST = KG_ERROR_BASE,
#define XX(name, msg) KG_E##name,
  KG_ERROR_MAP(XX)
#undef XX
  KG_E__LAST
} kg_error_t;

/*  Return a static, human-readable message for code. Handles project codes,
    -errno values (via strerror) and unknown numbers. Never NULL. */
const char *kg_strerror(int code);

/*  Return the symbolic name of code ("KG_EBADSIG", "ENOENT"...). Never NULL.
    Static storage for project codes; a thread-unsafe static buffer otherwise. */
const char *kg_errname(int code);

/*  Format a message into err (errlen bytes, always NUL-terminated when
    errlen > 0); a no-op when err is NULL or errlen is 0. For the "err,
    errlen" out-parameters of functions that reject external input. */
void kg_errf(char *err, size_t errlen, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));

#endif
