/*  kg_msg over real zmq sockets (inproc), sending side: binary buffers
    resent without copies, JSON edits written back, raw heartbeat frames,
    and the frame and byte limits on what is received. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include <cjson/cJSON.h>

#include "kg_error.h"
#include "kg_msg.h"
#include "kg_test.h"
#include "msg_fixture.h"

KG_TEST(buffers_and_resend)
{
  s_pair();
  kg_signer_t *in = kg_signer_new("inner", 5);
  kg_signer_t *out = kg_signer_new("outer", 5);

  /*  A message with binary buffers: 1 MiB of bytes 0..255, an empty one,
      and one with NULs. Sent with zmq_msg_init_data so we know where the
      big one lives. */
  size_t big_len = 1 << 20;
  unsigned char *big = malloc(big_len);
  for (size_t i = 0; i < big_len; i++)
    big[i] = (unsigned char) (i * 7 + 3);
  const char *ids[] = {"c"};
  kg_frame_t parts[4];
  for (int i = 0; i < 4; i++)
    parts[i] = (kg_frame_t) {s_dicts[i], strlen(s_dicts[i])};
  char sig[65];
  kg_signer_sign(in, parts, sig);
  const char *pre[] = {ids[0], "<IDS|MSG>", sig, s_dicts[0], s_dicts[1], s_dicts[2], s_dicts[3]};
  for (int i = 0; i < 7; i++)
    zmq_send(s_a, pre[i], strlen(pre[i]), ZMQ_SNDMORE);
  zmq_msg_t bm;
  zmq_msg_init_data(&bm, big, big_len, NULL, NULL);     /*  we free it */
  zmq_msg_send(&bm, s_a, ZMQ_SNDMORE);
  zmq_send(s_a, "", 0, ZMQ_SNDMORE);
  zmq_send(s_a, "a\0b", 3, 0);

  kg_msg_t *m = NULL;
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(kg_msg_parse(m, in), 0);
  KG_CHECK_INT(kg_msg_buffer_count(m), 3);
  kg_frame_t b0 = kg_msg_buffer(m, 0);
  KG_CHECK_INT(b0.size, big_len);
  KG_CHECK(b0.data == big);                  /*  inproc: never copied */
  KG_CHECK_INT(kg_msg_buffer(m, 1).size, 0);
  KG_CHECK(kg_msg_buffer(m, 2).size == 3 && memcmp(kg_msg_buffer(m, 2).data, "a\0b", 3) == 0);
  KG_CHECK(kg_msg_buffer(m, 3).data == NULL);

  /*  Re-sign and resend twice (a relay retrying): both copies are complete
      and byte-identical, the big buffer still shared, not copied. */
  char expect[65];
  kg_signer_sign(out, parts, expect);
  for (int round = 0; round < 2; round++) {
    KG_CHECK_INT(kg_msg_send(m, s_a, out, 0), 0);
    zmq_msg_t raw[16];
    size_t n = s_recv_raw(s_b, raw, 16);
    KG_CHECK_INT(n, 10);
    KG_CHECK(zmq_msg_size(&raw[0]) == 1 && memcmp(zmq_msg_data(&raw[0]), "c", 1) == 0);
    KG_CHECK(zmq_msg_size(&raw[1]) == 9 && memcmp(zmq_msg_data(&raw[1]), "<IDS|MSG>", 9) == 0);
    /*  The signature covers the dicts only: identities and buffers do not
        change it. */
    KG_CHECK(zmq_msg_size(&raw[2]) == 64 && memcmp(zmq_msg_data(&raw[2]), expect, 64) == 0);
    for (int i = 0; i < 4; i++)
      KG_CHECK(zmq_msg_size(&raw[3 + i]) == strlen(s_dicts[i])
               && memcmp(zmq_msg_data(&raw[3 + i]), s_dicts[i], strlen(s_dicts[i])) == 0);
    KG_CHECK(zmq_msg_size(&raw[7]) == big_len && zmq_msg_data(&raw[7]) == big);
    KG_CHECK_INT(zmq_msg_size(&raw[8]), 0);
    KG_CHECK(zmq_msg_size(&raw[9]) == 3 && memcmp(zmq_msg_data(&raw[9]), "a\0b", 3) == 0);
    for (size_t i = 0; i < n; i++)
      zmq_msg_close(&raw[i]);
  }
  /*  Without identities the signature is the same too. */
  KG_CHECK_INT(kg_msg_set_idents(m, NULL, 0), 0);
  KG_CHECK_INT(kg_msg_send(m, s_a, out, 0), 0);
  zmq_msg_t raw[16];
  size_t n = s_recv_raw(s_b, raw, 16);
  KG_CHECK_INT(n, 9);
  KG_CHECK(zmq_msg_size(&raw[1]) == 64 && memcmp(zmq_msg_data(&raw[1]), expect, 64) == 0);
  for (size_t i = 0; i < n; i++)
    zmq_msg_close(&raw[i]);
  kg_msg_destroy(&m);
  free(big);
  kg_signer_destroy(&in);
  kg_signer_destroy(&out);
  s_unpair();
}

