/*  kg_opt by tables: each row is one command line and the events the parser
    must give for it (options with their values, operands, the end or a
    stop with its exit code and its one line on stderr). No process, no
    terminal: help and messages go to memory streams. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_opt.h"
#include "kg_optdoc.h"
#include "kg_test.h"

enum { O_OUT = 1, O_QUIET, O_VERBOSE, O_KERNEL, O_PARAM, O_SECRET, O_CHECKPOINTS, O_PROGRESS };

static const kg_opt_t s_opts[] = {
  {O_OUT, 'o', "output", "FILE", "where the result goes", 0},
  {O_QUIET, 'q', "quiet", NULL, "say less", 0},
  {O_VERBOSE, 'v', "verbose", NULL, "say more", 0},
  {O_KERNEL, 'k', "kernel", "NAME", "the kernel", 0},
  {0, 0, NULL, NULL, "more options", 0},
  {O_PARAM, 'p', "parameters", "NAME VALUE", "a parameter", KG_OPT_PAIR},
  {O_SECRET, 0, "secret-knob", NULL, "internal", KG_OPT_HIDDEN},
  {O_CHECKPOINTS, 0, "checkpoints", "DIR", "checkpoint directory", 0},
  {O_PROGRESS, 0, "progress", "WHEN", "how to show progress", KG_OPT_OPTIONAL},
  {0, 0, NULL, NULL, NULL, 0},
};

static const kg_cmd_t s_cmd = {
  .name = "t",
  .summary = "a test command",
  .usage = "[--output FILE] NOTEBOOK",
  .about = "It tests.",
  .opts = s_opts,
};

static const kg_cmd_t s_stop = {
  .name = "x",
  .summary = "a command whose operands end the options",
  .usage = "[options] -- COMMAND",
  .about = "It stops.",
  .opts = s_opts,
  .flags = KG_CMD_STOP,
};

typedef struct {
  const kg_cmd_t *cmd;
  const char *args[8];   /*  after argv[0]                                   */
  const char *events;    /*  "id=value[,value2];" ... "op=X;" "end" "exit=N" */
  const char *err;       /*  a substring of stderr, NULL: stderr empty       */
} s_row_t;

static const s_row_t s_rows[] = {
  {&s_cmd, {"--output", "a.ipynb"}, "1=a.ipynb;end", NULL},
  {&s_cmd, {"--output=a.ipynb"}, "1=a.ipynb;end", NULL},
  {&s_cmd, {"-o", "a.ipynb"}, "1=a.ipynb;end", NULL},
  {&s_cmd, {"-oa.ipynb"}, "1=a.ipynb;end", NULL},
  {&s_cmd, {"--output="}, "1=;end", NULL},
  {&s_cmd, {"-qv"}, "2;3;end", NULL},
  {&s_cmd, {"-qk", "py"}, "2;4=py;end", NULL},
  {&s_cmd, {"-qkpy"}, "2;4=py;end", NULL},
  {&s_cmd, {"nb", "-q", "other"}, "op=nb;2;op=other;end", NULL},
  {&s_cmd, {"--", "-q", "--output"}, "op=-q;op=--output;end", NULL},
  {&s_cmd, {"-"}, "op=-;end", NULL},
  {&s_cmd, {"-o", "-0.5"}, "1=-0.5;end", NULL},
  {&s_cmd, {"--output=-q"}, "1=-q;end", NULL},
  {&s_cmd, {"-p", "lr", "0.1", "-p", "n", "-3"}, "5=lr,0.1;5=n,-3;end", NULL},
  {&s_cmd, {"--parameters=lr", "0.1"}, "5=lr,0.1;end", NULL},
  {&s_cmd, {"--secret-knob"}, "6;end", NULL},
  /* an optional value: only attached; the next argument stays an operand */
  {&s_cmd, {"--progress"}, "8;end", NULL},
  {&s_cmd, {"--progress=machine"}, "8=machine;end", NULL},
  {&s_cmd, {"--progress", "a.tar"}, "8;op=a.tar;end", NULL},
  {&s_cmd, {"--progress", "-q"}, "8;2;end", NULL},
  {&s_cmd, {"--progress="}, "8=;end", NULL},
  /* mistakes: one line, exit 100 */
  {&s_cmd, {"--frob"}, "exit=100", "kguard t: unknown option '--frob' (see kguard t --help)\n"},
  {&s_cmd, {"-V"}, "exit=100", "kguard t: unknown option '-V' (see kguard t --help)\n"},
  {&s_cmd, {"-qX"}, "2;exit=100", "unknown option '-X'"},
  {&s_cmd, {"--outptu", "x"}, "exit=100", "unknown option '--outptu'; did you mean --output?"},
  {&s_cmd, {"--checkpoint", "x"}, "exit=100", "did you mean --checkpoints?"},
  {&s_cmd, {"--out", "x"}, "exit=100", "unknown option '--out'; did you mean --output?"},
  {&s_cmd, {"--secret"}, "exit=100", "unknown option '--secret' (see"},
  {&s_cmd, {"--quiet=yes"}, "exit=100", "--quiet takes no value (got '--quiet=yes')"},
  {&s_cmd, {"--output"}, "exit=100", "--output needs a value (FILE)"},
  {&s_cmd, {"-o"}, "exit=100", "-o needs a value (FILE)"},
  {&s_cmd, {"-o", "-q"}, "exit=100",
   "-o needs a value (FILE), not the option '-q'; if '-q' is the value, write --output=-q"},
  {&s_cmd, {"--kernel", "--output", "x"}, "exit=100", "not the option '--output'"},
  {&s_cmd, {"-p", "lr"}, "exit=100", "-p needs a NAME and a VALUE (see"},
  {&s_cmd, {"--parameters", "-q", "1"}, "exit=100",
   "--parameters needs a NAME and a VALUE, not the option '-q'"},
  {&s_cmd, {"-p", "lr", "-q"}, "exit=100",
   "kguard t: -p needs a NAME and a VALUE, not the option '-q' (see kguard t --help)\n"},
  {&s_cmd, {"--frob", "--help"}, "exit=100", "unknown option '--frob'"},
  /* the standard options: anywhere, answered at once */
  {&s_cmd, {"--help"}, "exit=0", NULL},
  {&s_cmd, {"nb", "-h"}, "op=nb;exit=0", NULL},
  {&s_cmd, {"--version"}, "exit=0", NULL},
  {&s_cmd, {"--help=x"}, "exit=100", "--help takes no value"},
  /* KG_CMD_STOP: options end at the first operand */
  {&s_stop, {"-q", "python", "-q", "--output", "x"}, "2;op=python;op=-q;op=--output;op=x;end",
   NULL},
};

