/*  kg_sup_synth: messages kguard writes itself: status, error and aborted
    replies, cached kernel_info, stream answers to in-band commands.

    Each gets a fresh msg_id (jupyter_client rejects a signature it has seen),
    parent = the request's header, and the session of that request's busy
    (kg_pending) while it is open, else the inner kernel's session as last
    seen, so frontends that track the session see one kernel.

    busy/idle go through the ledger (kg_pending): a request the kernel
    already said busy for gets no second busy, and an idle is published only
    after a busy, once.
*/
#include "kg_sup_priv.h"

#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "kg_error.h"
#include "kg_json.h"
#include "kg_log.h"

#ifndef KGUARD_VERSION
#define KGUARD_VERSION "unknown"
#endif

static void
s_publish_as(kg_sup_t *S, const char *session, const char *type, const cJSON *parent,
             cJSON **content_p, cJSON **metadata_p)
{
  kg_front_kernel_session(S->front, session);   /* kguard's own: never a frontend's */
  int rc = kg_front_publish(S->front, session, type, parent, content_p, metadata_p);
  if (rc)
    kg__unsent(S->stats, "frontend", type, rc);
}

/*  The session for a message kguard writes about the request whose header
    is parent: the one its busy went out under, while that busy is open
    (the failing cell's notice comes from the fresh kernel's time, but
    belongs with the old kernel's busy and idle); otherwise the inner
    kernel's session as last seen. */
static const char *
s_session_for(kg_sup_t *S, const cJSON *parent)
{
  const cJSON *id = cJSON_GetObjectItemCaseSensitive(parent, "msg_id");
  const char *session =
    cJSON_IsString(id) ? kg_pending_busy_session(S->pending, id->valuestring) : NULL;
  return session && *session ? session : S->session;
}

void
kg__publish(kg_sup_t *S, const char *type, const cJSON *parent, cJSON **content_p,
            cJSON **metadata_p)
{
  s_publish_as(S, s_session_for(S, parent), type, parent, content_p, metadata_p);
}

void
kg__publish_status(kg_sup_t *S, const cJSON *parent, const char *state)
{
  cJSON *content = cJSON_CreateObject();
  cJSON_AddStringToObject(content, "execution_state", state);
  kg__publish(S, "status", parent, &content, NULL);
}

static const char *
s_header_id(const cJSON *header)
{
  const cJSON *id = cJSON_GetObjectItemCaseSensitive(header, "msg_id");
  return cJSON_IsString(id) ? id->valuestring : NULL;
}

void
kg__status_busy(kg_sup_t *S, const cJSON *header)
{
  if (kg_pending_busy_is_open(S->pending, s_header_id(header)))
    return;   /* the kernel (or kguard) said busy for it already */
  kg__publish_status(S, header, "busy");
  kg_pending_busy_open(S->pending, header, S->session);
}

void
kg__status_idle(kg_sup_t *S, const cJSON *header)
{
  if (kg_pending_busy_close(S->pending, s_header_id(header)))
    kg__publish_status(S, header, "idle");
}

void
kg__settle_status(kg_sup_t *S, const char *except_id)
{
  size_t i = 0;
  const cJSON *header;
  const char *session;
  while (kg_pending_busy_at(S->pending, i, &header, &session)) {
    const char *id = s_header_id(header);
    if (except_id && id && strcmp(id, except_id) == 0) {
      i++;
      continue;
    }
    cJSON *content = cJSON_CreateObject();
    cJSON_AddStringToObject(content, "execution_state", "idle");
    /* The session the busy went out under: the kernel that is gone. */
    s_publish_as(S, session, "status", header, &content, NULL);
    kg_info("idle for %s published for the kernel that is gone", id ? id : "?");
    kg_pending_busy_close(S->pending, id);
  }
}

static void
s_reply_meta(kg_sup_t *S, kg_pending_entry_t *e, const char *type, cJSON **content_p,
             const cJSON *metadata)
{
  const char *session = s_session_for(S, e->header);
  kg_front_kernel_session(S->front, session);
  int rc = kg_front_reply(S->front, e->channel, e->idents, e->ident_count, session, type,
                          e->header, content_p, metadata);
  if (rc)
    kg__unsent(S->stats, "frontend", type, rc);
}

