/*  kg_msg over real zmq sockets (inproc), receiving side: framing,
    signatures and replays, header checks, identities, and messages kguard
    builds itself (ids, dates). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include <cjson/cJSON.h>

#include "kg_error.h"
#include "kg_msg.h"
#include "kg_test.h"
#include "msg_fixture.h"

KG_TEST(parse_signed)
{
  s_pair();
  kg_signer_t *signer = kg_signer_new("key", 3);
  const char *ids[] = {"client-1"};
  s_send_signed(s_a, signer, 1, ids, s_dicts, 0, NULL);
  kg_msg_t *m = NULL;
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(kg_msg_frame_count(m), 7);
  KG_CHECK_INT(kg_msg_parse(m, signer), 0);
  KG_CHECK_INT(kg_msg_parse(m, signer), KG_EUSAGE);      /*  only once */
  KG_CHECK_INT(kg_msg_ident_count(m), 1);
  KG_CHECK(s_frame_is(kg_msg_ident(m, 0), "client-1"));
  KG_CHECK(kg_msg_ident(m, 1).data == NULL);
  for (int p = 0; p < 4; p++)
    KG_CHECK(s_frame_is(kg_msg_part(m, (kg_part_t) p), s_dicts[p]));
  KG_CHECK_INT(kg_msg_buffer_count(m), 0);
  KG_CHECK_INT(kg_msg_check_header(m), 0);
  KG_CHECK_STR(kg_msg_type(m), "execute_request");
  KG_CHECK_STR(kg_msg_id(m), "m1");
  KG_CHECK_STR(kg_msg_session(m), "s1");
  KG_CHECK_STR(kg_msg_parent_id(m), "p1");
  cJSON *content = kg_msg_json(m, KG_PART_CONTENT);
  KG_CHECK(content && kg_msg_json(m, KG_PART_CONTENT) == content);    /*  cached */
  KG_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(content, "code")), "1+1");
  kg_msg_destroy(&m);
  KG_CHECK(m == NULL);
  kg_msg_destroy(&m);

  /*  Signed with another key. */
  kg_signer_t *other = kg_signer_new("other", 5);
  s_send_signed(s_a, other, 1, ids, s_dicts, 0, NULL);
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(kg_msg_parse(m, signer), KG_EBADSIG);
  kg_msg_destroy(&m);

  /*  Unsigned (empty signature frame) while signing is on. */
  kg_signer_t *none = kg_signer_new(NULL, 0);
  s_send_signed(s_a, none, 1, ids, s_dicts, 0, NULL);
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(kg_msg_parse(m, signer), KG_ENOSIG);
  kg_msg_destroy(&m);
  /*  ...which an unsigned session accepts. */
  s_send_signed(s_a, none, 1, ids, s_dicts, 0, NULL);
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(kg_msg_parse(m, none), 0);
  kg_msg_destroy(&m);

  kg_signer_destroy(&none);
  kg_signer_destroy(&other);
  kg_signer_destroy(&signer);
  s_unpair();
}

KG_TEST(framing_errors)
{
  s_pair();
  kg_signer_t *signer = kg_signer_new("key", 3);
  kg_msg_t *m = NULL;

  /*  No delimiter at all (e.g. a heartbeat ping). */
  const char *ping[] = {"ping"};
  s_send_strs(s_a, 1, ping);
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(kg_msg_parse(m, signer), KG_ENODELIM);
  KG_CHECK_INT(kg_msg_ident_count(m), 0);
  KG_CHECK(kg_msg_part(m, KG_PART_HEADER).data == NULL);
  KG_CHECK(kg_msg_json(m, KG_PART_HEADER) == NULL);
  kg_msg_destroy(&m);

  /*  A frame that merely starts with the delimiter is not one. */
  const char *near[] = {"id", "<IDS|MSG>x", "sig", "{}", "{}", "{}", "{}"};
  s_send_strs(s_a, 7, near);
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(kg_msg_parse(m, signer), KG_ENODELIM);
  kg_msg_destroy(&m);

  /*  Four frames after the delimiter (no content). */
  const char *shortm[] = {"id", "<IDS|MSG>", "sig", "{}", "{}", "{}"};
  s_send_strs(s_a, 6, shortm);
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(kg_msg_parse(m, signer), KG_ESHORTMSG);
  kg_msg_destroy(&m);

  /*  Delimiter as the last frame. */
  const char *last[] = {"id", "<IDS|MSG>"};
  s_send_strs(s_a, 2, last);
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(kg_msg_parse(m, signer), KG_ESHORTMSG);
  kg_msg_destroy(&m);

  /*  Nothing waiting with ZMQ_DONTWAIT. */
  KG_CHECK_INT(kg_msg_recv(s_b, ZMQ_DONTWAIT, &m), -EAGAIN);
  KG_CHECK(m == NULL);
  kg_signer_destroy(&signer);
  s_unpair();
}