/*  Run one row; the events as a string like the table's. */
static void
s_run(const s_row_t *row, char *events, size_t len, char **err_text, char **out_text)
{
  char *argv[10] = {(char *) row->cmd->name};
  int argc = 1;
  while (argc < 9 && row->args[argc - 1])
    argv[argc] = (char *) row->args[argc - 1], argc++;
  size_t elen = 0, olen = 0;
  FILE *err = open_memstream(err_text, &elen), *out = open_memstream(out_text, &olen);
  kg_opt_parser_t p;
  kg_opt_init(&p, row->cmd, argc, argv);
  p.err = err;
  p.out = out;
  size_t n = 0;
  events[0] = '\0';
  for (int guard = 0; guard < 20; guard++) {
    int id = kg_opt_next(&p);
    if (id == KG_OPT_END) {
      n += (size_t) snprintf(events + n, len - n, "end");
      break;
    }
    if (id == KG_OPT_EXIT) {
      n += (size_t) snprintf(events + n, len - n, "exit=%d", p.code);
      KG_CHECK_INT(kg_opt_next(&p), KG_OPT_EXIT);   /* and it stays stopped */
      break;
    }
    if (id == KG_OPT_OPERAND)
      n += (size_t) snprintf(events + n, len - n, "op=%s;", p.value);
    else if (p.value2)
      n += (size_t) snprintf(events + n, len - n, "%d=%s,%s;", id, p.value, p.value2);
    else if (p.value)
      n += (size_t) snprintf(events + n, len - n, "%d=%s;", id, p.value);
    else
      n += (size_t) snprintf(events + n, len - n, "%d;", id);
  }
  fclose(err);
  fclose(out);
}

KG_TEST(grammar_table)
{
  for (size_t i = 0; i < sizeof s_rows / sizeof s_rows[0]; i++) {
    const s_row_t *row = &s_rows[i];
    char events[512], *err = NULL, *out = NULL;
    s_run(row, events, sizeof events, &err, &out);
    if (strcmp(events, row->events) != 0) {
      fprintf(stderr, "row %zu (%s ...): events %s, want %s\n", i, row->args[0], events,
              row->events);
      KG_CHECK(0);
    }
    if (row->err ? !strstr(err, row->err) : *err != '\0') {
      fprintf(stderr, "row %zu (%s ...): stderr \"%s\", want \"%s\"\n", i, row->args[0], err,
              row->err ? row->err : "");
      KG_CHECK(0);
    }
    /* a mistake is one line */
    if (*err) {
      const char *nl = strchr(err, '\n');
      KG_CHECK(nl && nl[1] == '\0');
    }
    free(err);
    free(out);
  }
}

