/*  kg_errtext: the text of GPU errors, cleaned for records and signatures. */
#include "kg_errtext.h"

#include <ctype.h>
#include <string.h>

void
kg_errtext_strip_ansi(char *s)
{
  char *w = s;
  for (char *r = s; *r;) {
    if (*r == '\x1b') {
      r++;
      if (*r == '[') {
        r++;
        while (*r && !(*r >= '@' && *r <= '~'))
          r++;
        if (*r)
          r++;
      } else if (*r) {
        r++;
      }
      continue;
    }
    *w++ = *r++;
  }
  *w = '\0';
}

bool
kg_errtext_is_assertion(const char *line)
{
  return (strstr(line, "Assertion `") && strstr(line, "failed")) ||
         strstr(line, "Device-side assertion `");
}

void
kg_errtext_normalise(const char *line, char *buf, size_t size)
{
  if (size == 0)
    return;
  size_t w = 0;
  bool space = false;
  for (const char *r = line ? line : ""; *r && w + 1 < size;) {
    if (strncmp(r, "block: [", 8) == 0 || strncmp(r, "thread: [", 9) == 0) {
      const char *close = strchr(r, ']');
      if (close) {
        /* keep the word, drop the coordinates */
        size_t k = (size_t) (strchr(r, '[') - r);
        for (size_t i = 0; i < k && w + 1 < size; i++)
          buf[w++] = r[i];
        if (w + 2 < size) {
          buf[w++] = '[';
          buf[w++] = ']';
        }
        r = close + 1;
        space = false;
        continue;
      }
    }
    if (r[0] == '0' && (r[1] == 'x' || r[1] == 'X') && isxdigit((unsigned char) r[2])) {
      r += 2;
      while (isxdigit((unsigned char) *r))
        r++;
      if (w + 3 < size) {
        buf[w++] = '0';
        buf[w++] = 'x';
        buf[w++] = '?';
      }
      space = false;
      continue;
    }
    if (isspace((unsigned char) *r)) {
      if (!space && w > 0)
        buf[w++] = ' ';
      space = true;
      r++;
      continue;
    }
    space = false;
    buf[w++] = *r++;
  }
  while (w > 0 && buf[w - 1] == ' ')
    w--;
  buf[w] = '\0';
}

bool
kg_errtext_is_frame(const char *line, size_t len)
{
  const char *p = line, *end = line + len;
  while (p < end && (*p == ' ' || *p == '\t'))
    p++;
  if ((size_t) (end - p) < 6 || memcmp(p, "File \"", 6) != 0)
    return false;
  const char *close = NULL;
  for (const char *q = p + 6; q + 7 < end; q++)
    if (memcmp(q, "\", line ", 8) == 0) {
      close = q;
      break;
    }
  return close && close + 8 < end && isdigit((unsigned char) close[8]);
}

bool
kg_errtext_is_quoted_code(bool after_frame, const char *line)
{
  return after_frame && (line[0] == ' ' || line[0] == '\t');
}
