/*  kg_ckpt_restore (with kg_ckpt_seal and kg_ckpt_verify): a sealed archive verified
    and restored into a new folder, on a small temporary directory. */
#include "kg_ckpt_restore.h"
#include "kg_ckpt_verify.h"
#include "ckpt_fixture.h"

KG_TEST(seal_verify_restore)
{
  s_setup();
  char path[PATH_MAX], zpath[PATH_MAX];
  KG_CHECK_INT(s_seal(12, 0, false, path), 0);
  KG_CHECK_INT(s_seal(13, 0, true, zpath), 0);
  kg_ckpt_report_t r;
  KG_CHECK_INT(kg_ckpt_verify(path, s_keys, 0, NULL, &r), 0);
  KG_CHECK(r.authenticated);
  KG_CHECK_INT(r.manifest->step, 12);
  KG_CHECK_INT(r.manifest->count, 2);
  KG_CHECK_STR(r.manifest->run, "unit");
  kg_ckpt_report_clear(&r);
  KG_CHECK_INT(kg_ckpt_verify(zpath, s_keys, 0, NULL, &r), 0);
  KG_CHECK(r.manifest->zstd);
  kg_ckpt_report_clear(&r);
  /* Without the key: unsigned, never valid. */
  KG_CHECK_INT(kg_ckpt_verify(path, NULL, 0, NULL, &r), KG_ECKPT_UNSIGNED);
  kg_ckpt_report_clear(&r);

  char dest[PATH_MAX + 32], f[PATH_MAX + 64];
  snprintf(dest, sizeof dest, "%s/new/out", s_root);
  /* A missing parent is a mistake, never created (as tar -C and cp). */
  KG_CHECK_INT(kg_ckpt_restore(zpath, dest, s_keys, NULL, NULL, &r), KG_EUSAGE);
  KG_CHECK(strstr(r.reason, "does not exist") != NULL);
  kg_ckpt_report_clear(&r);
  snprintf(f, sizeof f, "%s/new", s_root);
  KG_CHECK_INT(access(f, F_OK), -1);
  KG_CHECK_INT(mkdir(f, 0700), 0);
  KG_CHECK_INT(kg_ckpt_restore(zpath, dest, s_keys, NULL, NULL, &r), 0);
  kg_ckpt_report_clear(&r);
  snprintf(f, sizeof f, "%s/d/extra.bin", dest);
  struct stat st;
  KG_CHECK_INT(stat(f, &st), 0);
  KG_CHECK_INT(st.st_size, 777);
  /* Destination exists: refused, untouched. */
  KG_CHECK_INT(kg_ckpt_restore(path, dest, s_keys, NULL, NULL, &r), KG_EEXISTS);
  kg_ckpt_report_clear(&r);
  s_teardown();
}

KG_TEST_MAIN(KG_CASE(seal_verify_restore))
