/*  kg_coord_rule, kg_coord_ckpt and kg_coord_keys: the agreed step, the root
    cause, the ranks' listings read, and the keys from the job's secret, as
    tables. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_coord_ckpt.h"
#include "kg_coord_keys.h"
#include "kg_coord_rule.h"
#include "kg_coord_store.h"
#include "kg_error.h"
#include "kg_file.h"
#include "kg_json.h"
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
    const char *got = kg_json_string(
      kg_coord_ckpt_row(listing, 2, paths[i].rank, paths[i].step), "archive");
    if (!paths[i].path)
      KG_CHECK(got == NULL);
    else
      KG_CHECK_STR(got ? got : "(null)", paths[i].path);
  }
  /* Quarantine starts at the earliest seal of a step newer than s. */
  KG_CHECK_INT(kg_coord_ckpt_quarantine_from(cJSON_GetArrayItem(listing, 0), 3, false), 200);
  KG_CHECK_INT(kg_coord_ckpt_quarantine_from(cJSON_GetArrayItem(listing, 0), 6, false), 250);
  KG_CHECK_INT(kg_coord_ckpt_quarantine_from(cJSON_GetArrayItem(listing, 0), 9, false), -1);
  KG_CHECK_INT(kg_coord_ckpt_quarantine_from(cJSON_GetArrayItem(listing, 1), 3, false), -1);
  KG_CHECK_INT(kg_coord_ckpt_quarantine_from(cJSON_GetArrayItem(listing, 1), -1, false), 101);
  cJSON_Delete(listing);
}

/*  Starting over loses nothing only when no archive that could have been
    a resume point exists on any rank. */
