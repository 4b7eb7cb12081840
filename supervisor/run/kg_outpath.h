/*  kg_outpath: where `kguard run` will write, checked before any cell runs,
    as papermill checks its output before executing: a run whose results
    cannot be written must not run at all.
*/
#ifndef KG_OUTPATH_H
#define KG_OUTPATH_H

#include <stddef.h>

/*  Whether a file could be written at path the way kg_notebook_save
    writes one, checked before any work is
    done: path is not a directory, its directory exists, and a file can be
    created there (a temporary file beside path, as the save makes, is
    created and removed). Returns 0, or -errno with a message naming the
    problem (not the path) in err. */
int kg_outpath_check(const char *path, char *err, size_t errlen);

#endif
