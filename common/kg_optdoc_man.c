/*  kg_optdoc: the man page (see kg_optdoc.h). */
#include "kg_optdoc.h"
#include "kg_optdoc_priv.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>

/* ---- man ------------------------------------------------------------------- */

/*  Text for troff: backslashes and hyphens escaped, `code` in bold, a line
    never starting with a control character. fill: newlines become spaces. */
static void
s_man_write(FILE *out, const char *p, size_t len, bool fill)
{
  bool bol = true, bold = false;
  for (size_t i = 0; i < len; i++) {
    char c = p[i];
    if (c == '\n' && fill)
      c = ' ';
    if (bol && (c == '.' || c == '\''))
      fputs("\\&", out);
    bol = false;
    switch (c) {
    case '\\': fputs("\\e", out); break;
    case '-': fputs("\\-", out); break;
    case '`':
      fputs(bold ? "\\fR" : "\\fB", out);
      bold = !bold;
      break;
    case '\n':
      fputc('\n', out);
      bol = true;
      break;
    default: fputc(c, out);
    }
  }
  if (bold)
    fputs("\\fR", out);
}

static void
s_man_str(FILE *out, const char *s)
{
  s_man_write(out, s, strlen(s), true);
}

static void
s_man_para(void *arg, const char *p, size_t len, bool verbatim)
{
  FILE *out = arg;
  if (verbatim) {
    fputs(".PP\n.nf\n", out);
    s_man_write(out, p, len, false);
    fputs("\n.fi\n", out);
  } else {
    fputs(".PP\n", out);
    s_man_write(out, p, len, true);
    fputc('\n', out);
  }
}

/*  Paragraphs of an option's help or an exit code's meaning, inside .TP. */
typedef struct {
  FILE *out;
  int n;
} s_tp_t;

static void
s_man_tp_para(void *arg, const char *p, size_t len, bool verbatim)
{
  s_tp_t *t = arg;
  if (t->n++)
    fputs(".IP\n", t->out);
  if (verbatim)
    fputs(".nf\n", t->out);
  s_man_write(t->out, p, len, !verbatim);
  fputs(verbatim ? "\n.fi\n" : "\n", t->out);
}

static void
s_man_tp(FILE *out, const char *text)
{
  s_tp_t t = {out, 0};
  kg__optdoc_paragraphs(text, s_man_tp_para, &t);
}

static void
s_man_opt(void *arg, const kg_opt_t *o)
{
  FILE *out = arg;
  fputs(".TP\n", out);
  if (o->short_name)
    fprintf(out, "\\fB\\-%c\\fR%s", o->short_name, o->long_name ? ", " : "");
  if (o->long_name) {
    fputs("\\fB\\-\\-", out);
    s_man_str(out, o->long_name);
    fputs("\\fR", out);
  }
  if (o->arg) {
    bool optional = (o->flags & KG_OPT_OPTIONAL) != 0;
    fputs(optional ? "[=\\fI" : " \\fI", out);
    s_man_str(out, o->arg);
    fputs(optional ? "\\fR]" : "\\fR", out);
  }
  fputc('\n', out);
  s_man_tp(out, o->help);
}

static void
s_man_usage_line(void *arg, const char *u, size_t n)
{
  kg__optdoc_usage_t *s = arg;
  fprintf(s->out, "\\fBkguard%s", s->cmd->name[0] ? " " : "");
  s_man_str(s->out, s->cmd->name);
  fputs("\\fR ", s->out);
  s_man_write(s->out, u, n, true);
  fputs("\n.br\n", s->out);
}

static void
s_man_heading(void *arg, const char *text)
{
  FILE *out = arg;
  fputs(".SS \"", out);
  s_man_str(out, text);
  fputs("\"\n", out);
}

static void
s_man_subheading(void *arg, const char *text)
{
  FILE *out = arg;
  fputs(".PP\n", out);
  s_man_str(out, text);
  fputs(":\n", out);
}

/*  Synopsis, description, options, notes and exit codes of cmd; sub: as a
    subsection of its parent's page. */
