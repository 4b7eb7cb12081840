/*  kg_classifier: map evidence text to a GPU error family using a rule table.

    The rules are data (supervisor/rules/gpu-errors.json, overridable by the
    user with a file of the same schema). A family carries what the user is
    told (title, first check, conclusion to avoid, per-backend hints); a rule
    says which text belongs to which family. Rules are tried in file order and
    the first rule that matches any line of the text wins, so specific rules go
    before generic ones. Matching is by substring (all of "all" and one of
    "any", on one line) or a POSIX extended regex, never across lines.

    Schema (validated on load; an error names the rule/family index and field):
    {
      "version": 1,
      "families": [ { "id": "device-assert", "title": "...", "sticky": true,
                      "first_check": "...", "avoid": "...",
                      "hints": { "cuda": "...", "rocm": "...", "any": "..." } } ],
      "rules": [ { "id": "cuda-710", "family": "device-assert",
                   "backend": "cuda" | "rocm" | "any",
                   "sources": ["iopub_error", "execute_reply", "stream",
                               "raw_stdout", "raw_stderr", "exit"] | "any",
                   "match": { "any": ["..."], "all": ["..."], "regex": "...",
                              "ignore_case": false },
                   "error_code": 710,          (optional, informational)
                   "note": "..." } ]            (optional, shown to the user)
    }
    A ROCm hint must not name an NVIDIA variable (CUDA_LAUNCH_BLOCKING): such
    a file is rejected.
*/
#ifndef KG_CLASSIFIER_H
#define KG_CLASSIFIER_H

#include <stdbool.h>
#include <stddef.h>

#include "kg_backend.h"

/*  Where a piece of evidence came from. Bit flags so a rule can list several. */
typedef enum {
  KG_SRC_IOPUB_ERROR   = 1 << 0, /* iopub `error`: ename, evalue, traceback */
  KG_SRC_EXECUTE_REPLY = 1 << 1, /* execute_reply with status "error"       */
  KG_SRC_STREAM        = 1 << 2, /* iopub `stream` stdout/stderr (see kind)  */
  KG_SRC_RAW_STDOUT    = 1 << 3, /* the inner kernel's fd 1 pipe             */
  KG_SRC_RAW_STDERR    = 1 << 4, /* the inner kernel's fd 2 pipe             */
  KG_SRC_EXIT          = 1 << 5  /* the process's death (exit code, signal)  */
} kg_source_t;

#define KG_SRC_ALL 0x3f

/*  One error family. Owned by the classifier; strings never NULL except the
    hints, which are NULL when the rules file gives none. */
typedef struct {
  const char *id;          /* "device-assert", "out-of-memory", ...          */
  const char *title;       /* "Device-side assert"                            */
  bool sticky;             /* the context is poisoned: restart the process    */
  const char *first_check; /* what to look at first                           */
  const char *avoid;       /* the conclusion not to jump to                   */
  const char *hint_cuda;   /* separate diagnostic run on CUDA                 */
  const char *hint_rocm;   /* on ROCm (never names an NVIDIA variable)        */
  const char *hint_any;    /* when the backend is unknown                     */
} kg_family_t;

#define KG_MATCH_LINE_MAX 1024

/*  The result of a match. Pointers are borrowed from the classifier and stay
    valid while it lives. */
typedef struct {
  const kg_family_t *family; /* NULL: nothing matched                         */
  const char *rule_id;       /* id of the rule that matched                   */
  const char *note;          /* the rule's note (e.g. ROCm 719 = assert), NULL */
  kg_backend_t backend;      /* rule backend, else detected from the text     */
  int error_code;            /* the rule's error_code, 0 if none              */
  kg_source_t source;        /* the source that was matched                   */
  char line[KG_MATCH_LINE_MAX]; /* the matching line (cut if longer), no '\n' */
} kg_match_t;

typedef struct kg_classifier_t kg_classifier_t;

/*  Load rules from the JSON text json (len bytes). On success *self_p is a new
    classifier owned by the caller; returns 0. On invalid rules returns
    KG_ERULES and writes a message naming the rule/family index and the field
    into err (errlen bytes, may be 0); KG_ENOMEM on allocation failure. */
int kg_classifier_load_string(const char *json, size_t len, kg_classifier_t **self_p,
                              char *err, size_t errlen);

/*  Same, from a file. -errno if it cannot be read, KG_ETOOBIG over 4 MiB; the
    message in err names the path. */
int kg_classifier_load_file(const char *path, kg_classifier_t **self_p, char *err,
                            size_t errlen);

/*  Write the path of the shipped rules into buf: $KGUARD_DATADIR/rules/...,
    else <exe dir>/../share/kguard/rules/..., else the source tree's
    supervisor/rules/gpu-errors.json (first that exists). Returns 0, or
    KG_ENOTFOUND (buf then holds the source tree path). */
int kg_classifier_default_path(char *buf, size_t size);

/*  Free self and set *self_p to NULL. Safe on NULL. */
void kg_classifier_destroy(kg_classifier_t **self_p);

/*  The source's name as rules and incident records spell it ("iopub_error",
    "raw_stderr", ...); "unknown" for anything else. Static string. */
const char *kg_source_name(kg_source_t source);

/*  Classify text (len bytes, need not be NUL-terminated) from source. Fills
    *match and returns true when a rule for that source matches; otherwise
    returns false with match->family NULL. */
bool kg_classifier_match(const kg_classifier_t *self, kg_source_t source, const char *text,
                         size_t len, kg_match_t *match);

/*  Cheap test before classifying much text: false when no line of text
    (len bytes) can match any rule, whatever the source; true when one may.
    Derived from the rules themselves (their literals, and the literal runs
    of their regexes), so it stays right when the rules change; if some rule
    has no literal to go by, always true. */
bool kg_classifier_may_match(const kg_classifier_t *self, const char *text, size_t len);

/*  kg_classifier_may_match for the raw JSON text of lines whose escapes
    are all short ones (kg_jsonscan_skip_fn): false only when no line of
    their decoded text can match any rule. Always true when the rules have
    a literal that a JSON encoder must escape (a quote, a backslash, a
    control character): the raw text cannot answer for it. */
bool kg_classifier_may_match_json(const kg_classifier_t *self, const char *raw, size_t len);

/*  The family with this id, or NULL. */
const kg_family_t *kg_classifier_family(const kg_classifier_t *self, const char *id);

/*  Number of families / rules loaded. */
size_t kg_classifier_family_count(const kg_classifier_t *self);
size_t kg_classifier_rule_count(const kg_classifier_t *self);

/*  The family's hint for backend (hint_any when the specific one is missing
    or the backend is unknown). May be NULL. */
const char *kg_family_hint(const kg_family_t *family, kg_backend_t backend);

#endif