KG_TEST(bad_json_and_header)
{
  s_pair();
  kg_signer_t *signer = kg_signer_new("key", 3);
  struct {
    const char *header;
    int code;
  } cases[] = {
    {"not json", KG_EBADJSON},
    {"[1,2]", KG_EBADJSON},
    {"\"msg_id\"", KG_EBADJSON},
    {"", KG_EBADJSON},
    {"{\"msg_id\":\"1\",\"msg_type\":\"x\"", KG_EBADJSON},
    {"{\"msg_id\":\"1\",\"msg_type\":\"x\"}", KG_EBADHEADER},
    {"{\"msg_id\":\"1\",\"session\":\"s\"}", KG_EBADHEADER},
    {"{\"msg_type\":\"x\",\"session\":\"s\"}", KG_EBADHEADER},
    {"{\"msg_id\":1,\"msg_type\":\"x\",\"session\":\"s\"}", KG_EBADHEADER},
    {"{\"msg_id\":\"1\",\"msg_type\":null,\"session\":\"s\"}", KG_EBADHEADER},
    {"{\"msg_id\":\"1\",\"msg_type\":\"x\",\"session\":\"s\"}", 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *dicts[4] = {cases[i].header, "{}", "{}", "{}"};
    s_send_signed(s_a, signer, 0, NULL, dicts, 0, NULL);
    kg_msg_t *m = NULL;
    KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
    /*  The signature is checked on the bytes, whatever they are. */
    KG_CHECK_INT(kg_msg_parse(m, signer), 0);
    int rc = kg_msg_check_header(m);
    if (rc != cases[i].code) {
      fprintf(stderr, "header %s: %s\n", cases[i].header, kg_errname(rc));
      KG_CHECK(0);
    }
    if (cases[i].code == KG_EBADJSON) {
      KG_CHECK(kg_msg_json(m, KG_PART_HEADER) == NULL);
      KG_CHECK(kg_msg_type(m) == NULL);
    }
    kg_msg_destroy(&m);
  }
  /*  A bad signature is reported before the (bad) JSON is looked at. */
  const char *frames[] = {"<IDS|MSG>", "00", "not json", "{}", "{}", "{}"};
  s_send_strs(s_a, 6, frames);
  kg_msg_t *m = NULL;
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(kg_msg_parse(m, signer), KG_EBADSIG);
  kg_msg_destroy(&m);
  kg_signer_destroy(&signer);
  s_unpair();
}

KG_TEST(identities)
{
  s_pair();
  kg_signer_t *signer = kg_signer_new("key", 3);
  const char *ids[] = {"router-a", "router-b", "client"};
  s_send_signed(s_a, signer, 3, ids, s_dicts, 0, NULL);
  kg_msg_t *m = NULL;
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(kg_msg_parse(m, signer), 0);
  KG_CHECK_INT(kg_msg_ident_count(m), 3);
  for (size_t i = 0; i < 3; i++)
    KG_CHECK(s_frame_is(kg_msg_ident(m, i), ids[i]));
  KG_CHECK(s_frame_is(kg_msg_part(m, KG_PART_HEADER), s_dicts[0]));

  /*  A reply takes the request's identities. */
  cJSON *content = cJSON_CreateObject();
  cJSON_AddStringToObject(content, "status", "ok");
  kg_msg_t *reply = kg_msg_new("execute_reply", "s2", kg_msg_json(m, KG_PART_HEADER), &content);
  KG_CHECK(reply && content == NULL);
  KG_CHECK_INT(kg_msg_ident_count(reply), 0);
  KG_CHECK_INT(kg_msg_copy_idents(reply, m), 0);
  KG_CHECK_INT(kg_msg_ident_count(reply), 3);
  for (size_t i = 0; i < 3; i++)
    KG_CHECK(s_frame_is(kg_msg_ident(reply, i), ids[i]));
  KG_CHECK_STR(kg_msg_parent_id(reply), "m1");

  /*  Growing past the inline frame array and shrinking back keep the
      dict frames intact. */
  kg_frame_t many[20];
  char names[20][8];
  for (int i = 0; i < 20; i++) {
    snprintf(names[i], sizeof names[i], "id%d", i);
    many[i] = (kg_frame_t) {names[i], strlen(names[i])};
  }
  KG_CHECK_INT(kg_msg_set_idents(reply, many, 20), 0);
  KG_CHECK_INT(kg_msg_ident_count(reply), 20);
  KG_CHECK(s_frame_is(kg_msg_ident(reply, 19), "id19"));
  KG_CHECK_STR(kg_msg_type(reply), "execute_reply");
  KG_CHECK_INT(kg_msg_set_idents(reply, many + 5, 1), 0);
  KG_CHECK_INT(kg_msg_ident_count(reply), 1);
  KG_CHECK(s_frame_is(kg_msg_ident(reply, 0), "id5"));
  KG_CHECK_INT(kg_msg_set_idents(reply, NULL, 0), 0);
  KG_CHECK_INT(kg_msg_ident_count(reply), 0);
  KG_CHECK_INT(kg_msg_frame_count(reply), 6);

  /*  Sent and received again, it still parses. */
  KG_CHECK_INT(kg_msg_copy_idents(reply, m), 0);
  KG_CHECK_INT(kg_msg_send(reply, s_a, signer, 0), 0);
  kg_msg_t *back = NULL;
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &back), 0);
  KG_CHECK_INT(kg_msg_parse(back, signer), 0);
  KG_CHECK_INT(kg_msg_ident_count(back), 3);
  KG_CHECK(s_frame_is(kg_msg_ident(back, 2), "client"));
  cJSON *c = kg_msg_json(back, KG_PART_CONTENT);
  KG_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(c, "status")), "ok");
  kg_msg_destroy(&back);
  kg_msg_destroy(&reply);
  kg_msg_destroy(&m);
  kg_signer_destroy(&signer);
  s_unpair();
}

