/*  kg_ckpt_seal_names: the final names of seals, on a small temporary directory. */
#include "kg_ckpt_verify.h"
#include "ckpt_fixture.h"

/* Seals of one step in the same millisecond used to collide on the final
   name (the second failed as a usage error); now each gets its own. */
KG_TEST(same_millisecond_seals_get_unique_names)
{
  s_setup();
  char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX];
  KG_CHECK_INT(s_seal(7, 5000000, false, a), 0);
  KG_CHECK_INT(s_seal(7, 5000000, false, b), 0);
  KG_CHECK_INT(s_seal(7, 5000000, false, c), 0);
  KG_CHECK(strcmp(a, b) != 0 && strcmp(b, c) != 0 && strcmp(a, c) != 0);
  KG_CHECK(strstr(b, "-2.kgckpt.tar") != NULL);
  KG_CHECK(strstr(c, "-3.kgckpt.tar") != NULL);
  kg_ckpt_report_t r;
  const char *all[] = {a, b, c};
  for (int i = 0; i < 3; i++) {
    KG_CHECK_INT(kg_ckpt_verify(all[i], s_keys, 0, NULL, &r), 0);
    kg_ckpt_report_clear(&r);
  }
  s_teardown();
}

KG_TEST_MAIN(KG_CASE(same_millisecond_seals_get_unique_names))
