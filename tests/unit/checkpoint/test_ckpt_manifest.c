/*  kg_ckpt_manifest: encode, decode and the rejections of a decoded manifest. */
#include <stdlib.h>
#include <string.h>

#include "kg_ckpt_manifest.h"
#include "kg_error.h"
#include "kg_test.h"

KG_TEST(manifest_round_trip_and_rejects)
{
  kg_ckpt_manifest_t *m = kg_ckpt_manifest_new();
  snprintf(m->run, sizeof m->run, "r");
  m->step = 3;
  m->sealed_at_ms = 1000;
  snprintf(m->key_id, sizeof m->key_id, "b2:0011223344556677");
  KG_CHECK_INT(kg_ckpt_manifest_add(m, "b", 5), 0);
  KG_CHECK_INT(kg_ckpt_manifest_add(m, "a", 7), 1);
  KG_CHECK_INT(kg_ckpt_manifest_sort(m), 0);
  KG_CHECK_INT(kg_ckpt_manifest_alloc_chunks(m), 0);
  m->members[0].chunks[0][0] = 0xab;
  char *json = kg_ckpt_manifest_encode(m);
  kg_ckpt_manifest_t *back = NULL;
  char why[256];
  KG_CHECK_INT(kg_ckpt_manifest_decode(json, strlen(json), &back, why, sizeof why), 0);
  KG_CHECK_INT(back->version, 2);
  KG_CHECK_INT(back->members[0].nchunks, 1);
  KG_CHECK_INT(back->members[0].chunks[0][0], 0xab);
  KG_CHECK_INT(back->count, 2);
  KG_CHECK_STR(back->members[0].path, "a");
  KG_CHECK_INT(back->total_size, 12);
  KG_CHECK(kg_ckpt_manifest_find(back, "b") != NULL);
  KG_CHECK(kg_ckpt_manifest_find(back, "c") == NULL);
  kg_ckpt_manifest_destroy(&back);
  KG_CHECK(back == NULL);
  /* Version 1 (one whole-member digest) still round-trips. */
  m->version = 1;
  m->members[1].digest[0] = 0xcd;
  free(json);
  json = kg_ckpt_manifest_encode(m);
  KG_CHECK_INT(kg_ckpt_manifest_decode(json, strlen(json), &back, why, sizeof why), 0);
  KG_CHECK_INT(back->version, 1);
  KG_CHECK(back->members[1].chunks == NULL && back->members[1].digest[0] == 0xcd);
  kg_ckpt_manifest_destroy(&back);
  m->version = 2;

  /* A signed-looking manifest still may not name escaping paths. */
  free(m->members[0].path);
  m->members[0].path = strdup("../a");
  free(json);
  json = kg_ckpt_manifest_encode(m);
  KG_CHECK_INT(kg_ckpt_manifest_decode(json, strlen(json), &back, why, sizeof why),
               KG_ECKPT_UNSAFE);
  free(m->members[0].path);
  m->members[0].path = strdup("b");
  free(json);
  json = kg_ckpt_manifest_encode(m);
  KG_CHECK_INT(kg_ckpt_manifest_decode(json, strlen(json), &back, why, sizeof why),
               KG_ECKPT_UNSAFE); /* duplicate */
  KG_CHECK_INT(kg_ckpt_manifest_decode("[1]", 3, &back, why, sizeof why), KG_ECKPT_MALFORMED);
  KG_CHECK_INT(kg_ckpt_manifest_decode("{\"format\":\"kguard-checkpoint\",\"version\":3}", 42,
                                       &back, why, sizeof why),
               KG_ECKPT_MALFORMED);
  free(json);
  kg_ckpt_manifest_destroy(&m);
}

KG_TEST_MAIN(KG_CASE(manifest_round_trip_and_rejects))
