/*  kg_trail: the bounded trail of recent lines. */
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

KG_TEST(trail_bounded_and_tail_keeps_last_lines)
{
  kg_trail_t *t = kg_trail_new();
  for (int i = 0; i < KG_TRAIL_MAX_FOLLOWING + 5; i++)
    kg_trail_follow_line(t, KG_SRC_RAW_STDERR, "line", i);
  char line[32];
  for (int i = 0; i < KG_TRAIL_STDERR_TAIL + 3; i++) {
    snprintf(line, sizeof line, "err %d", i);
    kg_trail_tail_add(t, line);
  }
  cJSON *o = cJSON_CreateObject();
  kg_trail_add_to_json(t, o);
  KG_CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(o, "following")), KG_TRAIL_MAX_FOLLOWING);
  KG_CHECK_INT(cJSON_GetObjectItem(o, "following_dropped")->valuedouble, 5);
  cJSON *tail = cJSON_GetObjectItem(o, "raw_stderr_tail");
  KG_CHECK_INT(cJSON_GetArraySize(tail), KG_TRAIL_STDERR_TAIL);
  KG_CHECK_STR(cJSON_GetArrayItem(tail, 0)->valuestring, "err 3");
  KG_CHECK_STR(cJSON_GetArrayItem(tail, KG_TRAIL_STDERR_TAIL - 1)->valuestring, "err 102");
  cJSON_Delete(o);
  kg_trail_clear(t);
  o = cJSON_CreateObject();
  kg_trail_add_to_json(t, o);
  KG_CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(o, "following")), 0);
  KG_CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(o, "raw_stderr_tail")), 0);
  cJSON_Delete(o);
  kg_trail_destroy(&t);
}

KG_TEST_MAIN(KG_CASE(trail_bounded_and_tail_keeps_last_lines))
