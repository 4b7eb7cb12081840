/*  kg_language: see kg_language.h. */
#include "kg_language.h"

#include <string.h>
#include <strings.h>

static const char *
s_basename(const char *path)
{
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

const char *
kg_language_of(const cJSON *info, const char *spec_language, char *const *argv)
{
  const cJSON *li = cJSON_GetObjectItemCaseSensitive(info, "language_info");
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(li, "name");
  if (cJSON_IsString(name) && *name->valuestring)
    return name->valuestring;
  if (spec_language && *spec_language)
    return spec_language;
  if (argv && argv[0] && strstr(s_basename(argv[0]), "python"))
    return "python";
  return "unknown";
}

bool
kg_language_is_python(const char *language)
{
  /* kernelspecs spell it "python", "Python", "python3" */
  return language && strncasecmp(language, "python", 6) == 0;
}

const char *
kg_language_interpreter(const char *language, char *const *argv)
{
  if (!kg_language_is_python(language))
    return NULL;
  if (argv && argv[0] && strncmp(s_basename(argv[0]), "python", 6) == 0)
    return argv[0];
  return "python3";
}
