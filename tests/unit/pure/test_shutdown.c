/*  kg_shutdown: running and the exit code, and the frontend's
    shutdown_request (its id of any length, restart) by a table. */
#include <stdlib.h>
#include <string.h>

#include "kg_shutdown.h"
#include "kg_test.h"

KG_TEST(shutdown_running_and_exit_code)
{
  kg_shutdown_t *s = kg_shutdown_new();
  KG_CHECK(s != NULL);
  KG_CHECK(!kg_shutdown_running(s));
  KG_CHECK_INT(kg_shutdown_exit_code(s), 0);
  kg_shutdown_begin(s);
  KG_CHECK(kg_shutdown_running(s));
  KG_CHECK_INT(kg_shutdown_exit_code(s), 0);
  kg_shutdown_fail(s, 70);
  KG_CHECK(!kg_shutdown_running(s));
  KG_CHECK_INT(kg_shutdown_exit_code(s), 70);
  kg_shutdown_destroy(&s);
  KG_CHECK(s == NULL);
  kg_shutdown_destroy(NULL);
}

KG_TEST(shutdown_request_table)
{
  /* an id far longer than any fixed buffer kguard ever had */
  char *long_id = malloc(70001);
  KG_CHECK(long_id != NULL);
  memset(long_id, 'x', 70000);
  long_id[70000] = '\0';
  const struct {
    const char *id;             /*  kg_shutdown_requested's (NULL: none)    */
    bool restart;
    const char *other;          /*  an id that is not it                     */
  } rows[] = {
      {"a1b2", false, "a1b"},
      {"a1b2", true, "a1b2c"},
      {"", true, "x"},
      {long_id, true, "xxxx"},
      {NULL, true, "a1b2"},
  };
  for (size_t n = 0; n < sizeof rows / sizeof rows[0]; n++) {
    kg_shutdown_t *s = kg_shutdown_new();
    KG_CHECK(s != NULL);
    KG_CHECK(kg_shutdown_id(s) == NULL && !kg_shutdown_restart(s));
    KG_CHECK(!kg_shutdown_is_request(s, "a1b2") && !kg_shutdown_is_request(s, NULL));
    /* an earlier request is replaced */
    KG_CHECK_INT(kg_shutdown_requested(s, "earlier", !rows[n].restart), 0);
    KG_CHECK_INT(kg_shutdown_requested(s, rows[n].id, rows[n].restart), 0);
    KG_CHECK(kg_shutdown_restart(s) == rows[n].restart);
    KG_CHECK(!kg_shutdown_is_request(s, "earlier"));
    KG_CHECK(!kg_shutdown_is_request(s, rows[n].other));
    KG_CHECK(!kg_shutdown_is_request(s, NULL));
    if (rows[n].id) {
      KG_CHECK_STR(kg_shutdown_id(s), rows[n].id);
      KG_CHECK(kg_shutdown_id(s) != rows[n].id);   /* a copy */
      KG_CHECK(kg_shutdown_is_request(s, rows[n].id));
    } else
      KG_CHECK(kg_shutdown_id(s) == NULL);
    kg_shutdown_destroy(&s);
  }
  free(long_id);
}

KG_TEST_MAIN(KG_CASE(shutdown_running_and_exit_code), KG_CASE(shutdown_request_table))