KG_TEST(help_and_version_go_to_stdout)
{
  s_row_t help = {&s_cmd, {"--help"}, "", NULL};
  char events[64], *err = NULL, *out = NULL;
  s_run(&help, events, sizeof events, &err, &out);
  KG_CHECK(strncmp(out, "usage: kguard t [--output FILE] NOTEBOOK\n", 41) == 0);
  KG_CHECK(strstr(out, "  -o, --output FILE     where the result goes\n") != NULL);
  KG_CHECK(strstr(out, "  -p, --parameters NAME VALUE\n") != NULL);
  KG_CHECK(strstr(out, "\nmore options:\n") != NULL);
  KG_CHECK(strstr(out, "  -h, --help") != NULL && strstr(out, "  --version") != NULL);
  KG_CHECK(strstr(out, "secret-knob") == NULL);   /* hidden */
  KG_CHECK(strstr(out, "  --progress[=WHEN]     how to show progress\n") != NULL);
  KG_CHECK(strstr(out, "\nexit codes:\n  0    success\n") != NULL);
  free(err);
  free(out);
  s_row_t version = {&s_cmd, {"--version"}, "", NULL};
  s_run(&version, events, sizeof events, &err, &out);
  KG_CHECK(strncmp(out, "kguard ", 7) == 0 && strcmp(out + 7, "\n") != 0);
  KG_CHECK_STR(err, "");
  free(err);
  free(out);
}

KG_TEST(help_reflows_to_79_columns)
{
  static const kg_opt_t opts[] = {
    {1, 0, "a-rather-long-option-name", "VALUE",
     "one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
     "fifteen sixteen seventeen eighteen nineteen twenty twenty-one twenty-two", 0},
    {0, 0, NULL, NULL, NULL, 0},
  };
  kg_cmd_t cmd = {.name = "wrap", .summary = "s", .usage = "[options]",
                  .about = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu "
                           "nu xi omicron pi rho sigma tau upsilon phi chi psi omega\n\n"
                           "  verbatim line one\n  verbatim   line two",
                  .opts = opts};
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  kg_optdoc_help(&cmd, f);
  fclose(f);
  for (char *line = text, *nl; (nl = strchr(line, '\n')); line = nl + 1)
    KG_CHECK(nl - line <= 79);
  /* a verbatim paragraph keeps its spacing; the long spec gets its own line */
  KG_CHECK(strstr(text, "\n  verbatim   line two\n") != NULL);
  KG_CHECK(strstr(text, "  --a-rather-long-option-name VALUE\n                        one two")
           != NULL);
  free(text);
}

static const kg_cmd_t s_sub_a = {.name = "p alpha", .summary = "first", .usage = "[--output FILE]",
                                 .about = "A.", .opts = s_opts};
static const kg_cmd_t s_sub_b = {.name = "p beta", .summary = "second", .usage = "X",
                                 .about = "B."};
static const kg_cmd_t *const s_subs[] = {&s_sub_a, &s_sub_b, NULL};
static const kg_cmd_t s_parent = {.name = "p", .summary = "a parent", .usage = "COMMAND",
                                  .about = "P.", .subs = s_subs};

static int
s_dispatch(const char *const *args, int *code, char **rest0, char **err_text)
{
  char *argv[8] = {"p"};
  int argc = 1;
  while (args[argc - 1])
    argv[argc] = (char *) args[argc - 1], argc++;
  size_t elen = 0;
  FILE *err = open_memstream(err_text, &elen);
  char *out_text = NULL;
  size_t olen = 0;
  FILE *out = open_memstream(&out_text, &olen);
  kg_opt_parser_t p;
  kg_opt_init(&p, &s_parent, argc, argv);
  p.err = err;
  p.out = out;
  int i = kg_opt_dispatch(&p);
  *code = p.code;
  int n = 0;
  char **rest = kg_opt_rest(&p, &n);
  *rest0 = i >= 0 && n > 0 ? rest[0] : NULL;
  fclose(err);
  fclose(out);
  free(out_text);
  return i;
}

