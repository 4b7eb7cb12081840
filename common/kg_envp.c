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
