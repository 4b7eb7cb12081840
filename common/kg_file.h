/*  kg_file: whole-file reads and durable, atomic whole-file writes.

    Small configuration-like files (connection files, kernelspecs, rules,
    notebooks, incident records) are read whole with a size cap, and written
    by the one pattern that survives crashes: a temporary file in the same
    directory, write, fsync, rename, fsync of the directory. Any failure
    leaves no file under the final name that was not there before.
*/
#ifndef KG_FILE_H
#define KG_FILE_H

#include <stddef.h>
#include <sys/types.h>

/*  Read the file at path into a new NUL-terminated buffer (*data_p, owned by
    the caller; free()) of *size_p bytes. At most max bytes are accepted: a
    larger (or endless: a fifo, /dev/zero) file is rejected after reading
    max + 1 bytes. Returns 0, -errno, KG_ENOMEM or KG_ETOOBIG; on failure
    *data_p is NULL. */
int kg_file_read(const char *path, size_t max, char **data_p, size_t *size_p);

/*  Write all size bytes of data to fd, retrying short writes and EINTR.
    Returns 0 or -errno. */
int kg_file_write_all(int fd, const void *data, size_t size);

/*  fsync the directory that holds path, so a rename into it is durable.
    Filesystems that cannot fsync a directory (EINVAL) count as success.
    Returns 0 or -errno. */
int kg_file_sync_parent(const char *path);

/*  Replace path with data atomically and durably, the new file having
    exactly mode (not masked by the umask; the file is created 0600 and
    chmod'ed, so a secret never exists with wider permissions). Returns 0 or
    -errno; on failure the temporary file is removed and path is untouched. */
int kg_file_write_atomic(const char *path, const void *data, size_t size, mode_t mode);

/*  The process's umask, read without changing it (/proc/self/status;
    where that is unavailable, set and restored at once). */
mode_t kg_file_umask(void);

/*  mkdir -p: create path and any missing parents. Created parents get
    parent_mode, path itself leaf_mode (both masked by the umask, as mkdir
    does); existing directories are left as they are. Returns 0, -errno, or
    KG_ETOOBIG for a path longer than PATH_MAX. */
int kg_file_mkdirs(const char *path, mode_t parent_mode, mode_t leaf_mode);

#endif
