/*  kg_prefilter: Wu-Manber multi-literal search, ASCII case ignored.

    Every literal is cut to m bytes (the shortest literal's length) for the
    shift table. The window is the m bytes ending at pos; the q-gram (q =
    min(3, m)) ending at pos says how far the window may move without
    skipping an occurrence: m - q + 1 if that q-gram ends no literal's
    prefix anywhere, less otherwise; 0 means some literal's prefix may end
    here, and the literals chained under that hash are compared in full.
    Bytes are folded with | 0x20 (ASCII letters to lower case, and a few
    punctuation pairs merged): a coarser equality, so a superset of matches.
*/
#include "kg_prefilter.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define S_HASH_BITS 15
#define S_HASH_SIZE (1u << S_HASH_BITS)
#define S_MAX_M 255   /* shifts fit in a byte */

struct kg_prefilter_t {
  size_t n;
  char **lit;           /* folded copies                                 */
  size_t *len;
  size_t m, q;          /* window and q-gram lengths                      */
  bool plain;           /* no literal has '"', '\\' or a byte < 0x20      */
  uint8_t shift[S_HASH_SIZE];
  int32_t head[S_HASH_SIZE];   /* first literal whose prefix ends in h, -1 */
  int32_t *next;        /* chain                                          */
};

static inline unsigned char
s_fold(unsigned char c)
{
  return (unsigned char) (c | 0x20);
}

static inline uint32_t
s_hash(const unsigned char *p, size_t q)
{
  uint32_t h = 0;
  for (size_t k = 0; k < q; k++)
    h = (h << 5) ^ s_fold(p[k]);
  return h & (S_HASH_SIZE - 1);
}

void
kg_prefilter_destroy(kg_prefilter_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_prefilter_t *self = *self_p;
  for (size_t i = 0; self->lit && i < self->n; i++)
    free(self->lit[i]);
  free(self->lit);
  free(self->len);
  free(self->next);
  free(self);
  *self_p = NULL;
}

kg_prefilter_t *
kg_prefilter_new(const char *const *literals, size_t n)
{
  if (n == 0 || n > INT32_MAX)
    return NULL;
  kg_prefilter_t *self = calloc(1, sizeof *self);
  if (!self)
    return NULL;
  self->n = n;
  self->lit = calloc(n, sizeof *self->lit);
  self->len = calloc(n, sizeof *self->len);
  self->next = calloc(n, sizeof *self->next);
  if (!self->lit || !self->len || !self->next) {
    kg_prefilter_destroy(&self);
    return NULL;
  }
  self->m = S_MAX_M;
  self->plain = true;
  for (size_t i = 0; i < n; i++) {
    size_t len = literals[i] ? strlen(literals[i]) : 0;
    if (len == 0 || !(self->lit[i] = malloc(len))) {
      kg_prefilter_destroy(&self);
      return NULL;
    }
    for (size_t k = 0; k < len; k++) {
      unsigned char c = (unsigned char) literals[i][k];
      if (c < 0x20 || c == '"' || c == '\\')
        self->plain = false;
    }
    for (size_t k = 0; k < len; k++)
      self->lit[i][k] = (char) s_fold((unsigned char) literals[i][k]);
    self->len[i] = len;
    if (len < self->m)
      self->m = len;
  }
  self->q = self->m < 3 ? self->m : 3;
  memset(self->shift, (int) (self->m - self->q + 1), sizeof self->shift);
  for (size_t h = 0; h < S_HASH_SIZE; h++)
    self->head[h] = -1;
  for (size_t i = 0; i < n; i++) {
    const unsigned char *p = (const unsigned char *) self->lit[i];
    for (size_t j = self->q - 1; j < self->m; j++) {
      uint32_t h = s_hash(p + j + 1 - self->q, self->q);
      size_t s = self->m - 1 - j;
      if (s < self->shift[h])
        self->shift[h] = (uint8_t) s;
    }
    uint32_t h = s_hash(p + self->m - self->q, self->q);
    self->next[i] = self->head[h];
    self->head[h] = (int32_t) i;
  }
  return self;
}

