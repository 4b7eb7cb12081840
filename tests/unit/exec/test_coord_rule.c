/*  kg_coord_rule: which node the job is drained of, as a table. */
#include <stdbool.h>
#include <stdint.h>

#include "kg_coord_rule.h"
#include "kg_test.h"

KG_TEST(the_node_whose_gpu_needs_a_reset_is_drained_root_first)
{
  /* {sticky, fault_ms, needs_reset} */
  kg_coord_report_t none[] = {{true, 100, false}, {false, 0, false}};
  KG_CHECK_INT(kg_coord_drain(none, 2, 0), -1);   /* a code fault: the restart rules */
  kg_coord_report_t root[] = {{false, 0, false}, {true, 100, true}};
  KG_CHECK_INT(kg_coord_drain(root, 2, kg_coord_root(root, 2)), 1);
  /* the root's GPU is fine, a peer's is not: that peer is drained */
  kg_coord_report_t peer[] = {{true, 100, false}, {true, 200, true}, {true, 300, true}};
  KG_CHECK_INT(kg_coord_drain(peer, 3, kg_coord_root(peer, 3)), 1);
  /* two need a reset: the root cause's node is the one named */
  kg_coord_report_t both[] = {{true, 300, true}, {true, 200, true}};
  KG_CHECK_INT(kg_coord_drain(both, 2, kg_coord_root(both, 2)), 1);
  KG_CHECK_INT(kg_coord_drain(both, 2, -1), 0);
  KG_CHECK_INT(kg_coord_drain(NULL, 0, -1), -1);
}

KG_TEST_MAIN(KG_CASE(the_node_whose_gpu_needs_a_reset_is_drained_root_first))
