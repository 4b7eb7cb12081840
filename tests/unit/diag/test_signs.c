/*  kg_signs: the earlier-signs list. */
#include <cjson/cJSON.h>
#include <string.h>

#include "kg_diag_report.h"
#include "kg_diagnosis.h"
#include "kg_errrecord.h"
#include "kg_error.h"
#include "kg_rules_json.h"
#include "kg_signs.h"
#include "kg_streamset.h"
#include "kg_test.h"
#include "kg_trail.h"

KG_TEST(signs_same_request_or_raw_within_ttl_move_t_back)
{
  kg_signs_t *s = kg_signs_new();
  kg_signs_add(s, "req-a", 100);
  kg_signs_add(s, "req-b", 50);
  kg_signs_add(s, NULL, 80);                 /* raw: belongs to any request */
  KG_CHECK_INT(kg_signs_earliest(s, "req-a", 500), 80);   /* not req-b's 50 */
  KG_CHECK_INT(kg_signs_earliest(s, "req-b", 500), 50);
  KG_CHECK_INT(kg_signs_earliest(s, NULL, 500), 50);
  kg_signs_prune(s, "req-a", 200);           /* req-b's sign is another request's */
  KG_CHECK_INT(kg_signs_earliest(s, NULL, 500), 80);
  kg_signs_prune(s, NULL, 80 + KG_SIGNS_RAW_TTL_MS + 1);   /* raw sign too old */
  KG_CHECK_INT(kg_signs_earliest(s, NULL, 500), 100);
  kg_signs_clear(s);
  KG_CHECK_INT(kg_signs_earliest(s, NULL, 500), 500);
  for (int i = 0; i < KG_SIGNS_MAX + 4; i++)   /* bounded: the oldest go */
    kg_signs_add(s, "r", 1000 + i);
  KG_CHECK_INT(kg_signs_earliest(s, "r", 5000), 1004);
  kg_signs_destroy(&s);
}

KG_TEST_MAIN(KG_CASE(signs_same_request_or_raw_within_ttl_move_t_back))
