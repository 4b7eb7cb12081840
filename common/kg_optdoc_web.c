/*  kg_optdoc: the Markdown reference and the bash completion (see kg_optdoc.h). */
#include "kg_optdoc.h"
#include "kg_optdoc_priv.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>

/* ---- Markdown -------------------------------------------------------------- */

/*  Text for Markdown: outside `code`, the characters that would start
    emphasis, HTML or a table cell are escaped; fill: newlines are spaces. */
static void
s_md_write(FILE *out, const char *p, size_t len, bool fill, bool cell)
{
  bool code = false;
  for (size_t i = 0; i < len; i++) {
    char c = p[i];
    if (c == '\n' && fill)
      c = ' ';
    if (c == '`')
      code = !code;
    /* an underscore inside a word (interrupt_mode) is plain text in
       CommonMark; only one at a word's edge could start emphasis */
    bool edge = c == '_' && (i == 0 || i + 1 == len || !isalnum((unsigned char) p[i - 1])
                             || !isalnum((unsigned char) p[i + 1]));
    if (!code && (c == '*' || edge || c == '\\' || c == '[' || c == ']'))
      fputc('\\', out);
    if (!code && c == '<')
      fputs("&lt;", out);
    else if (c == '|' && cell)
      fputs("\\|", out);
    else
      fputc(c, out);
  }
}

static void
s_md_str(FILE *out, const char *s, bool cell)
{
  s_md_write(out, s, strlen(s), true, cell);
}

typedef struct {
  FILE *out;
  const char *indent;   /*  before each continuation paragraph's lines  */
  int n;
} s_md_t;

static void
s_md_para(void *arg, const char *p, size_t len, bool verbatim)
{
  s_md_t *m = arg;
  if (m->n++)
    fprintf(m->out, "\n%s", m->indent);
  if (verbatim) {
    fprintf(m->out, "```\n%s", m->indent);
    const char *end = p + len;
    while (p < end) {
      const char *nl = memchr(p, '\n', (size_t) (end - p));
      size_t n = nl ? (size_t) (nl - p) : (size_t) (end - p);
      fprintf(m->out, "%.*s\n%s", (int) n, p, m->indent);
      p += n + (nl ? 1 : 0);
    }
    fputs("```\n", m->out);
  } else {
    s_md_write(m->out, p, len, true, false);
    fputc('\n', m->out);
  }
}

static void
s_md_text(FILE *out, const char *text, const char *indent)
{
  s_md_t m = {out, indent, 0};
  kg__optdoc_paragraphs(text, s_md_para, &m);
}

static void
s_md_opt(void *arg, const kg_opt_t *o)
{
  FILE *out = arg;
  char spec[128];
  kg__optdoc_spec(o, spec, sizeof spec);
  fprintf(out, "- `%s`: ", spec);
  s_md_text(out, o->help, "  ");
}

static void
s_md_heading(void *arg, const char *text)
{
  FILE *out = arg;
  fputs("\n", out);
  s_md_str(out, text, false);
  fputs(":\n\n", out);
}

static void
s_md_usage_line(void *arg, const char *u, size_t n)
{
  kg__optdoc_usage_t *s = arg;
  fprintf(s->out, "kguard%s%s %.*s\n", s->cmd->name[0] ? " " : "", s->cmd->name, (int) n, u);
}

static void
s_md_command(FILE *out, const kg_cmd_t *cmd, int level)
{
  fprintf(out, "\n%.*s kguard %s\n\n", level, "####", cmd->name);
  fputc(toupper((unsigned char) cmd->summary[0]), out);
  s_md_str(out, cmd->summary + 1, false);
  fputs(".\n\n```\n", out);
  kg__optdoc_usage_t u = {.out = out, .cmd = cmd};
  kg__optdoc_usage_lines(cmd, s_md_usage_line, &u);
  fputs("```\n\n", out);
  s_md_text(out, cmd->about, "");
  if (cmd->subs) {
    fputs("\nCommands:\n\n", out);
    for (const kg_cmd_t *const *s = cmd->subs; *s; s++) {
      if ((*s)->flags & KG_CMD_HIDDEN)
        continue;
      char anchor[128];
      snprintf(anchor, sizeof anchor, "kguard-%s", (*s)->name);
      for (char *c = anchor; *c; c++)
        if (*c == ' ')
          *c = '-';
      fprintf(out, "- [`%s`](#%s): ", kg__optdoc_leaf(*s), anchor);
      s_md_str(out, (*s)->summary, false);
      fputc('\n', out);
    }
  }
  fputs("\nOptions:\n\n", out);
  kg__optdoc_walk(cmd, s_md_opt, s_md_heading, out);
  if (cmd->more) {
    fputc('\n', out);
    s_md_text(out, cmd->more, "");
  }
  fputs("\nExit codes:\n\n| code | meaning |\n|---|---|\n", out);
  for (const kg_opt_exit_t *e = kg__optdoc_exits(cmd); e->code; e++) {
    fputs("| ", out);
    s_md_str(out, e->code, true);
    fputs(" | ", out);
    s_md_str(out, e->meaning, true);
    fputs(" |\n", out);
  }
  for (const kg_cmd_t *const *s = cmd->subs; s && *s; s++)
    if (!((*s)->flags & KG_CMD_HIDDEN))
      s_md_command(out, *s, level + 1);
}

