/*  kg_synth: messages kguard writes itself: status, error replies, cached
    kernel_info, stream answers to in-band commands.

    Each gets a fresh msg_id (jupyter_client rejects a signature it has seen),
    parent = the request's header, and the inner kernel's session as last
    seen, so frontends that track the session see one kernel (M5).
*/
#include "kg_sup_priv.h"

#include <string.h>
#include <zmq.h>

#include "kg_error.h"
#include "kg_log.h"

#ifndef KGUARD_VERSION
#define KGUARD_VERSION "unknown"
#endif

void
kg__publish(kg_sup_t *S, const char *type, const cJSON *parent, cJSON **content_p,
            cJSON **metadata_p)
{
  kg_msg_t *m = kg_msg_new(type, S->session, parent, content_p);
  if (!m) {
    if (metadata_p) {
      cJSON_Delete(*metadata_p);
      *metadata_p = NULL;
    }
    return;
  }
  if (metadata_p && *metadata_p) {
    kg_msg_set_json(m, KG_PART_METADATA, *metadata_p);
    cJSON_Delete(*metadata_p);
    *metadata_p = NULL;
  }
  kg_frame_t topic = {type, strlen(type)};
  if (kg_msg_set_idents(m, &topic, 1) == 0)
    kg_msg_send(m, S->front[KG_CH_IOPUB], S->front_signer, 0);
  kg_msg_destroy(&m);
}

void
kg__publish_status(kg_sup_t *S, const cJSON *parent, const char *state)
{
  cJSON *content = cJSON_CreateObject();
  cJSON_AddStringToObject(content, "execution_state", state);
  kg__publish(S, "status", parent, &content, NULL);
}

void
kg__reply(kg_sup_t *S, kg_pending_entry_t *e, const char *type, cJSON **content_p)
{
  kg_msg_t *m = kg_msg_new(type, S->session, e->header, content_p);
  if (!m)
    return;
  if (kg_msg_set_idents(m, e->idents, e->ident_count) == 0) {
    int rc = kg_msg_send(m, S->front[e->channel], S->front_signer, 0);
    if (rc)
      kg_warning("unable to send %s: %s", type, kg_strerror(rc));
  }
  kg_msg_destroy(&m);
}

cJSON *
kg__error_content(const char *ename, const char *evalue)
{
  cJSON *c = cJSON_CreateObject();
  cJSON_AddStringToObject(c, "ename", ename);
  cJSON_AddStringToObject(c, "evalue", evalue);
  cJSON *tb = cJSON_AddArrayToObject(c, "traceback");
  char line[4096];
  snprintf(line, sizeof line, "\033[0;31m%s\033[0m: %s", ename, evalue);
  cJSON_AddItemToArray(tb, cJSON_CreateString(line));
  return c;
}

static void
s_reply_type(const char *request, char *buf, size_t len)
{
  size_t n = strlen(request);
  if (n > 8 && strcmp(request + n - 8, "_request") == 0)
    snprintf(buf, len, "%.*s_reply", (int) (n - 8), request);
  else
    snprintf(buf, len, "%s_reply", request);
}

void
kg__answer_error(kg_sup_t *S, kg_pending_entry_t *e, const char *ename, const char *evalue)
{
  char id[128];
  snprintf(id, sizeof id, "%s", e->msg_id);
  kg__publish_status(S, e->header, "busy");
  bool exec = strcmp(e->msg_type, "execute_request") == 0;
  if (exec) {
    cJSON *err = kg__error_content(ename, evalue);
    cJSON_AddNumberToObject(err, "execution_count", S->execution_count);
    kg__publish(S, "error", e->header, &err, NULL);
  }
  cJSON *content = kg__error_content(ename, evalue);
  cJSON_AddStringToObject(content, "status", "error");
  if (exec) {
    cJSON_AddNumberToObject(content, "execution_count", S->execution_count);
    cJSON_AddItemToObject(content, "user_expressions", cJSON_CreateObject());
    cJSON_AddItemToObject(content, "payload", cJSON_CreateArray());
  }
  char type[128];
  s_reply_type(e->msg_type, type, sizeof type);
  kg__reply(S, e, type, &content);
  kg__publish_status(S, e->header, "idle");
  kg_info("answered %s %s with %s", e->msg_type, id, ename);
  kg_pending_remove(S->pending, id);
}

void
kg__answer_kernel_info(kg_sup_t *S, kg_pending_entry_t *e)
{
  cJSON *content;
  if (S->info_cache)
    content = cJSON_Duplicate(S->info_cache, 1);
  else {
    /* Nothing cached yet (the kernel never started): a minimal reply. */
    content = cJSON_CreateObject();
    cJSON_AddStringToObject(content, "status", "ok");
    cJSON_AddStringToObject(content, "protocol_version", "5.3");
    cJSON_AddStringToObject(content, "implementation", "kguard");
    cJSON_AddStringToObject(content, "implementation_version", KGUARD_VERSION);
    cJSON *li = cJSON_AddObjectToObject(content, "language_info");
    cJSON_AddStringToObject(li, "name", S->guess_language);
    char banner[1024];
    snprintf(banner, sizeof banner, "kguard: the kernel is %s%s%s",
             S->state == KG_ST_DOWN ? "down" : "starting",
             S->down_reason ? ": " : "", S->down_reason ? S->down_reason : "");
    cJSON_AddStringToObject(content, "banner", banner);
    cJSON_AddItemToObject(content, "help_links", cJSON_CreateArray());
  }
  kg__publish_status(S, e->header, "busy");
  kg__reply(S, e, "kernel_info_reply", &content);
  kg__publish_status(S, e->header, "idle");
  kg_pending_remove(S->pending, e->msg_id);
}

void
kg__answer_all(kg_sup_t *S, bool doomed_only, const char *ename, const char *evalue)
{
  size_t i = 0;
  while (i < kg_pending_count(S->pending)) {
    kg_pending_entry_t *e = kg_pending_at(S->pending, i);
    bool skip = (doomed_only && !e->doomed) || (!doomed_only && !e->forwarded && !e->doomed)
                || (S->shutdown_msg_id && strcmp(e->msg_id, S->shutdown_msg_id) == 0);
    if (skip) {
      i++;
      continue;
    }
    kg__answer_error(S, e, ename, evalue);   /* removes entry i */
  }
}

void
kg__answer_stream(kg_sup_t *S, kg_pending_entry_t *e, const char *text, bool ok)
{
  char id[128];
  snprintf(id, sizeof id, "%s", e->msg_id);
  kg__publish_status(S, e->header, "busy");
  cJSON *stream = cJSON_CreateObject();
  cJSON_AddStringToObject(stream, "name", ok ? "stdout" : "stderr");
  cJSON_AddStringToObject(stream, "text", text);
  kg__publish(S, "stream", e->header, &stream, NULL);
  cJSON *content = cJSON_CreateObject();
  if (ok) {
    cJSON_AddStringToObject(content, "status", "ok");
    cJSON_AddItemToObject(content, "user_expressions", cJSON_CreateObject());
    cJSON_AddItemToObject(content, "payload", cJSON_CreateArray());
  } else {
    cJSON_Delete(content);
    content = kg__error_content("KguardUsage", text);
    cJSON_AddStringToObject(content, "status", "error");
  }
  cJSON_AddNumberToObject(content, "execution_count", S->execution_count);
  kg__reply(S, e, "execute_reply", &content);
  kg__publish_status(S, e->header, "idle");
  kg_pending_remove(S->pending, id);
}
