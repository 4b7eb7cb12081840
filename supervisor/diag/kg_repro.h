/*  kg_repro: the minimal repro request built from an incident record (the
    `kguard incident export` document). Pure: an incident's JSON in, a JSON
    document (and its Markdown rendering) out, with everything that is text
    passed through a kg_scrub_t.

    The document ("kguard_repro": 1):
      incident, created, family, title, sticky, backend, error_code,
      emulated        true when kguard's CPU emulation produced the incident
      first_error     {"ename", "evalue"} or {"text"} (a raw line)
      assertion_line  the device-side assertion line, or null
      operator        {"python": last torch frame's function, "aten": from
                       "Could not run 'aten::x'", "kernel": the device
                       function in the assertion line, "source": its
                       file:line} (keys only when seen)
      tensors         {"shapes": [...], "dtypes": [...]} seen in the error
                      text and the traceback
      frames          ["<python-lib>/torch/nn/functional.py:3104 in nll_loss"]
      traceback       the traceback's lines, code lines removed (kept with
                      KG_REPRO_CODE)
      versions        {python, torch, cuda, hip, cudnn, driver, platform,
                       devices [{name, capability, total_memory}]}
      diagnostic_env  {NAME: value}: values that are plain flags are kept,
                      others read "<set>" (raw with KG_REPRO_ENV)
      cell_code       only with KG_REPRO_CODE
      preflight       {"status", "summary"} of the pre-flight probe after the
                      restart, when the record has one
      exit, restart_count, last_step
      removed         what was taken out, in words
*/
#ifndef KG_REPRO_H
#define KG_REPRO_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "kg_scrub.h"

#define KG_REPRO_CODE 1u   /* keep the cell code and the traceback's code lines */
#define KG_REPRO_ENV 2u    /* keep diagnostic variables' values as they were     */

/*  Build the document from incident (borrowed). NULL with a message in err
    when incident is not an incident record ("kguard_incident" missing). */
cJSON *kg_repro_build(const cJSON *incident, kg_scrub_t *scrub, unsigned flags, char *err,
                      size_t errlen);

/*  The document as Markdown for an issue (malloc'd), NULL on OOM. */
char *kg_repro_markdown(const cJSON *repro);

/*  Copy of s without ANSI escape sequences (malloc'd), NULL on OOM. */
char *kg_repro_strip_ansi(const char *s);

/*  True if a traceback line shows source code ("----> 5 x = f(y)",
    "   4 y = 2", or the indented source under a plain Python frame). */
bool kg_repro_is_code_line(const char *line, bool after_plain_frame);

/*  Append to the string arrays shapes and dtypes the tensor shapes and
    dtypes named in text (each once). */
void kg_repro_scan_tensors(const char *text, cJSON *shapes, cJSON *dtypes);

/*  Parse a frame header line: plain ('File "p", line 3, in f'), IPython 8
    ('File p:3, in f(...)', 'Cell In[4], line 2',
    'Cell In [4], line 2') or IPython 7
    ('p in f(...)'). Writes "file:line in func" into buf; false if it is not
    a frame header. file is written unscrubbed. */
bool kg_repro_frame(const char *line, char *buf, size_t len, bool *plain);

/*  The diagnostic variable value as shared without KG_REPRO_ENV: kept when
    it is a plain flag ([A-Za-z0-9_.,:=+-], at most 64 bytes), else "<set>". */
const char *kg_repro_env_value(const char *value);

#endif
