/*  kg_ckpt_seal_names: the final names of seals, on a small temporary directory. */
#include "kg_ckpt_verify.h"
#include "ckpt_fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "kg_ckpt_seal_names.h"
#include "kg_ckpt_util.h"

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

/*  A gc between the temporary's creation and its lock: it opens the fresh
    file, takes its writer lock and removes it, as kg_ckpt_gc does, so the
    seal's own lock is refused. The first time only. */
static int
s_gc_first(int fd, void *arg)
{
  int *calls = arg;
  if ((*calls)++ == 0) {
    char self[64], path[PATH_MAX];
    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(self, path, sizeof path - 1);
    if (n <= 0)
      return -EIO;
    path[n] = '\0';
    int gc = open(path, O_RDONLY | O_CLOEXEC);
    if (gc < 0 || flock(gc, LOCK_EX | LOCK_NB) < 0)
      return -EIO;
    unlink(path);
    int rc = kg_ckpt_writer_lock(fd);   /* refused: the gc holds it */
    close(gc);
    return rc;
  }
  return kg_ckpt_writer_lock(fd);
}

KG_TEST(a_gc_holding_the_fresh_temporary_makes_the_seal_take_a_new_name)
{
  s_setup();
  char tmpl[PATH_MAX + 32];
  snprintf(tmpl, sizeof tmpl, "%s/.seal-test-XXXXXX", s_root);
  int calls = 0, fd = -1;
  KG_CHECK_INT(kg_ckpt_seal_tmp_create_locking(tmpl, &fd, s_gc_first, &calls), 0);
  KG_CHECK_INT(calls, 2);
  KG_CHECK(fd >= 0 && access(tmpl, F_OK) == 0);
  if (fd >= 0)
    close(fd);
  s_teardown();
}

KG_TEST_MAIN(KG_CASE(same_millisecond_seals_get_unique_names),
             KG_CASE(a_gc_holding_the_fresh_temporary_makes_the_seal_take_a_new_name))
