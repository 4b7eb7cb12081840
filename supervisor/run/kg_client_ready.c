/*  kg_client: waiting for the kernel to be ready, and learning when it
    never will be (contract in kg_client.h). Built on kg_client's public
    calls only. */
#include "kg_client.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kg_clock.h"
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
kg_client_wait_ready(kg_client_t *self, int64_t deadline_ms, kg_client_ready_t *out)
{
  char ids[128][37];
  size_t nids = 0;
  bool replied = false, iopub = false;
  int64_t next_send = 0;
  memset(out, 0, sizeof *out);
  while (!(replied && iopub)) {
    int64_t now = kg_clock_mono_ms();
    if (now >= deadline_ms)
      return KG_ETIMEOUT;
    if (now >= next_send && nids < 128) {
      int rc = kg_client_send(self, KG_CH_SHELL, "kernel_info_request", NULL, ids[nids]);
      if (rc != 0)
        return rc;
      nids++;
      next_send = now + 1000;
    }
    kg_client_event_t ev;
    int64_t until = next_send < deadline_ms ? next_send : deadline_ms;
    int rc = kg_client_next(self, until, &ev);
    if (rc != 0)
      return rc;
    if (ev.kind == KG_CLIENT_EXITED)
      return KG_ESPAWN;
    if (ev.kind == KG_CLIENT_SIGNAL) {
      out->signo = ev.signo;
      return -EINTR;
    }
    if (ev.kind != KG_CLIENT_MESSAGE)
      continue;
    const char *parent = kg_msg_parent_id(ev.msg);
    bool ours = false;
    for (size_t i = 0; parent && i < nids; i++)
      ours = ours || strcmp(parent, ids[i]) == 0;
    const char *type = kg_msg_type(ev.msg);
    if (ours && ev.channel == KG_CH_IOPUB)
      iopub = true;
    if (ours && ev.channel == KG_CH_SHELL && type
        && strcmp(type, "kernel_info_reply") == 0) {
      const cJSON *kg = s_kguard_meta(ev.msg);
      if (s_event_is(kg, "down")) {
        const cJSON *why = cJSON_GetObjectItemCaseSensitive(kg, "reason");
        snprintf(out->reason, sizeof out->reason, "%s",
                 cJSON_IsString(why) ? why->valuestring : "");
        kg_msg_destroy(&ev.msg);
        return KG_EDOWN;
      }
      replied = true;
    }
    kg_msg_destroy(&ev.msg);
  }
  return 0;
}
