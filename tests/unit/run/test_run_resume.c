/*  kg_run_resume: the run's id and what --resume continues, from
    resume-prepare's JSON as it prints it. Pure: no process, no clock. */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "kg_run_resume.h"
#include "kg_test.h"

typedef struct {
  const char *notebook;
  const char *params;           /*  a JSON object, or NULL                  */
  const char *want;
} s_id_row_t;

static const s_id_row_t s_ids[] = {
  {"train.ipynb", NULL, "train.ipynb"},
  {"/work/nb/train.ipynb", "{}", "train.ipynb"},                       /* file name only */
  {"train.ipynb", "{\"lr\": 0.1, \"epochs\": 3}", "train.ipynb lr=0.1 epochs=3"},
  {"train.ipynb", "{\"name\": \"a b\", \"flag\": true, \"none\": null}",
   "train.ipynb name=\"a b\" flag=true none=null"},
  {"t.ipynb", "{\"xs\": [1, 2], \"o\": {\"k\": 1}}", "t.ipynb xs=[1,2] o={\"k\":1}"},
};

KG_TEST(id_table)
{
  for (size_t i = 0; i < sizeof s_ids / sizeof s_ids[0]; i++) {
    cJSON *p = s_ids[i].params ? cJSON_Parse(s_ids[i].params) : NULL;
    char id[KG_RUN_ID_MAX + 1];
    KG_CHECK(kg_run_resume_id(s_ids[i].notebook, p, id) == 0);
    KG_CHECK_STR(id, s_ids[i].want);
    cJSON_Delete(p);
  }
}

/*  Too long for the format: cut at a character boundary, a digest of the
    whole keeps runs that differ only at the end apart. */
KG_TEST(id_long)
{
  char value[400], json[512], a[KG_RUN_ID_MAX + 1], b[KG_RUN_ID_MAX + 1];
  memset(value, 'x', sizeof value);
  memcpy(value + 100, "\xc3\xa9\xc3\xa9\xc3\xa9", 6);   /* é at the cut */
  value[sizeof value - 1] = '\0';
  snprintf(json, sizeof json, "{\"s\": \"%s\", \"n\": 1}", value);
  cJSON *p = cJSON_Parse(json);
  KG_CHECK(kg_run_resume_id("train.ipynb", p, a) == 0);
  cJSON_ReplaceItemInObject(p, "n", cJSON_CreateNumber(2));
  KG_CHECK(kg_run_resume_id("train.ipynb", p, b) == 0);
  cJSON_Delete(p);
  KG_CHECK(strlen(a) <= KG_RUN_ID_MAX && strlen(b) <= KG_RUN_ID_MAX);
  KG_CHECK(strncmp(a, "train.ipynb s=\"xxx", 18) == 0);
  KG_CHECK(strcmp(a, b) != 0);
  const char *hash = strstr(a, " #");
  KG_CHECK(hash && strlen(hash) == 18);
  /* The cut never splits a character: no lone continuation byte before " #". */
  KG_CHECK(((unsigned char) hash[-1] & 0xC0) != 0xC0);
}

typedef struct {
  const char *output;           /*  resume-prepare's stdout                 */
  kg_run_resume_kind_t kind;
  long long step;
  const char *line;             /*  the start line, exactly                 */
  const char *skipped;
} s_choice_row_t;