void
kg_optdoc_markdown(const kg_cmd_t *root, FILE *out)
{
  if (root->name[0]) {
    s_md_command(out, root, 2);
    return;
  }
  fputs("<!-- Generated from kguard's option tables by `kguard help --format=markdown`;\n"
        "     do not edit: change the tables, then run scripts/gen-cli-docs.sh. -->\n"
        "# kguard command-line reference\n\n", out);
  s_md_text(out, root->about, "");
  fputs("\n```\n", out);
  kg__optdoc_usage_t u = {.out = out, .cmd = root};
  kg__optdoc_usage_lines(root, s_md_usage_line, &u);
  fputs("```\n\nCommands:\n\n", out);
  for (const kg_cmd_t *const *s = root->subs; s && *s; s++) {
    if ((*s)->flags & KG_CMD_HIDDEN)
      continue;
    fprintf(out, "- [`kguard %s`](#kguard-%s): ", (*s)->name, (*s)->name);
    s_md_str(out, (*s)->summary, false);
    fputc('\n', out);
  }
  if (root->more) {
    fputc('\n', out);
    s_md_text(out, root->more, "");
  }
  for (const kg_cmd_t *const *s = root->subs; s && *s; s++)
    if (!((*s)->flags & KG_CMD_HIDDEN))
      s_md_command(out, *s, 2);
}

/* ---- bash completion ------------------------------------------------------- */

static bool
s_end(const kg_opt_t *o)
{
  return !o->id && !o->help;
}

static void
s_bash_words(FILE *out, const kg_cmd_t *cmd, bool values)
{
  const kg_opt_t *tables[] = {cmd->opts, kg_opt_standard};
  bool first = true;
  for (size_t t = 0; t < 2; t++)
    for (const kg_opt_t *o = tables[t]; o && !s_end(o); o++) {
      if (!o->id || (o->flags & KG_OPT_HIDDEN) || (values && !o->arg))
        continue;
      if (o->short_name) {
        fprintf(out, "%s-%c", first ? "" : " ", o->short_name);
        first = false;
      }
      if (o->long_name) {
        fprintf(out, "%s--%s", first ? "" : " ", o->long_name);
        first = false;
      }
    }
}

/*  What a value of o completes to: choices ("text|json"), directories,
    kernelspec names, files, or nothing (numbers, names). */
static void
s_bash_value(FILE *out, const kg_opt_t *o)
{
  const char *a = o->arg;
  if (strchr(a, '|')) {
    fputs("COMPREPLY=($(compgen -W '", out);
    for (const char *c = a; *c; c++)
      fputc(*c == '|' ? ' ' : *c, out);
    fputs("' -- \"$cur\"))", out);
  } else if (strcmp(o->long_name, "kernel") == 0)
    fputs("_kguard_kernels", out);
  else if (strstr(a, "DIR") || strcmp(a, "P") == 0 || strcmp(a, "PREFIX") == 0)
    fputs("_filedir -d", out);
  else if (strstr(a, "FILE") || strstr(a, "OUT") || strstr(a, "PATH") || strstr(a, "PY")
           || strstr(a, "NOTEBOOK"))
    fputs("_filedir", out);
  else
    fputs("COMPREPLY=()", out);
}

