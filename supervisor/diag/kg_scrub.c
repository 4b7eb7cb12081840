/*  kg_scrub: scrubbing text for sharing (see kg_scrub.h for the rules). */
#include "kg_scrub.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_error.h"
#include "kg_tokens.h"

typedef struct {
  char *find;
  char *replace;
} s_pair_t;

struct kg_scrub_t {
  s_pair_t *secrets, *words;
  size_t nsecrets, nwords;
  size_t n_secret, n_token, n_path, n_word, n_uuid;   /* replacements made (counters) */
};

/*  A growable output string. */
typedef struct {
  char *s;
  size_t len, cap;
  bool oom;
} s_buf_t;

static void
s_put(s_buf_t *b, const char *p, size_t n)
{
  if (b->oom)
    return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = (b->len + n + 1) * 2;
    char *s = realloc(b->s, cap);
    if (!s) {
      b->oom = true;
      return;
    }
    b->s = s;
    b->cap = cap;
  }
  memcpy(b->s + b->len, p, n);
  b->len += n;
  b->s[b->len] = '\0';
}

static char *
s_done(s_buf_t *b)
{
  if (!b->s && !b->oom)
    s_put(b, "", 0);
  if (b->oom) {
    free(b->s);
    return NULL;
  }
  return b->s;
}

kg_scrub_t *
kg_scrub_new(void)
{
  return calloc(1, sizeof(kg_scrub_t));
}

void
kg_scrub_destroy(kg_scrub_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_scrub_t *self = *self_p;
  for (size_t i = 0; i < self->nsecrets; i++) {
    free(self->secrets[i].find);
    free(self->secrets[i].replace);
  }
  for (size_t i = 0; i < self->nwords; i++) {
    free(self->words[i].find);
    free(self->words[i].replace);
  }
  free(self->secrets);
  free(self->words);
  free(self);
  *self_p = NULL;
}

/*  Append a pair, keeping the array sorted longest find first, so that
    "host.example.org" is replaced before "host". */
static int
s_add(s_pair_t **arr, size_t *n, const char *find, const char *replace)
{
  s_pair_t *a = realloc(*arr, (*n + 1) * sizeof *a);
  if (!a)
    return KG_ENOMEM;
  *arr = a;
  s_pair_t p = {strdup(find), strdup(replace)};
  if (!p.find || !p.replace) {
    free(p.find);
    free(p.replace);
    return KG_ENOMEM;
  }
  size_t i = *n;
  while (i > 0 && strlen(a[i - 1].find) < strlen(find)) {
    a[i] = a[i - 1];
    i--;
  }
  a[i] = p;
  (*n)++;
  return 0;
}

int
kg_scrub_add_secret(kg_scrub_t *self, const char *name, const char *value)
{
  if (!kg_tokens_secret_value(value))
    return 0;
  size_t len = strlen(name) + 8;
  char *rep = malloc(len);
  if (!rep)
    return KG_ENOMEM;
  snprintf(rep, len, "<env:%s>", name);
  int rc = s_add(&self->secrets, &self->nsecrets, value, rep);
  free(rep);
  return rc;
}

int
kg_scrub_add_word(kg_scrub_t *self, const char *word, const char *replacement)
{
  if (!word || strlen(word) < 2)
    return 0;
  return s_add(&self->words, &self->nwords, word, replacement);
}

/*  Step 1b: credentials by their shape. */
static char *
s_tokens(kg_scrub_t *self, const char *text)
{
  s_buf_t b = {0};
  size_t n = strlen(text), at = 0;
  kg_token_match_t m;
  while (kg_tokens_find(text, n, at, &m)) {
    s_put(&b, text + at, m.from - at);
    s_put(&b, m.label, strlen(m.label));
    self->n_token++;
    at = m.to;
  }
  s_put(&b, text + at, n - at);
  return s_done(&b);
}

/*  Step 1: secrets, anywhere. */
static char *
s_registered(kg_scrub_t *self, const char *text)
{
  s_buf_t b = {0};
  const char *p = text;
  bool first[256] = {false};        /* bytes a secret can begin with */
  for (size_t i = 0; i < self->nsecrets; i++)
    first[(unsigned char) self->secrets[i].find[0]] = true;
  while (*p) {
    if (!first[(unsigned char) *p]) {
      const char *q = p + 1;        /* copy the run no secret begins in */
      while (*q && !first[(unsigned char) *q])
        q++;
      s_put(&b, p, (size_t) (q - p));
      p = q;
      continue;
    }
    size_t i;
    for (i = 0; i < self->nsecrets; i++) {
      size_t n = strlen(self->secrets[i].find);
      if (strncmp(p, self->secrets[i].find, n) == 0) {
        s_put(&b, self->secrets[i].replace, strlen(self->secrets[i].replace));
        p += n;
        self->n_secret++;
        break;
      }
    }
    if (i == self->nsecrets)
      s_put(&b, p++, 1);
  }
  return s_done(&b);
}

static bool
s_path_char(char c)
{
  return c && !isspace((unsigned char) c) && !strchr("\"'`()[]{},;<>|", c);
}