KG_TEST(subcommands)
{
  int code;
  char *rest0, *err;
  KG_CHECK_INT(s_dispatch((const char *[]){"beta", "--x", NULL}, &code, &rest0, &err), 1);
  KG_CHECK_STR(rest0, "beta");
  free(err);
  KG_CHECK_INT(s_dispatch((const char *[]){"--help", NULL}, &code, &rest0, &err), -1);
  KG_CHECK_INT(code, 0);
  free(err);
  /* an unknown subcommand is an error even with --help after it */
  KG_CHECK_INT(s_dispatch((const char *[]){"bogus", "--help", NULL}, &code, &rest0, &err), -1);
  KG_CHECK_INT(code, 100);
  KG_CHECK_STR(err, "kguard p: unknown subcommand 'bogus' (see kguard p --help)\n");
  free(err);
  KG_CHECK_INT(s_dispatch((const char *[]){NULL}, &code, &rest0, &err), -1);
  KG_CHECK_INT(code, 100);
  KG_CHECK(strstr(err, "which subcommand? one of alpha, beta") != NULL);
  free(err);
  KG_CHECK_INT(s_dispatch((const char *[]){"--frob", "alpha", NULL}, &code, &rest0, &err), -1);
  KG_CHECK_INT(code, 100);
  KG_CHECK(strstr(err, "unknown option '--frob'") != NULL);
  free(err);
}

KG_TEST(sibling_option_named)
{
  /* beta has no options; alpha has --output: named as alpha's */
  char *argv[] = {"beta", "--output", "x", NULL};
  char *err_text = NULL;
  size_t elen = 0;
  FILE *err = open_memstream(&err_text, &elen);
  kg_opt_parser_t p;
  kg_opt_init(&p, &s_sub_b, 3, argv);
  p.err = err;
  p.parent = &s_parent;
  KG_CHECK_INT(kg_opt_next(&p), KG_OPT_EXIT);
  fclose(err);
  KG_CHECK_STR(err_text, "kguard p beta: unknown option '--output' (one of alpha's options) "
                         "(see kguard p beta --help)\n");
  free(err_text);
}

KG_TEST(lint)
{
  char err[256];
  KG_CHECK_INT(kg_opt_lint(&s_cmd, err, sizeof err), 0);
  KG_CHECK_INT(kg_opt_lint(&s_parent, err, sizeof err), 0);
  static const kg_opt_t dup[] = {
    {1, 'a', "one", NULL, "x", 0}, {2, 'a', "two", NULL, "y", 0}, {0, 0, NULL, NULL, NULL, 0}};
  kg_cmd_t c = {.name = "d", .summary = "s", .usage = "[--one]", .about = "a", .opts = dup};
  KG_CHECK_INT(kg_opt_lint(&c, err, sizeof err), -1);
  KG_CHECK(strstr(err, "-a is listed twice") != NULL);
  static const kg_opt_t ok[] = {{1, 0, "one", NULL, "x", 0}, {0, 0, NULL, NULL, NULL, 0}};
  c.opts = ok;
  c.usage = "[--one] [--two]";
  KG_CHECK_INT(kg_opt_lint(&c, err, sizeof err), -1);
  KG_CHECK(strstr(err, "the usage names --two") != NULL);
  static const kg_opt_t clash[] = {{1, 0, "help", NULL, "x", 0}, {0, 0, NULL, NULL, NULL, 0}};
  c.opts = clash;
  c.usage = "";
  KG_CHECK_INT(kg_opt_lint(&c, err, sizeof err), -1);
  static const kg_opt_t optional_flag[] = {
    {1, 0, "progress", NULL, "x", KG_OPT_OPTIONAL}, {0, 0, NULL, NULL, NULL, 0}};
  c.opts = optional_flag;
  c.usage = "[--progress[=WHEN]]";
  KG_CHECK_INT(kg_opt_lint(&c, err, sizeof err), -1);
  KG_CHECK(strstr(err, "an optional value needs a name") != NULL);
  static const kg_opt_t optional[] = {
    {1, 0, "progress", "WHEN", "x", KG_OPT_OPTIONAL}, {0, 0, NULL, NULL, NULL, 0}};
  c.opts = optional;
  KG_CHECK_INT(kg_opt_lint(&c, err, sizeof err), 0);
}

KG_TEST_MAIN(KG_CASE(grammar_table), KG_CASE(help_and_version_go_to_stdout),
             KG_CASE(help_reflows_to_79_columns), KG_CASE(subcommands),
             KG_CASE(sibling_option_named), KG_CASE(lint))
