/*  kg_coord_rule, kg_coord_ckpt and kg_coord_keys: the agreed step, the root
    cause, the ranks' listings read, and the keys from the job's secret, as
    tables. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_coord_ckpt.h"
#include "kg_coord_keys.h"
#include "kg_coord_rule.h"
#include "kg_error.h"
#include "kg_test.h"

#define A(r, s, t, v) {.rank = (r), .step = (s), .sealed_at_ms = (t), .valid = (v)}

KG_TEST(agreed_step_is_newest_that_every_rank_verifies)
{
  /* Two ranks, checkpoints at 3, 6, 9. */
  kg_coord_archive_t all[] = {A(0, 3, 100, 1), A(1, 3, 101, 1), A(0, 6, 200, 1),
                              A(1, 6, 201, 1), A(0, 9, 300, 1), A(1, 9, 301, 1)};
  KG_CHECK_INT(kg_coord_pick_step(all, 6, 2, -1, NULL, 0), 9);
  /* The faulting rank had completed step 7 only: 9 is after the fault. */
  KG_CHECK_INT(kg_coord_pick_step(all, 6, 2, 7, NULL, 0), 6);
  /* Rank 1's archive of step 6 is corrupt: fall back one checkpoint. */
  kg_coord_archive_t bad[] = {A(0, 3, 100, 1), A(1, 3, 101, 1), A(0, 6, 200, 1),
                              A(1, 6, 201, 0)};
  KG_CHECK_INT(kg_coord_pick_step(bad, 4, 2, 7, NULL, 0), 3);
  /* Rank 1 never sealed step 6 (it faulted during the seal). */
  kg_coord_archive_t missing[] = {A(0, 3, 100, 1), A(1, 3, 101, 1), A(0, 6, 200, 1)};
  KG_CHECK_INT(kg_coord_pick_step(missing, 3, 2, 7, NULL, 0), 3);
  /* On the faulting host, an archive sealed at or after T does not count. */
  bool fr[2] = {false, true};
  KG_CHECK_INT(kg_coord_pick_step(all, 6, 2, 7, fr, 201), 3);
  KG_CHECK_INT(kg_coord_pick_step(all, 6, 2, 7, fr, 202), 6);
  /* No step common to all ranks: start over. */
  kg_coord_archive_t none[] = {A(0, 3, 100, 1), A(1, 6, 201, 1)};
  KG_CHECK_INT(kg_coord_pick_step(none, 2, 2, -1, NULL, 0), -1);
  KG_CHECK_INT(kg_coord_pick_step(NULL, 0, 2, -1, NULL, 0), -1);
  /* A third rank that has nothing at all. */
  KG_CHECK_INT(kg_coord_pick_step(all, 6, 3, -1, NULL, 0), -1);
}

KG_TEST(archive_rank_is_the_manifests_else_the_directorys)
{
  static const struct {
    int64_t manifest_rank, manifest_world;
    int dir_rank, world, want;
  } t[] = {
    {-1, -1, 0, 2, 0},   /* an archive sealed before sets: its directory says */
    {-1, -1, 1, 2, 1},
    {-1, -1, 2, 2, -1},  /* a directory beyond this job's ranks */
    {1, 2, 1, 2, 1},     /* a shard where it belongs */
    {1, 2, 0, 2, 1},     /* a shard copied into another rank's directory: the signed rank */
    {0, 4, 0, 2, -1},    /* a shard of a 4-rank job cannot resume a 2-rank one */
    {3, -1, 0, 2, -1},   /* a signed rank outside the job */
    {1, -1, 0, 2, 1},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    int got = kg_coord_archive_rank(t[i].manifest_rank, t[i].manifest_world, t[i].dir_rank,
                                    t[i].world);
    if (got != t[i].want)
      fprintf(stderr, "row %zu: %d\n", i, got);
    KG_CHECK_INT(got, t[i].want);
  }
}

/*  Two ranks' `kguard ckpt list --json` rows, as kg_coord_ckpt reads them:
    rank 0's directory also holds rank 1's shard of step 6 (copied there),
    a set index row, a corrupt archive and a shard of a 4-rank job. */
