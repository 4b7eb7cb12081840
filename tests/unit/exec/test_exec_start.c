/*  kg_exec_start: a run's start-time choice from resume-prepare's answer,
    as tables. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "kg_exec_start.h"
#include "kg_test.h"

#define NOW 1700000000000LL

static kg_exec_start_t
s_judge(const char *json, int64_t *step, char *line, size_t len)
{
  cJSON *j = json ? cJSON_Parse(json) : NULL;
  kg_exec_start_t v = kg_exec_start_judge(j, "job", "ck", NOW, step, line, len);
  cJSON_Delete(j);
  return v;
}

KG_TEST(verdict_follows_the_answer)
{
  static const struct {
    const char *json;
    kg_exec_start_t want;
    int64_t step;
    const char *says;
  } rows[] = {
    {"{\"status\":\"restored\",\"step\":30,\"sealed_at_ms\":1699999880000,"
     "\"archive\":\"ck/step-0000000030-x.kgckpt.tar\",\"skipped\":[]}",
     KG_EXEC_START_RESUME, 30, "resuming run job from step 30, sealed 2 min ago"},
    {"{\"status\":\"none\",\"skipped\":[]}", KG_EXEC_START_FRESH, -1,
     "no checkpoint of run job in ck: starting fresh"},
    /* another run's archives are named, never a reason to stop */
    {"{\"status\":\"none\",\"skipped\":[{\"archive\":\"ck/step-0000000040-x.kgckpt.tar\","
     "\"reason\":\"run 'other', not the run being resumed ('job')\"}]}",
     KG_EXEC_START_FRESH, -1, "starting fresh; skipped step 40: of run 'other', not this one"},
    /* this run's archives that do not verify stop the start (86) */
    {"{\"status\":\"none\",\"skipped\":[{\"archive\":\"ck/step-0000000040-x.kgckpt.tar\","
     "\"reason\":\"corrupt: member state.pt: digest mismatch\"}]}",
     KG_EXEC_START_UNVERIFIED, -1, "1 checkpoint(s) of run job in ck, but none verifies"},
    {"{\"status\":\"restored\",\"step\":30,\"sealed_at_ms\":1699999990000,"
     "\"archive\":\"ck/step-0000000030-x.kgckpt.tar\",\"skipped\":[{\"archive\":"
     "\"ck/step-0000000040-y.kgckpt.tar\",\"reason\":\"unsigned: signed by key ab, which you "
     "do not trust (kguard keys trust)\"}]}",
     KG_EXEC_START_RESUME, 30, "skipped step 40: signed by a key you do not trust"},
    /* a shard waiting for its set is said by the set */
    {"{\"status\":\"none\",\"skipped\":[{\"archive\":\"ck/step-0000000040-x-rank0of2.kgckpt."
     "tar\",\"reason\":\"shard of rank 0 of 2: chosen only with its complete set\"}]}",
     KG_EXEC_START_FRESH, -1, "starting fresh"},
    {"{\"status\":\"failed\",\"error\":\"verifying 'x' failed: EIO\"}", KG_EXEC_START_FAILED,
     -1, "failed to choose run job's checkpoint in ck: verifying 'x' failed: EIO"},
    {NULL, KG_EXEC_START_FAILED, -1, "no answer"},
    {"{\"status\":\"restored\"}", KG_EXEC_START_FAILED, -1, "did not say which"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    int64_t step = 99;
    char line[2048];
    KG_CHECK_INT(s_judge(rows[i].json, &step, line, sizeof line), rows[i].want);
    KG_CHECK_INT(step, rows[i].step);
    KG_CHECK(strstr(line, rows[i].says) != NULL);
  }
}

KG_TEST(many_skipped_are_counted_not_listed)
{
  char json[4096] = "{\"status\":\"none\",\"skipped\":[";
  for (int i = 0; i < 6; i++) {
    char row[200];
    snprintf(row, sizeof row, "%s{\"archive\":\"ck/step-%010d-x.kgckpt.tar\",\"reason\":"
             "\"run 'b', not the run being resumed ('job')\"}", i ? "," : "", 50 - i);
    strcat(json, row);
  }
  strcat(json, "]}");
  int64_t step;
  char line[2048];
  KG_CHECK_INT(s_judge(json, &step, line, sizeof line), KG_EXEC_START_FRESH);
  KG_CHECK(strstr(line, "step 48: of run 'b'") != NULL);
  KG_CHECK(strstr(line, "step 47") == NULL);
  KG_CHECK(strstr(line, "and 3 more (kguard ckpt list ck)") != NULL);
}

KG_TEST(durations_and_names)
{
  char b[32];
  KG_CHECK_STR(kg_exec_start_ago(-5, b, sizeof b), "0 s");
  KG_CHECK_STR(kg_exec_start_ago(119999, b, sizeof b), "119 s");
  KG_CHECK_STR(kg_exec_start_ago(600000, b, sizeof b), "10 min");
  KG_CHECK_STR(kg_exec_start_ago(5 * 3600000LL, b, sizeof b), "5 h");
  KG_CHECK_STR(kg_exec_start_ago(3 * 86400000LL, b, sizeof b), "3 days");
  KG_CHECK_INT(kg_exec_start_name_step("a/b/step-0000000030-2024.kgckpt.tar"), 30);
  KG_CHECK_INT(kg_exec_start_name_step("step-7-x"), 7);
  KG_CHECK_INT(kg_exec_start_name_step("a/notastep-1-x"), -1);
  KG_CHECK_INT(kg_exec_start_name_step("step-x"), -1);
  KG_CHECK_INT(kg_exec_start_name_step(NULL), -1);
}

KG_TEST_MAIN(KG_CASE(verdict_follows_the_answer), KG_CASE(many_skipped_are_counted_not_listed),
             KG_CASE(durations_and_names))
