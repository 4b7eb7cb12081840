/*  kg_coord_ckpt's start choice: where a multi-node job started again
    (requeued) begins, from the nodes' merged listing, as a table. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "kg_coord_ckpt.h"
#include "kg_coord_rule.h"
#include "kg_json.h"
#include "kg_test.h"

#define V(s) "{\"step\":" #s ",\"status\":\"valid\",\"archive\":\"r/s" #s "\"}"

KG_TEST(start_resumes_the_newest_common_verified_step_else_fresh_else_stops)
{
  static const struct {
    const char *listing;
    int fresh_node;
    kg_coord_start_t want;
    int64_t step;
    const char *says;   /* a part of the line */
  } t[] = {
    /* nothing sealed anywhere */
    {"[[],[]]", -1, KG_COORD_START_FRESH, -1, "no checkpoint of run job: starting fresh"},
    /* both ranks sealed 3 and 4: the newest */
    {"[[" V(3) "," V(4) "],[" V(3) "," V(4) "]]", -1, KG_COORD_START_RESUME, 4,
     "resuming run job from step 4, sealed by all 2 ranks and verified on 2 nodes"},
    /* rank 0 is a step ahead: the last common step, the newer one named */
    {"[[" V(3) "," V(6) "],[" V(3) "]]", -1, KG_COORD_START_RESUME, 3,
     "newer steps up to 6 are not on every rank"},
    /* step 6 of rank 1 does not verify: 3 */
    {"[[" V(3) "," V(6) "],[" V(3) ",{\"step\":6,\"status\":\"corrupt\",\"archive\":\"r/c\"}]]",
     -1, KG_COORD_START_RESUME, 3, "from step 3,"},
    /* --fresh on node 1 wins over a common step */
    {"[[" V(3) "],[" V(3) "]]", 1, KG_COORD_START_FRESH, -1,
     "--fresh on node 1: run job starts at step 0 on every node"},
    /* checkpoints exist, no step in common: stop, naming the first */
    {"[[" V(3) "],[]]", -1, KG_COORD_START_UNVERIFIED, -1,
     "1 checkpoint(s) of run job exist, but no step was sealed by every rank and verifies "
     "on every node (first: rank 0: r/s3: valid)"},
    /* signed by a key a node does not trust: no step is known */
    {"[[],[{\"step\":null,\"status\":\"unsigned\",\"archive\":\"r/u\",\"reason\":\"unknown "
     "key\"}]]", -1, KG_COORD_START_UNVERIFIED, -1, "rank 1: r/u: unsigned: unknown key"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    cJSON *l = cJSON_Parse(t[i].listing);
    KG_CHECK(l != NULL);
    char line[2048];
    int64_t step = 99;
    KG_CHECK_INT(kg_coord_ckpt_start(l, 2, 2, "job", t[i].fresh_node, &step, line,
                                     sizeof line), t[i].want);
    KG_CHECK_INT(step, t[i].step);
    KG_CHECK(strstr(line, t[i].says) != NULL);
    cJSON_Delete(l);
  }
}

/*  Two ranks on two nodes with snapshots in memory beside their disk
    archives (every 3 steps): rank 1 faulted during step 8, after its
    snapshot of step 8 was sealed (281, at its fault). Rank 0's memory also
    holds a shard signed for rank 1 (it serves no rank: a snapshot is only
    its own rank's). */
static const char s_tiers[] =
  "[[{\"step\": 3, \"status\": \"valid\", \"sealed_at_ms\": 100, \"archive\": \"r0/s3\"},"
  "  {\"step\": 6, \"status\": \"valid\", \"sealed_at_ms\": 200, \"archive\": \"r0/s6\"},"
  "  {\"step\": 7, \"status\": \"valid\", \"sealed_at_ms\": 270, \"archive\": \"/m/rank-0/s7\","
  "   \"tier\": \"memory\", \"digest\": \"blake2b-256:0a\"},"
  "  {\"step\": 8, \"status\": \"valid\", \"sealed_at_ms\": 280, \"archive\": \"/m/rank-0/x8\","
  "   \"tier\": \"memory\", \"rank\": 1, \"world_size\": 2}],"
  " [{\"step\": 3, \"status\": \"valid\", \"sealed_at_ms\": 101, \"archive\": \"r1/s3\"},"
  "  {\"step\": 6, \"status\": \"valid\", \"sealed_at_ms\": 201, \"archive\": \"r1/s6\"},"
  "  {\"step\": 7, \"status\": \"valid\", \"sealed_at_ms\": 271, \"archive\": \"/n/rank-1/s7\","
  "   \"tier\": \"memory\", \"digest\": \"blake2b-256:1a\"},"
  "  {\"step\": 8, \"status\": \"valid\", \"sealed_at_ms\": 281, \"archive\": \"/n/rank-1/s8\","
  "   \"tier\": \"memory\"}]]";