static void
s_bash_case(FILE *out, const kg_cmd_t *cmd)
{
  char path[128];
  snprintf(path, sizeof path, "%s", cmd->name);
  fprintf(out, "    \"%s\")\n", path);
  /* values of the options that take one */
  bool any = false;
  for (const kg_opt_t *o = cmd->opts; o && !s_end(o); o++) {
    /* an optional value is never the next word: nothing to complete there */
    if (!o->id || !o->arg || (o->flags & (KG_OPT_HIDDEN | KG_OPT_OPTIONAL)))
      continue;
    if (!any)
      fputs("        case $prev in\n", out);
    any = true;
    fputs("        ", out);
    if (o->short_name)
      fprintf(out, "-%c|", o->short_name);
    fprintf(out, "--%s) ", o->long_name);
    s_bash_value(out, o);
    fputs("; return ;;\n", out);
  }
  if (any)
    fputs("        esac\n", out);
  fputs("        opts='", out);
  s_bash_words(out, cmd, false);
  fputs("'\n", out);
  if (cmd->subs) {
    fputs("        cmds='", out);
    bool first = true;
    for (const kg_cmd_t *const *s = cmd->subs; *s; s++)
      if (!((*s)->flags & KG_CMD_HIDDEN)) {
        fprintf(out, "%s%s", first ? "" : " ", kg__optdoc_leaf(*s));
        first = false;
      }
    fputs("'\n", out);
  }
  fputs("        ;;\n", out);
  for (const kg_cmd_t *const *s = cmd->subs; s && *s; s++)
    if (!((*s)->flags & KG_CMD_HIDDEN))
      s_bash_case(out, *s);
}

void
kg_optdoc_bash(const kg_cmd_t *root, FILE *out)
{
  fputs("# bash completion for kguard. Generated from kguard's option tables\n"
        "# (kguard help --format=bash-completion); do not edit.\n"
        "\n"
        "_kguard_kernels()\n"
        "{\n"
        "    local d names=()\n"
        "    for d in ${JUPYTER_PATH//:/ } \"${JUPYTER_DATA_DIR:-$HOME/.local/share/jupyter}\" \\\n"
        "             \"${VIRTUAL_ENV:-${CONDA_PREFIX:-/usr}}/share/jupyter\" /usr/local/share/jupyter \\\n"
        "             /usr/share/jupyter; do\n"
        "        for k in \"$d\"/kernels/*/kernel.json; do\n"
        "            [[ -e $k ]] && names+=(\"$(basename \"$(dirname \"$k\")\")\")\n"
        "        done\n"
        "    done\n"
        "    COMPREPLY=($(compgen -W \"${names[*]}\" -- \"$cur\"))\n"
        "}\n"
        "\n"
        "_kguard()\n"
        "{\n"
        "    local cur prev words cword split\n"
        "    _init_completion -s || return\n"
        "    # the command named so far: \"ckpt seal\" in `kguard ckpt seal DIR --st`\n"
        "    local path='' i w cmds opts\n"
        "    for ((i = 1; i < cword; i++)); do\n"
        "        w=${words[i]}\n"
        "        [[ $w == -* ]] && continue\n"
        "        case \"${path:+$path }$w\" in\n", out);
  /* every command path, so that operands are not taken for commands */
  fputs("            ", out);
  bool first = true;
  for (const kg_cmd_t *const *s = root->subs; s && *s; s++) {
    if ((*s)->flags & KG_CMD_HIDDEN)
      continue;
    fprintf(out, "%s\"%s\"", first ? "" : "|", (*s)->name);
    first = false;
    for (const kg_cmd_t *const *t = (*s)->subs; t && *t; t++)
      if (!((*t)->flags & KG_CMD_HIDDEN))
        fprintf(out, "|\"%s\"", (*t)->name);
  }
  fputs(") path=\"${path:+$path }$w\" ;;\n"
        "            *) break ;;\n"
        "        esac\n"
        "    done\n"
        "    case $path in\n", out);
  s_bash_case(out, root);
  for (const kg_cmd_t *const *s = root->subs; s && *s; s++)
    if (!((*s)->flags & KG_CMD_HIDDEN))
      s_bash_case(out, *s);
  fputs("    esac\n"
        "    $split && return\n"
        "    if [[ $cur == -* ]]; then\n"
        "        COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
        "    elif [[ -n $cmds ]]; then\n"
        "        COMPREPLY=($(compgen -W \"$cmds\" -- \"$cur\"))\n"
        "    else\n"
        "        _filedir\n"
        "    fi\n"
        "} &&\n"
        "    complete -F _kguard kguard\n", out);
}
