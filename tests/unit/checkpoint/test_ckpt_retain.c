/*  kg_ckpt_retain: the retention plan, by table; the removal, which keeps
    an archive whose shared lock a reader holds (kg_ckpt_verify, restore,
    kguard.archive) and refuses a link. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_ckpt_retain.h"
#include "kg_test.h"
#include "plan_check.h"

/* Retention plan by table: items newest first as (authenticated, verified,
   named, step, time); "K" kept, "R" removed. */
KG_TEST(retain_plan_table)
{
  struct {
    const char *what;
    int keep;
    int64_t every;
    int64_t open[2];
    size_t nopen;
    size_t n;
    kg_ckpt_retain_item_t it[6];
    const char *want;
  } t[] = {
    {"nothing verified: nothing removed", 1, 0, {0}, 0, 3,
     {{true, false, false, 3, 300}, {true, false, false, 2, 200}, {true, false, false, 1, 100}},
     "KKK"},
    {"keep 2 from the newest valid", 2, 0, {0}, 0, 4,
     {{true, true, false, 4, 400}, {true, false, false, 3, 300}, {true, false, false, 2, 200},
      {true, false, false, 1, 100}},
     "KKRR"},
    {"newer than V (unverified or corrupt) always kept", 1, 0, {0}, 0, 4,
     {{true, false, false, 4, 400}, {true, true, false, 3, 300}, {true, false, false, 2, 200},
      {true, false, false, 1, 100}},
     "KKRR"},
    {"keep-every 10", 1, 10, {0}, 0, 4,
     {{true, true, false, 31, 400}, {true, false, false, 30, 300}, {true, false, false, 20, 200},
      {true, false, false, 15, 100}},
     "KKKR"},
    {"open incident keeps the newest before T", 1, 0, {250}, 1, 4,
     {{true, true, false, 4, 400}, {true, false, false, 3, 300}, {true, false, false, 2, 200},
      {true, false, false, 1, 100}},
     "KRKR"},
    {"a marker's archive is kept", 1, 0, {0}, 0, 3,
     {{true, true, false, 3, 300}, {true, false, false, 2, 200}, {true, false, true, 1, 100}},
     "KRK"},
    {"unauthenticated never removed, not counted", 2, 0, {0}, 0, 4,
     {{true, true, false, 4, 400}, {false, false, false, -1, 350}, {true, false, false, 3, 300},
      {true, false, false, 2, 200}},
     "KKKR"},
  };
  for (size_t c = 0; c < sizeof t / sizeof *t; c++) {
    bool rm[6];
    size_t n = kg_ckpt_retain_plan(t[c].it, t[c].n, t[c].keep, t[c].every, t[c].open,
                                   t[c].nopen, rm);
    kg_check_plan(t[c].what, rm, t[c].n, n, t[c].want);
  }
}

static char s_dir[] = "/tmp/kg-retain-XXXXXX";

static void
s_file(char *path, size_t size, const char *name)
{
  snprintf(path, size, "%s/%s", s_dir, name);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  KG_CHECK(fd >= 0);
  KG_CHECK(write(fd, "x", 1) == 1);
  close(fd);
}

KG_TEST(remove_keeps_an_archive_being_read)
{
  KG_CHECK(mkdtemp(s_dir) != NULL);
  char path[4200];
  s_file(path, sizeof path, "step-0000000001-20250101T000000000Z.kgckpt.tar");
  struct stat st;
  /* Table: the reader's lock at removal time, and what removal answers. */
  static const struct {
    int lock;      /* 0: no reader; else the flock the reader holds */
    int want;
    bool stays;
  } rows[] = {
    {LOCK_SH, -EBUSY, true},   /* a reader in progress */
    {LOCK_EX, -EBUSY, true},   /* any holder, even another pruner */
    {0, 0, false},             /* nobody reads: removed */
    {0, -ENOENT, false},       /* already gone */
  };
  for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
    int reader = -1;
    if (rows[i].lock) {
      reader = open(path, O_RDONLY | O_CLOEXEC);
      KG_CHECK(reader >= 0);
      KG_CHECK(flock(reader, rows[i].lock) == 0);
    }
    KG_CHECK_INT(kg_ckpt_retain_remove(path), rows[i].want);
    KG_CHECK_INT(stat(path, &st) == 0, rows[i].stays);
    if (reader >= 0)
      close(reader);
  }
  rmdir(s_dir);
}

KG_TEST(remove_refuses_a_link)
{
  memcpy(s_dir + strlen(s_dir) - 6, "XXXXXX", 6);
  KG_CHECK(mkdtemp(s_dir) != NULL);
  char target[4200], link[4200];
  s_file(target, sizeof target, "elsewhere");
  snprintf(link, sizeof link, "%s/step-0000000002-20250101T000000000Z.kgckpt.tar", s_dir);
  KG_CHECK(symlink(target, link) == 0);
  KG_CHECK_INT(kg_ckpt_retain_remove(link), -ELOOP);
  KG_CHECK(access(target, F_OK) == 0);
  unlink(link);
  unlink(target);
  rmdir(s_dir);
}

KG_TEST_MAIN(KG_CASE(retain_plan_table), KG_CASE(remove_keeps_an_archive_being_read),
             KG_CASE(remove_refuses_a_link))
