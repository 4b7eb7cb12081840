/*  kg_ckpt_snapkeep: the memory tier's plan by table (one complete
    checkpoint stays, with what is newer than its start), and its removal on
    a real directory of sealed snapshots and shards. Keys and payload from
    ckpt_fixture.h. */
#include "ckpt_fixture.h"
#include "plan_check.h"

#include <dirent.h>

#include "kg_ckpt_set.h"
#include "kg_ckpt_snapkeep.h"

/* Items as (authenticated, index, time, step, rank, world_size, set);
   "K" kept, "R" removed. */
KG_TEST(snapkeep_plan_table)
{
  struct {
    const char *what;
    size_t n;
    kg_ckpt_snapkeep_item_t it[7];
    const char *want;
    int keep;
  } t[] = {
    {"one plain snapshot stays", 1, {{true, false, 100, 1, 0, 0, -1}}, "K", 1},
    {"several plain: the newest by time stays", 3,
     {{true, false, 100, 1, 0, 0, -1}, {true, false, 300, 3, 0, 0, -1},
      {true, false, 200, 2, 0, 0, -1}},
     "RKR", 1},
    {"complete set: older plain and older set go, its shards stay", 7,
     {{true, false, 100, 1, 0, 0, -1}, {true, false, 150, 2, 0, 2, 2},
      {true, true, 160, 2, 0, 2, -1}, {true, false, 160, 2, 1, 2, 2},
      {true, false, 300, 3, 0, 2, 6}, {true, false, 310, 3, 1, 2, 6},
      {true, true, 310, 3, 0, 2, -1}},
     "RRRRKKK", 1},
    {"a set's start is its earliest shard: a plain sealed between its shards stays", 4,
     {{true, false, 250, 2, 0, 0, -1}, {true, false, 200, 3, 0, 2, 3},
      {true, false, 300, 3, 1, 2, 3}, {true, true, 300, 3, 0, 2, -1}},
     "KKKK", 1},
    {"incomplete newer set: its shards stay, the complete plain before it too", 3,
     {{true, false, 100, 1, 0, 0, -1}, {true, false, 200, 2, 0, 0, -1},
      {true, false, 300, 3, 1, 2, -1}},
     "RKK", 1},
    {"no complete checkpoint: nothing goes", 2,
     {{true, false, 200, 2, 0, 2, -1}, {true, false, 100, 1, 1, 2, -1}}, "KK", 1},
    {"an index missing a rank is not complete", 3,
     {{true, false, 100, 1, 0, 0, -1}, {true, false, 200, 2, 0, 2, 2},
      {true, true, 200, 2, 0, 2, -1}},
     "KKK", 1},
    {"other runs and unauthenticated files are never removed", 3,
     {{false, false, 100, -1, 0, 0, -1}, {false, false, 150, 1, 0, 0, -1},
      {true, false, 300, 3, 0, 0, -1}},
     "KKK", 1},
    {"after a fault: the restart's step 11 (newer) wins over step 12 (older)", 3,
     {{true, false, 100, 10, 0, 0, -1}, {true, false, 200, 12, 0, 0, -1},
      {true, false, 300, 11, 0, 0, -1}},
     "RRK", 1},
    {"keep 2 (a rank of several nodes): the two newest stay", 4,
     {{true, false, 100, 1, 0, 0, -1}, {true, false, 400, 4, 0, 0, -1},
      {true, false, 200, 2, 0, 0, -1}, {true, false, 300, 3, 0, 0, -1}},
     "RKRK", 2},
    {"keep 2 with one complete: it stays, nothing older to go", 2,
     {{true, false, 100, 1, 0, 0, -1}, {true, false, 200, 2, 1, 2, -1}},
     "KK", 2},
    {"keep 2 counts only complete ones: the shard between them stays", 4,
     {{true, false, 100, 1, 0, 0, -1}, {true, false, 200, 2, 0, 0, -1},
      {true, false, 250, 3, 1, 2, -1}, {true, false, 300, 4, 0, 0, -1}},
     "RKKK", 2},
  };
  for (size_t c = 0; c < sizeof t / sizeof *t; c++) {
    bool rm[7];
    size_t n = kg_ckpt_snapkeep_plan(t[c].it, t[c].n, t[c].keep, rm);
    kg_check_plan(t[c].what, rm, t[c].n, n, t[c].want);
  }
}

