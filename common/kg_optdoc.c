/*  kg_optdoc: --help, man, Markdown and bash completion from option
    tables (see kg_optdoc.h). */
#include "kg_optdoc.h"
#include "kg_optdoc_priv.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>

#define S_WIDTH 79     /*  --help is reflowed to this many columns       */
#define S_OPTCOL 24    /*  where an option's help starts                 */

static const kg_opt_exit_t s_default_exits[] = {
  {"0", "success"},
  {"100", "usage error: a message says what is wrong"},
  {"111", "system failure"},
  {NULL, NULL},
};

const kg_opt_exit_t *
kg__optdoc_exits(const kg_cmd_t *cmd)
{
  return cmd->exits ? cmd->exits : s_default_exits;
}

static bool
s_end(const kg_opt_t *o)
{
  return !o->id && !o->help;
}

void
kg__optdoc_walk(const kg_cmd_t *cmd, void (*opt)(void *, const kg_opt_t *),
                void (*heading)(void *, const char *), void *arg)
{
  bool standard = false;
  for (const kg_opt_t *o = cmd->opts; o && !s_end(o); o++) {
    if (!o->id) {
      for (const kg_opt_t *s = kg_opt_standard; !standard && !s_end(s); s++)
        opt(arg, s);
      standard = true;
      heading(arg, o->help);
    } else if (!(o->flags & KG_OPT_HIDDEN))
      opt(arg, o);
  }
  for (const kg_opt_t *s = kg_opt_standard; !standard && !s_end(s); s++)
    opt(arg, s);
}

void
kg__optdoc_paragraphs(const char *text, kg__optdoc_para_fn fn, void *arg)
{
  while (text && *text) {
    while (*text == '\n')
      text++;
    if (!*text)
      break;
    const char *end = strstr(text, "\n\n");
    size_t len = end ? (size_t) (end - text) : strlen(text);
    bool verbatim = true;
    for (const char *l = text; l < text + len;) {
      if (strncmp(l, "  ", 2) != 0)
        verbatim = false;
      const char *nl = memchr(l, '\n', (size_t) (text + len - l));
      l = nl ? nl + 1 : text + len;
    }
    fn(arg, text, len, verbatim);
    text += len;
  }
}

/* ---- --help ---------------------------------------------------------------- */

typedef struct {
  FILE *out;
  int indent;      /*  columns before each line                          */
  int col;         /*  the column the cursor is at                       */
  bool first;      /*  no paragraph printed yet                          */
  bool tight;      /*  paragraphs without a blank line between (options) */
} s_flow_t;

/*  Print a paragraph reflowed into [indent, S_WIDTH), starting at f->col. */
static void
s_reflow(s_flow_t *f, const char *p, size_t len)
{
  const char *end = p + len;
  bool line_start = true;
  while (p < end) {
    while (p < end && (*p == ' ' || *p == '\n'))
      p++;
    const char *w = p;
    while (p < end && *p != ' ' && *p != '\n')
      p++;
    int wl = (int) (p - w);
    if (!wl)
      break;
    if (!line_start && f->col + 1 + wl > S_WIDTH) {
      fprintf(f->out, "\n%*s", f->indent, "");
      f->col = f->indent;
      line_start = true;
    }
    if (!line_start) {
      fputc(' ', f->out);
      f->col++;
    }
    fwrite(w, 1, (size_t) wl, f->out);
    f->col += wl;
    line_start = false;
  }
}

static void
s_help_para(void *arg, const char *p, size_t len, bool verbatim)
{
  s_flow_t *f = arg;
  if (!f->first) {
    fprintf(f->out, f->tight ? "\n%*s" : "\n\n%*s", f->indent, "");
    f->col = f->indent;
  }
  f->first = false;
  if (verbatim) {
    /* as written, each line moved by the indent */
    const char *end = p + len;
    while (p < end) {
      const char *nl = memchr(p, '\n', (size_t) (end - p));
      size_t n = nl ? (size_t) (nl - p) : (size_t) (end - p);
      fwrite(p, 1, n, f->out);
      p += n;
      if (p < end) {
        fprintf(f->out, "\n%*s", f->indent, "");
        p++;
      }
    }
    return;
  }
  s_reflow(f, p, len);
}

/*  A text block: its paragraphs, then a newline. */
static void
s_help_text(FILE *out, const char *text)
{
  s_flow_t f = {.out = out, .first = true};
  kg__optdoc_paragraphs(text, s_help_para, &f);
  if (!f.first)
    fputc('\n', out);
}

/*  "-o, --output OUT" into buf. */
void
kg__optdoc_spec(const kg_opt_t *o, char *buf, size_t len)
{
  int n = 0;
  if (o->short_name)
    n = snprintf(buf, len, "-%c%s", o->short_name, o->long_name ? ", " : "");
  if (o->long_name && n >= 0 && (size_t) n < len)
    n += snprintf(buf + n, len - (size_t) n, "--%s", o->long_name);
  if (o->arg && n >= 0 && (size_t) n < len)
    snprintf(buf + n, len - (size_t) n, (o->flags & KG_OPT_OPTIONAL) ? "[=%s]" : " %s", o->arg);
}

