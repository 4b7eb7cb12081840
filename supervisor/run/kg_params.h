/*  kg_params: notebook parameters for `kguard run -p NAME VALUE` and
    `-f FILE`, injected as papermill injects them.

    A parameter is a Python identifier and a value held as JSON (null, bool,
    number, string, list, object). Values are rendered as Python literals
    (None, True/False, numbers, string literals, [..], {..}). Later
    assignments of a name replace earlier ones and keep their place, so a
    file read first and -p given after behave as in papermill (-p wins).

    Value syntax:
      -p NAME VALUE   as papermill's -p: True, False, None, an integer, a
                      float; a JSON list or object when VALUE starts with
                      [ or {; anything else is a string, taken as is.
      -f FILE.json    a JSON object of name: value.
      -f FILE.yaml    the flat `name: value` subset of YAML (one per line,
      (or .yml)       # comments, an optional leading ---): plain scalars as
                      YAML reads them (true/false, null/~, numbers, else a
                      string), '...' and "..." strings, flow lists/maps
                      written as JSON. Anything else (nesting by indent,
                      "- item" lists, block scalars, anchors, tags) is
                      refused with the line that holds it: use JSON there.

    Injection (kg_params_inject): every cell tagged `injected-parameters`
    (from an earlier run) is removed, then a code cell tagged
    `injected-parameters` holding "# Parameters\n" and one `name = literal`
    line per parameter is inserted after the first cell tagged `parameters`,
    or at the top when there is none; the parameters are recorded as
    metadata.kguard.parameters.
*/
#ifndef KG_PARAMS_H
#define KG_PARAMS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "kg_notebook.h"

typedef struct kg_params_t kg_params_t;

/*  New empty set. NULL on allocation failure. */
kg_params_t *kg_params_new(void);

/*  Free self and set *self_p to NULL. Safe on NULL. */
void kg_params_destroy(kg_params_t **self_p);

/*  Number of parameters. */
size_t kg_params_count(const kg_params_t *self);

/*  Add (or replace) name = value as `-p NAME VALUE` gives it. Returns 0, or
    KG_EUSAGE with a message in err starting "-p NAME VALUE: " (a name that
    is not a Python identifier, or is a keyword; a [..]/{..} value that is
    not JSON; a value that starts with '-' and is not a number, so likely the
    next option taken for a missing value; a float beyond a double's range),
    KG_ENOMEM. */
int kg_params_add_cli(kg_params_t *self, const char *name, const char *value, char *err,
                      size_t errlen);

/*  Add every parameter of the JSON (an object) or YAML text (len bytes),
    as a file of the given kind ("json" or "yaml") would give them; source
    names the file in messages. Returns 0, KG_EUSAGE with a message naming
    the problem (and the line, for YAML), or KG_ENOMEM. */
int kg_params_add_text(kg_params_t *self, const char *kind, const char *text, size_t len,
                       const char *source, char *err, size_t errlen);

/*  Read path and add its parameters; the kind comes from the extension
    (.json, .yaml, .yml). Returns as kg_params_add_text, or -errno (message
    in err) if the file cannot be read. */
int kg_params_add_file(kg_params_t *self, const char *path, char *err, size_t errlen);

/*  The Python source of the injected cell ("# Parameters\n" and one line
    per parameter). New string owned by the caller; NULL on allocation
    failure. */
char *kg_params_render_python(const kg_params_t *self);

/*  The parameters as a JSON object {name: value} (new, owned by the
    caller); NULL on allocation failure. */
cJSON *kg_params_json(const kg_params_t *self);

/*  Inject the parameters cell into nb and record them (see above). Returns
    the index of the injected cell (>= 0), or KG_ENOMEM. */
int kg_params_inject(const kg_params_t *self, kg_notebook_t *nb);

#endif
