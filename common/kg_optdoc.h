/*  kg_optdoc: a command's documentation, written from its option table
    (kg_opt.h): the --help text, the man page, the Markdown reference and
    the bash completion. One source, four renderings, so the help a user
    reads at the terminal, in man and on the web name the same options.
*/
#ifndef KG_OPTDOC_H
#define KG_OPTDOC_H

#include <stdio.h>

#include "kg_opt.h"

/*  The --help text of cmd: usage, what it does, its subcommands, options,
    further notes, exit codes; reflowed to 79 columns. */
void kg_optdoc_help(const kg_cmd_t *cmd, FILE *out);

/*  The man page (section 1) of cmd, subcommands included as sections of
    the same page; root is kguard's own table (for SEE ALSO). The root's
    page is kguard(1), a command's kguard-NAME(1). */
void kg_optdoc_man(const kg_cmd_t *cmd, const kg_cmd_t *root, FILE *out);

/*  The man page's file name for cmd: "kguard.1", "kguard-run.1". */
void kg_optdoc_man_name(const kg_cmd_t *cmd, char *buf, size_t len);

/*  The command-line reference in Markdown. For the root (name ""): the
    whole page (docs/cli.md), its text, then every command that is not
    hidden, subcommands included; for a command: its section. */
void kg_optdoc_markdown(const kg_cmd_t *cmd, FILE *out);

/*  A bash completion script for every command, subcommand and option
    (uses bash-completion's _init_completion and _filedir). */
void kg_optdoc_bash(const kg_cmd_t *root, FILE *out);

/*  The command named by words[0..n) under root ("ckpt", "seal"), hidden
    ones included; root itself for n == 0; NULL when there is none. */
const kg_cmd_t *kg_optdoc_find(const kg_cmd_t *root, int n, char **words);

#endif