static const char s_listing[] =
  "[[{\"step\": 3, \"status\": \"valid\", \"sealed_at_ms\": 100, \"archive\": \"r0/s3\"},"
  "  {\"step\": 6, \"status\": \"valid\", \"sealed_at_ms\": 200, \"archive\": \"r0/s6\"},"
  "  {\"step\": 6, \"status\": \"valid\", \"sealed_at_ms\": 201, \"archive\": \"r0/s6-r1\","
  "   \"rank\": 1, \"world_size\": 2},"
  "  {\"step\": 6, \"status\": \"valid\", \"kind\": \"set\", \"archive\": \"r0/set6\"},"
  "  {\"step\": 9, \"status\": \"corrupt\", \"sealed_at_ms\": 300, \"archive\": \"r0/s9\"},"
  "  {\"step\": 8, \"status\": \"valid\", \"sealed_at_ms\": 250, \"archive\": \"r0/x\","
  "   \"rank\": 0, \"world_size\": 4},"
  "  {\"status\": \"leftover\", \"archive\": \"r0/tmp\"}],"
  " [{\"step\": 3, \"status\": \"valid\", \"sealed_at_ms\": 101, \"archive\": \"r1/s3\"}]]";

KG_TEST(listing_rows_become_archives_paths_and_quarantine_times)
{
  cJSON *listing = cJSON_Parse(s_listing);
  KG_CHECK(listing != NULL);
  kg_coord_archive_t *a = NULL;
  int n = kg_coord_ckpt_archives(listing, 2, &a);
  /* Kept: r0/s3, r0/s6, the copied shard (as rank 1), r0/s9 (invalid),
     r1/s3; left out: the set row, the 4-rank shard, the leftover. */
  KG_CHECK_INT(n, 5);
  static const struct {
    int rank;
    int64_t step, sealed;
    bool valid;
  } want[] = {{0, 3, 100, true}, {0, 6, 200, true}, {1, 6, 201, true}, {0, 9, 300, false},
              {1, 3, 101, true}};
  for (int i = 0; i < n && i < 5; i++) {
    KG_CHECK_INT(a[i].rank, want[i].rank);
    KG_CHECK_INT(a[i].step, want[i].step);
    KG_CHECK_INT(a[i].sealed_at_ms, want[i].sealed);
    KG_CHECK_INT(a[i].valid, want[i].valid);
  }
  /* The agreed step over them: 6 (rank 1's shard lies in rank 0's dir). */
  KG_CHECK_INT(kg_coord_pick_step(a, n, 2, -1, NULL, 0), 6);
  free(a);
  static const struct {
    int rank;
    int64_t step;
    const char *path;   /* NULL: none */
  } paths[] = {
    {0, 3, "r0/s3"}, {1, 3, "r1/s3"},
    {0, 6, "r0/s6"}, {1, 6, "r0/s6-r1"},   /* found in another rank's directory */
    {0, 9, NULL},                          /* corrupt */
    {0, 8, NULL},                          /* another job size */
    {1, 9, NULL},
  };
  for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
    const char *got = kg_coord_ckpt_archive(listing, 2, paths[i].rank, paths[i].step);
    if (!paths[i].path)
      KG_CHECK(got == NULL);
    else
      KG_CHECK_STR(got ? got : "(null)", paths[i].path);
  }
  /* Quarantine starts at the earliest seal of a step newer than s. */
  KG_CHECK_INT(kg_coord_ckpt_quarantine_from(cJSON_GetArrayItem(listing, 0), 3), 200);
  KG_CHECK_INT(kg_coord_ckpt_quarantine_from(cJSON_GetArrayItem(listing, 0), 6), 250);
  KG_CHECK_INT(kg_coord_ckpt_quarantine_from(cJSON_GetArrayItem(listing, 0), 9), -1);
  KG_CHECK_INT(kg_coord_ckpt_quarantine_from(cJSON_GetArrayItem(listing, 1), 3), -1);
  KG_CHECK_INT(kg_coord_ckpt_quarantine_from(cJSON_GetArrayItem(listing, 1), -1), 101);
  cJSON_Delete(listing);
}

