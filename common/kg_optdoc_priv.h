/*  kg_optdoc's private helpers, shared by its renderers: kg_optdoc.c
    (--help), kg_optdoc_man.c (man) and kg_optdoc_web.c (Markdown and bash
    completion). Not for other modules.
*/
#ifndef KG_OPTDOC_PRIV_H
#define KG_OPTDOC_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "kg_opt.h"

/*  cmd's exit codes, or the defaults (0, 100, 111). */
const kg_opt_exit_t *kg__optdoc_exits(const kg_cmd_t *cmd);

/*  The last word of a command's name: "seal" of "ckpt seal". */
const char *kg__optdoc_leaf(const kg_cmd_t *cmd);

/*  "-o, --output FILE" into buf. */
void kg__optdoc_spec(const kg_opt_t *o, char *buf, size_t len);

/*  Calls fn for each paragraph of text (separated by blank lines): its
    bytes, and whether it is verbatim (every line indented by two spaces). */
typedef void (*kg__optdoc_para_fn)(void *arg, const char *p, size_t len, bool verbatim);
void kg__optdoc_paragraphs(const char *text, kg__optdoc_para_fn fn, void *arg);

/*  Calls fn for each usage line of cmd (its bytes, without the newline). */
void kg__optdoc_usage_lines(const kg_cmd_t *cmd, void (*fn)(void *, const char *, size_t),
                            void *arg);

/*  The state of a usage-line callback. */
typedef struct {
  FILE *out;
  const kg_cmd_t *cmd;
  int line;
} kg__optdoc_usage_t;

/*  For each documented option of cmd, in order: opt(arg, o), the standard
    ones (-h/--help, --version) after the options before the first heading;
    for each heading: heading(arg, its text). */
void kg__optdoc_walk(const kg_cmd_t *cmd, void (*opt)(void *, const kg_opt_t *),
                     void (*heading)(void *, const char *), void *arg);

#endif
