/*  kg_errrecord: the error record's text and JSON. */
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

KG_TEST(errrecord_text_and_record)
{
  cJSON *tb = cJSON_CreateArray();
  cJSON_AddItemToArray(tb, cJSON_CreateString("\x1b[0;31mRuntimeError\x1b[0m: boom"));
  cJSON_AddItemToArray(tb, cJSON_CreateNumber(3));
  char *text = kg_errrecord_text("RuntimeError", "CUDA error", tb, 65536);
  KG_CHECK_STR(text, "RuntimeError: CUDA error\nRuntimeError: boom\n");
  free(text);
  text = kg_errrecord_text("RuntimeError", "CUDA error", tb, 10);
  KG_CHECK_STR(text, "RuntimeErr");   /* cut at the cap: 10 bytes */
  free(text);
  cJSON *r = kg_errrecord_new(KG_SRC_IOPUB_ERROR, "E", "v", tb, NULL, 7);
  KG_CHECK_STR(cJSON_GetObjectItem(r, "source")->valuestring, "iopub_error");
  KG_CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(r, "traceback")), 1);
  KG_CHECK_STR(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "traceback"), 0)->valuestring,
               "RuntimeError: boom");
  KG_CHECK(cJSON_IsNull(cJSON_GetObjectItem(r, "parent_msg_id")));
  cJSON_Delete(r);
  cJSON_Delete(tb);
}

KG_TEST_MAIN(KG_CASE(errrecord_text_and_record))
