/*  kg_incident_slot and kg_notice_due: what a fault leaves for later (the
    current incident and where it is written, one set aside for an advice;
    the notice due at the next READY, why kguard is DOWN). Files go to a
    temporary directory; no sockets, no kernel. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_error.h"
#include "kg_incident_slot.h"
#include "kg_notice_due.h"
#include "kg_test.h"

KG_TEST(incident_slot_open_write_aside)
{
  char dir[] = "/tmp/kg-test-incident-slot-XXXXXX";
  KG_CHECK(mkdtemp(dir) != NULL);
  kg_incident_slot_t *s = kg_incident_slot_new();
  KG_CHECK(s != NULL);
  KG_CHECK(kg_incident_slot_current(s) == NULL && kg_incident_slot_id(s) == NULL);
  KG_CHECK(kg_incident_slot_path(s) == NULL);
  KG_CHECK_INT(kg_incident_slot_write(s, dir), KG_ENOTFOUND);

  /* a sticky incident, written: its path is remembered */
  kg_incident_t *sticky = kg_incident_slot_open(s, 1700000000000);
  KG_CHECK(sticky != NULL && kg_incident_slot_current(s) == sticky);
  char *sticky_id = strdup(kg_incident_slot_id(s));
  KG_CHECK(sticky_id && *sticky_id);
  KG_CHECK(kg_incident_slot_path(s) == NULL);   /* not written yet */
  KG_CHECK_INT(kg_incident_slot_write(s, dir), 0);
  char *sticky_path = strdup(kg_incident_slot_path(s));
  struct stat st;
  KG_CHECK(sticky_path && stat(sticky_path, &st) == 0);
  KG_CHECK(strstr(sticky_path, sticky_id) != NULL);

  /* an advice: the sticky one is set aside, the advice's opened and
     written, then the sticky one comes back with its path */
  kg_incident_slot_set_aside(s);
  KG_CHECK(kg_incident_slot_current(s) == NULL && kg_incident_slot_path(s) == NULL);
  KG_CHECK(kg_incident_slot_open(s, 1700000001000) != NULL);
  KG_CHECK(strcmp(kg_incident_slot_id(s), sticky_id) != 0);
  KG_CHECK_INT(kg_incident_slot_write(s, dir), 0);
  char *advice_path = strdup(kg_incident_slot_path(s));
  KG_CHECK(advice_path && strcmp(advice_path, sticky_path) != 0);
  kg_incident_slot_put_back(s);
  KG_CHECK(kg_incident_slot_current(s) == sticky);
  KG_CHECK_STR(kg_incident_slot_id(s), sticky_id);
  KG_CHECK_STR(kg_incident_slot_path(s), sticky_path);

  /* a write that fails keeps the old path */
  char missing[sizeof dir + 16];
  snprintf(missing, sizeof missing, "%s/missing", dir);
  KG_CHECK(kg_incident_slot_write(s, missing) < 0);
  KG_CHECK_STR(kg_incident_slot_path(s), sticky_path);

  /* a new incident replaces the current one and forgets its path */
  KG_CHECK(kg_incident_slot_open(s, 1700000002000) != NULL);
  KG_CHECK(kg_incident_slot_path(s) == NULL);
  KG_CHECK(strcmp(kg_incident_slot_id(s), sticky_id) != 0);
  /* put back with nothing set aside: none is current */
  kg_incident_slot_put_back(s);
  KG_CHECK(kg_incident_slot_current(s) == NULL);
  /* one level: a second set-aside replaces the first */
  KG_CHECK(kg_incident_slot_open(s, 1700000003000) != NULL);
  kg_incident_slot_set_aside(s);
  KG_CHECK(kg_incident_slot_open(s, 1700000004000) != NULL);
  kg_incident_slot_set_aside(s);
  kg_incident_slot_destroy(&s);   /* frees what is held and set aside */
  KG_CHECK(s == NULL);
  kg_incident_slot_destroy(NULL);

  unlink(sticky_path);
  unlink(advice_path);
  rmdir(dir);
  free(sticky_id);
  free(sticky_path);
  free(advice_path);
}

