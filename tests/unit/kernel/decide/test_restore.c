/*  kg_restore: resume-prepare's JSON into what the next kernel gets, by a
    table of good, incomplete and hostile outputs (a clear error, never an
    assert), and the incident and notice records built from it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_restore.h"
#include "kg_test.h"

KG_TEST(restore_parse_table)
{
  static const struct {
    const char *out;            /*  resume-prepare's stdout                 */
    bool kept;                  /*  kg_restore_take_output                  */
    bool restored;              /*  kg_restore_decide                       */
    const char *dir, *archive;  /*  when restored                           */
    long long step;
    const char *error;          /*  a substring of kg_restore_error, or NULL */
    const char *meta_status;    /*  kg_restore_meta_json's status, or NULL  */
  } rows[] = {
      /* good */
      {"{\"status\":\"restored\",\"archive\":\"/c/step-7.kgc\",\"dir\":\"/s/r/1\","
       "\"step\":7,\"digest\":\"abc\"}", true, true, "/s/r/1", "/c/step-7.kgc", 7, NULL,
       "restored"},
      {"{\"status\":\"restored\",\"archive\":\"/c/a.kgc\",\"dir\":\"\",\"step\":0}", true, true,
       "", "/c/a.kgc", 0, NULL, "restored"},
      {"{\"status\":\"none\"}", true, false, NULL, NULL, -1, NULL, "none"},
      {"{\"status\":\"failed\",\"error\":\"digest mismatch in model.pt\"}", true, false, NULL,
       NULL, -1, "the checkpoint restore failed: digest mismatch in model.pt", "failed"},
      /* missing fields */
      {"{\"status\":\"restored\",\"archive\":\"/c/a.kgc\"}", true, true, "", "/c/a.kgc", -1,
       NULL, "restored"},
      {"{\"status\":\"restored\",\"dir\":\"/s\",\"step\":3}", true, false, NULL, NULL, -1,
       "\"restored\" without an archive", "restored"},
      {"{\"status\":\"failed\"}", true, false, NULL, NULL, -1, "failed: no reason given",
       "failed"},
      {"{}", true, false, NULL, NULL, -1, "status is not restored, none or failed", "failed"},
      /* hostile values */
      {"{\"status\":\"restored\",\"archive\":\"/c/a.kgc\",\"step\":1e300}", true, true, "",
       "/c/a.kgc", -1, NULL, "restored"},
      {"{\"status\":\"restored\",\"archive\":\"/c/a.kgc\",\"step\":-5}", true, true, "",
       "/c/a.kgc", -1, NULL, "restored"},
      {"{\"status\":\"restored\",\"archive\":\"/c/a.kgc\",\"step\":\"7\"}", true, true, "",
       "/c/a.kgc", -1, NULL, "restored"},
      {"{\"status\":\"restored\",\"archive\":\"/c/a.kgc\",\"step\":12.9}", true, true, "",
       "/c/a.kgc", 12, NULL, "restored"},
      {"{\"status\":\"restored\",\"archive\":[\"/c/a.kgc\"],\"dir\":5}", true, false, NULL,
       NULL, -1, "without an archive", "restored"},
      {"{\"status\":\"restored\",\"archive\":\"/c/a.kgc\",\"dir\":{\"x\":1}}", true, true, "",
       "/c/a.kgc", -1, NULL, "restored"},
      {"{\"status\":42}", true, false, NULL, NULL, -1, "status is not", "failed"},
      {"{\"status\":\"failed\",\"error\":{\"nested\":true}}", true, false, NULL, NULL, -1,
       "no reason given", "failed"},
      /* not an object: nothing kept (the caller names the reason) */
      {"", false, false, NULL, NULL, -1, NULL, NULL},
      {"[1,2,3]", false, false, NULL, NULL, -1, NULL, NULL},
      {"\"restored\"", false, false, NULL, NULL, -1, NULL, NULL},
      {"{\"status\":\"restored\",\"archive\":", false, false, NULL, NULL, -1, NULL, NULL},
      {"progress 50%\n", false, false, NULL, NULL, -1, NULL, NULL},
  };
  for (size_t n = 0; n < sizeof rows / sizeof rows[0]; n++) {
    fprintf(stderr, "row %zu: %s\n", n, rows[n].out);
    kg_restore_t *r = kg_restore_new();
    KG_CHECK(r != NULL);
    kg_restore_begin(r);
    KG_CHECK(kg_restore_take_output(r, rows[n].out) == rows[n].kept);
    KG_CHECK((kg_restore_result(r) != NULL) == rows[n].kept);
    KG_CHECK(kg_restore_decide(r) == rows[n].restored);
    KG_CHECK(kg_restore_pending(r) == rows[n].restored);
    if (rows[n].restored) {
      KG_CHECK_STR(kg_restore_dir(r), rows[n].dir);
      KG_CHECK_STR(kg_restore_archive(r), rows[n].archive);
    }
    KG_CHECK_INT(kg_restore_step(r), rows[n].step);
    if (rows[n].error) {
      KG_CHECK(kg_restore_error(r) != NULL);
      if (!strstr(kg_restore_error(r), rows[n].error))
        fprintf(stderr, "error: %s\n", kg_restore_error(r));
      KG_CHECK(strstr(kg_restore_error(r), rows[n].error) != NULL);
    } else
      KG_CHECK(kg_restore_error(r) == NULL);
    cJSON *meta = kg_restore_meta_json(r);
    KG_CHECK((meta != NULL) == (rows[n].meta_status != NULL));
    if (meta)
      KG_CHECK_STR(cJSON_GetObjectItemCaseSensitive(meta, "status")->valuestring,
                   rows[n].meta_status);
    cJSON_Delete(meta);
    kg_restore_handed_over(r);
    KG_CHECK(!kg_restore_pending(r));
    kg_restore_destroy(&r);
    KG_CHECK(r == NULL);
  }
  kg_restore_destroy(NULL);
}

