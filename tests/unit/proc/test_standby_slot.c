/*  kg_standby_slot: the standby's warmth, age, failures and the swap at a
    promotion, with kernel objects that never start a process. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <zmq.h>

#include "kg_standby_slot.h"
#include "kg_test.h"

static kg_kernel_t *
s_kernel(void *ctx, const char *dir, const char *tag)
{
  kg_kernel_opts_t opts = {.ctx = ctx, .runtime_dir = dir, .conn_path = "/nonexistent/k.json",
                           .log = NULL, .ring_bytes = 16, .tag = tag};
  kg_kernel_t *k = kg_kernel_new(&opts);
  KG_CHECK(k != NULL);
  return k;
}

KG_TEST(standby_slot_lifecycle)
{
  void *ctx = zmq_ctx_new();
  KG_CHECK(ctx != NULL);
  KG_CHECK(kg_standby_slot_new(NULL, 3) == NULL);
  kg_kernel_t *none = NULL;
  KG_CHECK(kg_standby_slot_new(&none, 3) == NULL);   /* kg_kernel_new failed */
  kg_kernel_t *refused = s_kernel(ctx, "/nonexistent", "s");
  KG_CHECK(kg_standby_slot_new(&refused, 0) == NULL);
  KG_CHECK(refused == NULL);   /* taken (destroyed) even when refused */
  kg_kernel_t *standby = s_kernel(ctx, "/nonexistent", "s");
  kg_kernel_t *held = standby;
  kg_standby_slot_t *slot = kg_standby_slot_new(&standby, 3);
  KG_CHECK(slot != NULL && standby == NULL);
  KG_CHECK(kg_standby_slot_kernel(slot) == held);
  KG_CHECK(!kg_standby_slot_is_warm(slot));
  KG_CHECK(kg_standby_slot_may_start(slot));

  /* started, then warm; its age on the caller's clock */
  kg_standby_slot_started(slot, 1000);
  KG_CHECK_INT((int) kg_standby_slot_age_ms(slot, 3500), 2500);
  kg_standby_slot_warmed(slot);
  KG_CHECK(kg_standby_slot_is_warm(slot));

  /* promotion: the objects swap, the warmth goes with the standby */
  kg_kernel_t *kernel = s_kernel(ctx, "/nonexistent", "k");
  kg_kernel_t *cold = kernel;
  KG_CHECK(kg_standby_slot_swap(slot, &kernel));
  KG_CHECK(kernel == held && kg_standby_slot_kernel(slot) == cold);
  KG_CHECK(!kg_standby_slot_is_warm(slot));
  /* a standby promoted before it was warm says so */
  kg_standby_slot_started(slot, 5000);
  KG_CHECK(!kg_standby_slot_swap(slot, &kernel));
  KG_CHECK(kernel == cold && kg_standby_slot_kernel(slot) == held);
  /* warmth is forgotten at a restart of the standby */
  kg_standby_slot_warmed(slot);
  kg_standby_slot_started(slot, 6000);
  KG_CHECK(!kg_standby_slot_is_warm(slot));

  /* three deaths before promotion: the third is the last allowed */
  KG_CHECK(!kg_standby_slot_failed(slot));
  KG_CHECK(kg_standby_slot_may_start(slot));
  KG_CHECK(!kg_standby_slot_failed(slot));
  KG_CHECK(kg_standby_slot_may_start(slot));
  KG_CHECK(kg_standby_slot_failed(slot));
  KG_CHECK(!kg_standby_slot_may_start(slot));

  kg_kernel_destroy(&kernel);
  kg_standby_slot_destroy(&slot);   /* destroys the object it holds */
  KG_CHECK(slot == NULL);
  kg_standby_slot_destroy(NULL);
  zmq_ctx_term(ctx);
}

KG_TEST_MAIN(KG_CASE(standby_slot_lifecycle))