KG_TEST(notice_due_after_ready)
{
  kg_notice_due_t *d = kg_notice_due_new();
  KG_CHECK(d != NULL);
  KG_CHECK_INT(kg_notice_due_kind(d), KG_DUE_NONE);
  KG_CHECK(kg_notice_due_parent(d) == NULL);
  /* a sticky restart: no parent of its own (the failing request's) */
  KG_CHECK_INT(kg_notice_due_set(d, KG_DUE_STICKY, NULL), 0);
  KG_CHECK_INT(kg_notice_due_kind(d), KG_DUE_STICKY);
  KG_CHECK(kg_notice_due_parent(d) == NULL);
  /* a diagnostic restart replaces it, parented to the asking cell (copied) */
  cJSON *header = cJSON_CreateObject();
  cJSON_AddStringToObject(header, "msg_id", "restart-cell");
  KG_CHECK_INT(kg_notice_due_set(d, KG_DUE_DIAGNOSTIC, header), 0);
  cJSON_Delete(header);
  KG_CHECK_INT(kg_notice_due_kind(d), KG_DUE_DIAGNOSTIC);
  KG_CHECK_STR(cJSON_GetObjectItemCaseSensitive(kg_notice_due_parent(d), "msg_id")->valuestring,
               "restart-cell");
  /* said, or DOWN instead: nothing due */
  kg_notice_due_clear(d);
  KG_CHECK_INT(kg_notice_due_kind(d), KG_DUE_NONE);
  KG_CHECK(kg_notice_due_parent(d) == NULL);
  KG_CHECK_INT(kg_notice_due_set(d, KG_DUE_STICKY, NULL), 0);
  KG_CHECK_INT(kg_notice_due_set(d, KG_DUE_NONE, NULL), 0);
  KG_CHECK_INT(kg_notice_due_kind(d), KG_DUE_NONE);
  kg_notice_due_destroy(&d);
  KG_CHECK(d == NULL);
  kg_notice_due_destroy(NULL);
}

KG_TEST(notice_due_down_reason_table)
{
  static const char by_hand[] = " Run `%kguard restart` in a cell (or `kguard restart -f "
                                "CONNECTION_FILE`) to start a fresh kernel.";
  kg_notice_due_t *d = kg_notice_due_new();
  KG_CHECK(d != NULL);
  KG_CHECK(kg_notice_due_down_reason(d) == NULL);
  /* as given */
  KG_CHECK_INT(kg_notice_due_set_down(d, "unable to prepare the kernel's connection"), 0);
  KG_CHECK_STR(kg_notice_due_down_reason(d), "unable to prepare the kernel's connection");
  KG_CHECK_INT(kg_notice_due_set_down(d, NULL), 0);
  KG_CHECK(kg_notice_due_down_reason(d) == NULL);
  /* restarts stopped: the reason, then how to start one by hand */
  static const char *const reasons[] = {"3 restarts in 60 s.", "", NULL};
  for (size_t n = 0; n < sizeof reasons / sizeof reasons[0]; n++) {
    KG_CHECK_INT(kg_notice_due_set_gave_up(d, reasons[n]), 0);
    char want[256];
    snprintf(want, sizeof want, "%s%s", reasons[n] ? reasons[n] : "", by_hand);
    KG_CHECK_STR(kg_notice_due_down_reason(d), want);
  }
  /* no length limit: a reason far over any buffer kguard once had */
  char *long_reason = malloc(5001);
  KG_CHECK(long_reason != NULL);
  memset(long_reason, 'r', 5000);
  long_reason[5000] = '\0';
  KG_CHECK_INT(kg_notice_due_set_gave_up(d, long_reason), 0);
  KG_CHECK_INT((int) strlen(kg_notice_due_down_reason(d)), (int) (5000 + strlen(by_hand)));
  free(long_reason);
  kg_notice_due_destroy(&d);
}

KG_TEST_MAIN(KG_CASE(incident_slot_open_write_aside), KG_CASE(notice_due_after_ready),
             KG_CASE(notice_due_down_reason_table))