static void
s_help_opt(void *arg, const kg_opt_t *o)
{
  FILE *out = arg;
  char spec[128];
  kg__optdoc_spec(o, spec, sizeof spec);
  int n = fprintf(out, "  %s", spec);
  if (n + 2 > S_OPTCOL)
    fprintf(out, "\n%*s", S_OPTCOL, "");
  else
    fprintf(out, "%*s", S_OPTCOL - n, "");
  s_flow_t f = {.out = out, .indent = S_OPTCOL, .col = S_OPTCOL, .first = true, .tight = true};
  kg__optdoc_paragraphs(o->help, s_help_para, &f);
  fputc('\n', out);
}

const char *
kg__optdoc_leaf(const kg_cmd_t *cmd)
{
  const char *sp = strrchr(cmd->name, ' ');
  return sp ? sp + 1 : cmd->name;
}

/*  Calls fn for each usage line of cmd. */
void
kg__optdoc_usage_lines(const kg_cmd_t *cmd, void (*fn)(void *, const char *, size_t), void *arg)
{
  for (const char *u = cmd->usage; u && *u;) {
    const char *nl = strchr(u, '\n');
    size_t n = nl ? (size_t) (nl - u) : strlen(u);
    fn(arg, u, n);
    u += n + (nl ? 1 : 0);
  }
}

/*  A usage line, wrapped at S_WIDTH between bracketed groups (never inside
    one), continuation lines under its first operand. */
static void
s_help_usage_line(void *arg, const char *u, size_t n)
{
  kg__optdoc_usage_t *s = arg;
  int col = fprintf(s->out, "%s kguard%s%s", s->line++ ? "      " : "usage:",
                    s->cmd->name[0] ? " " : "", s->cmd->name);
  int indent = col + 1;
  const char *end = u + n;
  while (u < end) {
    while (u < end && *u == ' ')
      u++;
    const char *w = u;
    int depth = 0;
    while (u < end && (*u != ' ' || depth > 0)) {
      depth += (*u == '[' || *u == '(') - (*u == ']' || *u == ')');
      u++;
    }
    int wl = (int) (u - w);
    if (!wl)
      break;
    if (col > indent && col + 1 + wl > S_WIDTH) {
      fprintf(s->out, "\n%*s", indent, "");
      col = indent;
    } else {
      fputc(' ', s->out);
      col++;
    }
    fwrite(w, 1, (size_t) wl, s->out);
    col += wl;
  }
  fputc('\n', s->out);
}

/*  A heading of options: reflowed, then a colon. */
static void
s_help_heading(void *arg, const char *text)
{
  FILE *out = arg;
  fputc('\n', out);
  s_flow_t f = {.out = out, .first = true};
  s_reflow(&f, text, strlen(text));
  fputs(":\n", out);
}

void
kg_optdoc_help(const kg_cmd_t *cmd, FILE *out)
{
  kg__optdoc_usage_t u = {.out = out, .cmd = cmd};
  kg__optdoc_usage_lines(cmd, s_help_usage_line, &u);
  fputc('\n', out);
  s_help_text(out, cmd->about);
  if (cmd->subs) {
    fputs("\ncommands:\n", out);
    size_t w = 0;
    for (const kg_cmd_t *const *s = cmd->subs; *s; s++)
      if (!((*s)->flags & KG_CMD_HIDDEN) && strlen(kg__optdoc_leaf(*s)) > w)
        w = strlen(kg__optdoc_leaf(*s));
    for (const kg_cmd_t *const *s = cmd->subs; *s; s++)
      if (!((*s)->flags & KG_CMD_HIDDEN))
        fprintf(out, "  %-*s  %s\n", (int) w, kg__optdoc_leaf(*s), (*s)->summary);
  }
  fputs("\noptions:\n", out);
  kg__optdoc_walk(cmd, s_help_opt, s_help_heading, out);
  if (cmd->more) {
    fputc('\n', out);
    s_help_text(out, cmd->more);
  }
  fputs("\nexit codes:\n", out);
  size_t w = 3;
  for (const kg_opt_exit_t *e = kg__optdoc_exits(cmd); e->code; e++)
    if (strlen(e->code) > w)
      w = strlen(e->code);
  for (const kg_opt_exit_t *e = kg__optdoc_exits(cmd); e->code; e++) {
    int n = fprintf(out, "  %-*s  ", (int) w, e->code);
    s_flow_t f = {.out = out, .indent = n, .col = n, .first = true, .tight = true};
    kg__optdoc_paragraphs(e->meaning, s_help_para, &f);
    fputc('\n', out);
  }
}

const kg_cmd_t *
kg_optdoc_find(const kg_cmd_t *root, int n, char **words)
{
  const kg_cmd_t *cmd = root;
  for (int i = 0; i < n && cmd; i++) {
    const kg_cmd_t *found = NULL;
    for (const kg_cmd_t *const *s = cmd->subs; s && *s && !found; s++)
      if (strcmp(kg__optdoc_leaf(*s), words[i]) == 0)
        found = *s;
    cmd = found;
  }
  return cmd;
}