KG_TEST(set_json)
{
  s_pair();
  kg_signer_t *signer = kg_signer_new("key", 3);
  s_send_signed(s_a, signer, 0, NULL, s_dicts, 0, NULL);
  kg_msg_t *m = NULL;
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(kg_msg_parse(m, signer), 0);

  /*  Editing the parsed copy in place and writing it back keeps it. */
  cJSON *md = kg_msg_json(m, KG_PART_METADATA);
  cJSON *kg = cJSON_AddObjectToObject(md, "kguard");
  cJSON_AddStringToObject(kg, "event", "advice");
  KG_CHECK_INT(kg_msg_set_json(m, KG_PART_METADATA, md), 0);
  KG_CHECK(kg_msg_json(m, KG_PART_METADATA) == md);
  KG_CHECK(s_frame_is(kg_msg_part(m, KG_PART_METADATA), "{\"kguard\":{\"event\":\"advice\"}}"));

  /*  A foreign object replaces the frame and the cache. */
  cJSON *content = cJSON_CreateObject();
  cJSON_AddStringToObject(content, "code", "print(2)");
  KG_CHECK_INT(kg_msg_set_json(m, KG_PART_CONTENT, content), 0);
  cJSON_Delete(content);
  KG_CHECK(s_frame_is(kg_msg_part(m, KG_PART_CONTENT), "{\"code\":\"print(2)\"}"));
  KG_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(kg_msg_json(m, KG_PART_CONTENT),
                                                        "code")), "print(2)");

  /*  A large frame (zero-copy path) survives a round trip. */
  cJSON *big = cJSON_CreateObject();
  char *text = malloc(100001);
  memset(text, 'x', 100000);
  text[100000] = '\0';
  cJSON_AddStringToObject(big, "text", text);
  KG_CHECK_INT(kg_msg_set_json(m, KG_PART_CONTENT, big), 0);
  cJSON_Delete(big);
  KG_CHECK_INT(kg_msg_send(m, s_a, signer, 0), 0);
  kg_msg_t *back = NULL;
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &back), 0);
  KG_CHECK_INT(kg_msg_parse(back, signer), 0);
  KG_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(kg_msg_json(back, KG_PART_CONTENT),
                                                        "text")), text);
  cJSON *bmd = kg_msg_json(back, KG_PART_METADATA);
  KG_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(bmd, "kguard"),
                                                        "event")), "advice");
  KG_CHECK_STR(kg_msg_id(back), "m1");
  free(text);
  kg_msg_destroy(&back);
  kg_msg_destroy(&m);
  kg_signer_destroy(&signer);
  s_unpair();
}

