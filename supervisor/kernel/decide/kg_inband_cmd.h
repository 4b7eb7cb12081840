/*  kg_inband_cmd: what a `%kguard` cell asks for, decided from its text
    alone (pure: no supervisor, no sockets), so that every spelling a user
    or a fuzzer can type is proven by tables (tests/unit/kernel/decide/
    test_inband_cmd.c) and by libFuzzer (tests/fuzz/fuzz_inband.c).

    The grammar (only the cell's first non-blank line counts, as before;
    the rest of the cell is not looked at):

      %kguard status
      %kguard doctor
      %kguard restart [--diagnostic]

    Leading blanks and newlines before `%kguard` are skipped; `%kguard`
    must be followed by a blank or the end of the line (`%kguardx` is not a
    `%kguard` cell: it goes to the kernel like any other code). Words are
    separated by blanks (space, tab, CR, VT, FF). Any other word, a missing
    command or an extra argument is a USAGE answer naming the problem.

    Any length, no fixed-size buffers: the error text is allocated; the
    offending word is quoted in it cut to at most KG_INBAND_QUOTE_MAX bytes
    at a UTF-8 boundary (the text goes back to the frontend in a JSON
    string, so it must stay valid UTF-8 when the cell was).

    Ownership: kg_inband_cmd_t owns its error text; kg_inband_cmd_clear
    frees it.
*/
#ifndef KG_INBAND_CMD_H
#define KG_INBAND_CMD_H

#include <stdbool.h>

#define KG_INBAND_QUOTE_MAX 64

typedef enum {
  KG_INBAND_NONE = 0,           /*  not a `%kguard` cell                      */
  KG_INBAND_STATUS,             /*  `%kguard status`                          */
  KG_INBAND_RESTART,            /*  `%kguard restart [--diagnostic]`          */
  KG_INBAND_DOCTOR,             /*  `%kguard doctor`                          */
  KG_INBAND_USAGE               /*  a `%kguard` cell kguard cannot run: error */
} kg_inband_kind_t;

typedef struct {
  kg_inband_kind_t kind;
  bool diagnostic;              /*  RESTART with --diagnostic                 */
  char *error;                  /*  USAGE: what is wrong, one line, owned     */
} kg_inband_cmd_t;

/*  True if code (a cell's text, NUL-terminated; NULL: false) is a
    `%kguard` cell. Cheap: reads up to the end of `%kguard`. */
bool kg_inband_cmd_match(const char *code);

/*  Parse code into *cmd (overwritten; clear it after). Returns 0, or
    KG_ENOMEM when the error text could not be allocated (cmd->kind is
    then USAGE with error NULL: answer with kg_inband_cmd_usage()). */
int kg_inband_cmd_parse(const char *code, kg_inband_cmd_t *cmd);

/*  Free cmd's error text and reset it to NONE. Safe on a zeroed cmd. */
void kg_inband_cmd_clear(kg_inband_cmd_t *cmd);

/*  The usage line ("usage: %kguard restart [--diagnostic] | %kguard
    status | %kguard doctor"), static storage, without a newline. */
const char *kg_inband_cmd_usage(void);

#endif
