/*  Fuzz `%kguard` cell parsing (supervisor/kernel/decide/kg_inband_cmd): the code of any
    execute_request a signed frontend sends. Besides "no crash, no leak, no
    overflow", it asserts the parser's contract (kg_inband_cmd.h):
      - kg_inband_cmd_match agrees with kind != NONE;
      - USAGE carries one line of error text, others none; its quote is at
        most KG_INBAND_QUOTE_MAX bytes, and it is valid UTF-8 whenever the
        cell was (it goes back in a JSON string);
      - only the first line after `%kguard` counts: the text cut there
        parses the same;
      - the same text parses the same twice. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kg_inband_cmd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*  Well-formed UTF-8 (no overlongs, surrogates or > U+10FFFF). */
static bool
s_utf8(const unsigned char *s)
{
  while (*s) {
    unsigned c = *s, n, min;
    if (c < 0x80) {
      s++;
      continue;
    }
    if ((c & 0xE0) == 0xC0)
      n = 1, min = 0x80, c &= 0x1F;
    else if ((c & 0xF0) == 0xE0)
      n = 2, min = 0x800, c &= 0x0F;
    else if ((c & 0xF8) == 0xF0)
      n = 3, min = 0x10000, c &= 0x07;
    else
      return false;
    for (unsigned i = 1; i <= n; i++) {
      if ((s[i] & 0xC0) != 0x80)
        return false;
      c = (c << 6) | (s[i] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
      return false;
    s += n + 1;
  }
  return true;
}

static void
s_same(const kg_inband_cmd_t *a, const kg_inband_cmd_t *b)
{
  if (a->kind != b->kind || a->diagnostic != b->diagnostic
      || (a->error == NULL) != (b->error == NULL) || (a->error && strcmp(a->error, b->error)))
    abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *code = malloc(size + 1);
  if (!code)
    return 0;
  memcpy(code, data, size);
  code[size] = '\0';   /* a cJSON string ends at its first NUL, so does this */
  kg_inband_cmd_t cmd, again;
  if (kg_inband_cmd_parse(code, &cmd) != 0) {
    free(code);
    return 0;
  }
  if (kg_inband_cmd_match(code) != (cmd.kind != KG_INBAND_NONE))
    abort();
  if ((cmd.kind == KG_INBAND_USAGE) != (cmd.error != NULL))
    abort();
  if (cmd.diagnostic && cmd.kind != KG_INBAND_RESTART)
    abort();
  if (cmd.error) {
    if (strchr(cmd.error, '\n') || !*cmd.error)
      abort();
    const char *q = strchr(cmd.error, '\'');
    if (q && strlen(q) > KG_INBAND_QUOTE_MAX + 5)   /* 'quote...' */
      abort();
    if (s_utf8((const unsigned char *) code) && !s_utf8((const unsigned char *) cmd.error))
      abort();
  }
  if (kg_inband_cmd_parse(code, &again) == 0) {
    s_same(&cmd, &again);
    kg_inband_cmd_clear(&again);
  }
  /* Cut at the end of the command line: the same answer. */
  const char *p = code;
  while (*p == '\n' || *p == ' ' || *p == '\t' || *p == '\r' || *p == '\v' || *p == '\f')
    p++;
  char *nl = strchr(p, '\n');
  if (nl) {
    *nl = '\0';
    if (kg_inband_cmd_parse(code, &again) == 0) {
      s_same(&cmd, &again);
      kg_inband_cmd_clear(&again);
    }
  }
  kg_inband_cmd_clear(&cmd);
  free(code);
  return 0;
}