KG_TEST(heartbeat_raw)
{
  s_pair();
  const char *ping[] = {"peer-id", "", "ping \x01\x02"};
  s_send_strs(s_a, 3, ping);
  kg_msg_t *m = NULL;
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(kg_msg_frame_count(m), 3);
  KG_CHECK_INT(kg_msg_send_raw(m, s_b, 0), 0);
  KG_CHECK_INT(kg_msg_send_raw(m, s_b, 0), 0);     /*  still ours: again */
  for (int round = 0; round < 2; round++) {
    zmq_msg_t raw[4];
    size_t n = s_recv_raw(s_a, raw, 4);
    KG_CHECK_INT(n, 3);
    for (size_t i = 0; i < n && i < 3; i++) {
      KG_CHECK(zmq_msg_size(&raw[i]) == strlen(ping[i])
               && memcmp(zmq_msg_data(&raw[i]), ping[i], strlen(ping[i])) == 0);
      zmq_msg_close(&raw[i]);
    }
  }
  /*  Unsplit messages cannot be signed and sent. */
  kg_signer_t *signer = kg_signer_new("k", 1);
  KG_CHECK_INT(kg_msg_send(m, s_b, signer, 0), -EINVAL);
  kg_signer_destroy(&signer);
  kg_msg_destroy(&m);
  s_unpair();
}

/*  After an oversize message, the next one is received intact: the rest of
    the big one was drained. */
static void
s_check_next_ok(void)
{
  kg_signer_t *signer = kg_signer_new("key", 3);
  s_send_signed(s_a, signer, 0, NULL, s_dicts, 0, NULL);
  kg_msg_t *m = NULL;
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(m ? kg_msg_parse(m, signer) : -1, 0);
  KG_CHECK_INT(kg_msg_frame_count(m), 6);
  kg_msg_destroy(&m);
  kg_signer_destroy(&signer);
}

KG_TEST(too_many_frames)
{
  s_pair();
  int hwm = 0;                                   /*  no limit: 5000 frames */
  zmq_setsockopt(s_a, ZMQ_SNDHWM, &hwm, sizeof hwm);
  zmq_setsockopt(s_b, ZMQ_RCVHWM, &hwm, sizeof hwm);
  for (unsigned i = 0; i < KG_MSG_MAX_FRAMES + 100; i++)
    zmq_send(s_a, "f", 1, i + 1 < KG_MSG_MAX_FRAMES + 100 ? ZMQ_SNDMORE : 0);
  kg_msg_t *m = NULL;
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), KG_ETOOBIG);
  KG_CHECK(m == NULL);
  s_check_next_ok();
  /*  Exactly the limit is accepted. */
  for (unsigned i = 0; i < KG_MSG_MAX_FRAMES; i++)
    zmq_send(s_a, "f", 1, i + 1 < KG_MSG_MAX_FRAMES ? ZMQ_SNDMORE : 0);
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), 0);
  KG_CHECK_INT(kg_msg_frame_count(m), KG_MSG_MAX_FRAMES);
  kg_msg_destroy(&m);
  s_unpair();
}

static void
s_free(void *data, void *hint)
{
  (void) hint;
  free(data);
}

KG_TEST(too_many_bytes)
{
  s_pair();
  /*  One frame over the byte limit. calloc'd pages are never touched (the
      frame crosses inproc by reference), so this costs no real memory. */
  size_t len = (size_t) KG_MSG_MAX_BYTES + 1;
  void *huge = calloc(1, len);
  KG_CHECK(huge != NULL);
  zmq_send(s_a, "id", 2, ZMQ_SNDMORE);
  zmq_send(s_a, "<IDS|MSG>", 9, ZMQ_SNDMORE);
  zmq_msg_t hm;
  zmq_msg_init_data(&hm, huge, len, s_free, NULL);
  zmq_msg_send(&hm, s_a, ZMQ_SNDMORE);
  zmq_send(s_a, "tail", 4, 0);
  kg_msg_t *m = NULL;
  KG_CHECK_INT(kg_msg_recv(s_b, 0, &m), KG_ETOOBIG);
  KG_CHECK(m == NULL);
  s_check_next_ok();
  s_unpair();
}

KG_TEST_MAIN(KG_CASE(buffers_and_resend), KG_CASE(set_json), KG_CASE(heartbeat_raw),
             KG_CASE(too_many_frames), KG_CASE(too_many_bytes))
