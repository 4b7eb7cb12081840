/*  kg_json: small cJSON idioms. */
#include "kg_json.h"

void
kg_json_add_string_or_null(cJSON *o, const char *key, const char *s)
{
  cJSON_AddItemToObject(o, key, s ? cJSON_CreateString(s) : cJSON_CreateNull());
}

const char *
kg_json_string(const cJSON *object, const char *key)
{
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, key);
  return cJSON_IsString(item) ? item->valuestring : NULL;
}
