/*  kg_opt: kguard's one command-line grammar, driven by option tables.

    Every command and subcommand describes itself in one kg_cmd_t: its
    operands, what it does, its options and its exit codes. The same table
    drives the parser (kg_opt_next), the --help text, the man page, the
    command-line reference docs/cli.md and the bash completion (kg_optdoc.h),
    so none of them can name an option the others lack.

    The grammar, the same for every command:
      --name VALUE, --name=VALUE     a long option with a value
      --name, --name=VALUE           one whose value is optional (rare)
      -n VALUE, -nVALUE              its short form, where it has one
      -ab                            short flags grouped
      --                             the rest are operands
      -h, --help, --version          in every command
    Options and operands mix in any order, except after the first operand of
    a command flagged KG_CMD_STOP (`kguard exec ... -- COMMAND`), where the
    rest are operands. A value is the next argument whatever it looks like
    (-0.5 is a value), except one of the command's own option names: `-o -q`
    is a missing value, and --output=-q says otherwise.

    Mistakes are answered in one line on stderr, "kguard CMD: ... (see
    kguard CMD --help)", and exit code 100 (kg_exit.h). Long options are
    never abbreviated (an abbreviation that works today breaks when an
    option is added); a near miss is named in the message.
*/
#ifndef KG_OPT_H
#define KG_OPT_H

#include <stdbool.h>
#include <stdio.h>

/*  kg_opt_t.flags */
#define KG_OPT_HIDDEN 1u   /*  parsed, never documented (internal plumbing)  */
#define KG_OPT_PAIR   2u   /*  takes two values: -p NAME VALUE               */
#define KG_OPT_OPTIONAL 4u /*  its value is optional: only --name=VALUE (or
                               -nVALUE) gives one; --name alone leaves
                               p->value NULL and never takes the next
                               argument. Documented as --name[=VALUE]        */

/*  One option, or a heading: an entry with id 0 and no names is a heading
    (its help is the title of the options after it in --help and the man
    page). The table ends with an entry whose id is 0 and help is NULL. */
typedef struct {
  int id;                  /*  what kg_opt_next returns; > 0                 */
  char short_name;         /*  'o' for -o, or 0                              */
  const char *long_name;   /*  "output" for --output, or NULL                */
  const char *arg;         /*  the value's name ("FILE"), NULL for a flag;
                               for KG_OPT_PAIR both ("NAME VALUE")           */
  const char *help;        /*  what it does; a paragraph, reflowed; "\n\n"
                               starts a new paragraph                        */
  unsigned flags;          /*  KG_OPT_HIDDEN, KG_OPT_PAIR                    */
} kg_opt_t;

/*  One exit code and what it means. The table ends with code NULL. */
typedef struct {
  const char *code;        /*  "0", "100", "1-127"                           */
  const char *meaning;
} kg_opt_exit_t;

/*  kg_cmd_t.flags */
#define KG_CMD_STOP   1u   /*  options end at the first operand              */
#define KG_CMD_HIDDEN 2u   /*  not listed (internal commands)                */

/*  A command. Texts are paragraphs separated by blank lines ("\n\n"); a
    paragraph whose every line starts with two spaces is printed as it is
    (tables, examples), any other is reflowed to the terminal's 79 columns,
    its single newlines read as spaces. `backquoted` words are commands or
    code (bold in the man page, code in Markdown). */
typedef struct kg_cmd_s kg_cmd_t;
struct kg_cmd_s {
  const char *name;        /*  "run", "ckpt seal"; "" for kguard itself       */
  const char *summary;     /*  one line, lower case, no period               */
  const char *usage;       /*  synopsis lines, each after "kguard NAME ";
                               '\n' separates lines                          */
  const char *about;       /*  what it does                                  */
  const kg_opt_t *opts;    /*  options (NULL: none but the standard ones)    */
  const char *more;        /*  text after the options (NULL: none)           */
  const kg_opt_exit_t *exits;  /*  exit codes (NULL: 0, 100, 111)            */
  const kg_cmd_t *const *subs; /*  subcommands, NULL-terminated, or NULL     */
  unsigned flags;          /*  KG_CMD_STOP, KG_CMD_HIDDEN                    */
};

/*  kg_opt_next's answers besides an option's id. */
#define KG_OPT_END      0  /*  no more arguments                             */
#define KG_OPT_OPERAND (-1) /* an operand: p->value                          */
#define KG_OPT_EXIT    (-2) /* stop: help or version printed (p->code 0), or
                               a usage error printed (p->code 100)           */