static int
s_is_uuid4(const char *s)
{
  if (!s || strlen(s) != 36)
    return 0;
  for (int i = 0; i < 36; i++) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (s[i] != '-')
        return 0;
    }
    else if (!strchr("0123456789abcdef", s[i]))
      return 0;
  }
  return s[14] == '4' && strchr("89ab", s[19]) != NULL;
}

KG_TEST(new_message)
{
  cJSON *parent = cJSON_Parse("{\"msg_id\":\"req-1\",\"msg_type\":\"execute_request\"}");
  kg_msg_t *m = kg_msg_new("stream", "sess", parent, NULL);
  cJSON_Delete(parent);                          /*  copied, not kept */
  KG_CHECK(m != NULL);
  KG_CHECK_INT(kg_msg_check_header(m), 0);
  KG_CHECK_STR(kg_msg_type(m), "stream");
  KG_CHECK_STR(kg_msg_session(m), "sess");
  KG_CHECK_STR(kg_msg_parent_id(m), "req-1");
  KG_CHECK(s_is_uuid4(kg_msg_id(m)));
  cJSON *h = kg_msg_json(m, KG_PART_HEADER);
  KG_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(h, "username")), "kguard");
  KG_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(h, "version")), "5.3");
  const char *date = cJSON_GetStringValue(cJSON_GetObjectItem(h, "date"));
  KG_CHECK(date && strlen(date) == 27 && date[10] == 'T' && date[19] == '.' && date[26] == 'Z');
  KG_CHECK(s_frame_is(kg_msg_part(m, KG_PART_METADATA), "{}"));
  KG_CHECK(s_frame_is(kg_msg_part(m, KG_PART_CONTENT), "{}"));
  KG_CHECK_INT(kg_msg_buffer_count(m), 0);
  KG_CHECK_INT(kg_msg_frame_count(m), 6);
  /*  The header frame is the serialisation of the header. */
  kg_frame_t hf = kg_msg_part(m, KG_PART_HEADER);
  cJSON *reparsed = cJSON_ParseWithLength(hf.data, hf.size);
  KG_CHECK(cJSON_Compare(reparsed, h, 1));
  cJSON_Delete(reparsed);

  kg_msg_t *m2 = kg_msg_new("stream", "sess", NULL, NULL);
  KG_CHECK(strcmp(kg_msg_id(m), kg_msg_id(m2)) != 0);
  KG_CHECK(s_frame_is(kg_msg_part(m2, KG_PART_PARENT), "{}"));
  KG_CHECK(kg_msg_parent_id(m2) == NULL);
  kg_msg_destroy(&m2);
  kg_msg_destroy(&m);

  char now[32];
  kg_iso_now(now);
  KG_CHECK_INT(strlen(now), 27);
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  char year[16];
  snprintf(year, sizeof year, "%04d-", tm.tm_year + 1900);
  KG_CHECK(strncmp(now, year, 5) == 0);
  char id[37];
  for (int i = 0; i < 100; i++) {
    kg_uuid4(id);
    KG_CHECK(s_is_uuid4(id));
  }
}

KG_TEST_MAIN(KG_CASE(parse_signed), KG_CASE(framing_errors), KG_CASE(bad_json_and_header),
             KG_CASE(identities), KG_CASE(new_message))