void
kg__reply(kg_sup_t *S, kg_pending_entry_t *e, const char *type, cJSON **content_p)
{
  s_reply_meta(S, e, type, content_p, NULL);
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

/*  The reply's msg_type for a request's (a new string the caller frees, or
    NULL on allocation failure): any length, a peer chose it. */
static char *
s_reply_type(const char *request)
{
  size_t n = strlen(request);
  if (n > 8 && strcmp(request + n - 8, "_request") == 0)
    n -= 8;
  char *out = malloc(n + sizeof "_reply");
  if (out) {
    memcpy(out, request, n);
    memcpy(out + n, "_reply", sizeof "_reply");
  }
  return out;
}

void
kg__answer_error(kg_sup_t *S, kg_pending_entry_t *e, const char *ename, const char *evalue)
{
  /* e is freed by kg_pending_remove below: keep the whole id (any length;
     a truncated copy would miss the entry and leave it for ever). */
  char *id = strdup(e->msg_id);
  if (!id) {
    kg_pending_remove(S->pending, e->msg_id);   /* never left for ever */
    return;
  }
  kg__status_busy(S, e->header);
  /* The request never ran: its execution count is null, so a frontend
     shows "In [ ]" rather than the last cell's number again. */
  bool exec = strcmp(e->msg_type, "execute_request") == 0;
  if (exec) {
    cJSON *err = kg__error_content(ename, evalue);
    cJSON_AddNullToObject(err, "execution_count");
    kg__publish(S, "error", e->header, &err, NULL);
  }
  cJSON *content = kg__error_content(ename, evalue);
  cJSON_AddStringToObject(content, "status", "error");
  if (exec) {
    cJSON_AddNullToObject(content, "execution_count");
    cJSON_AddItemToObject(content, "user_expressions", cJSON_CreateObject());
    cJSON_AddItemToObject(content, "payload", cJSON_CreateArray());
  }
  char *type = s_reply_type(e->msg_type);
  kg__reply(S, e, type ? type : "error_reply", &content);
  free(type);
  kg__status_idle(S, e->header);
  kg_info("answered %s %s with %s", e->msg_type, id, ename);
  kg_pending_remove(S->pending, id);
  free(id);
}

void
kg__answer_kernel_info(kg_sup_t *S, kg_pending_entry_t *e)
{
  cJSON *content;
  cJSON *meta = NULL;
  if (S->info_cache)
    content = cJSON_Duplicate(S->info_cache, 1);
  else {
    /* Clients that wait for the kernel (kguard run) learn from the reply's
       metadata, as from a notice's, that no kernel answered and why. */
    meta = cJSON_CreateObject();
    cJSON *k = cJSON_AddObjectToObject(meta, "kguard");
    cJSON_AddStringToObject(k, "event", kg__state(S) == KG_ST_DOWN ? "down" : "starting");
    kg_json_add_string_or_null(k, "reason", S->due.down_reason);
    /* Nothing cached yet (the kernel never started): a minimal reply. */
    content = cJSON_CreateObject();
    cJSON_AddStringToObject(content, "status", "ok");
    cJSON_AddStringToObject(content, "protocol_version", "5.3");
    cJSON_AddStringToObject(content, "implementation", "kguard");
    cJSON_AddStringToObject(content, "implementation_version", KGUARD_VERSION);
    cJSON *li = cJSON_AddObjectToObject(content, "language_info");
    cJSON_AddStringToObject(li, "name", kg__language(S));
    char banner[1024];
    snprintf(banner, sizeof banner, "kguard: the kernel is %s%s%s",
             kg__state(S) == KG_ST_DOWN ? "down" : "starting",
             S->due.down_reason ? ": " : "",
             S->due.down_reason ? S->due.down_reason : "");
    cJSON_AddStringToObject(content, "banner", banner);
    cJSON_AddItemToObject(content, "help_links", cJSON_CreateArray());
  }
  kg__status_busy(S, e->header);
  s_reply_meta(S, e, "kernel_info_reply", &content, meta);
  cJSON_Delete(meta);
  kg__status_idle(S, e->header);
  kg_pending_remove(S->pending, e->msg_id);
}

void
kg__answer_all(kg_sup_t *S, bool doomed_only, const char *ename, const char *evalue)
{
  size_t i = 0;
  while (i < kg_pending_count(S->pending)) {
    kg_pending_entry_t *e = kg_pending_at(S->pending, i);
    bool skip = (doomed_only && !e->doomed) || (!doomed_only && !e->forwarded && !e->doomed)
                || kg__shutdown_is(&S->shutdown, e->msg_id);
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
  /* e is freed by kg_pending_remove below: keep the whole id (any length;
     a truncated copy would miss the entry and leave it for ever). */
  char *id = strdup(e->msg_id);
  if (!id) {
    kg_pending_remove(S->pending, e->msg_id);   /* never left for ever */
    return;
  }
  kg__status_busy(S, e->header);
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
  kg__status_idle(S, e->header);
  kg_pending_remove(S->pending, id);
  free(id);
}

/*  ipykernel 6.17's _send_abort_reply: content {"status": "aborted"} only
    (no execution_count: nothing ran), metadata = init_metadata +
    finish_metadata + status: {"started", "dependencies_met", "engine",
    "status"}, between busy and idle (dispatch_shell). */
void
kg__answer_aborted(kg_sup_t *S, kg_pending_entry_t *e, const cJSON *error_metadata)
{
  /* e is freed by kg_pending_remove below: keep the whole id (any length;
     a truncated copy would miss the entry and leave it for ever). */
  char *id = strdup(e->msg_id);
  if (!id) {
    kg_pending_remove(S->pending, e->msg_id);   /* never left for ever */
    return;
  }
  kg__status_busy(S, e->header);
  cJSON *meta = cJSON_CreateObject();
  char started[32];
  kg_iso_now(started);
  cJSON_AddStringToObject(meta, "started", started);
  /* IPythonKernel's fields, when the kernel's own error reply had them. */
  if (cJSON_GetObjectItemCaseSensitive(error_metadata, "dependencies_met"))
    cJSON_AddBoolToObject(meta, "dependencies_met", true);
  const cJSON *engine = cJSON_GetObjectItemCaseSensitive(error_metadata, "engine");
  if (engine)
    cJSON_AddItemToObject(meta, "engine", cJSON_Duplicate(engine, 1));
  cJSON_AddStringToObject(meta, "status", "aborted");
  cJSON *content = cJSON_CreateObject();
  cJSON_AddStringToObject(content, "status", "aborted");
  char *type = s_reply_type(e->msg_type);
  s_reply_meta(S, e, type ? type : "error_reply", &content, meta);
  free(type);
  cJSON_Delete(meta);
  kg__status_idle(S, e->header);
  kg_info("aborted %s %s (stop_on_error)", e->msg_type, id);
  kg_pending_remove(S->pending, id);
  free(id);
}
