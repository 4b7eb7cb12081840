/*  kg_ckpt_persist: a sealed archive copied into a checkpoint directory
    verifies there; a second copy of the same name gets a numbered name; a
    copy that cannot be written leaves nothing behind. Keys and payload from
    ckpt_fixture.h. */
#include "ckpt_fixture.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>

#include "kg_ckpt_persist.h"
#include "kg_ckpt_verify.h"

/*  The number of entries in dir, "." and ".." aside. */
static int
s_count(const char *dir)
{
  DIR *d = opendir(dir);
  if (!d)
    return -1;
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)))
    n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
  closedir(d);
  return n;
}

KG_TEST(persist_copies_verbatim_and_numbers_a_collision)
{
  s_setup();
  char archive[PATH_MAX], disk[PATH_MAX + 8], got[PATH_MAX], got2[PATH_MAX], why[1024];
  KG_CHECK_INT(s_seal(7, 1700000007000, false, archive), 0);
  snprintf(disk, sizeof disk, "%s/disk", s_root);
  KG_CHECK_INT(kg_ckpt_persist(archive, disk, got, sizeof got, why, sizeof why), 0);
  KG_CHECK_STR(strrchr(got, '/'), strrchr(archive, '/'));
  kg_ckpt_report_t r;
  KG_CHECK_INT(kg_ckpt_verify(got, s_keys, 0, NULL, &r), 0);
  KG_CHECK_INT(r.manifest->step, 7);
  kg_ckpt_report_clear(&r);
  KG_CHECK_INT(kg_ckpt_persist(archive, disk, got2, sizeof got2, why, sizeof why), 0);
  KG_CHECK(strstr(got2, "-2" KG_CKPT_SUFFIX) != NULL);
  KG_CHECK_INT(kg_ckpt_verify(got2, s_keys, 0, NULL, &r), 0);
  kg_ckpt_report_clear(&r);
  KG_CHECK_INT(s_count(disk), 2);   /* no temporary left */
  kg_keyring_destroy(&s_keys);
  s_teardown();
}

/* The copy fails part way (a file size limit, as a full disk would): the
   temporary is removed and the error says where. */
KG_TEST(persist_failure_leaves_nothing)
{
  s_setup();
  char archive[PATH_MAX], disk[PATH_MAX + 8], got[PATH_MAX] = "", why[1024] = "";
  KG_CHECK_INT(s_seal(7, 1700000007000, false, archive), 0);
  snprintf(disk, sizeof disk, "%s/disk", s_root);
  struct rlimit old, small = {.rlim_cur = 4096};
  KG_CHECK_INT(getrlimit(RLIMIT_FSIZE, &old), 0);
  small.rlim_max = old.rlim_max;
  signal(SIGXFSZ, SIG_IGN);
  KG_CHECK_INT(setrlimit(RLIMIT_FSIZE, &small), 0);
  int rc = kg_ckpt_persist(archive, disk, got, sizeof got, why, sizeof why);
  KG_CHECK_INT(setrlimit(RLIMIT_FSIZE, &old), 0);
  KG_CHECK_INT(rc, -EFBIG);
  KG_CHECK(strstr(why, disk) != NULL);
  KG_CHECK_INT(s_count(disk), 0);
  /* a destination that is not a directory: nothing made */
  char file[PATH_MAX + 16];
  snprintf(file, sizeof file, "%s/src/state.pt", s_root);
  KG_CHECK(kg_ckpt_persist(archive, file, got, sizeof got, why, sizeof why) < 0);
  kg_keyring_destroy(&s_keys);
  s_teardown();
}

KG_TEST_MAIN(KG_CASE(persist_copies_verbatim_and_numbers_a_collision),
             KG_CASE(persist_failure_leaves_nothing))