bool
kg_prefilter_plain(const kg_prefilter_t *self)
{
  assert(self);
  return self->plain;
}

static bool
s_equal_at(const kg_prefilter_t *self, size_t i, const unsigned char *text, size_t avail)
{
  assert(self);
  size_t len = self->len[i];
  if (len > avail)
    return false;
  const unsigned char *lit = (const unsigned char *) self->lit[i];
  for (size_t k = 0; k < len; k++)
    if (s_fold(text[k]) != lit[k])
      return false;
  return true;
}

/*  The literals chained under h, compared with the window ending at pos. */
static bool
s_chain_matches(const kg_prefilter_t *self, uint32_t h, const unsigned char *t, size_t len,
                size_t pos)
{
  assert(self);
  size_t start = pos + 1 - self->m;
  for (int32_t i = self->head[h]; i >= 0; i = self->next[i])
    if (s_equal_at(self, (size_t) i, t + start, len - start))
      return true;
  return false;
}

/*  One Wu-Manber step of the window ending at *pos, q-grams of q bytes
    (self->q): move *pos on, or say that a literal starts at *pos + 1 - m. */
static inline bool
s_step(const kg_prefilter_t *self, const unsigned char *t, size_t len, size_t *pos, size_t q)
{
  assert(self);
  size_t p = *pos;
  /* the same value as s_hash, its three terms independent of each other */
  uint32_t h = q == 3 ? ((uint32_t) s_fold(t[p - 2]) << 10 ^ (uint32_t) s_fold(t[p - 1]) << 5
                         ^ s_fold(t[p])) & (S_HASH_SIZE - 1)
                      : s_hash(t + p + 1 - q, q);
  size_t s = self->shift[h];
  if (s) {
    *pos = p + s;
    return false;
  }
  if (s_chain_matches(self, h, t, len, p))
    return true;
  *pos = p + 1;
  return false;
}

#define S_LANES 4
#define S_LANES_MIN 4096   /* shorter texts: one lane */

/*  The search, for q-grams of q bytes (self->q). This loop reads all of a
    notebook's output. Each step waits on the load of the one before it,
    so the window ends are split into S_LANES ranges walked side by side:
    independent steps the CPU overlaps. A literal is found in the lane
    whose range holds its window's end; its comparison reads on past the
    range as far as the text goes. */
static inline bool
s_search(const kg_prefilter_t *self, const unsigned char *t, size_t len, size_t q)
{
  assert(self);
  size_t m = self->m;
  size_t pos[S_LANES], end[S_LANES], lanes = len >= S_LANES_MIN ? S_LANES : 1;
  size_t seg = (len - (m - 1)) / lanes;
  for (size_t k = 0; k < lanes; k++) {
    pos[k] = m - 1 + k * seg;
    end[k] = k + 1 == lanes ? len : m - 1 + (k + 1) * seg;
  }
  if (lanes == S_LANES)
    while (pos[0] < end[0] && pos[1] < end[1] && pos[2] < end[2] && pos[3] < end[3])
      if (s_step(self, t, len, &pos[0], q) || s_step(self, t, len, &pos[1], q)
          || s_step(self, t, len, &pos[2], q) || s_step(self, t, len, &pos[3], q))
        return true;
  for (size_t k = 0; k < lanes; k++)
    while (pos[k] < end[k])
      if (s_step(self, t, len, &pos[k], q))
        return true;
  return false;
}

bool
kg_prefilter_search(const kg_prefilter_t *self, const char *text, size_t len)
{
  assert(self);
  const unsigned char *t = (const unsigned char *) text;
  if (!t || len < self->m)
    return false;
  /* q = 3 (every literal of 3 bytes or more) is the usual case: with q a
     constant there, the compiler unrolls the q-gram hash (30 % faster) */
  return self->q == 3 ? s_search(self, t, len, 3) : s_search(self, t, len, self->q);
}