#define RUN "nb.ipynb lr=0.2"
static const s_choice_row_t s_choices[] = {
  /* A checkpoint of this run. */
  {"{\"status\":\"restored\",\"archive\":\"/c/step-30.kgckpt.tar\",\"step\":30,"
   "\"sealed_at\":\"2026-01-02T03:04:05Z\",\"skipped\":[]}",
   KG_RUN_RESUME_FROM, 30,
   "resuming run 'nb.ipynb lr=0.2' from step 30, sealed 2026-01-02T03:04:05Z, verified: "
   "/c/step-30.kgckpt.tar", ""},
  /* ... after a newer one of this run that does not verify: said, and why. */
  {"{\"status\":\"restored\",\"archive\":\"/c/step-30.kgckpt.tar\",\"step\":30,"
   "\"sealed_at\":\"T\",\"skipped\":[{\"archive\":\"/c/step-40.kgckpt.tar\",\"reason\":"
   "\"unsigned: signed by a key you do not trust\"}]}",
   KG_RUN_RESUME_FROM, 30,
   "resuming run 'nb.ipynb lr=0.2' from step 30, sealed T, verified: /c/step-30.kgckpt.tar",
   "skipped step-40.kgckpt.tar: unsigned: signed by a key you do not trust"},
  /* Nothing at all. */
  {"{\"status\":\"none\",\"skipped\":[]}", KG_RUN_RESUME_FRESH, -1,
   "no checkpoint of run 'nb.ipynb lr=0.2' in /c: starting fresh", ""},
  /* Only another notebook's run: not this run's business. */
  {"{\"status\":\"none\",\"skipped\":[{\"archive\":\"/c/a\",\"reason\":"
   "\"run 'other.ipynb', not the run being resumed ('nb.ipynb lr=0.2')\"}]}",
   KG_RUN_RESUME_FRESH, -1, "no checkpoint of run 'nb.ipynb lr=0.2' in /c: starting fresh",
   ""},
  /* A name that only starts like this notebook's is another notebook. */
  {"{\"status\":\"none\",\"skipped\":[{\"archive\":\"/c/a\",\"reason\":"
   "\"run 'nb.ipynb2 lr=0.1', not the run being resumed ('nb.ipynb lr=0.2')\"}]}",
   KG_RUN_RESUME_FRESH, -1, "no checkpoint of run 'nb.ipynb lr=0.2' in /c: starting fresh",
   ""},
  /* This notebook with other parameters (an archive, or a set): refused. */
  {"{\"status\":\"none\",\"skipped\":[{\"archive\":\"/c/a\",\"reason\":"
   "\"run 'nb.ipynb lr=0.1', not the run being resumed ('nb.ipynb lr=0.2')\"}]}",
   KG_RUN_RESUME_OTHER, -1,
   "--resume: the checkpoints of nb.ipynb in /c are of run 'nb.ipynb lr=0.1', not of this "
   "run 'nb.ipynb lr=0.2' (other parameters); give the same parameters to continue that "
   "run, or leave out --resume to start this one fresh", ""},
  {"{\"status\":\"none\",\"skipped\":[{\"archive\":\"/c/s\",\"reason\":"
   "\"set of run 'nb.ipynb', not of the run being resumed ('nb.ipynb lr=0.2')\"}]}",
   KG_RUN_RESUME_OTHER, -1,
   "--resume: the checkpoints of nb.ipynb in /c are of run 'nb.ipynb', not of this "
   "run 'nb.ipynb lr=0.2' (other parameters); give the same parameters to continue that "
   "run, or leave out --resume to start this one fresh", ""},
  /* Failures and nonsense: refused, naming why. */
  {"{\"status\":\"failed\",\"error\":\"disk read error\"}", KG_RUN_RESUME_FAILED, -1,
   "--resume: no checkpoint could be chosen in /c: disk read error", ""},
  {"{\"status\":\"restored\"}", KG_RUN_RESUME_FAILED, -1,
   "--resume: no checkpoint could be chosen in /c: no archive named", ""},
  {"not json", KG_RUN_RESUME_FAILED, -1,
   "--resume: no checkpoint could be chosen in /c: `kguard ckpt resume-prepare` gave no "
   "result", ""},
  {NULL, KG_RUN_RESUME_FAILED, -1,
   "--resume: no checkpoint could be chosen in /c: `kguard ckpt resume-prepare` gave no "
   "result", ""},
};

KG_TEST(choice_table)
{
  for (size_t i = 0; i < sizeof s_choices / sizeof s_choices[0]; i++) {
    const s_choice_row_t *r = &s_choices[i];
    kg_run_resume_choice_t c;
    kg_run_resume_decide(RUN, "/work/nb.ipynb", "/c", r->output, &c);
    KG_CHECK(c.kind == r->kind);
    KG_CHECK(c.step == r->step);
    KG_CHECK_STR(c.line, r->line);
    KG_CHECK_STR(c.skipped, r->skipped);
  }
}

KG_TEST_MAIN(KG_CASE(id_table), KG_CASE(id_long), KG_CASE(choice_table))
