/*  kg_rotlog: an append-only log file with a bound on its size.

    When a write would take the file past max_bytes, it is renamed to
    PATH.1 (replacing the previous PATH.1) and a fresh PATH is started with
    a line saying so: at most about twice max_bytes are ever on disk, the
    newest bytes always under PATH. What someone else can make a process
    print (a kernel's library logging every message a stranger sends it)
    cannot fill the disk through this file.

    Files are opened 0600, O_APPEND, O_NOFOLLOW and O_CLOEXEC: a symlink
    planted under the name is refused, never followed. A write that fails
    (a full disk) is dropped: a log must not stop the program writing it.

    Ownership: the object owns its descriptor and a copy of the path.
*/
#ifndef KG_ROTLOG_H
#define KG_ROTLOG_H

#include <stddef.h>

typedef struct kg_rotlog_t kg_rotlog_t;

/*  The least bound accepted (smaller ones are raised to it). */
#define KG_ROTLOG_MIN_BYTES (64u * 1024u)

/*  Open (create, or append to) path, bounded at max_bytes. NULL with errno
    set on failure (ELOOP: path is a symlink). */
kg_rotlog_t *kg_rotlog_open(const char *path, size_t max_bytes);

/*  Close; *self_p becomes NULL. Safe on NULL. */
void kg_rotlog_close(kg_rotlog_t **self_p);

/*  Append len bytes, rotating first if they would not fit. A chunk bigger
    than the bound itself keeps only its last max_bytes. Safe on NULL (no
    log). */
void kg_rotlog_write(kg_rotlog_t *self, const void *data, size_t len);

/*  The bound in bytes; the size of the current file; rotations so far. */
size_t kg_rotlog_max(const kg_rotlog_t *self);
size_t kg_rotlog_size(const kg_rotlog_t *self);
unsigned long kg_rotlog_rotations(const kg_rotlog_t *self);

/*  The bound named by environment variable name: a whole number of bytes,
    optionally with a K, M or G suffix (powers of 1024), at least
    KG_ROTLOG_MIN_BYTES; unset or empty: fallback. An invalid value is
    logged as a warning naming the variable, and fallback is used. */
size_t kg_rotlog_limit(const char *name, size_t fallback);

#endif