/*  Why nothing was restored, when resume-prepare gave no result: the
    reason kguard names is kept (a failed result's own error does not
    replace it), goes into the incident record and the notice metadata
    ("none" only for a missing checkpoint directory), and a new restore
    forgets it; a restored checkpoint stays pending across a new restore's
    begin until decided again. */
KG_TEST(restore_errors_incident_and_meta)
{
  kg_restore_t *r = kg_restore_new();
  KG_CHECK(kg_restore_meta_json(r) == NULL);        /* nothing attempted */
  KG_CHECK(kg_restore_incident_json(r) == NULL);
  KG_CHECK(kg_restore_digest(r) == NULL);
  KG_CHECK_STR(kg_restore_dir(r), "");

  kg_restore_set_error(r, "no checkpoint directory /nowhere");
  KG_CHECK(!kg_restore_decide(r));
  cJSON *meta = kg_restore_meta_json(r);
  KG_CHECK_STR(cJSON_GetObjectItemCaseSensitive(meta, "status")->valuestring, "none");
  KG_CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(meta, "step")));
  cJSON_Delete(meta);
  cJSON *inc = kg_restore_incident_json(r);
  KG_CHECK_STR(cJSON_GetObjectItemCaseSensitive(inc, "status")->valuestring, "failed");
  KG_CHECK_STR(cJSON_GetObjectItemCaseSensitive(inc, "error")->valuestring,
               "no checkpoint directory /nowhere");
  cJSON_Delete(inc);

  /* a stalled helper: kguard's reason, status failed */
  kg_restore_begin(r);
  KG_CHECK(kg_restore_error(r) == NULL);
  kg_restore_set_error(r, "the checkpoint restore stalled");
  KG_CHECK(!kg_restore_decide(r));
  meta = kg_restore_meta_json(r);
  KG_CHECK_STR(cJSON_GetObjectItemCaseSensitive(meta, "status")->valuestring, "failed");
  KG_CHECK_STR(cJSON_GetObjectItemCaseSensitive(meta, "error")->valuestring,
               "the checkpoint restore stalled");
  cJSON_Delete(meta);

  /* a failed result: its reason, and the incident keeps the result with
     kguard's reason added once */
  kg_restore_begin(r);
  KG_CHECK(kg_restore_take_output(r, "{\"status\":\"failed\",\"error\":\"bad\"}"));
  KG_CHECK(!kg_restore_decide(r));
  inc = kg_restore_incident_json(r);
  KG_CHECK_STR(cJSON_GetObjectItemCaseSensitive(inc, "error")->valuestring, "bad");
  KG_CHECK_STR(cJSON_GetObjectItemCaseSensitive(inc, "kguard_error")->valuestring,
               "the checkpoint restore failed: bad");
  cJSON_Delete(inc);

  /* restored: the incident gets the result as is, the digest is offered */
  kg_restore_begin(r);
  KG_CHECK(kg_restore_take_output(r, "{\"status\":\"restored\",\"archive\":\"/a\",\"step\":3,"
                                     "\"digest\":\"d1\",\"dir\":\"/r\"}"));
  KG_CHECK(kg_restore_decide(r));
  KG_CHECK_STR(kg_restore_digest(r), "d1");
  inc = kg_restore_incident_json(r);
  KG_CHECK(cJSON_GetObjectItemCaseSensitive(inc, "kguard_error") == NULL);
  KG_CHECK_INT(cJSON_GetObjectItemCaseSensitive(inc, "step")->valueint, 3);
  cJSON_Delete(inc);
  /* the progress notice: once per restore */
  KG_CHECK(!kg_restore_noticed(r));
  kg_restore_set_noticed(r);
  KG_CHECK(kg_restore_noticed(r));
  kg_restore_begin(r);
  KG_CHECK(!kg_restore_noticed(r));
  KG_CHECK(kg_restore_pending(r));   /* kept until decided again */
  KG_CHECK_STR(kg_restore_archive(r), "/a");
  KG_CHECK(kg_restore_take_output(r, "{\"status\":\"none\"}"));
  KG_CHECK(!kg_restore_decide(r));
  KG_CHECK(!kg_restore_pending(r));
  KG_CHECK(kg_restore_error(r) == NULL);   /* none found is not an error */
  kg_restore_destroy(&r);
}

KG_TEST_MAIN(KG_CASE(restore_parse_table), KG_CASE(restore_errors_incident_and_meta))
