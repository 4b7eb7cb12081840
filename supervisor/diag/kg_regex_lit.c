/*  kg_regex_lit: literal runs of regex alternatives. */
#include "kg_regex_lit.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kg_error.h"

/*  Index just past the bracket expression starting at re[i] == '['. */
static size_t
s_skip_bracket(const char *re, size_t len, size_t i)
{
  size_t j = i + 1;
  if (j < len && re[j] == '^')
    j++;
  if (j < len && re[j] == ']')
    j++;
  while (j < len && re[j] != ']') {
    if (re[j] == '[' && j + 1 < len && strchr(":.=", re[j + 1])) {
      char end = re[j + 1];
      j += 2;
      while (j + 1 < len && !(re[j] == end && re[j + 1] == ']'))
        j++;
      j += 2;
      continue;
    }
    j++;
  }
  return j < len ? j + 1 : len;
}

/*  Index just past the group starting at re[i] == '('. */
static size_t
s_skip_group(const char *re, size_t len, size_t i)
{
  int depth = 0;
  size_t j = i;
  while (j < len) {
    char c = re[j];
    if (c == '\\')
      j += 2;
    else if (c == '[')
      j = s_skip_bracket(re, len, j);
    else {
      if (c == '(')
        depth++;
      else if (c == ')' && --depth == 0)
        return j + 1;
      j++;
    }
  }
  return len;
}

/*  The longest run of characters that every match of the alternative
    re[0, len) contains literally; anything not understood ends a run, and a
    character under a quantifier that allows zero (or is repeated) leaves it.
    Returns the run's length (0: none), its start in out (out has len + 1). */
static size_t
s_branch_literal(const char *re, size_t len, char *out)
{
  char *cur = out + len + 1;   /* scratch after the best run */
  size_t curlen = 0, bestlen = 0;
  bool last_lit = false;
#define S_END_RUN()                                                     \
  do {                                                                  \
    if (curlen > bestlen) {                                             \
      memcpy(out, cur, curlen);                                         \
      bestlen = curlen;                                                 \
    }                                                                   \
    curlen = 0;                                                         \
    last_lit = false;                                                   \
  } while (0)
  size_t i = 0;
  while (i < len) {
    unsigned char c = (unsigned char) re[i];
    if (c == '\\') {
      if (i + 1 < len && strchr(".[](){}*+?|^$\\/-", re[i + 1]) && re[i + 1]) {
        cur[curlen++] = re[i + 1];
        last_lit = true;
      } else
        S_END_RUN();   /* \w, \b, back-references...: not a literal */
      i += 2;
    } else if (c == '[') {
      S_END_RUN();
      i = s_skip_bracket(re, len, i);
    } else if (c == '(') {
      S_END_RUN();
      i = s_skip_group(re, len, i);
    } else if (c == '*' || c == '?' || c == '{') {
      if (last_lit && curlen > 0)
        curlen--;   /* the quantified character may be absent */
      S_END_RUN();
      if (c == '{') {
        while (i < len && re[i] != '}')
          i++;
      }
      i++;
    } else if (c == '+') {
      S_END_RUN();   /* present, but repeated: the run cannot go on */
      i++;
    } else if (c == '.' || c == '^' || c == '$' || c == '|' || c == ')' || c >= 0x80) {
      S_END_RUN();
      i++;
    } else {
      cur[curlen++] = (char) c;
      last_lit = true;
      i++;
    }
  }
  S_END_RUN();
#undef S_END_RUN
  return bestlen;
}

int
kg_regex_literals(const char *re, kg_regex_lit_fn *each, void *arg)
{
  size_t len = strlen(re);
  char *buf = malloc(2 * len + 2);
  if (!buf)
    return KG_ENOMEM;
  int rc = 0;
  size_t start = 0;
  for (size_t i = 0; i <= len && rc == 0;) {
    if (i < len && re[i] == '\\') {
      i += 2;
      continue;
    }
    if (i < len && re[i] == '[') {
      i = s_skip_bracket(re, len, i);
      continue;
    }
    if (i < len && re[i] == '(') {
      i = s_skip_group(re, len, i);
      continue;
    }
    if (i >= len || re[i] == '|') {
      size_t end = i < len ? i : len;
      size_t n = s_branch_literal(re + start, end - start, buf);
      rc = each(buf, n, arg);
      start = end + 1;
      i = end + 1;
      continue;
    }
    i++;
  }
  free(buf);
  return rc;
}
