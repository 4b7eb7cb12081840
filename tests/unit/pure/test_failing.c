/*  kg_failing: which request failed, by a table of what the guard learns
    (set, replied, the kernel gone), without sockets or a kernel. */
#include <stdio.h>
#include <string.h>

#include "kg_failing.h"
#include "kg_test.h"

/*  Each row: a request named (or not), then events; what is known after. */
KG_TEST(failing_table)
{
  static const struct {
    const char *id, *code;      /*  kg_failing_set's (NULL: not known)      */
    bool header, guessed;
    const char *events;         /*  r = its reply relayed, g = kernel gone  */
    const char *id_after;       /*  kg_failing_id afterwards                */
    bool replied_after, header_after;
  } rows[] = {
      {"m1", "x = 1/0", true, false, "", "m1", false, true},
      {"m1", "x = 1/0", true, false, "r", "m1", true, true},
      {"m1", NULL, false, true, "r", "m1", true, false},
      {"m1", "c", true, false, "rg", NULL, false, true},   /* header kept for the notice */
      {"m1", "c", true, false, "g", NULL, false, true},
      {NULL, NULL, false, true, "", NULL, false, false},    /* nothing known */
      {NULL, NULL, false, true, "r", NULL, true, false},
  };
  for (size_t n = 0; n < sizeof rows / sizeof rows[0]; n++) {
    kg_failing_t *f = kg_failing_new();
    KG_CHECK(f != NULL);
    KG_CHECK(kg_failing_id(f) == NULL && kg_failing_code(f) == NULL);
    KG_CHECK(!kg_failing_is(f, "m1") && !kg_failing_is(f, NULL));
    cJSON *header = NULL;
    if (rows[n].header) {
      header = cJSON_CreateObject();
      cJSON_AddStringToObject(header, "msg_id", rows[n].id);
    }
    KG_CHECK_INT(kg_failing_set(f, rows[n].id, rows[n].code, header, rows[n].guessed), 0);
    cJSON_Delete(header);   /* copied */
    KG_CHECK(kg_failing_guessed(f) == rows[n].guessed);
    if (rows[n].code)
      KG_CHECK_STR(kg_failing_code(f), rows[n].code);
    else
      KG_CHECK(kg_failing_code(f) == NULL);
    for (const char *e = rows[n].events; *e; e++)
      *e == 'r' ? kg_failing_replied(f) : kg_failing_kernel_gone(f);
    if (rows[n].id_after) {
      KG_CHECK_STR(kg_failing_id(f), rows[n].id_after);
      KG_CHECK(kg_failing_is(f, rows[n].id_after));
    } else
      KG_CHECK(kg_failing_id(f) == NULL);
    KG_CHECK(!kg_failing_is(f, "m2"));
    KG_CHECK(!kg_failing_is(f, NULL));
    KG_CHECK(kg_failing_was_replied(f) == rows[n].replied_after);
    KG_CHECK((kg_failing_header(f) != NULL) == rows[n].header_after);
    if (rows[n].header_after)
      KG_CHECK_STR(cJSON_GetObjectItemCaseSensitive(kg_failing_header(f), "msg_id")->valuestring,
                   rows[n].id);
    /* a new failing request replaces everything, its reply not yet relayed */
    KG_CHECK_INT(kg_failing_set(f, "m2", NULL, NULL, false), 0);
    KG_CHECK(kg_failing_is(f, "m2") && !kg_failing_is(f, "m1"));
    KG_CHECK(!kg_failing_was_replied(f));
    KG_CHECK(kg_failing_header(f) == NULL && kg_failing_code(f) == NULL);
    kg_failing_destroy(&f);
    KG_CHECK(f == NULL);
  }
  kg_failing_destroy(NULL);
}

KG_TEST_MAIN(KG_CASE(failing_table))
