/*  kg_inband_cmd by tables: every spelling of a `%kguard` cell, what it
    asks for, and the error it gets. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_inband_cmd.h"
#include "kg_test.h"

KG_TEST(inband_cmd_table)
{
  static const struct {
    const char *code;
    kg_inband_kind_t kind;
    bool diagnostic;
    const char *error;          /*  exact USAGE text, or NULL */
  } rows[] = {
    /* not %kguard cells: they go to the kernel */
    {"", KG_INBAND_NONE, false, NULL},
    {"print(1)", KG_INBAND_NONE, false, NULL},
    {"%kguardx status", KG_INBAND_NONE, false, NULL},
    {"%kgua", KG_INBAND_NONE, false, NULL},
    {"x = 1\n%kguard status", KG_INBAND_NONE, false, NULL},
    {"#%kguard status", KG_INBAND_NONE, false, NULL},
    {"%%kguard status", KG_INBAND_NONE, false, NULL},
    {"%KGUARD status", KG_INBAND_NONE, false, NULL},
    /* the commands, with blanks anywhere a blank may be */
    {"%kguard status", KG_INBAND_STATUS, false, NULL},
    {"  \n\t\r\n%kguard   status  \t\r", KG_INBAND_STATUS, false, NULL},
    {"%kguard\tstatus\nprint('rest of the cell is not looked at')", KG_INBAND_STATUS, false,
     NULL},
    {"%kguard restart", KG_INBAND_RESTART, false, NULL},
    {"%kguard restart --diagnostic", KG_INBAND_RESTART, true, NULL},
    {"%kguard\vrestart\f--diagnostic\r\n", KG_INBAND_RESTART, true, NULL},
    {"%kguard restart\n--diagnostic", KG_INBAND_RESTART, false, NULL},
    /* %kguard cells kguard cannot run: an error naming the problem */
    {"%kguard", KG_INBAND_USAGE, false, "missing command"},
    {"%kguard   \t", KG_INBAND_USAGE, false, "missing command"},
    {"%kguard\nstatus", KG_INBAND_USAGE, false, "missing command"},
    {"%kguard stats", KG_INBAND_USAGE, false, "unknown command 'stats'"},
    {"%kguard Status", KG_INBAND_USAGE, false, "unknown command 'Status'"},
    {"%kguard statusx", KG_INBAND_USAGE, false, "unknown command 'statusx'"},
    {"%kguard status now", KG_INBAND_USAGE, false, "status takes no argument, got 'now'"},
    {"%kguard doctor", KG_INBAND_DOCTOR, false, NULL},
    {"%kguard doctor --json", KG_INBAND_USAGE, false, "doctor takes no argument, got '--json'"},
    {"%kguard restart --diag", KG_INBAND_USAGE, false, "restart: unknown option '--diag'"},
    {"%kguard restart --diagnostic x", KG_INBAND_USAGE, false,
     "restart: unexpected argument 'x'"},
    {"%kguard restart --diagnostic --diagnostic", KG_INBAND_USAGE, false,
     "restart: unexpected argument '--diagnostic'"},
    {"%kguard restart now", KG_INBAND_USAGE, false, "restart: unknown option 'now'"},
    {"%kguard r\xc3\xa9start", KG_INBAND_USAGE, false, "unknown command 'r\xc3\xa9start'"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    kg_inband_cmd_t cmd;
    KG_CHECK_INT(kg_inband_cmd_parse(rows[i].code, &cmd), 0);
    if (cmd.kind != rows[i].kind)
      fprintf(stderr, "row %zu: %s\n", i, rows[i].code);
    KG_CHECK_INT(cmd.kind, rows[i].kind);
    KG_CHECK_INT(cmd.diagnostic, rows[i].diagnostic);
    KG_CHECK_INT(kg_inband_cmd_match(rows[i].code), rows[i].kind != KG_INBAND_NONE);
    if (rows[i].error)
      KG_CHECK_STR(cmd.error ? cmd.error : "(null)", rows[i].error);
    else
      KG_CHECK(cmd.error == NULL);
    kg_inband_cmd_clear(&cmd);
    KG_CHECK_INT(cmd.kind, KG_INBAND_NONE);
  }
  kg_inband_cmd_t cmd;
  KG_CHECK_INT(kg_inband_cmd_parse(NULL, &cmd), 0);
  KG_CHECK_INT(cmd.kind, KG_INBAND_NONE);
  KG_CHECK(!kg_inband_cmd_match(NULL));
  KG_CHECK(strncmp(kg_inband_cmd_usage(), "usage: %kguard restart", 22) == 0);
}

/*  A word of any length (no fixed buffer): quoted cut to 64 bytes at a
    UTF-8 boundary, with "..." saying it was cut. */
KG_TEST(inband_cmd_long_words)
{
  size_t n = 1 << 20;
  char *code = malloc(n + 32);
  KG_CHECK(code != NULL);
  if (!code)
    return;
  strcpy(code, "%kguard ");
  size_t off = strlen(code);
  /* "é" (2 bytes) repeated, shifted by one ASCII byte so that byte 64 of
     the word falls inside a sequence */
  code[off++] = 'x';
  while (off + 2 < n) {
    code[off++] = '\xc3';
    code[off++] = '\xa9';
  }
  code[off] = '\0';
  kg_inband_cmd_t cmd;
  KG_CHECK_INT(kg_inband_cmd_parse(code, &cmd), 0);
  KG_CHECK_INT(cmd.kind, KG_INBAND_USAGE);
  KG_CHECK(cmd.error != NULL);
  if (cmd.error) {
    const char *q = strchr(cmd.error, '\'');
    KG_CHECK(q != NULL);
    size_t quoted = strlen(q + 1) - strlen("...'");
    KG_CHECK(quoted <= KG_INBAND_QUOTE_MAX);
    KG_CHECK_INT(quoted, 63);   /* 'x' + 31 whole "é" */
    KG_CHECK(strcmp(cmd.error + strlen(cmd.error) - 4, "...'") == 0);
  }
  kg_inband_cmd_clear(&cmd);
  /* a huge blank run before a valid command */
  memset(code, ' ', n);
  memcpy(code + n - 20, "%kguard restart", 16);
  KG_CHECK_INT(kg_inband_cmd_parse(code, &cmd), 0);
  KG_CHECK_INT(cmd.kind, KG_INBAND_RESTART);
  kg_inband_cmd_clear(&cmd);
  free(code);
}

KG_TEST_MAIN(KG_CASE(inband_cmd_table), KG_CASE(inband_cmd_long_words))
