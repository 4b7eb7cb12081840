/*  kguard help: any command's help, man page or Markdown section, the
    whole reference, the bash completion, or the tables themselves as JSON,
    all written from the option tables (kg_opt.h, kg_optdoc.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "kg_cli.h"
#include "kg_error.h"
#include "kg_optdoc.h"

enum { O_FORMAT = 1, O_OUTPUT_DIR };

static const kg_opt_t s_opts[] = {
  {O_FORMAT, 0, "format", "text|man|markdown|bash-completion|json",
   "text (the default): what `kguard COMMAND --help` prints; man: the command's man page "
   "(roff, for `man -l -`); markdown: the command-line reference (docs/cli.md) when no "
   "COMMAND is given, else the command's section; bash-completion: the completion script "
   "for every command; json: the option tables, for tools and tests", 0},
  {O_OUTPUT_DIR, 0, "output-dir", "DIR",
   "with --format=man: write the page of kguard and of every command into DIR "
   "(kguard.1, kguard-run.1 ...) instead of one page to standard output", 0},
  {0, 0, NULL, NULL, NULL, 0},
};

const kg_cmd_t kg_cli_help_cmd = {
  .name = "help",
  .summary = "describe a command (the same text as `kguard COMMAND --help`)",
  .usage = "[--format FORMAT] [COMMAND [SUBCOMMAND]]",
  .about = "Print the help of COMMAND (and SUBCOMMAND, as in `kguard help ckpt seal`), or "
           "kguard's own help without one. The help, the man pages and the command-line "
           "reference are all written from the same option tables.",
  .opts = s_opts,
};

/*  Write every man page into dir. */
static int
s_man_dir(const kg_cmd_t *root, const char *dir)
{
  const kg_cmd_t *pages[64];
  size_t n = 0;
  pages[n++] = root;
  for (const kg_cmd_t *const *c = root->subs; c && *c && n < 64; c++)
    if (!((*c)->flags & KG_CMD_HIDDEN))
      pages[n++] = *c;
  for (size_t i = 0; i < n; i++) {
    char name[128], path[PATH_MAX];
    kg_optdoc_man_name(pages[i], name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "we");
    if (!f) {
      kg_opt_error("cannot write %s: %s", path, strerror(errno));
      return KG_EXIT_SYSTEM;
    }
    kg_optdoc_man(pages[i], root, f);
    if (fclose(f) != 0) {
      kg_opt_error("cannot write %s: %s", path, strerror(errno));
      return KG_EXIT_SYSTEM;
    }
  }
  return KG_EXIT_OK;
}

/*  cmd's table as JSON: {"name", "summary", "usage", "hidden", "options":
    [{"short", "long", "arg", "pair", "optional", "hidden"}], "commands": [...]}; the
    standard options are included. */
static cJSON *
s_json(const kg_cmd_t *cmd)
{
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "name", cmd->name);
  cJSON_AddStringToObject(o, "summary", cmd->summary);
  cJSON_AddStringToObject(o, "usage", cmd->usage);
  cJSON_AddBoolToObject(o, "hidden", (cmd->flags & KG_CMD_HIDDEN) != 0);
  cJSON *opts = cJSON_AddArrayToObject(o, "options");
  const kg_opt_t *tables[] = {cmd->opts, kg_opt_standard};
  for (size_t t = 0; t < 2; t++)
    for (const kg_opt_t *x = tables[t]; x && (x->id || x->help); x++) {
      if (!x->id)
        continue;
      cJSON *j = cJSON_CreateObject();
      char s[2] = {x->short_name, 0};
      if (x->short_name)
        cJSON_AddStringToObject(j, "short", s);
      else
        cJSON_AddNullToObject(j, "short");
      cJSON_AddStringToObject(j, "long", x->long_name);
      if (x->arg)
        cJSON_AddStringToObject(j, "arg", x->arg);
      else
        cJSON_AddNullToObject(j, "arg");
      cJSON_AddBoolToObject(j, "pair", (x->flags & KG_OPT_PAIR) != 0);
    cJSON_AddBoolToObject(j, "optional", (x->flags & KG_OPT_OPTIONAL) != 0);
      cJSON_AddBoolToObject(j, "hidden", (x->flags & KG_OPT_HIDDEN) != 0);
      cJSON_AddItemToArray(opts, j);
    }
  cJSON *subs = cJSON_AddArrayToObject(o, "commands");
  for (const kg_cmd_t *const *s = cmd->subs; s && *s; s++)
    cJSON_AddItemToArray(subs, s_json(*s));
  return o;
}

int
kg_cli_help_main(const kg_cmd_t *root, int argc, char **argv)
{
  kg_opt_parser_t p;
  kg_opt_init(&p, &kg_cli_help_cmd, argc, argv);
  const char *format = "text", *dir = NULL;
  char *words[2];
  int nwords = 0, id;
  while ((id = kg_opt_next(&p)) != KG_OPT_END) {
    switch (id) {
    case KG_OPT_EXIT: return p.code;
    case O_FORMAT: format = p.value; break;
    case O_OUTPUT_DIR: dir = p.value; break;
    case KG_OPT_OPERAND:
      if (nwords == 2)
        return kg_opt_usage(&p, "at most a command and a subcommand, not '%s'", p.value);
      words[nwords++] = (char *) p.value;
      break;
    }
  }
  static const char *const formats[] = {"text", "man", "markdown", "bash-completion", "json"};
  size_t f = 0;
  while (f < 5 && strcmp(format, formats[f]) != 0)
    f++;
  if (f == 5)
    return kg_opt_usage(&p, "--format is text, man, markdown, bash-completion or json, not "
                        "'%s'", format);
  if (dir && (f != 1 || nwords))
    return kg_opt_usage(&p, "--output-dir writes every man page: give it with --format=man "
                        "and no COMMAND");
  const kg_cmd_t *cmd = kg_optdoc_find(root, nwords, words);
  if (!cmd)
    return kg_opt_usage(&p, "no command '%s%s%s'", words[0], nwords > 1 ? " " : "",
                        nwords > 1 ? words[1] : "");
  switch (f) {
  case 0: kg_optdoc_help(cmd, stdout); break;
  case 1:
    if (dir)
      return s_man_dir(root, dir);
    kg_optdoc_man(cmd, root, stdout);
    break;
  case 2: kg_optdoc_markdown(cmd, stdout); break;
  case 3: kg_optdoc_bash(root, stdout); break;
  case 4: {
    cJSON *j = s_json(cmd);
    char *text = j ? cJSON_Print(j) : NULL;
    cJSON_Delete(j);
    if (!text)
      return KG_EXIT_SYSTEM;
    puts(text);
    free(text);
    break;
  }
  }
  return fflush(stdout) == 0 ? KG_EXIT_OK : KG_EXIT_SYSTEM;
}