/*  The parser's state: a plain struct on the caller's stack. */
typedef struct {
  const kg_cmd_t *cmd;
  int argc;
  char **argv;             /*  argv[0] is the command's own name             */
  int next;                /*  index of the next argument                    */
  const char *cluster;     /*  rest of a group of short flags, or NULL       */
  bool operands_only;      /*  after "--", or after the first operand of a
                               KG_CMD_STOP command                           */
  const char *value;       /*  the option's value, or the operand            */
  const char *value2;      /*  a KG_OPT_PAIR option's second value           */
  char written[64];        /*  the option as the user wrote it ("--output")  */
  int code;                /*  exit code after KG_OPT_EXIT                   */
  bool stopped;            /*  KG_OPT_EXIT was answered                      */
  FILE *out;               /*  --help and --version (default stdout)         */
  FILE *err;               /*  messages (default stderr)                     */
  const kg_cmd_t *parent;  /*  cmd's parent, when set: an option one of its
                               other subcommands has is named as theirs      */
} kg_opt_parser_t;

/*  Start parsing argv[1..argc) for cmd (argv[0] is the command's name).
    Also makes "kguard CMD" the prefix of kg_opt_error's messages. */
void kg_opt_init(kg_opt_parser_t *p, const kg_cmd_t *cmd, int argc, char **argv);

/*  The next option's id (its value, if any, in p->value and p->value2),
    KG_OPT_OPERAND, KG_OPT_END or KG_OPT_EXIT (see above). After KG_OPT_EXIT
    or KG_OPT_END it keeps answering the same. */
int kg_opt_next(kg_opt_parser_t *p);

/*  The arguments not yet parsed: after KG_OPT_OPERAND of a KG_CMD_STOP
    command, those after the operand; after kg_opt_dispatch, the
    subcommand's argv (its name first). Count in *n. */
char **kg_opt_rest(kg_opt_parser_t *p, int *n);

/*  For a command with subcommands (cmd->subs): parse argv up to the
    subcommand's name, handling --help/--version and mistakes (an unknown
    or missing subcommand is a usage error). Returns the subcommand's index
    in cmd->subs, or -1 with p->code set (0 after help, 100 after an error,
    the message printed). The subcommand's argv starts at its name: find it
    with kg_opt_rest. */
int kg_opt_dispatch(kg_opt_parser_t *p);

/*  A usage error for the command being parsed: prints "PREFIX: MESSAGE (see
    kguard CMD --help)" on p->err and returns 100 (KG_EXIT_USAGE). */
int kg_opt_usage(kg_opt_parser_t *p, const char *fmt, ...)
  __attribute__((format(printf, 2, 3)));

/*  Print "PREFIX: MESSAGE" on stderr, PREFIX being "kguard CMD" of the last
    kg_opt_init (or kg_opt_set_prog), "kguard" before any. The one way a
    command talks to its user about a problem. */
void kg_opt_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*  kg_opt_error about the file at path: "PREFIX: PATH: MESSAGE", with the
    path said once: MESSAGE alone when it (a library's, say) already names
    the path. */
void kg_opt_error_at(const char *path, const char *fmt, ...)
  __attribute__((format(printf, 2, 3)));

/*  The prefix ("kguard run"); set it without parsing (a program exec'd with
    its command name already checked). prog is copied (at most 63 bytes). */
const char *kg_opt_prog(void);
void kg_opt_set_prog(const char *prog);

/*  kguard's version ("0.1.0"). */
const char *kg_opt_version(void);

/*  The option of cmd named by id (NULL if none); the standard ones
    (-h/--help, --version) included with ids KG_OPT_ID_HELP/_VERSION. */
#define KG_OPT_ID_HELP    (-100)
#define KG_OPT_ID_VERSION (-101)
const kg_opt_t *kg_opt_find_id(const kg_cmd_t *cmd, int id);

/*  The standard options every command takes, terminated like a table. */
extern const kg_opt_t kg_opt_standard[];

/*  Check a table for mistakes a test should catch: ids and names unique,
    no clash with the standard options, every --name that the usage lines
    write is an option of the command (or of a subcommand). Returns 0, or
    -1 with a message in err. Recursive over subcommands. */
int kg_opt_lint(const kg_cmd_t *cmd, char *err, size_t errlen);

#endif
