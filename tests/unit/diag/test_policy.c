/*  kg_policy: the restart budget, backoff and the same fault twice. */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_diagnosis.h"
#include "kg_error.h"
#include "kg_incident.h"
#include "kg_notice.h"
#include "kg_policy.h"
#include "kg_test.h"
#include "kg_test_rules.h"

KG_TEST(policy_budget_and_backoff)
{
  kg_policy_t *p = kg_policy_new(NULL);
  int64_t delay = -1;
  const char *reason = NULL;
  KG_CHECK_INT(kg_policy_decide(p, 0, "a", &delay, &reason), KG_POLICY_RESTART);
  KG_CHECK_INT(delay, 0); /* the first restart is immediate */
  KG_CHECK(reason && strstr(reason, "restart 1 of 3"));
  KG_CHECK_INT(kg_policy_decide(p, 1000, "b", &delay, &reason), KG_POLICY_RESTART);
  KG_CHECK_INT(delay, 1000);
  KG_CHECK_INT(kg_policy_decide(p, 2000, "c", &delay, &reason), KG_POLICY_RESTART);
  KG_CHECK_INT(delay, 2000);
  KG_CHECK_INT(kg_policy_restarts_in_window(p, 2000), 3);
  KG_CHECK_INT(kg_policy_decide(p, 3000, "d", &delay, &reason), KG_POLICY_GIVE_UP);
  KG_CHECK(strstr(reason, "budget") && strstr(reason, "%kguard restart") &&
           strstr(reason, "10 min"));
  /* the window slides: 10 minutes after the first restart one slot is free */
  KG_CHECK_INT(kg_policy_decide(p, 600000, "e", &delay, &reason), KG_POLICY_RESTART);
  KG_CHECK_INT(delay, 2000);
  KG_CHECK_INT(kg_policy_restart_count(p), 4);
  kg_policy_destroy(&p);
  KG_CHECK(p == NULL);
}

KG_TEST(policy_backoff_cap)
{
  kg_policy_config_t cfg;
  kg_policy_config_default(&cfg);
  cfg.max_restarts = 10;
  cfg.backoff_initial_ms = 1000;
  cfg.backoff_max_ms = 5000;
  kg_policy_t *p = kg_policy_new(&cfg);
  int64_t expect[] = {0, 1000, 2000, 4000, 5000, 5000};
  for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++) {
    int64_t delay = -1;
    char sig[8];
    snprintf(sig, sizeof sig, "s%zu", i);
    KG_CHECK_INT(kg_policy_decide(p, (int64_t) i * 10, sig, &delay, NULL), KG_POLICY_RESTART);
    KG_CHECK_INT(delay, expect[i]);
  }
  kg_policy_destroy(&p);
}

KG_TEST(policy_same_signature_twice)
{
  kg_policy_t *p = kg_policy_new(NULL);
  const char *reason;
  KG_CHECK_INT(kg_policy_decide(p, 0, "device-assert:aa:bb", NULL, &reason), KG_POLICY_RESTART);
  KG_CHECK_INT(kg_policy_decide(p, 10, "device-assert:aa:bb", NULL, &reason), KG_POLICY_GIVE_UP);
  KG_CHECK(strstr(reason, "twice in a row") != NULL);
  /* unknown signatures never count as a repeat */
  kg_policy_reset(p);
  KG_CHECK_INT(kg_policy_restart_count(p), 0);
  KG_CHECK_INT(kg_policy_decide(p, 20, NULL, NULL, NULL), KG_POLICY_RESTART);
  KG_CHECK_INT(kg_policy_decide(p, 30, "", NULL, NULL), KG_POLICY_RESTART);
  /* after a reset the same signature restarts again, once */
  kg_policy_reset(p);
  KG_CHECK_INT(kg_policy_decide(p, 40, "device-assert:aa:bb", NULL, NULL), KG_POLICY_RESTART);
  KG_CHECK_INT(kg_policy_decide(p, 50, "x", NULL, NULL), KG_POLICY_RESTART);
  KG_CHECK_INT(kg_policy_decide(p, 60, "device-assert:aa:bb", NULL, NULL), KG_POLICY_RESTART);
  kg_policy_destroy(&p);
}

KG_TEST_MAIN(KG_CASE(policy_budget_and_backoff), KG_CASE(policy_backoff_cap), KG_CASE(policy_same_signature_twice))