static void
s_man_body(FILE *out, const kg_cmd_t *cmd, bool sub)
{
  kg__optdoc_usage_t u = {.out = out, .cmd = cmd};
  if (sub) {
    fputs(".SS \"kguard ", out);
    s_man_str(out, cmd->name);
    fputs("\"\n", out);
  } else
    fputs(".SH SYNOPSIS\n", out);
  kg__optdoc_usage_lines(cmd, s_man_usage_line, &u);
  if (!sub)
    fputs(".SH DESCRIPTION\n", out);
  kg__optdoc_paragraphs(cmd->about, s_man_para, out);
  if (cmd->subs && !sub) {
    fputs(".SH COMMANDS\n", out);
    for (const kg_cmd_t *const *s = cmd->subs; *s; s++) {
      if ((*s)->flags & KG_CMD_HIDDEN)
        continue;
      fputs(".TP\n\\fB", out);
      s_man_str(out, kg__optdoc_leaf(*s));
      fputs("\\fR\n", out);
      s_man_str(out, (*s)->summary);
      fputc('\n', out);
    }
  }
  fputs(sub ? ".PP\nOptions:\n" : ".SH OPTIONS\n", out);
  kg__optdoc_walk(cmd, s_man_opt, sub ? s_man_subheading : s_man_heading, out);
  if (cmd->more) {
    if (!sub)
      fputs(".SH NOTES\n", out);
    kg__optdoc_paragraphs(cmd->more, s_man_para, out);
  }
  fputs(sub ? ".PP\nExit status:\n" : ".SH \"EXIT STATUS\"\n", out);
  for (const kg_opt_exit_t *e = kg__optdoc_exits(cmd); e->code; e++) {
    fputs(".TP\n.B ", out);
    s_man_str(out, e->code);
    fputc('\n', out);
    s_man_tp(out, e->meaning);
  }
}

void
kg_optdoc_man_name(const kg_cmd_t *cmd, char *buf, size_t len)
{
  int n = snprintf(buf, len, "kguard%s%s", cmd->name[0] ? "-" : "", cmd->name);
  for (char *c = buf; n > 0 && *c; c++)
    if (*c == ' ')
      *c = '-';
  if (n > 0 && (size_t) n + 2 < len)
    strcat(buf, ".1");
}

void
kg_optdoc_man(const kg_cmd_t *cmd, const kg_cmd_t *root, FILE *out)
{
  char page[128];
  kg_optdoc_man_name(cmd, page, sizeof page);
  page[strlen(page) - 2] = '\0';
  fprintf(out, ".\\\" Generated from kguard's option tables (kguard help --format=man");
  fprintf(out, "%s%s); do not edit.\n", cmd->name[0] ? " " : "", cmd->name);
  char upper[128];
  snprintf(upper, sizeof upper, "%s", page);
  for (char *c = upper; *c; c++)
    if (*c >= 'a' && *c <= 'z')
      *c = (char) (*c - 'a' + 'A');
  fputs(".TH \"", out);
  s_man_str(out, upper);
  fprintf(out, "\" 1 \"\" \"kguard %s\" \"kguard manual\"\n.nh\n.ad l\n.SH NAME\n",
          kg_opt_version());
  s_man_str(out, page);
  fputs(" \\- ", out);
  s_man_str(out, cmd->summary);
  fputc('\n', out);
  s_man_body(out, cmd, false);
  if (cmd->subs && cmd != root) {
    fputs(".SH \"COMMAND DETAILS\"\n", out);
    for (const kg_cmd_t *const *s = cmd->subs; *s; s++)
      if (!((*s)->flags & KG_CMD_HIDDEN))
        s_man_body(out, *s, true);
  }
  fputs(".SH \"SEE ALSO\"\n", out);
  bool first = true;
  const kg_cmd_t *const *list = root->subs;
  if (cmd != root) {
    fputs("\\fBkguard\\fR(1)", out);
    first = false;
  }
  for (const kg_cmd_t *const *s = list; s && *s; s++) {
    if (((*s)->flags & KG_CMD_HIDDEN) || *s == cmd)
      continue;
    char other[128];
    kg_optdoc_man_name(*s, other, sizeof other);
    other[strlen(other) - 2] = '\0';
    fprintf(out, "%s\\fB", first ? "" : ",\n");
    s_man_str(out, other);
    fputs("\\fR(1)", out);
    first = false;
  }
  fputc('\n', out);
}
