/*  kg_ckpt_gc in a temporary directory: a seal's temporary and a
    kguard.save staging directory whose writer is gone are removed (their
    bytes counted); one whose writer still holds its lock is left and
    counted busy; archives and other files are never touched; a zstd copy
    goes when its incident's fault time is before the limit (or it has no
    marker), and stays otherwise. */
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_ckpt_gc.h"
#include "kg_ckpt_resume.h"
#include "kg_ckpt_retain.h"
#include "kg_ckpt_seal.h"
#include "kg_ckpt_util.h"
#include "kg_test.h"

static char s_dir[64];

static void
s_file(const char *name, const char *text)
{
  char path[256];
  snprintf(path, sizeof path, "%s/%s", s_dir, name);
  FILE *f = fopen(path, "w");
  KG_CHECK(f != NULL);
  if (f) {
    fputs(text, f);
    fclose(f);
  }
}

static void
s_mkdir(const char *name)
{
  char path[256];
  snprintf(path, sizeof path, "%s/%s", s_dir, name);
  KG_CHECK_INT(mkdir(path, 0700), 0);
}

static bool
s_exists(const char *name)
{
  char path[256];
  struct stat st;
  snprintf(path, sizeof path, "%s/%s", s_dir, name);
  return lstat(path, &st) == 0;
}

static void
s_fresh(void)
{
  if (s_dir[0])
    kg_ckpt_remove_tree_at(AT_FDCWD, s_dir);
  snprintf(s_dir, sizeof s_dir, "/tmp/kg-gc-XXXXXX");
  KG_CHECK(mkdtemp(s_dir) != NULL);
}

KG_TEST(gc_removes_what_no_writer_holds)
{
  s_fresh();
  const char *tmp = ".ckpt-0000000005.kgckpt" KG_CKPT_TMP_MARK "a1b2c3";
  const char *save_gone = KG_CKPT_SAVE_PREFIX "gone12";
  const char *save_busy = KG_CKPT_SAVE_PREFIX "busy34";
  s_file(tmp, "12345");             /* 5 bytes of an interrupted seal */
  s_mkdir(save_gone);
  s_mkdir(save_busy);
  s_file("ckpt-0000000004.kgckpt", "an archive");
  s_file("notes.txt", "the user's");
  /* a writer still at work on save_busy: its lock held on another fd */
  char busy[256];
  snprintf(busy, sizeof busy, "%s/%s", s_dir, save_busy);
  int lockfd = open(busy, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  KG_CHECK(lockfd >= 0);
  KG_CHECK_INT(kg_ckpt_writer_lock(lockfd), 0);

  kg_ckpt_gc_stats_t st;
  KG_CHECK_INT(kg_ckpt_gc(s_dir, INT64_MIN, &st), 0);
  KG_CHECK(!s_exists(tmp));
  KG_CHECK(!s_exists(save_gone));
  KG_CHECK(s_exists(save_busy));
  KG_CHECK(s_exists("ckpt-0000000004.kgckpt"));
  KG_CHECK(s_exists("notes.txt"));
  KG_CHECK_INT(st.removed, 2);
  KG_CHECK_INT(st.busy, 1);
  KG_CHECK_INT(st.bytes, 5);

  /* the writer done (its lock dropped): the next gc takes it */
  close(lockfd);
  KG_CHECK_INT(kg_ckpt_gc(s_dir, INT64_MIN, &st), 0);
  KG_CHECK(!s_exists(save_busy));
  KG_CHECK_INT(st.removed, 1);
  KG_CHECK_INT(st.busy, 0);
  /* a missing directory is empty */
  KG_CHECK_INT(kg_ckpt_gc("/nonexistent-kguard-test/ckpt", INT64_MAX, NULL), 0);
}

/*  Copies by their incident's fault time (marker ".incident-ID") against
    the limit given. */
KG_TEST(gc_copies_by_fault_time_table)
{
  static const struct {
    const char *marker;      /*  fault time in the marker; NULL: no marker */
    int64_t limit;
    bool removed;
  } rows[] = {
    {"1000", 2000, true},            /* a checkpoint sealed after the fault */
    {"3000", 2000, false},           /* the fault came after: still needed  */
    {"1000", INT64_MIN, false},      /* none                                */
    {"3000", INT64_MAX, true},       /* all                                 */
    {NULL, 2000, true},              /* no marker: nothing says it is needed */
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    s_fresh();
    const char *copy = KG_CKPT_COPY_PREFIX "inc7";
    const char *restoring = "." KG_CKPT_COPY_PREFIX "inc7.restore-x1y2z3";
    s_mkdir(copy);
    s_mkdir(restoring);
    if (rows[i].marker)
      s_file(".incident-inc7", rows[i].marker);
    kg_ckpt_gc_stats_t st;
    KG_CHECK_INT(kg_ckpt_gc(s_dir, rows[i].limit, &st), 0);
    if (s_exists(copy) == rows[i].removed)
      fprintf(stderr, "row %zu: copy %s\n", i, rows[i].removed ? "kept" : "removed");
    KG_CHECK(s_exists(copy) != rows[i].removed);
    KG_CHECK(s_exists(restoring) != rows[i].removed);
    KG_CHECK_INT(st.removed, rows[i].removed ? 2 : 0);
  }
  kg_ckpt_remove_tree_at(AT_FDCWD, s_dir);
}

KG_TEST_MAIN(KG_CASE(gc_removes_what_no_writer_holds), KG_CASE(gc_copies_by_fault_time_table))
