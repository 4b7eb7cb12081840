/*  kg_ckpt_set with real shards: the set index is written only once every
    rank of the step has sealed, by whichever rank completes it (a second
    writer is success, naming the same index); the index lists each rank's
    archive and verifies with every shard; a shard gone makes the set fail,
    naming its rank. Keys and payload from ckpt_fixture.h; HOME points into
    the temporary root so that no keyring of the user's is read. */
#include "ckpt_fixture.h"

#include "kg_ckpt_set.h"

/*  Seal src as rank of a world_size-rank step 5 of run "unit" into ck. */
static int
s_seal_rank(int64_t rank, int64_t world_size, int64_t when, char *out)
{
  char src[PATH_MAX + 8], into[PATH_MAX + 8], why[512];
  snprintf(src, sizeof src, "%s/src", s_root);
  snprintf(into, sizeof into, "%s/ck", s_root);
  mkdir(into, 0700);
  kg_ckpt_seal_opts_t o = {.dir = src, .step = 5, .run = "unit", .into = into, .sk = s_sk,
                           .now_ms = when, .rank = rank, .world_size = world_size};
  int rc = kg_ckpt_seal(&o, out, PATH_MAX, why, sizeof why);
  if (rc < 0)
    fprintf(stderr, "seal: %s\n", why);
  return rc;
}

KG_TEST(set_index_name_table)
{
  static const struct {
    const char *name;
    bool index;
  } rows[] = {
    {"set-0000000005-0a1b2c3d" KG_CKPT_SET_SUFFIX, true},
    {"step-5-1700000000000-rank0of2.kgckpt.tar", false},
    {"set-0000000005-0a1b2c3d.kgckpt.tar", false},
    {"notes.txt", false},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    if (kg_ckpt_set_is_index_name(rows[i].name) != rows[i].index)
      fprintf(stderr, "row %zu: %s\n", i, rows[i].name);
    KG_CHECK(kg_ckpt_set_is_index_name(rows[i].name) == rows[i].index);
  }
}

KG_TEST(set_index_once_every_rank_sealed)
{
  s_setup();
  setenv("HOME", s_root, 1);
  setenv("XDG_CONFIG_HOME", s_root, 1);
  char ck[PATH_MAX + 8], shard[2][PATH_MAX], index[PATH_MAX] = "x";
  snprintf(ck, sizeof ck, "%s/ck", s_root);
  KG_CHECK_INT(s_seal_rank(0, 2, 1700000001000, shard[0]), 0);
  KG_CHECK_INT(kg_ckpt_set_try_index(ck, s_sk, "unit", 5, 2, index, sizeof index), 0);
  KG_CHECK_STR(index, "");   /* rank 1 missing: not complete yet */
  int rc;
  kg_ckpt_sets_t *sets = kg_ckpt_sets_scan(ck, s_keys, &rc);
  KG_CHECK(sets && sets->count == 0);
  kg_ckpt_sets_destroy(&sets);

  KG_CHECK_INT(s_seal_rank(1, 2, 1700000002000, shard[1]), 0);
  KG_CHECK_INT(kg_ckpt_set_try_index(ck, s_sk, "unit", 5, 2, index, sizeof index), 0);
  KG_CHECK(kg_ckpt_set_is_index_name(strrchr(index, '/') + 1));
  /* another rank completing it too: success, the same index */
  char again[PATH_MAX] = "";
  KG_CHECK_INT(kg_ckpt_set_try_index(ck, s_sk, "unit", 5, 2, again, sizeof again), 0);
  KG_CHECK_STR(again, index);

  sets = kg_ckpt_sets_scan(ck, s_keys, &rc);
  KG_CHECK(sets && sets->count == 1);
  if (sets && sets->count == 1) {
    const kg_ckpt_set_t *s = &sets->sets[0];
    KG_CHECK_INT(s->rc, 0);
    KG_CHECK_STR(s->run, "unit");
    KG_CHECK_INT(s->step, 5);
    KG_CHECK_INT(s->world_size, 2);
    KG_CHECK_INT(s->sealed_at_ms, 1700000002000);   /* the newest shard's */
    for (int r = 0; r < 2; r++) {
      KG_CHECK_INT(s->shards[r].rank, r);
      KG_CHECK_STR(s->shards[r].archive, shard[r]);
    }
    char reason[1024];
    KG_CHECK_INT(kg_ckpt_set_verify(s, s_keys, NULL, reason, sizeof reason), 0);
    /* a shard gone: the set is not chosen, and says which rank */
    KG_CHECK_INT(unlink(shard[1]), 0);
    KG_CHECK(kg_ckpt_set_verify(s, s_keys, NULL, reason, sizeof reason) != 0);
    KG_CHECK(strstr(reason, "rank 1") != NULL);
  }
  kg_ckpt_sets_destroy(&sets);
  kg_keyring_destroy(&s_keys);
  s_teardown();
}

KG_TEST_MAIN(KG_CASE(set_index_name_table), KG_CASE(set_index_once_every_rank_sealed))
