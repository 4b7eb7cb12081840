/*  kg_tokens: credentials by shape (see kg_tokens.h for the list). */
#include "kg_tokens.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

static bool
s_alnum(char c)
{
  return isalnum((unsigned char) c) != 0;
}

static bool
s_word(char c)
{
  return s_alnum(c) || c == '_';
}

static bool
s_b64url(char c)
{
  return s_alnum(c) || c == '_' || c == '-';
}

static bool
s_alnum_dash(char c)
{
  return s_alnum(c) || c == '-';
}

static bool
s_upper_digit(char c)
{
  return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/*  Characters of tokens and keys in assignments and headers. */
static bool
s_tokchar(char c)
{
  return s_alnum(c) || (c && strchr("_+/=.~-", c));
}

static size_t
s_run(const char *t, size_t n, size_t i, bool (*pred)(char))
{
  size_t j = i;
  while (j < n && pred(t[j]))
    j++;
  return j - i;
}

static bool
s_starts(const char *t, size_t n, size_t i, const char *prefix)
{
  size_t k = strlen(prefix);
  return i + k <= n && memcmp(t + i, prefix, k) == 0;
}

/*  A letter and a digit among t[i..i+len): a key, not a word. */
static bool
s_mixed(const char *t, size_t i, size_t len)
{
  bool alpha = false, digit = false;
  for (size_t k = i; k < i + len; k++) {
    alpha |= isalpha((unsigned char) t[k]) != 0;
    digit |= isdigit((unsigned char) t[k]) != 0;
  }
  return alpha && digit;
}

static const struct {
  const char *prefix;
  bool (*body)(char);
  size_t min, exact;   /* exact 0: any length from min */
  bool mixed;
  const char *label;
} s_prefixes[] = {
  {"hf_", s_alnum, 30, 0, false, "<hf-token>"},
  {"ghp_", s_alnum, 30, 0, false, "<github-token>"},
  {"gho_", s_alnum, 30, 0, false, "<github-token>"},
  {"ghu_", s_alnum, 30, 0, false, "<github-token>"},
  {"ghs_", s_alnum, 30, 0, false, "<github-token>"},
  {"ghr_", s_alnum, 30, 0, false, "<github-token>"},
  {"github_pat_", s_word, 22, 0, false, "<github-token>"},
  {"glpat-", s_b64url, 20, 0, false, "<gitlab-token>"},
  {"sk-", s_b64url, 20, 0, true, "<api-key>"},
  {"xoxa-", s_alnum_dash, 10, 0, false, "<slack-token>"},
  {"xoxb-", s_alnum_dash, 10, 0, false, "<slack-token>"},
  {"xoxp-", s_alnum_dash, 10, 0, false, "<slack-token>"},
  {"xoxo-", s_alnum_dash, 10, 0, false, "<slack-token>"},
  {"xoxs-", s_alnum_dash, 10, 0, false, "<slack-token>"},
  {"xoxr-", s_alnum_dash, 10, 0, false, "<slack-token>"},
  {"AKIA", s_upper_digit, 16, 16, false, "<aws-access-key-id>"},
  {"ASIA", s_upper_digit, 16, 16, false, "<aws-access-key-id>"},
};

/*  A prefixed token starting at i (left boundary checked by the caller). */
static bool
s_prefixed(const char *t, size_t n, size_t i, kg_token_match_t *m)
{
  if (!strchr("hgsxA", t[i]))       /* the prefixes' first letters */
    return false;
  for (size_t k = 0; k < sizeof s_prefixes / sizeof s_prefixes[0]; k++) {
    if (!s_starts(t, n, i, s_prefixes[k].prefix))
      continue;
    size_t b = i + strlen(s_prefixes[k].prefix);
    size_t len = s_run(t, n, b, s_prefixes[k].body);
    size_t end = b + len;
    if (len < s_prefixes[k].min || (s_prefixes[k].exact && len != s_prefixes[k].exact)
        || (end < n && s_word(t[end])) || (s_prefixes[k].mixed && !s_mixed(t, b, len)))
      continue;
    *m = (kg_token_match_t){i, end, s_prefixes[k].label};
    return true;
  }
  return false;
}

/*  header.payload.signature, both JSON parts starting "eyJ" ('{"'). */
static bool
s_jwt(const char *t, size_t n, size_t i, kg_token_match_t *m)
{
  size_t a = s_run(t, n, i, s_b64url);
  if (!s_starts(t, n, i, "eyJ") || a < 10 || i + a >= n || t[i + a] != '.')
    return false;
  size_t j = i + a + 1;
  size_t b = s_run(t, n, j, s_b64url);
  if (!s_starts(t, n, j, "eyJ") || b < 10 || j + b >= n || t[j + b] != '.')
    return false;
  size_t k = j + b + 1;
  size_t c = s_run(t, n, k, s_b64url);
  if (c < 10)
    return false;
  *m = (kg_token_match_t){i, k + c, "<jwt>"};
  return true;
}

static const char *
s_find(const char *t, size_t n, size_t i, const char *what)
{
  return i < n ? memmem(t + i, n - i, what, strlen(what)) : NULL;
}

/*  A PEM private key block, to its END line (or the end of the text when
    it was cut). */
static bool
s_private_key(const char *t, size_t n, size_t i, kg_token_match_t *m)
{
  if (!s_starts(t, n, i, "-----BEGIN "))
    return false;
  const char *close = s_find(t, n, i + 11, "-----");
  const char *nl = memchr(t + i, '\n', n - i);
  if (!close || (nl && nl < close))
    return false;
  const char *key = s_find(t, (size_t) (close - t), i, "PRIVATE KEY");
  if (!key)
    return false;
  size_t end = n;
  const char *fin = s_find(t, n, (size_t) (close - t) + 5, "-----END ");
  if (fin) {
    const char *fin_close = s_find(t, n, (size_t) (fin - t) + 9, "-----");
    end = fin_close ? (size_t) (fin_close - t) + 5 : n;
  }
  *m = (kg_token_match_t){i, end, "<private-key>"};
  return true;
}

/*  scheme://USERINFO@host: the userinfo when it holds a password (user:pw)
    or is itself a token (16 or more characters). */
static bool
s_url_credentials(const char *t, size_t n, size_t i, kg_token_match_t *m)
{
  if (!isalpha((unsigned char) t[i]))
    return false;
  size_t j = i;
  while (j < n && (s_alnum(t[j]) || t[j] == '+' || t[j] == '.' || t[j] == '-'))
    j++;
  if (!s_starts(t, n, j, "://"))
    return false;
  size_t u = j + 3, k = u;
  bool colon = false;
  while (k < n && !strchr("@/?#\"'<> \t\r\n", t[k])) {
    colon |= t[k] == ':';
    k++;
  }
  if (k >= n || t[k] != '@' || k == u || (!colon && k - u < 16))
    return false;
  *m = (kg_token_match_t){u, k, "<credentials>"};
  return true;
}

static bool
s_ident(char c)
{
  return s_word(c) || c == '-';
}

/*  Is t[v..v+len) code rather than a value: a call or subscript
    ("Optional[str]", "getpass()"), or a dotted name ("args.password")? */
static bool
s_code(const char *t, size_t n, size_t v, size_t len)
{
  if (memchr(t + v, '(', len) || memchr(t + v, '[', len)
      || (v + len < n && (t[v + len] == '(' || t[v + len] == '[')))
    return true;
  bool dotted = false, start = true;
  for (size_t k = v; k < v + len; k++) {
    if (t[k] == '.') {
      if (start)
        return false;
      dotted = start = true;
    } else if (isalpha((unsigned char) t[k]) || t[k] == '_' || (!start && isdigit((unsigned char) t[k])))
      start = false;
    else
      return false;
  }
  return dotted && !start;
}

static const char *const s_key_suffixes[] = {"api_key", "apikey", "api-key", "token", "secret",
                                             "secret_key", "secret_access_key", "private_key",
                                             "client_secret"};
static const char *const s_password_suffixes[] = {"password", "passwd", "passphrase"};

static bool
s_ends_with(const char *t, size_t from, size_t to, const char *suffix)
{
  size_t k = strlen(suffix);
  return to - from >= k && strncasecmp(t + to - k, suffix, k) == 0;
}

/*  NAME = VALUE (or NAME: VALUE, "NAME": "VALUE", 'NAME': 'VALUE') where
    NAME looks secret: the value. Also "Bearer VALUE". */
static bool
s_assignment(const char *t, size_t n, size_t i, kg_token_match_t *m)
{
  size_t j = i + s_run(t, n, i, s_ident);
  if (j == i)
    return false;
  size_t v;
  bool password = false, key = false;
  if (j - i == 6 && (strncmp(t + i, "Bearer", 6) == 0 || strncmp(t + i, "bearer", 6) == 0)) {
    if (j >= n || t[j] != ' ')
      return false;
    v = j + 1;
    key = true;
  } else {
    v = j;                          /* the separator first: most words have none */
    if (v < n && (t[v] == '"' || t[v] == '\''))
      v++;
    while (v < n && (t[v] == ' ' || t[v] == '\t'))
      v++;
    if (v >= n || (t[v] != '=' && t[v] != ':'))
      return false;
    v++;
    for (size_t k = 0; k < sizeof s_password_suffixes / sizeof *s_password_suffixes; k++)
      password |= s_ends_with(t, i, j, s_password_suffixes[k]);
    for (size_t k = 0; k < sizeof s_key_suffixes / sizeof *s_key_suffixes; k++)
      key |= s_ends_with(t, i, j, s_key_suffixes[k]);
    if (!password && !key)
      return false;
    while (v < n && (t[v] == ' ' || t[v] == '\t'))
      v++;
    if (v < n && (t[v] == '"' || t[v] == '\''))
      v++;
  }
  size_t len = 0;
  if (password) {
    while (v + len < n && !strchr(" \t\r\n\"',;}", t[v + len]))
      len++;
  } else
    len = s_run(t, n, v, s_tokchar);
  if (len == 0 || s_code(t, n, v, len))
    return false;
  if (password ? len < 8 || strchr("<${%", t[v]) : len < 16 || !s_mixed(t, v, len))
    return false;
  *m = (kg_token_match_t){v, v + len, "<secret>"};
  return true;
}

bool
kg_tokens_find(const char *t, size_t n, size_t start, kg_token_match_t *m)
{
  for (size_t i = start; i < n; i++) {
    if (t[i] == '-' && s_private_key(t, n, i, m))
      return true;
    if (i > 0 && s_word(t[i - 1]))
      continue;
    if (!s_ident(t[i]))
      continue;                     /* every shape begins with a letter or digit */
    if (s_prefixed(t, n, i, m) || (t[i] == 'e' && s_jwt(t, n, i, m))
        || s_url_credentials(t, n, i, m))
      return true;
    if ((i == 0 || !s_ident(t[i - 1])) && s_assignment(t, n, i, m))
      return true;
  }
  return false;
}

bool
kg_tokens_secret_name(const char *name, size_t len)
{
  static const char *const marks[] = {"TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE",
                                      "KEY", "CREDENTIAL", "COOKIE", "WEBHOOK"};
  static const char *const places[] = {"_DIR", "_PATH", "_FILE", "_SOCK", "_HOME"};
  char up[256];
  if (len >= sizeof up)
    len = sizeof up - 1;
  for (size_t i = 0; i < len; i++)
    up[i] = (char) toupper((unsigned char) name[i]);
  up[len] = '\0';
  for (size_t i = 0; i < sizeof places / sizeof *places; i++) {   /* where a secret is */
    size_t k = strlen(places[i]);
    if (len > k && strcmp(up + len - k, places[i]) == 0)
      return false;
  }
  for (size_t i = 0; i < sizeof marks / sizeof *marks; i++)
    if (strstr(up, marks[i]))
      return true;
  for (const char *a = strstr(up, "AUTH"); a; a = strstr(a + 1, "AUTH"))
    if (strncmp(a, "AUTHOR", 6) != 0)   /* GIT_AUTHOR_NAME is no secret */
      return true;
  return len > 4 && strcmp(up + len - 4, "_PAT") == 0;
}

bool
kg_tokens_secret_value(const char *value)
{
  static const char *const flags[] = {"true", "false", "yes", "no", "on", "off", "none",
                                      "null", "unset", "disabled", "enabled"};
  size_t n = value ? strlen(value) : 0;
  if (n < 6)
    return false;
  for (size_t i = 0; i < sizeof flags / sizeof *flags; i++)
    if (strcasecmp(value, flags[i]) == 0)
      return false;
  return !(n < 12 && strspn(value, "0123456789") == n);
}
