/*  kg_envp: building a child process's environment. See kg_envp.h. */
#include "kg_envp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
kg_envp_push(char ***env, size_t *n, size_t *alloc, const char *name, const char *value)
{
  if (*n + 2 > *alloc) {
    size_t a = *alloc ? *alloc * 2 : 64;
    char **g = realloc(*env, a * sizeof *g);
    if (!g)
      return -1;
    *env = g;
    *alloc = a;
  }
  size_t len = strlen(name) + strlen(value) + 2;
  char *s = malloc(len);
  if (!s)
    return -1;
  snprintf(s, len, "%s=%s", name, value);
  (*env)[(*n)++] = s;
  (*env)[*n] = NULL;
  return 0;
}

bool
kg_envp_names_one_of(const char *entry, const char *const *names)
{
  for (int i = 0; names[i]; i++) {
    size_t n = strlen(names[i]);
    if (strncmp(entry, names[i], n) == 0 && entry[n] == '=')
      return true;
  }
  return false;
}

char **
kg_envp_copy(const char *const *words, size_t n)
{
  char **v = calloc(n + 1, sizeof *v);
  if (!v)
    return NULL;
  for (size_t i = 0; i < n; i++)
    if (!(v[i] = strdup(words[i] ? words[i] : ""))) {
      kg_envp_free(&v);
      return NULL;
    }
  return v;
}

void
kg_envp_free(char ***strv_p)
{
  if (!strv_p || !*strv_p)
    return;
  for (char **p = *strv_p; *p; p++)
    free(*p);
  free(*strv_p);
  *strv_p = NULL;
}
