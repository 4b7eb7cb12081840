/*  kg_client: learning that the kernel is ready, or that it never will be
    (contract in kg_client.h). Built on kg_client's public calls only. */
#include "kg_client.h"

#include <stdio.h>
#include <string.h>

#include "kg_error.h"

/*  The reply's metadata.kguard, or NULL. */
static const cJSON *
s_kguard_meta(kg_msg_t *msg)
{
  const cJSON *k = cJSON_GetObjectItemCaseSensitive(kg_msg_json(msg, KG_PART_METADATA),
                                                    "kguard");
  return cJSON_IsObject(k) ? k : NULL;
}

static bool
s_event_is(const cJSON *kguard, const char *event)
{
  const cJSON *e = cJSON_GetObjectItemCaseSensitive(kguard, "event");
  return cJSON_IsString(e) && strcmp(e->valuestring, event) == 0;
}

int
kg_client_ready_nudge(kg_client_t *self, kg_client_ready_t *r)
{
  size_t max = sizeof r->ids / sizeof r->ids[0];
  if (r->nids >= max)
    return 0;
  int rc = kg_client_send(self, KG_CH_SHELL, "kernel_info_request", NULL, r->ids[r->nids]);
  if (rc == 0)
    r->nids++;
  return rc;
}

int
kg_client_ready_judge(kg_client_ready_t *r, kg_channel_t channel, kg_msg_t *msg)
{
  const char *parent = kg_msg_parent_id(msg);
  bool ours = false;
  for (size_t i = 0; parent && i < r->nids && !ours; i++)
    ours = strcmp(parent, r->ids[i]) == 0;
  if (!ours)
    return 0;
  const char *type = kg_msg_type(msg);
  if (channel == KG_CH_IOPUB)
    r->iopub = true;
  if (channel == KG_CH_SHELL && type && strcmp(type, "kernel_info_reply") == 0) {
    const cJSON *kg = s_kguard_meta(msg);
    if (s_event_is(kg, "down")) {
      const cJSON *why = cJSON_GetObjectItemCaseSensitive(kg, "reason");
      snprintf(r->reason, sizeof r->reason, "%s", cJSON_IsString(why) ? why->valuestring : "");
      return KG_EDOWN;
    }
    r->replied = true;
  }
  return r->replied && r->iopub ? 1 : 0;
}
