/*  kg_inband_cmd: the `%kguard` cell grammar (see kg_inband_cmd.h). */
#include "kg_inband_cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_error.h"

#define S_MAGIC "%kguard"
#define S_MAGIC_LEN 7

/*  A blank inside the command line (the line ends at '\n'). */
static bool
s_blank(char c)
{
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/*  The start of `%kguard` in code if it is a `%kguard` cell, else NULL. */
static const char *
s_magic(const char *code)
{
  if (!code)
    return NULL;
  const char *p = code;
  while (*p == '\n' || s_blank(*p))
    p++;
  if (strncmp(p, S_MAGIC, S_MAGIC_LEN) != 0)
    return NULL;
  char after = p[S_MAGIC_LEN];
  return after == '\0' || after == '\n' || s_blank(after) ? p : NULL;
}

bool
kg_inband_cmd_match(const char *code)
{
  return s_magic(code) != NULL;
}

/*  The next word of the line at *p (its start and length); advances *p.
    False at the end of the line. */
static bool
s_word(const char **p, const char **word, size_t *len)
{
  const char *q = *p;
  while (s_blank(*q))
    q++;
  if (*q == '\0' || *q == '\n') {
    *p = q;
    return false;
  }
  *word = q;
  while (*q && *q != '\n' && !s_blank(*q))
    q++;
  *len = (size_t) (q - *word);
  *p = q;
  return true;
}

/*  True if word is exactly lit. */
static bool
s_is(const char *word, size_t len, const char *lit)
{
  return strlen(lit) == len && memcmp(word, lit, len) == 0;
}

/*  How many bytes of word to quote: at most KG_INBAND_QUOTE_MAX, not
    ending inside a UTF-8 sequence. */
static size_t
s_quote_len(const char *word, size_t len)
{
  if (len <= KG_INBAND_QUOTE_MAX)
    return len;
  size_t n = KG_INBAND_QUOTE_MAX;
  /* back up over continuation bytes to the start of the cut sequence */
  while (n > 0 && ((unsigned char) word[n] & 0xC0) == 0x80)
    n--;
  return n;
}

/*  cmd becomes USAGE with "what 'word'" (word quoted, cut) or just what. */
static int
s_usage(kg_inband_cmd_t *cmd, const char *what, const char *word, size_t len)
{
  cmd->kind = KG_INBAND_USAGE;
  cmd->diagnostic = false;
  size_t q = word ? s_quote_len(word, len) : 0;
  const char *more = word && q < len ? "..." : "";
  size_t size = strlen(what) + q + strlen(more) + 4;
  if (!(cmd->error = malloc(size)))
    return KG_ENOMEM;
  if (word)
    snprintf(cmd->error, size, "%s '%.*s%s'", what, (int) q, word, more);
  else
    snprintf(cmd->error, size, "%s", what);
  return 0;
}

int
kg_inband_cmd_parse(const char *code, kg_inband_cmd_t *cmd)
{
  memset(cmd, 0, sizeof *cmd);
  const char *p = s_magic(code);
  if (!p)
    return 0;
  p += S_MAGIC_LEN;
  const char *word, *extra;
  size_t len, extra_len;
  if (!s_word(&p, &word, &len))
    return s_usage(cmd, "missing command", NULL, 0);
  if (s_is(word, len, "status")) {
    if (s_word(&p, &extra, &extra_len))
      return s_usage(cmd, "status takes no argument, got", extra, extra_len);
    cmd->kind = KG_INBAND_STATUS;
    return 0;
  }
  if (s_is(word, len, "doctor")) {
    if (s_word(&p, &extra, &extra_len))
      return s_usage(cmd, "doctor takes no argument, got", extra, extra_len);
    cmd->kind = KG_INBAND_DOCTOR;
    return 0;
  }
  if (!s_is(word, len, "restart"))
    return s_usage(cmd, "unknown command", word, len);
  bool diagnostic = false;
  if (s_word(&p, &extra, &extra_len)) {
    if (!s_is(extra, extra_len, "--diagnostic"))
      return s_usage(cmd, "restart: unknown option", extra, extra_len);
    diagnostic = true;
    if (s_word(&p, &extra, &extra_len))
      return s_usage(cmd, "restart: unexpected argument", extra, extra_len);
  }
  cmd->kind = KG_INBAND_RESTART;
  cmd->diagnostic = diagnostic;
  return 0;
}

void
kg_inband_cmd_clear(kg_inband_cmd_t *cmd)
{
  free(cmd->error);
  memset(cmd, 0, sizeof *cmd);
}

const char *
kg_inband_cmd_usage(void)
{
  return "usage: %kguard restart [--diagnostic] | %kguard status | %kguard doctor";
}
