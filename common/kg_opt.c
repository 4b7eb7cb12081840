/*  kg_opt: the table-driven parser (see kg_opt.h). */
#include "kg_opt.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "kg_exit.h"
#include "kg_optdoc.h"

#ifndef KGUARD_VERSION
#define KGUARD_VERSION "unknown"
#endif

static char s_prog[64] = "kguard";

const char *
kg_opt_version(void)
{
  return KGUARD_VERSION;
}

const char *
kg_opt_prog(void)
{
  return s_prog;
}

void
kg_opt_set_prog(const char *prog)
{
  snprintf(s_prog, sizeof s_prog, "%s", prog);
}

void
kg_opt_error(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", s_prog);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  fflush(stderr);
  va_end(ap);
}

void
kg_opt_error_at(const char *path, const char *fmt, ...)
{
  char msg[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (*path && strstr(msg, path))
    kg_opt_error("%s", msg);
  else
    kg_opt_error("%s: %s", path, msg);
}

/*  "kguard CMD", the prefix and the name in "see ... --help". */
static void
s_cmd_line(const kg_cmd_t *cmd, char *buf, size_t len)
{
  snprintf(buf, len, "kguard%s%s", cmd->name[0] ? " " : "", cmd->name);
}

void
kg_opt_init(kg_opt_parser_t *p, const kg_cmd_t *cmd, int argc, char **argv)
{
  *p = (kg_opt_parser_t){.cmd = cmd, .argc = argc, .argv = argv, .next = 1,
                         .out = stdout, .err = stderr};
  char prog[64];
  s_cmd_line(cmd, prog, sizeof prog);
  kg_opt_set_prog(prog);
}

int
kg_opt_usage(kg_opt_parser_t *p, const char *fmt, ...)
{
  char prog[64];
  s_cmd_line(p->cmd, prog, sizeof prog);
  va_list ap;
  va_start(ap, fmt);
  fprintf(p->err, "%s: ", prog);
  vfprintf(p->err, fmt, ap);
  fprintf(p->err, " (see %s --help)\n", prog);
  fflush(p->err);
  va_end(ap);
  p->code = KG_EXIT_USAGE;
  p->stopped = true;
  return KG_EXIT_USAGE;
}

/*  The option named name (len bytes) among cmd's and the standard ones. */
static const kg_opt_t *
s_find_long(const kg_cmd_t *cmd, const char *name, size_t len)
{
  const kg_opt_t *tables[] = {cmd->opts, kg_opt_standard};
  for (size_t t = 0; t < 2; t++)
    for (const kg_opt_t *o = tables[t]; o && (o->id || o->help); o++)
      if (o->id && o->long_name && strlen(o->long_name) == len
          && strncmp(o->long_name, name, len) == 0)
        return o;
  return NULL;
}

static const kg_opt_t *
s_find_short(const kg_cmd_t *cmd, char c)
{
  const kg_opt_t *tables[] = {cmd->opts, kg_opt_standard};
  for (size_t t = 0; t < 2; t++)
    for (const kg_opt_t *o = tables[t]; o && (o->id || o->help); o++)
      if (o->id && o->short_name && o->short_name == c)
        return o;
  return NULL;
}

const kg_opt_t *
kg_opt_find_id(const kg_cmd_t *cmd, int id)
{
  const kg_opt_t *tables[] = {cmd->opts, kg_opt_standard};
  for (size_t t = 0; t < 2; t++)
    for (const kg_opt_t *o = tables[t]; o && (o->id || o->help); o++)
      if (o->id && o->id == id)
        return o;
  return NULL;
}

/*  True when arg is exactly one of cmd's option names ("-q", "--kernel"):
    written where a value belongs, it is a forgotten value. */
static bool
s_is_option_name(const kg_cmd_t *cmd, const char *arg)
{
  if (arg[0] != '-' || !arg[1])
    return false;
  if (arg[1] != '-')
    return !arg[2] && s_find_short(cmd, arg[1]);
  return arg[2] && !strchr(arg, '=') && s_find_long(cmd, arg + 2, strlen(arg + 2));
}

/*  Levenshtein distance of a (la bytes) and b, capped at 9. */
static int
s_distance(const char *a, size_t la, const char *b)
{
  size_t lb = strlen(b);
  if (la > 40 || lb > 40)
    return 9;
  int row[41];
  for (size_t j = 0; j <= lb; j++)
    row[j] = (int) j;
  for (size_t i = 1; i <= la; i++) {
    int diag = row[0];
    row[0] = (int) i;
    for (size_t j = 1; j <= lb; j++) {
      int up = row[j];
      int best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best)
        best = up + 1;
      if (row[j - 1] + 1 < best)
        best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[lb] > 9 ? 9 : row[lb];
}

/*  The documented long option closest to name (len bytes): one it starts,
    or one within two edits. NULL when none is close. */
static const char *
s_near(const kg_cmd_t *cmd, const char *name, size_t len)
{
  const char *best = NULL;
  int best_d = 3;
  for (const kg_opt_t *o = cmd->opts; o && (o->id || o->help); o++) {
    if (!o->id || !o->long_name || (o->flags & KG_OPT_HIDDEN))
      continue;
    int d = len >= 3 && strncmp(o->long_name, name, len) == 0 ? 0
            : s_distance(name, len, o->long_name);
    if (d < best_d) {
      best_d = d;
      best = o->long_name;
    }
  }
  return best;
}

/*  A subcommand of p->parent other than p->cmd that has the option arg
    ("--name" or "-c"), or NULL. */
static const kg_cmd_t *
s_sibling_with(const kg_opt_parser_t *p, const char *arg)
{
  for (const kg_cmd_t *const *s = p->parent ? p->parent->subs : NULL; s && *s; s++) {
    if (*s == p->cmd)
      continue;
    if (arg[1] == '-' ? s_find_long(*s, arg + 2, strlen(arg + 2)) != NULL
                      : s_find_short(*s, arg[1]) != NULL)
      return *s;
  }
  return NULL;
}

static int
s_unknown(kg_opt_parser_t *p, const char *arg, const char *name, size_t len)
{
  const kg_cmd_t *sib = s_sibling_with(p, arg);
  if (sib) {
    const char *sp = strrchr(sib->name, ' ');
    kg_opt_usage(p, "unknown option '%s' (one of %s's options)", arg, sp ? sp + 1 : sib->name);
    return KG_OPT_EXIT;
  }
  const char *near = name ? s_near(p->cmd, name, len) : NULL;
  if (near)
    kg_opt_usage(p, "unknown option '%s'; did you mean --%s?", arg, near);
  else
    kg_opt_usage(p, "unknown option '%s'", arg);
  return KG_OPT_EXIT;
}

/*  Take the value of option o (written as p->written) from the next
    argument. Returns o->id or KG_OPT_EXIT. */
static int
s_take_value(kg_opt_parser_t *p, const kg_opt_t *o, const char **slot)
{
  char pair[96] = "";
  if (o->flags & KG_OPT_PAIR) {   /* "NAME VALUE": "a NAME and a VALUE" */
    const char *sp = strchr(o->arg, ' ');
    snprintf(pair, sizeof pair, "a %.*s and a %s", (int) (sp - o->arg), o->arg, sp + 1);
  }
  if (p->next >= p->argc) {
    if (*pair)
      kg_opt_usage(p, "%s needs %s", p->written, pair);
    else
      kg_opt_usage(p, "%s needs a value (%s)", p->written, o->arg);
    return KG_OPT_EXIT;
  }
  const char *v = p->argv[p->next];
  if (s_is_option_name(p->cmd, v)) {
    if (*pair)   /* no other way to write it: a mistake */
      kg_opt_usage(p, "%s needs %s, not the option '%s'", p->written, pair, v);
    else
      kg_opt_usage(p, "%s needs a value (%s), not the option '%s'; if '%s' is the value, "
                   "write --%s=%s", p->written, o->arg, v, v, o->long_name, v);
    return KG_OPT_EXIT;
  }
  p->next++;
  *slot = v;
  return o->id;
}

/*  An option found: its values, or the standard options' action. */
static int
s_option(kg_opt_parser_t *p, const kg_opt_t *o, const char *inline_value)
{
  p->value = p->value2 = NULL;
  if (o->id == KG_OPT_ID_HELP || o->id == KG_OPT_ID_VERSION) {
    if (o->id == KG_OPT_ID_HELP)
      kg_optdoc_help(p->cmd, p->out);
    else
      fprintf(p->out, "kguard %s\n", KGUARD_VERSION);
    fflush(p->out);
    p->code = 0;
    p->stopped = true;
    return KG_OPT_EXIT;
  }
  if (!o->arg)
    return o->id;
  if (o->flags & KG_OPT_OPTIONAL) {   /* only an attached value is its value */
    p->value = inline_value;
    return o->id;
  }
  int rc = o->id;
  if (inline_value)
    p->value = inline_value;
  else
    rc = s_take_value(p, o, &p->value);
  if (rc == o->id && (o->flags & KG_OPT_PAIR))
    rc = s_take_value(p, o, &p->value2);
  return rc;
}

int
kg_opt_next(kg_opt_parser_t *p)
{
  if (p->stopped)
    return KG_OPT_EXIT;
  p->value = p->value2 = NULL;
  if (p->cluster && *p->cluster) {
    /* the rest of "-abc": more flags, or the last one's value */
    char c = *p->cluster++;
    const kg_opt_t *o = s_find_short(p->cmd, c);
    snprintf(p->written, sizeof p->written, "-%c", c);
    if (!o)
      return s_unknown(p, p->written, NULL, 0);
    const char *rest = *p->cluster ? p->cluster : NULL;
    if (o->arg) {
      p->cluster = NULL;
      return s_option(p, o, rest);
    }
    return s_option(p, o, NULL);
  }
  p->cluster = NULL;
  if (p->next >= p->argc)
    return KG_OPT_END;
  const char *a = p->argv[p->next++];
  if (p->operands_only || a[0] != '-' || !a[1]) {
    if (p->cmd->flags & KG_CMD_STOP)
      p->operands_only = true;
    p->value = a;
    return KG_OPT_OPERAND;
  }
  if (strcmp(a, "--") == 0) {
    p->operands_only = true;
    return kg_opt_next(p);
  }
  if (a[1] == '-') {
    const char *name = a + 2;
    const char *eq = strchr(name, '=');
    size_t len = eq ? (size_t) (eq - name) : strlen(name);
    snprintf(p->written, sizeof p->written, "--%.*s", (int) (len < 60 ? len : 60), name);
    const kg_opt_t *o = s_find_long(p->cmd, name, len);
    if (!o)
      return s_unknown(p, p->written, name, len);
    if (eq && !o->arg) {
      kg_opt_usage(p, "%s takes no value (got '%s')", p->written, a);
      return KG_OPT_EXIT;
    }
    return s_option(p, o, eq ? eq + 1 : NULL);
  }
  p->cluster = a + 1;
  return kg_opt_next(p);
}

char **
kg_opt_rest(kg_opt_parser_t *p, int *n)
{
  *n = p->argc - p->next;
  return p->argv + p->next;
}

/*  The last word of a command's name: "seal" of "ckpt seal". */
static const char *
s_leaf(const kg_cmd_t *cmd)
{
  const char *sp = strrchr(cmd->name, ' ');
  return sp ? sp + 1 : cmd->name;
}

int
kg_opt_dispatch(kg_opt_parser_t *p)
{
  for (;;) {
    int id = kg_opt_next(p);
    if (id == KG_OPT_EXIT)
      return -1;
    if (id == KG_OPT_END) {
      char list[512] = "";
      size_t n = 0;
      for (const kg_cmd_t *const *s = p->cmd->subs; s && *s; s++)
        if (!((*s)->flags & KG_CMD_HIDDEN) && n < sizeof list)
          n += (size_t) snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "", s_leaf(*s));
      kg_opt_usage(p, "which %s? one of %s", p->cmd->name[0] ? "subcommand" : "command", list);
      return -1;
    }
    if (id != KG_OPT_OPERAND) {
      kg_opt_usage(p, "%s goes after the command's name", p->written);
      return -1;
    }
    for (int i = 0; p->cmd->subs && p->cmd->subs[i]; i++)
      if (strcmp(s_leaf(p->cmd->subs[i]), p->value) == 0) {
        p->next--;
        return i;
      }
    kg_opt_usage(p, "unknown %s '%s'", p->cmd->name[0] ? "subcommand" : "command", p->value);
    return -1;
  }
}

/* ---- lint ------------------------------------------------------------------ */

static bool
s_in_tree(const kg_cmd_t *cmd, const char *name, size_t len)
{
  if (s_find_long(cmd, name, len))
    return true;
  for (const kg_cmd_t *const *s = cmd->subs; s && *s; s++)
    if (s_in_tree(*s, name, len))
      return true;
  return false;
}

int
kg_opt_lint(const kg_cmd_t *cmd, char *err, size_t errlen)
{
  char who[64];
  s_cmd_line(cmd, who, sizeof who);
#define S_FAIL(...)                                                              \
  do {                                                                          \
    int n_ = snprintf(err, errlen, "%s: ", who);                               \
    if (n_ > 0 && (size_t) n_ < errlen)                                         \
      snprintf(err + n_, errlen - (size_t) n_, __VA_ARGS__);                    \
    return -1;                                                                  \
  } while (0)
  if (!cmd->summary || !cmd->usage || !cmd->about)
    S_FAIL("summary, usage and about are required");
  for (const kg_opt_t *o = cmd->opts; o && (o->id || o->help); o++) {
    if (!o->id) {
      if (o->long_name || o->short_name)
        S_FAIL("a heading has no names");
      continue;
    }
    if (o->id <= 0)
      S_FAIL("option ids are positive (%d)", o->id);
    if (!o->long_name)
      S_FAIL("every option has a long name (-%c)", o->short_name);
    if (!o->help || !*o->help)
      S_FAIL("--%s has no help", o->long_name);
    if ((o->flags & KG_OPT_OPTIONAL) && (!o->arg || (o->flags & KG_OPT_PAIR)))
      S_FAIL("an optional value needs a name (arg) and cannot be a pair");
    if ((o->flags & KG_OPT_PAIR) && (!o->arg || !strchr(o->arg, ' ')))
      S_FAIL("--%s takes two values: name both", o->long_name);
    if (s_find_long(&(kg_cmd_t){.opts = kg_opt_standard}, o->long_name, strlen(o->long_name))
        || o->short_name == 'h')
      S_FAIL("--%s clashes with a standard option", o->long_name);
    for (const kg_opt_t *q = cmd->opts; q != o; q++) {
      if (!q->id)
        continue;
      if (q->id == o->id)
        S_FAIL("id %d is used twice", o->id);
      if (strcmp(q->long_name, o->long_name) == 0)
        S_FAIL("--%s is listed twice", o->long_name);
      if (o->short_name && q->short_name == o->short_name)
        S_FAIL("-%c is listed twice", o->short_name);
    }
  }
  for (const char *u = strstr(cmd->usage, "--"); u; u = strstr(u + 2, "--")) {
    const char *name = u + 2;
    size_t len = strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-");
    if (len && !s_in_tree(cmd, name, len))
      S_FAIL("the usage names --%.*s, which is not an option", (int) len, name);
  }
  for (const kg_cmd_t *const *s = cmd->subs; s && *s; s++)
    if (kg_opt_lint(*s, err, errlen) != 0)
      return -1;
  return 0;
#undef S_FAIL
}
