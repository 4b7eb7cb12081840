/*  kg_coord_ckpt's start choice: where a multi-node job started again
    (requeued) begins, from the nodes' merged listing, as a table. */
#include <stdint.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "kg_coord_ckpt.h"
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

KG_TEST_MAIN(KG_CASE(start_resumes_the_newest_common_verified_step_else_fresh_else_stops))
