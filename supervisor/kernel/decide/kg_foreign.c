/*  kg_foreign: the streaming marker filter (kg_foreign.h).

    The marker has no border (no proper prefix of it is also a suffix of a
    longer prefix), so a mismatch after k matched bytes means those k bytes
    were ordinary text: they are emitted and the byte is looked at afresh.
    tests/unit/kernel/decide/test_foreign.c checks the marker keeps that property. */
#include "kg_foreign.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define S_MARKER KG_FOREIGN_MARKER
#define S_LEN (sizeof S_MARKER - 1)

struct kg_foreign_t {
  size_t k;                     /*  bytes of the marker matched, held back   */
  bool dropping;                /*  inside a foreign line, until its newline */
  bool kept_on_line;            /*  the current line has kept bytes          */
  bool sampling;                /*  copying the first foreign line           */
  unsigned long lines;
  size_t sample_len;
  char sample[KG_FOREIGN_SAMPLE + 1];
};

kg_foreign_t *
kg_foreign_new(void)
{
  return calloc(1, sizeof(kg_foreign_t));
}

void
kg_foreign_destroy(kg_foreign_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  free(*self_p);
  *self_p = NULL;
}

static void
s_sample(kg_foreign_t *self, const char *p, size_t n)
{
  size_t room = KG_FOREIGN_SAMPLE - self->sample_len;
  if (n > room)
    n = room;
  memcpy(self->sample + self->sample_len, p, n);
  self->sample_len += n;
  self->sample[self->sample_len] = '\0';
}

/*  Ordinary text goes out; the line it ends on has kept bytes unless it
    ends with its newline. */
static size_t
s_emit(kg_foreign_t *self, char *out, const char *p, size_t n)
{
  if (n) {
    memcpy(out, p, n);
    self->kept_on_line = p[n - 1] != '\n';
  }
  return n;
}

size_t
kg_foreign_filter(kg_foreign_t *self, const char *in, size_t len, char *out)
{
  size_t o = 0, i = 0;
  while (i < len) {
    if (self->dropping) {
      const char *nl = memchr(in + i, '\n', len - i);
      size_t end = nl ? (size_t) (nl - in) : len;
      if (self->sampling)
        s_sample(self, in + i, end - i);
      i = end;
      if (nl) {
        self->dropping = self->sampling = false;
        if (self->kept_on_line)   /* the kept start of that line ends here */
          out[o++] = '\n';
        self->kept_on_line = false;
        i++;
      }
      continue;
    }
    if (self->k == 0) {
      const char *b = memchr(in + i, S_MARKER[0], len - i);
      size_t end = b ? (size_t) (b - in) : len;
      o += s_emit(self, out + o, in + i, end - i);
      i = end;
      if (b) {
        self->k = 1;
        i++;
      }
      continue;
    }
    if (in[i] == S_MARKER[self->k]) {
      i++;
      if (++self->k == S_LEN) {   /* a foreign line: drop to its end */
        self->k = 0;
        self->dropping = true;
        if (self->lines++ == 0) {
          self->sampling = true;
          s_sample(self, S_MARKER, S_LEN);
        }
      }
      continue;
    }
    o += s_emit(self, out + o, S_MARKER, self->k);   /* it was ordinary text */
    self->k = 0;
  }
  return o;
}

unsigned long
kg_foreign_lines(const kg_foreign_t *self)
{
  return self->lines;
}

const char *
kg_foreign_sample(const kg_foreign_t *self)
{
  return self->sample;
}
