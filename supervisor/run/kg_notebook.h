/*  kg_notebook: an nbformat 4 notebook held as cJSON, for `kguard run`.

    Loading validates what execution depends on (a JSON object, nbformat 4,
    a `cells` array whose entries have a cell_type and a string or
    list-of-strings source) and rejects anything else with a message naming
    the problem. Everything else in the document is kept as it was.

    Saving writes nbformat's layout: 1-space indent, multi-line strings of
    sources, stream text and text mime data split into lists of lines, and a
    final newline; through a temporary file in the target's directory and a
    rename, so a failed save never leaves a half-written notebook.
*/
#ifndef KG_NOTEBOOK_H
#define KG_NOTEBOOK_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct kg_notebook_t kg_notebook_t;

/*  Read and validate the notebook at path. On success *self_p is a new
    notebook owned by the caller and 0 is returned. Returns -errno if the file
    cannot be read (-ENOENT, -ENOTDIR: there is no such file; -EISDIR: path
    is a directory), KG_ENOTEBOOK if it is not a valid nbformat 4 notebook
    (empty files included); either way a message naming the problem, not
    the path (the caller names it), is written into err (errlen bytes,
    always NUL-terminated). */
int kg_notebook_load(const char *path, kg_notebook_t **self_p, char *err, size_t errlen);

/*  Offset of the first byte of text (len bytes) that is not strict UTF-8
    (no overlong forms, no surrogates, nothing past U+10FFFF, no truncated
    sequence), or len when all of it is. Pure. */
size_t kg_notebook_utf8_invalid(const char *text, size_t len);

/*  Parse a notebook from text (len bytes), as kg_notebook_load; text that
    is not strict UTF-8 is rejected (KG_ENOTEBOOK) with its offset. */
int kg_notebook_parse(const char *text, size_t len, kg_notebook_t **self_p, char *err,
                      size_t errlen);

/*  Free self and set *self_p to NULL. Safe on NULL. */
void kg_notebook_destroy(kg_notebook_t **self_p);


/*  Number of cells (of every type). */
size_t kg_notebook_cell_count(const kg_notebook_t *self);

/*  True if cell index is a code cell. */
bool kg_notebook_is_code(const kg_notebook_t *self, size_t index);

/*  The source of cell index as one string (list sources are joined). New
    string owned by the caller, NULL on allocation failure. */
char *kg_notebook_source(const kg_notebook_t *self, size_t index);

/*  True if the cell's metadata.tags contains tag. */
bool kg_notebook_has_tag(const kg_notebook_t *self, size_t index, const char *tag);

/*  metadata.kernelspec.name, or NULL if absent (borrowed). */
const char *kg_notebook_kernel_name(const kg_notebook_t *self);

/*  The outputs array of code cell index, replaced by a new empty one and
    execution_count set to null: the cell is about to run (again). Returns
    the array (borrowed, owned by the notebook) or NULL on allocation
    failure. */
cJSON *kg_notebook_reset_cell(kg_notebook_t *self, size_t index);

/*  The outputs array of code cell index (borrowed; NULL if not a code cell). */
cJSON *kg_notebook_outputs(kg_notebook_t *self, size_t index);

/*  Set execution_count of code cell index (count <= 0 sets null). */
void kg_notebook_set_count(kg_notebook_t *self, size_t index, int count);

/*  Reset every code cell (no outputs, null execution_count), as the run is
    about to execute the notebook from the top. */
void kg_notebook_reset_all(kg_notebook_t *self);

/*  The root metadata's "kguard" object, created if absent (borrowed). NULL on
    allocation failure. */
cJSON *kg_notebook_kguard_metadata(kg_notebook_t *self);

/*  The whole document (borrowed), e.g. for tests. */
cJSON *kg_notebook_json(kg_notebook_t *self);

/*  Serialise in nbformat's layout. New string owned by the caller (free with
    free()), NULL on allocation failure. */
char *kg_notebook_format(const kg_notebook_t *self);

/*  Write the notebook to path atomically (temporary file in the same
    directory, fsync, rename), mode 0666 less the umask. Returns 0 or -errno;
    on failure path is untouched. */
int kg_notebook_save(const kg_notebook_t *self, const char *path);

#endif