KG_TEST(root_cause_is_the_earliest_sticky_report)
{
  kg_coord_report_t r1[] = {{false, 0}, {true, 500}, {true, 400}};
  KG_CHECK_INT(kg_coord_root(r1, 3), 2);
  kg_coord_report_t r2[] = {{false, 0}, {false, 0}};   /* consequences only */
  KG_CHECK_INT(kg_coord_root(r2, 2), -1);
  kg_coord_report_t r3[] = {{true, 7}};
  KG_CHECK_INT(kg_coord_root(r3, 1), 0);
}

static void
s_write(const char *path, const char *data, size_t len, mode_t mode)
{
  FILE *f = fopen(path, "wb");
  fwrite(data, 1, len, f);
  fclose(f);
  chmod(path, mode);
}

KG_TEST(keys_derive_from_the_secret_and_reject_weak_files)
{
  char dir[] = "/tmp/kg-coord-keys-XXXXXX";
  KG_CHECK(mkdtemp(dir) != NULL);
  char a[128], b[128], shortp[128], open_[128];
  snprintf(a, sizeof a, "%s/a", dir);
  snprintf(b, sizeof b, "%s/b", dir);
  snprintf(shortp, sizeof shortp, "%s/short", dir);
  snprintf(open_, sizeof open_, "%s/open", dir);
  s_write(a, "0123456789abcdef0123456789abcdef", 32, 0600);
  s_write(b, "0123456789abcdef0123456789abcdeX", 32, 0600);
  s_write(shortp, "0123456789", 10, 0600);
  s_write(open_, "0123456789abcdef0123456789abcdef", 32, 0644);
  kg_coord_keys_t k1, k2, k3;
  char err[256];
  KG_CHECK_INT(kg_coord_keys_load(a, &k1, err, sizeof err), 0);
  KG_CHECK_INT(kg_coord_keys_load(a, &k2, err, sizeof err), 0);
  KG_CHECK_INT(kg_coord_keys_load(b, &k3, err, sizeof err), 0);
  KG_CHECK_STR(k1.server_public, k2.server_public);     /* every node derives the same */
  KG_CHECK_STR(k1.client_secret, k2.client_secret);
  KG_CHECK(strcmp(k1.server_public, k3.server_public) != 0);
  KG_CHECK(strcmp(k1.server_public, k1.client_public) != 0);
  char m1[65], m2[65], m3[65];
  kg_coord_keys_mac(&k1, "decision", 8, m1);
  kg_coord_keys_mac(&k2, "decision", 8, m2);
  kg_coord_keys_mac(&k3, "decision", 8, m3);
  KG_CHECK_STR(m1, m2);
  KG_CHECK(strcmp(m1, m3) != 0);
  KG_CHECK_INT(kg_coord_keys_load(shortp, &k3, err, sizeof err), KG_EUSAGE);
  KG_CHECK(strstr(err, "at least 32 bytes") != NULL);
  KG_CHECK_INT(kg_coord_keys_load(open_, &k3, err, sizeof err), KG_EUSAGE);
  KG_CHECK(strstr(err, "readable by others") != NULL);
  char none[128];
  snprintf(none, sizeof none, "%s/none", dir);
  KG_CHECK_INT(kg_coord_keys_load(none, &k3, err, sizeof err), KG_EUSAGE);
  unlink(a);
  unlink(b);
  unlink(shortp);
  unlink(open_);
  rmdir(dir);
}

KG_TEST_MAIN(KG_CASE(agreed_step_is_newest_that_every_rank_verifies),
             KG_CASE(archive_rank_is_the_manifests_else_the_directorys),
             KG_CASE(listing_rows_become_archives_paths_and_quarantine_times),
             KG_CASE(root_cause_is_the_earliest_sticky_report),
             KG_CASE(keys_derive_from_the_secret_and_reject_weak_files))
