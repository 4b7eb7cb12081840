/*  kg_ckpt_list (with kg_ckpt_quarantine): the archives of a folder, the latest
    before a time, and quarantining those after it. */
#include "kg_ckpt_list.h"
#include "kg_ckpt_quarantine.h"
#include "ckpt_fixture.h"

KG_TEST(list_latest_before_and_quarantine)
{
  s_setup();
  char p1[PATH_MAX], p2[PATH_MAX], p3[PATH_MAX];
  KG_CHECK_INT(s_seal(1, 1000000, false, p1), 0);
  KG_CHECK_INT(s_seal(2, 2000000, false, p2), 0);
  KG_CHECK_INT(s_seal(3, 3000000, false, p3), 0);
  char ck[PATH_MAX + 8];
  snprintf(ck, sizeof ck, "%s/ck", s_root);
  /* A leftover of a crashed seal is listed but never chosen. */
  char left[PATH_MAX + 64];
  snprintf(left, sizeof left, "%s/.step-0000000009-x.kgckpt.tar.tmp-abcdef", ck);
  s_write(left, 100, 3);
  int rc;
  kg_ckpt_list_t *l = kg_ckpt_list_scan(ck, s_keys, false, &rc);
  KG_CHECK(l != NULL);
  KG_CHECK_INT(l->count, 4);
  /* The leftover's mtime is now, later than the 1970 seal times. */
  KG_CHECK(l->entries[0].leftover);
  KG_CHECK_INT(l->entries[1].step, 3);
  KG_CHECK_INT(l->entries[2].step, 2);
  KG_CHECK_INT(l->entries[3].step, 1);
  size_t i = 99;
  KG_CHECK_INT(kg_ckpt_list_latest(l, s_keys, INT64_MAX, &i), 0);
  KG_CHECK_STR(l->entries[i].path, p3);
  KG_CHECK_INT(kg_ckpt_list_latest(l, s_keys, 3000000, &i), 0);
  KG_CHECK_STR(l->entries[i].path, p2);
  KG_CHECK_INT(kg_ckpt_list_latest(l, s_keys, 1000000, &i), KG_ECKPT_NONE);
  KG_CHECK_INT(kg_ckpt_quarantine(l, "../bad", 0, NULL, NULL, 0), KG_EUSAGE);
  KG_CHECK_INT(kg_ckpt_quarantine(l, "inc", 2000000, NULL, NULL, 0), 2);
  KG_CHECK(!l->entries[0].moved_to); /* leftovers stay */
  KG_CHECK(l->entries[1].moved_to && l->entries[2].moved_to && !l->entries[3].moved_to);
  kg_ckpt_list_destroy(&l);
  l = kg_ckpt_list_scan(ck, s_keys, true, &rc);
  KG_CHECK_INT(l->count, 2); /* p1 and the leftover */
  KG_CHECK_INT(kg_ckpt_list_latest(l, s_keys, INT64_MAX, &i), 0);
  KG_CHECK_STR(l->entries[i].path, p1);
  kg_ckpt_list_destroy(&l);
  char q[PATH_MAX + 64];
  snprintf(q, sizeof q, "%s/quarantine/inc/%s", ck, strrchr(p3, '/') + 1);
  KG_CHECK_INT(access(q, F_OK), 0);
  s_teardown();
}

KG_TEST_MAIN(KG_CASE(list_latest_before_and_quarantine))
