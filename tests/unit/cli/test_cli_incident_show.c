/*  kg_cli_incident_show: one incident record as a row of `kguard incident
    list` (its time, kind, decision and where it happened, for a notebook
    cell, a `kguard exec` command and a multi-node job) and as the page of
    `kguard incident show`. Records are JSON text, as read from disk. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "kg_cli_incident.h"
#include "kg_test.h"

KG_TEST(incident_row_table)
{
  static const struct {
    const char *record;
    const char *id, *kind, *decision, *where;
    long long when_ms;
  } rows[] = {
    {"{\"id\": \"a1\", \"T\": {\"ms\": 1700000000123}, \"family\": \"device-assert\", "
     "\"backend\": \"cuda\", \"policy\": {\"decision\": \"restart\"}, "
     "\"notebook\": \"/home/u/train.ipynb\", \"cell\": {\"execution_count\": 7}}",
     "a1", "device-assert (cuda)", "restart", "train.ipynb, cell [7]", 1700000000123LL},
    {"{\"id\": \"b2\", \"created\": \"2026-12-02T17:03:04.500Z\", \"family\": \"oom\", "
     "\"backend\": \"unknown\", \"exec\": {\"command\": [\"python\", \"train.py\", \"--lr\", "
     "\"0.1\\n\"]}}",
     "b2", "oom", "-", "command: python train.py --lr 0.1 ", 1796230984500LL},
    {"{\"id\": \"c3\", \"job\": {\"generation\": 2, \"root_cause\": {\"family\": \"nccl\", "
     "\"node\": 1, \"host\": \"gpu-b\"}}, \"policy\": {\"decision\": \"give-up\"}}",
     "c3", "nccl", "give-up", "job: node 1 on gpu-b, generation 2", -1},
    {"{}", "?", "?", "-", "notebook", -1},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    cJSON *j = cJSON_Parse(rows[i].record);
    KG_CHECK(j != NULL);
    kg_incident_row_t row;
    kg_incident_row(j, &row);
    KG_CHECK_STR(row.id, rows[i].id);
    KG_CHECK_STR(row.kind, rows[i].kind);
    KG_CHECK_STR(row.decision, rows[i].decision);
    KG_CHECK_STR(row.where, rows[i].where);
    KG_CHECK_INT(row.when_ms, rows[i].when_ms);
    cJSON_Delete(j);
  }
}

KG_TEST(incident_local_time_unknown)
{
  char buf[32];
  kg_incident_local_time(-1, buf, sizeof buf);
  KG_CHECK_STR(buf, "?");
  kg_incident_local_time(0, buf, sizeof buf);
  KG_CHECK_INT(strlen(buf), strlen("YYYY-MM-DD HH:MM:SS"));
}

KG_TEST(incident_show_page)
{
  cJSON *j = cJSON_Parse(
    "{\"id\": \"a1\", \"family\": \"device-assert\", \"backend\": \"cuda\", "
    "\"notebook\": \"/home/u/train.ipynb\", \"cell\": {\"execution_count\": 7, "
    "\"code\": \"loss.backward()\"}, \"following\": [{}, {}], "
    "\"raw_stderr_tail\": [\"\\u001b[31mAssertion `t >= 0` failed.\\u001b[0m\"]}");
  KG_CHECK(j != NULL);
  char *page = NULL;
  size_t size = 0;
  FILE *out = open_memstream(&page, &size);
  kg_incident_show(out, j, "/state/incidents/a1.json");
  fclose(out);
  KG_CHECK(strstr(page, "device-assert (cuda)") != NULL);
  KG_CHECK(strstr(page, "  loss.backward()\n") != NULL);
  KG_CHECK(strstr(page, "2 later error(s)") != NULL);
  KG_CHECK(strstr(page, "Assertion `t >= 0` failed.") != NULL);
  KG_CHECK(strstr(page, "to share it: kguard incident export a1\n") != NULL);
  free(page);
  cJSON_Delete(j);
}

KG_TEST_MAIN(KG_CASE(incident_row_table), KG_CASE(incident_local_time_unknown),
             KG_CASE(incident_show_page))
