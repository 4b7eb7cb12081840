/*  kg_sup_util: small helpers every supervisor file uses, in a file that
    calls no other supervisor file, so using them draws no arrow back into
    kg_supervisor.c or kg_kernel.c. */
#include "kg_sup_priv.h"

#include <stdlib.h>
#include <string.h>

#include "kg_language.h"

void
kg__set_str(char **field, const char *value)
{
  char *copy = value && *value ? strdup(value) : NULL;
  if (value && *value && !copy)
    return;   /* out of memory: keep the old value rather than none */
  free(*field);
  *field = copy;
}

void
kg__free_envp(char ***envp_p)
{
  if (!*envp_p)
    return;
  for (char **e = *envp_p; *e; e++)
    free(*e);
  free(*envp_p);
  *envp_p = NULL;
}

const char *
kg__language(const kg_sup_t *S)
{
  return kg_language_of(S->info_cache, S->cfg->spec_language, S->cfg->inner_argv);
}