KG_TEST(archives_that_exist_but_cannot_be_agreed_stop_a_start_over)
{
  static const struct {
    const char *listing;
    int64_t fault_step;
    int want;
    const char *why;
  } t[] = {
    {"[[],[]]", -1, 0, ""},
    /* leftovers of interrupted writes and set rows are no resume points */
    {"[[{\"status\":\"leftover\",\"archive\":\"r0/t\"},{\"kind\":\"set\",\"step\":3,"
     "\"status\":\"corrupt\"}],[]]", -1, 0, ""},
    /* newer than the fault: quarantined anyway */
    {"[[{\"step\":9,\"status\":\"valid\",\"archive\":\"r0/s9\"}],[]]", 7, 0, ""},
    /* rank 0 has step 3, rank 1 nothing: they exist */
    {"[[{\"step\":3,\"status\":\"valid\",\"archive\":\"r0/s3\"}],[]]", 7, 1,
     "rank 0: r0/s3: valid"},
    /* signed by a key this node does not know: no step is known */
    {"[[],[{\"step\":null,\"status\":\"unsigned\",\"archive\":\"r1/s3\",\"reason\":"
     "\"signed by unknown key b2:9\"},{\"step\":null,\"status\":\"unsigned\"}]]", 7, 2,
     "rank 1: r1/s3: unsigned: signed by unknown key b2:9"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    cJSON *l = cJSON_Parse(t[i].listing);
    char why[256];
    KG_CHECK_INT(kg_coord_ckpt_unusable(l, 2, t[i].fault_step, why, sizeof why), t[i].want);
    KG_CHECK_STR(why, t[i].why);
    cJSON_Delete(l);
  }
}

KG_TEST(root_cause_is_the_earliest_sticky_report)
{
  kg_coord_report_t r1[] = {{false, 0, false}, {true, 500, false}, {true, 400, false}};
  KG_CHECK_INT(kg_coord_root(r1, 3), 2);
  kg_coord_report_t r2[] = {{false, 0, false}, {false, 0, false}};   /* consequences only */
  KG_CHECK_INT(kg_coord_root(r2, 2), -1);
  kg_coord_report_t r3[] = {{true, 7, false}};
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

static cJSON *
s_decision(const char *action, int gen)
{
  cJSON *d = cJSON_CreateObject();
  cJSON_AddStringToObject(d, "type", "decision");
  cJSON_AddStringToObject(d, "action", action);
  cJSON_AddNumberToObject(d, "gen", gen);
  return d;
}

KG_TEST(decision_files_are_named_by_their_generation)
{
  static const struct {
    const char *json, *want;   /* want NULL: refused */
  } t[] = {
    {"{\"action\":\"restart\",\"gen\":1}", "gen-1.json"},
    {"{\"action\":\"give-up\",\"gen\":3}", "gen-3.json"},
    {"{\"action\":\"end\",\"gen\":0}", "end-0.json"},
    {"{\"action\":\"end\"}", NULL},
    {"{\"action\":\"end\",\"gen\":-1}", NULL},
    {"{\"action\":\"end\",\"gen\":1.5}", NULL},
    {"{\"action\":\"end\",\"gen\":\"1\"}", NULL},
    {"{\"gen\":1}", NULL},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    cJSON *d = cJSON_Parse(t[i].json);
    char name[64] = "";
    int rc = kg_coord_store_decision_name(d, name, sizeof name);
    if (t[i].want) {
      KG_CHECK_INT(rc, 0);
      KG_CHECK_STR(name, t[i].want);
    } else {
      KG_CHECK_INT(rc, KG_EUSAGE);
    }
    cJSON_Delete(d);
  }
}

static void
s_keys(kg_coord_keys_t *k, const char *dir, const char *secret)
{
  char p[256], err[256];
  snprintf(p, sizeof p, "%s/secret-%c", dir, secret[31]);
  s_write(p, secret, 32, 0600);
  KG_CHECK_INT(kg_coord_keys_load(p, k, err, sizeof err), 0);
  unlink(p);
}

static bool
s_empty_dir(const char *path)
{
  char cmd[512];
  snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s')\"", path);
  return system(cmd) == 0;
}

KG_TEST(store_never_follows_a_planted_link_and_believes_only_this_jobs_decisions)
{
  char dir[] = "/tmp/kg-coord-store-XXXXXX";
  KG_CHECK(mkdtemp(dir) != NULL);
  char ckpt[128], other[128], p[160], err[512];
  snprintf(ckpt, sizeof ckpt, "%s/ckpt", dir);
  snprintf(other, sizeof other, "%s/elsewhere", dir);
  mkdir(ckpt, 0700);
  mkdir(other, 0700);
  kg_coord_store_t *st = NULL;
  /* A neighbour's link at .kguard: refused, nothing written through it. */
  snprintf(p, sizeof p, "%s/.kguard", ckpt);
  KG_CHECK_INT(symlink(other, p), 0);
  KG_CHECK_INT(kg_coord_store_open(ckpt, &st, err, sizeof err), KG_EUSAGE);
  KG_CHECK(strstr(err, "symbolic link") != NULL);
  KG_CHECK(s_empty_dir(other));
  unlink(p);
  /* A .kguard anyone can write: refused. */
  mkdir(p, 0700);
  chmod(p, 0777);
  KG_CHECK_INT(kg_coord_store_open(ckpt, &st, err, sizeof err), KG_EUSAGE);
  KG_CHECK(strstr(err, "writable by others") != NULL);
  chmod(p, 0700);
  /* A link planted at decisions: refused too. */
  char dec[200];
  snprintf(dec, sizeof dec, "%s/decisions", p);
  KG_CHECK_INT(symlink(other, dec), 0);
  KG_CHECK_INT(kg_coord_store_open(ckpt, &st, err, sizeof err), KG_EUSAGE);
  unlink(dec);
  KG_CHECK_INT(kg_coord_store_open(ckpt, &st, err, sizeof err), 0);
  kg_coord_keys_t job, stranger;
  s_keys(&job, dir, "0123456789abcdef0123456789abcdeA");
  s_keys(&stranger, dir, "0123456789abcdef0123456789abcdeB");
  /* Nothing yet. */
  int rejected = -1;
  KG_CHECK(kg_coord_store_read_decisions(st, &job, &rejected) == NULL);
  KG_CHECK_INT(rejected, 0);
  /* A link planted at the next decision's name is replaced, not followed. */
  char victim[200], planted[300];
  snprintf(victim, sizeof victim, "%s/victim", other);
  s_write(victim, "precious", 8, 0600);
  snprintf(planted, sizeof planted, "%s/gen-1.json", dec);
  KG_CHECK_INT(symlink(victim, planted), 0);
  cJSON *d1 = s_decision("restart", 1), *e1 = s_decision("end", 1);
  cJSON *d2 = s_decision("restart", 2), *d4 = s_decision("restart", 4);
  KG_CHECK_INT(kg_coord_store_write_decision(st, &job, d1), 0);
  char *text = NULL;
  size_t len = 0;
  KG_CHECK_INT(kg_file_read(victim, 64, &text, &len), 0);
  KG_CHECK_STR(text, "precious");
  free(text);
  struct stat sb;
  KG_CHECK_INT(lstat(planted, &sb), 0);
  KG_CHECK(S_ISREG(sb.st_mode) && (sb.st_mode & 077) == 0);
  /* Read back: this job's gen-1; another job's gen-2 (its MAC does not
     verify with this key) is refused, and so is a valid decision of
     generation 4 put under the name of generation 9. */
  KG_CHECK_INT(kg_coord_store_write_decision(st, &stranger, d2), 0);
  KG_CHECK_INT(kg_coord_store_write_decision(st, &job, d4), 0);
  char from[300], to[300];
  snprintf(from, sizeof from, "%s/gen-4.json", dec);
  snprintf(to, sizeof to, "%s/gen-9.json", dec);
  KG_CHECK_INT(rename(from, to), 0);
  cJSON *got = kg_coord_store_read_decisions(st, &job, &rejected);
  KG_CHECK(got != NULL);
  KG_CHECK_INT(cJSON_GetObjectItemCaseSensitive(got, "gen")->valueint, 1);
  KG_CHECK_STR(cJSON_GetObjectItemCaseSensitive(got, "action")->valuestring, "restart");
  KG_CHECK_INT(rejected, 2);
  cJSON_Delete(got);
  /* In one generation, the end is newer than the restart that began it. */
  KG_CHECK_INT(kg_coord_store_write_decision(st, &job, e1), 0);
  got = kg_coord_store_read_decisions(st, &job, &rejected);
  KG_CHECK_STR(cJSON_GetObjectItemCaseSensitive(got, "action")->valuestring, "end");
  cJSON_Delete(got);
  /* Files: created exclusively, never replacing a name. */
  KG_CHECK_INT(kg_coord_store_create(st, "nonce-x", "abc", 3), 0);
  KG_CHECK_INT(kg_coord_store_create(st, "nonce-x", "abd", 3), -EEXIST);
  snprintf(planted, sizeof planted, "%s/nonce-y", p);
  KG_CHECK_INT(symlink(victim, planted), 0);
  KG_CHECK_INT(kg_coord_store_create(st, "nonce-y", "abc", 3), -EEXIST);
  KG_CHECK_INT(kg_file_read(victim, 64, &text, &len), 0);
  KG_CHECK_STR(text, "precious");
  free(text);
  kg_coord_store_destroy(&st);
  KG_CHECK(st == NULL);
  cJSON_Delete(d1);
  cJSON_Delete(e1);
  cJSON_Delete(d2);
  cJSON_Delete(d4);
  char cmd[160];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  KG_CHECK_INT(system(cmd), 0);
}

KG_TEST_MAIN(KG_CASE(agreed_step_is_newest_that_every_rank_verifies),
             KG_CASE(archive_rank_is_the_manifests_else_the_directorys),
             KG_CASE(listing_rows_become_archives_paths_and_quarantine_times),
             KG_CASE(archives_that_exist_but_cannot_be_agreed_stop_a_start_over),
             KG_CASE(root_cause_is_the_earliest_sticky_report),
             KG_CASE(keys_derive_from_the_secret_and_reject_weak_files),
             KG_CASE(decision_files_are_named_by_their_generation),
             KG_CASE(store_never_follows_a_planted_link_and_believes_only_this_jobs_decisions))
