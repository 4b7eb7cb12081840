/*  kg_jsonscan: delimiting members of a JSON object and decoding one large
    string value in bounded pieces (see kg_jsonscan.h). cJSON does every
    decoding; this file only walks over string values (a JSON escape is a
    backslash and one character, or \uXXXX; a surrogate pair is kept in one
    piece because cJSON decodes it as one) and over the punctuation between
    members. Every pointer stays inside [begin, end).
*/
#include "kg_jsonscan.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kg_error.h"

static bool
s_hex4(const char *p)
{
  for (int i = 0; i < 4; i++) {
    char c = p[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
      return false;
  }
  return true;
}

/*  Length of the escape starting at the backslash b (< e): 2, 6 for
    \uXXXX, 12 for a high surrogate followed by a \uXXXX; 0 if it runs past
    e or \u lacks its four hex digits. */
static size_t
s_escape_len(const char *b, const char *e)
{
  if (e - b < 2)
    return 0;
  if (b[1] != 'u')
    return 2;
  if (e - b < 6 || !s_hex4(b + 2))
    return 0;
  bool high = (b[2] == 'd' || b[2] == 'D')
              && (b[3] == '8' || b[3] == '9' || b[3] == 'a' || b[3] == 'A' || b[3] == 'b'
                  || b[3] == 'B');
  if (high && e - b >= 12 && b[6] == '\\' && b[7] == 'u' && s_hex4(b + 8))
    return 12;
  return 6;
}

/*  p points at an opening quote: its closing quote, or NULL. Each quote
    and backslash is found with memchr; the next quote found is kept until
    the walk passes it (so a long string is scanned once, not once per
    escape). */
static const char *
s_string_end(const char *p, const char *e)
{
  p++;
  const char *q = memchr(p, '"', (size_t) (e - p));
  for (;;) {
    if (!q)
      return NULL;
    const char *b = memchr(p, '\\', (size_t) (q - p));
    if (!b)
      return q;
    size_t u = s_escape_len(b, e);
    if (!u)
      return NULL;
    p = b + u;
    if (p > q)
      q = p < e ? memchr(p, '"', (size_t) (e - p)) : NULL;
  }
}

static const char *
s_ws(const char *p, const char *e)
{
  while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
    p++;
  return p;
}

/*  One member at p (its key's opening quote): note it in spans when wanted,
    return the first byte after its value, or NULL if malformed. */
static const char *
s_member(const char *p, const char *e, const char *const *keys, size_t nkeys,
         kg_frame_t *spans)
{
  const char *ke = p < e && *p == '"' ? s_string_end(p, e) : NULL;
  if (!ke)
    return NULL;
  cJSON *key = cJSON_ParseWithLength(p, (size_t) (ke + 1 - p));
  if (!cJSON_IsString(key)) {
    cJSON_Delete(key);
    return NULL;
  }
  p = s_ws(ke + 1, e);
  const char *vs = p < e && *p == ':' ? s_ws(p + 1, e) : NULL;
  const char *ve = NULL;
  if (vs && vs < e && *vs == '"') {
    const char *q = s_string_end(vs, e);
    ve = q ? q + 1 : NULL;
  } else if (vs && vs < e) {
    const char *pe = NULL;
    cJSON *v = cJSON_ParseWithLengthOpts(vs, (size_t) (e - vs), &pe, false);
    ve = v && pe && pe > vs && pe <= e ? pe : NULL;
    cJSON_Delete(v);
  }
  for (size_t i = 0; ve && i < nkeys; i++)
    if (!spans[i].data && strcmp(keys[i], key->valuestring) == 0) {
      spans[i].data = vs;
      spans[i].size = (size_t) (ve - vs);
    }
  cJSON_Delete(key);
  return ve;
}

int
kg_jsonscan_members(const char *obj, size_t len, const char *const *keys, size_t nkeys,
                    kg_frame_t *spans)
{
  for (size_t i = 0; i < nkeys; i++) {
    spans[i].data = NULL;
    spans[i].size = 0;
  }
  if (!obj)
    return KG_EBADJSON;
  const char *e = obj + len;
  const char *p = s_ws(obj, e);
  if (p == e || *p != '{')
    return KG_EBADJSON;
  p = s_ws(p + 1, e);
  if (p < e && *p == '}')
    p++;
  else
    for (;;) {
      p = s_member(p, e, keys, nkeys, spans);
      if (!p)
        break;
      p = s_ws(p, e);
      if (p < e && *p == ',') {
        p = s_ws(p + 1, e);
        continue;
      }
      p = p < e && *p == '}' ? p + 1 : NULL;
      break;
    }
  if (!p || s_ws(p, e) != e) {
    for (size_t i = 0; i < nkeys; i++)
      spans[i] = (kg_frame_t) {NULL, 0};
    return KG_EBADJSON;
  }
  return 0;
}

/*  The last escape boundary in (p, limit], p being one: where a piece
    starting at p may end. NULL if an escape is malformed. */
static const char *
s_cut(const char *p, const char *limit, const char *end)
{
  const char *q = p;
  while (q < limit) {
    const char *b = memchr(q, '\\', (size_t) (limit - q));
    if (!b)
      return limit;
    size_t u = s_escape_len(b, end);
    if (!u)
      return NULL;
    if (b + u > limit)
      return b > p ? b : b + u;   /* never an empty piece */
    q = b + u;
  }
  return q;
}

/*  Decode the string body [p, end) (between the quotes, its escapes known
    to be whole: s_string_end passed over them) in pieces, as
    kg_jsonscan_string_pieces says. */
static int
s_pieces(const char *p, const char *end, size_t max_raw, kg_jsonscan_piece_fn *fn, void *arg)
{
  if (max_raw < 16)
    max_raw = 16;
  if (p >= end)
    return 0;
  size_t cap = (size_t) (end - p) < max_raw ? (size_t) (end - p) : max_raw;
  /* quotes and NUL around at most max_raw bytes (and room for one escape
     more, should a piece ever end after the escape that crosses max_raw) */
  char *buf = malloc(cap + 12 + 3);
  if (!buf)
    return KG_ENOMEM;
  int rc = 0;
  while (rc == 0 && p < end) {
    const char *limit = (size_t) (end - p) > max_raw ? p + max_raw : end;
    const char *cut = s_cut(p, limit, end);
    if (!cut) {
      rc = KG_EBADJSON;
      break;
    }
    size_t n = (size_t) (cut - p);
    buf[0] = '"';
    memcpy(buf + 1, p, n);
    buf[n + 1] = '"';
    buf[n + 2] = '\0';
    cJSON *s = cJSON_ParseWithLength(buf, n + 2);
    if (!cJSON_IsString(s))
      rc = KG_EBADJSON;
    else
      rc = fn(s->valuestring, strlen(s->valuestring), arg);
    cJSON_Delete(s);
    p = cut;
  }
  free(buf);
  return rc;
}

int
kg_jsonscan_string_pieces(kg_frame_t value, size_t max_raw, kg_jsonscan_piece_fn *fn,
                          void *arg)
{
  const char *v = value.data;
  if (!v || value.size < 2 || v[0] != '"' || s_string_end(v, v + value.size) != v + value.size - 1)
    return KG_EBADJSON;
  return s_pieces(v + 1, v + value.size - 1, max_raw, fn, arg);
}

/*  The whole lines of the string body [p, end): from just after its first
    newline escape to just after its last, [*a, *b). True when there are
    some and every escape among them is a short one (\" \\ \b \f \n \r \t),
    so that every other character stands there for itself. A backslash
    escaping a backslash is one escape: "\\n" is a backslash and an n. */
static bool
s_plain_lines(const char *p, const char *end, const char **a, const char **b)
{
  const char *first = NULL, *last = NULL, *odd = NULL;   /* odd: the first other escape after first */
  while (p < end) {
    const char *bs = memchr(p, '\\', (size_t) (end - p));
    if (!bs)
      break;
    size_t u = s_escape_len(bs, end);
    if (!u)
      return false;
    if (bs[1] == 'n') {
      if (!first)
        first = bs + 2;
      last = bs + 2;
    } else if (!memchr("\"\\bfrt", bs[1], 6) && first && !odd) {
      odd = bs;
    }
    p = bs + u;
  }
  *a = first;
  *b = last;
  return first && last > first && (!odd || odd >= last);
}

int
kg_jsonscan_stream(kg_frame_t content, size_t max_raw, bool *is_stderr,
                   kg_jsonscan_piece_fn *fn, kg_jsonscan_skip_fn *skip, void *arg)
{
  static const char *const keys[2] = {"name", "text"};
  kg_frame_t spans[2];
  *is_stderr = false;
  int rc = kg_jsonscan_members(content.data, content.size, keys, 2, spans);
  if (rc != 0)
    return rc;
  if (spans[0].data) {
    cJSON *name = cJSON_ParseWithLength(spans[0].data, spans[0].size);
    *is_stderr = cJSON_IsString(name) && strcmp(name->valuestring, "stderr") == 0;
    cJSON_Delete(name);
  }
  if (!spans[1].data || *(const char *) spans[1].data != '"')
    return KG_ENOTFOUND;
  /* members delimited it with s_string_end: one whole string */
  const char *p = (const char *) spans[1].data + 1, *end = p + spans[1].size - 2;
  const char *a, *b;
  if (skip && s_plain_lines(p, end, &a, &b) && skip(a, (size_t) (b - a), arg)) {
    rc = s_pieces(p, a, max_raw, fn, arg);
    return rc ? rc : s_pieces(b, end, max_raw, fn, arg);
  }
  return s_pieces(p, end, max_raw, fn, arg);
}

size_t
kg_jsonscan_depth_at(const char *text, size_t len, size_t off)
{
  const char *p = text, *e = text + (off < len ? off : len), *end = text + len;
  size_t depth = 0;
  while (p < e) {
    switch (*p) {
    case '"': {
      const char *q = s_string_end(p, end);
      if (!q)
        return depth;
      p = q + 1;
      continue;
    }
    case '[':
    case '{':
      depth++;
      break;
    case ']':
    case '}':
      if (depth)
        depth--;
      break;
    default:
      break;
    }
    p++;
  }
  return depth;
}