/*  Does a path start at text[i]? "/x..." or "~/x..." after a boundary. */
static bool
s_path_start(const char *text, size_t i)
{
  const char *p = text + i;
  bool at_boundary = i == 0 || strchr(" \t\n\r\"'`(=:,[<{", text[i - 1]) != NULL;
  if (!at_boundary)
    return false;
  if (p[0] == '~' && p[1] == '/')
    p++;
  return p[0] == '/' && (isalnum((unsigned char) p[1]) || p[1] == '_' || p[1] == '.');
}

/*  Where the library-relative part of path[0..n) starts (after
    site-packages/, dist-packages/ or lib/pythonX.Y/), or NULL. */
static const char *
s_lib_tail(const char *path, size_t n)
{
  static const char *marks[] = {"/site-packages/", "/dist-packages/"};
  const char *best = NULL;
  for (size_t k = 0; k < 2; k++) {
    const char *m = path;
    while ((m = memmem(m, (size_t) (path + n - m), marks[k], strlen(marks[k])))) {
      best = m + strlen(marks[k]);
      m = best;
    }
  }
  if (best)
    return best;
  const char *m = memmem(path, n, "/lib/python", 11);
  if (m) {
    const char *slash = memchr(m + 11, '/', (size_t) (path + n - (m + 11)));
    if (slash)
      return slash + 1;
  }
  return NULL;
}

/*  Step 2: paths. A trailing ":LINE" or ":LINE:COL" stays outside the path
    (':' ends it, unless the rest is not digits). */
static char *
s_paths(kg_scrub_t *self, const char *text)
{
  s_buf_t b = {0};
  size_t i = 0, n = strlen(text);
  while (i < n) {
    if (!s_path_start(text, i)) {
      s_put(&b, text + i, 1);
      i++;
      continue;
    }
    size_t j = i;
    while (j < n && s_path_char(text[j]) && text[j] != ':')
      j++;
    const char *path = text + i;
    size_t plen = j - i;
    /* a path ending in '/' is a directory: nothing after it to keep */
    const char *lib = s_lib_tail(path, plen);
    if (lib) {
      s_put(&b, "<python-lib>/", 13);
      s_put(&b, lib, (size_t) (path + plen - lib));
    } else {
      const char *base = path + plen;
      while (base > path && base[-1] != '/')
        base--;
      s_put(&b, "<path>/", 7);
      s_put(&b, base, (size_t) (path + plen - base));
    }
    self->n_path++;
    i = j;
  }
  return s_done(&b);
}

static bool
s_word_char(char c)
{
  return isalnum((unsigned char) c) || c == '_' || c == '-' || c == '.';
}

/*  Step 3 and 4: whole words, then GPU/MIG UUIDs. */
static char *
s_words(kg_scrub_t *self, const char *text)
{
  s_buf_t b = {0};
  size_t i = 0, n = strlen(text);
  while (i < n) {
    bool left = i == 0 || !s_word_char(text[i - 1]);
    bool done = false;
    for (size_t k = 0; left && k < self->nwords; k++) {
      size_t wl = strlen(self->words[k].find);
      /* a '.' right after the word is a sentence end, not part of it */
      if (strncmp(text + i, self->words[k].find, wl) == 0
          && (!s_word_char(text[i + wl])
              || (text[i + wl] == '.' && !s_word_char(text[i + wl + 1])))) {
        s_put(&b, self->words[k].replace, strlen(self->words[k].replace));
        i += wl;
        self->n_word++;
        done = true;
        break;
      }
    }
    if (done)
      continue;
    if (left && (strncmp(text + i, "GPU-", 4) == 0 || strncmp(text + i, "MIG-", 4) == 0)) {
      size_t j = i + 4;
      while (j < n && (isxdigit((unsigned char) text[j]) || text[j] == '-'))
        j++;
      if (j - i >= 4 + 8) {   /* at least 8 hex digits: a UUID, not "GPU-bound" */
        s_put(&b, text + i, 4);
        s_put(&b, "<uuid>", 6);
        i = j;
        self->n_uuid++;
        continue;
      }
    }
    s_put(&b, text + i, 1);
    i++;
  }
  return s_done(&b);
}

char *
kg_scrub_secrets(kg_scrub_t *self, const char *text)
{
  if (!text)
    return NULL;
  char *a = s_registered(self, text);
  char *b = a ? s_tokens(self, a) : NULL;
  free(a);
  return b;
}

char *
kg_scrub_text(kg_scrub_t *self, const char *text)
{
  char *a = kg_scrub_secrets(self, text);
  char *b = a ? s_paths(self, a) : NULL;
  free(a);
  char *c = b ? s_words(self, b) : NULL;
  free(b);
  return c;
}

size_t
kg_scrub_count(const kg_scrub_t *self, const char *kind)
{
  if (strcmp(kind, "secret") == 0)
    return self->n_secret;
  if (strcmp(kind, "token") == 0)
    return self->n_token;
  if (strcmp(kind, "path") == 0)
    return self->n_path;
  if (strcmp(kind, "word") == 0)
    return self->n_word;
  if (strcmp(kind, "uuid") == 0)
    return self->n_uuid;
  return 0;
}