static int
s_seal_as(const char *run, int64_t step, int64_t rank, int64_t world_size, int64_t when,
          char *out)
{
  char src[PATH_MAX + 8], into[PATH_MAX + 8], why[512];
  snprintf(src, sizeof src, "%s/src", s_root);
  snprintf(into, sizeof into, "%s/ck", s_root);
  kg_ckpt_seal_opts_t o = {.dir = src, .step = step, .run = run, .into = into, .sk = s_sk,
                           .now_ms = when, .rank = rank, .world_size = world_size};
  int rc = kg_ckpt_seal(&o, out, PATH_MAX, why, sizeof why);
  if (rc < 0)
    fprintf(stderr, "seal: %s\n", why);
  return rc;
}

static bool
s_exists(const char *path)
{
  return access(path, F_OK) == 0;
}

/* A real memory directory: two plain snapshots, another run's, a
   quarantine, then a complete set of two shards, rank 0 of the next step
   and a leftover. The set stays with the next step's shard and the
   leftover; the rest of this run's
   and quarantine/ go. */
KG_TEST(snapkeep_apply_on_a_directory)
{
  s_setup();
  char ck[PATH_MAX + 8], p[PATH_MAX + 64], a1[PATH_MAX], a2[PATH_MAX], other[PATH_MAX];
  char s0[PATH_MAX], s1[PATH_MAX], next0[PATH_MAX], index[PATH_MAX];
  snprintf(ck, sizeof ck, "%s/ck", s_root);
  KG_CHECK_INT(s_seal_as("unit", 1, 0, 0, 1700000001000, a1), 0);
  KG_CHECK_INT(s_seal_as("unit", 2, 0, 0, 1700000002000, a2), 0);
  KG_CHECK_INT(s_seal_as("other", 1, 0, 0, 1700000000500, other), 0);
  snprintf(p, sizeof p, "%s/quarantine", ck);
  mkdir(p, 0755);
  snprintf(p, sizeof p, "%s/quarantine/x.kgckpt.tar", ck);
  s_write(p, 10, 4);

  KG_CHECK_INT(kg_ckpt_snapkeep_apply(ck, s_keys, "unit", 1, NULL), 1);   /* a1 */
  KG_CHECK(!s_exists(a1) && s_exists(a2) && s_exists(other));
  snprintf(p, sizeof p, "%s/quarantine", ck);
  KG_CHECK(!s_exists(p));

  KG_CHECK_INT(s_seal_as("unit", 3, 0, 2, 1700000003000, s0), 0);
  KG_CHECK_INT(s_seal_as("unit", 3, 1, 2, 1700000004000, s1), 0);
  KG_CHECK_INT(kg_ckpt_set_try_index(ck, s_sk, "unit", 3, 2, index, sizeof index), 0);
  KG_CHECK_INT(s_seal_as("unit", 4, 0, 2, 1700000005000, next0), 0);
  snprintf(p, sizeof p, "%s/.step-9.kgckpt.tar.tmp-abcdef", ck);   /* after the seals' gc */
  s_write(p, 10, 3);
  KG_CHECK_INT(kg_ckpt_snapkeep_apply(ck, s_keys, "unit", 1, NULL), 1);   /* a2 */
  KG_CHECK(!s_exists(a2) && s_exists(s0) && s_exists(s1) && s_exists(index));
  KG_CHECK(s_exists(next0) && s_exists(other));
  snprintf(p, sizeof p, "%s/.step-9.kgckpt.tar.tmp-abcdef", ck);
  KG_CHECK(s_exists(p));
  /* a missing directory has nothing to prune */
  snprintf(p, sizeof p, "%s/none", s_root);
  KG_CHECK_INT(kg_ckpt_snapkeep_apply(p, s_keys, "unit", 1, NULL), 0);
  kg_keyring_destroy(&s_keys);
  s_teardown();
}

KG_TEST_MAIN(KG_CASE(snapkeep_plan_table), KG_CASE(snapkeep_apply_on_a_directory))