/*  The agreed step over a listing, the fault as in s_tiers: rank 1 at
    281 after step 8. */
static int64_t
s_pick(const cJSON *listing)
{
  kg_coord_archive_t *a = NULL;
  int n = kg_coord_ckpt_archives(listing, 2, &a);
  bool fr[2] = {false, true};
  int64_t s = kg_coord_pick_step(a, n, 2, 8, fr, 281);
  free(a);
  return s;
}

KG_TEST(snapshots_in_memory_are_agreed_and_restored_where_they_lie)
{
  cJSON *listing = cJSON_Parse(s_tiers);
  KG_CHECK(listing != NULL);
  /* Step 8 is in memory on both, but rank 0's is another rank's shard
     and rank 1's was sealed at its fault: 7, from memory on both nodes. */
  KG_CHECK_INT(s_pick(listing), 7);
  KG_CHECK(kg_coord_ckpt_row(listing, 2, 1, 8) != NULL);
  KG_CHECK(kg_coord_ckpt_row(listing, 2, 0, 8) == NULL);
  cJSON *d = cJSON_CreateObject();
  kg_coord_ckpt_add_restore(d, listing, 2, 7, true);
  char *text = cJSON_PrintUnformatted(d);
  KG_CHECK_STR(text, "{\"quarantine\":{},\"quarantine_memory\":{\"0\":280,\"1\":281},"
               "\"archives\":{\"0\":\"/m/rank-0/s7\",\"1\":\"/n/rank-1/s7\"},"
               "\"tiers\":{\"0\":\"memory\",\"1\":\"memory\"},"
               "\"digests\":{\"0\":\"blake2b-256:0a\",\"1\":\"blake2b-256:1a\"},"
               "\"step\":7}");
  free(text);
  cJSON_Delete(d);
  /* At step 6 the disk serves both; the disk's quarantine never counts a
     snapshot, the memory's never counts an archive. */
  KG_CHECK_STR(kg_json_string(kg_coord_ckpt_row(listing, 2, 1, 6), "archive"), "r1/s6");
  KG_CHECK_INT(kg_coord_ckpt_quarantine_from(cJSON_GetArrayItem(listing, 1), 6, false), -1);
  KG_CHECK_INT(kg_coord_ckpt_quarantine_from(cJSON_GetArrayItem(listing, 1), 6, true), 271);
  KG_CHECK_INT(kg_coord_ckpt_quarantine_from(cJSON_GetArrayItem(listing, 1), 3, false), 201);
  /* Node 1's kguard lost its memory (restarted: it lists none): step 7
     is on one rank only, so both ranks restore step 6 from disk. */
  cJSON *rows = cJSON_GetArrayItem(listing, 1);
  cJSON_DeleteItemFromArray(rows, 3);
  cJSON_DeleteItemFromArray(rows, 2);
  KG_CHECK_INT(s_pick(listing), 6);
  d = cJSON_CreateObject();
  kg_coord_ckpt_add_restore(d, listing, 2, 6, true);
  text = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(d, "tiers"));
  KG_CHECK_STR(text, "{\"0\":\"disk\",\"1\":\"disk\"}");
  free(text);
  text = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(d, "quarantine_memory"));
  KG_CHECK_STR(text, "{\"0\":270}");
  free(text);
  cJSON_Delete(d);
  cJSON_Delete(listing);
}

KG_TEST_MAIN(KG_CASE(start_resumes_the_newest_common_verified_step_else_fresh_else_stops),
             KG_CASE(snapshots_in_memory_are_agreed_and_restored_where_they_lie))
