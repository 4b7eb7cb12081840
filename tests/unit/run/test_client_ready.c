/*  kg_client_ready_judge: the kernel is ready once one of our
    kernel_info_requests has its reply AND an iopub message of ours came
    (in either order); messages for other requests change nothing; a reply
    kguard wrote itself ("down") says the kernel could not start, and why.
    Pure: messages made here, no sockets. */
#include <string.h>

#include "kg_client.h"
#include "kg_error.h"
#include "kg_test.h"

/*  A message of msg_type whose parent is parent_id; metadata (a JSON text)
    or NULL. */
static kg_msg_t *
s_msg(const char *msg_type, const char *parent_id, const char *metadata)
{
  cJSON *parent = cJSON_CreateObject();
  cJSON_AddStringToObject(parent, "msg_id", parent_id);
  kg_msg_t *msg = kg_msg_new(msg_type, "session", parent, NULL);
  cJSON_Delete(parent);
  if (msg && metadata) {
    cJSON *meta = cJSON_Parse(metadata);
    kg_msg_set_json(msg, KG_PART_METADATA, meta);
    cJSON_Delete(meta);
  }
  return msg;
}

/*  Judge one message made as s_msg makes it. */
static int
s_judge(kg_client_ready_t *r, kg_channel_t ch, const char *type, const char *parent,
        const char *metadata)
{
  kg_msg_t *msg = s_msg(type, parent, metadata);
  KG_CHECK(msg != NULL);
  int rc = kg_client_ready_judge(r, ch, msg);
  kg_msg_destroy(&msg);
  return rc;
}

static void
s_sent(kg_client_ready_t *r, const char *id)
{
  snprintf(r->ids[r->nids++], sizeof r->ids[0], "%s", id);
}

KG_TEST(ready_needs_reply_and_iopub)
{
  kg_client_ready_t r = {0};
  s_sent(&r, "first");
  s_sent(&r, "second");
  KG_CHECK_INT(s_judge(&r, KG_CH_SHELL, "kernel_info_reply", "first", NULL), 0);
  KG_CHECK_INT(s_judge(&r, KG_CH_IOPUB, "status", "second", NULL), 1);
  /* the other order */
  kg_client_ready_t o = {0};
  s_sent(&o, "only");
  KG_CHECK_INT(s_judge(&o, KG_CH_IOPUB, "status", "only", NULL), 0);
  KG_CHECK_INT(s_judge(&o, KG_CH_SHELL, "kernel_info_reply", "only", NULL), 1);
}

KG_TEST(other_messages_change_nothing)
{
  kg_client_ready_t r = {0};
  s_sent(&r, "mine");
  KG_CHECK_INT(s_judge(&r, KG_CH_IOPUB, "status", "someone-else", NULL), 0);
  KG_CHECK_INT(s_judge(&r, KG_CH_SHELL, "kernel_info_reply", "someone-else", NULL), 0);
  KG_CHECK(!r.replied && !r.iopub);
  /* another reply to our request on shell is not readiness */
  KG_CHECK_INT(s_judge(&r, KG_CH_SHELL, "execute_reply", "mine", NULL), 0);
  KG_CHECK(!r.replied);
  /* a down from someone else's request is not ours to judge */
  KG_CHECK_INT(s_judge(&r, KG_CH_SHELL, "kernel_info_reply", "x",
                       "{\"kguard\": {\"event\": \"down\", \"reason\": \"r\"}}"), 0);
}

KG_TEST(kguard_down_reply_says_why)
{
  kg_client_ready_t r = {0};
  s_sent(&r, "mine");
  KG_CHECK_INT(s_judge(&r, KG_CH_SHELL, "kernel_info_reply", "mine",
                       "{\"kguard\": {\"event\": \"down\", \"reason\": \"no python\"}}"),
               KG_EDOWN);
  KG_CHECK_STR(r.reason, "no python");
  kg_client_ready_t q = {0};
  s_sent(&q, "mine");
  KG_CHECK_INT(s_judge(&q, KG_CH_SHELL, "kernel_info_reply", "mine",
                       "{\"kguard\": {\"event\": \"down\"}}"), KG_EDOWN);
  KG_CHECK_STR(q.reason, "");
  /* another kguard event is an ordinary reply */
  kg_client_ready_t k = {0};
  s_sent(&k, "mine");
  KG_CHECK_INT(s_judge(&k, KG_CH_SHELL, "kernel_info_reply", "mine",
                       "{\"kguard\": {\"event\": \"sticky-restart\"}}"), 0);
  KG_CHECK(k.replied);
}

KG_TEST_MAIN(KG_CASE(ready_needs_reply_and_iopub), KG_CASE(other_messages_change_nothing),
             KG_CASE(kguard_down_reply_says_why))
