/*  kg_policy: restart budget, backoff and the repeated-signature stop. */
#include "kg_policy.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_HISTORY 64 /* restarts remembered for the window (budget is smaller) */

struct kg_policy_t {
  kg_policy_config_t config;
  int64_t history[MAX_HISTORY]; /* times of granted restarts, oldest first */
  size_t nhistory;
  int total;                    /* restarts since new/reset               */
  char *last_signature;         /* signature of the previous failure       */
  char reason[512];
};

/*  The defaults: at most S_MAX_RESTARTS automatic restarts in S_WINDOW_MS,
    waiting S_BACKOFF_FIRST_MS before the second (the first is at once),
    doubling up to S_BACKOFF_MAX_MS. */
#define S_MAX_RESTARTS 3
#define S_WINDOW_MS (10 * 60 * 1000)
#define S_BACKOFF_FIRST_MS 1000
#define S_BACKOFF_MAX_MS (30 * 1000)

void
kg_policy_config_default(kg_policy_config_t *config)
{
  config->max_restarts = S_MAX_RESTARTS;
  config->window_ms = S_WINDOW_MS;
  config->backoff_initial_ms = S_BACKOFF_FIRST_MS;
  config->backoff_max_ms = S_BACKOFF_MAX_MS;
  config->stop_on_repeat = true;
}

kg_policy_t *
kg_policy_new(const kg_policy_config_t *config)
{
  kg_policy_t *self = calloc(1, sizeof *self);
  if (!self)
    return NULL;
  if (config)
    self->config = *config;
  else
    kg_policy_config_default(&self->config);
  if (self->config.max_restarts < 0)
    self->config.max_restarts = 0;
  if (self->config.max_restarts > MAX_HISTORY)
    self->config.max_restarts = MAX_HISTORY;
  if (self->config.backoff_initial_ms < 0)
    self->config.backoff_initial_ms = 0;
  if (self->config.backoff_max_ms < self->config.backoff_initial_ms)
    self->config.backoff_max_ms = self->config.backoff_initial_ms;
  return self;
}

void
kg_policy_destroy(kg_policy_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  free((*self_p)->last_signature);
  free(*self_p);
  *self_p = NULL;
}

void
kg_policy_reset(kg_policy_t *self)
{
  assert(self);
  self->nhistory = 0;
  self->total = 0;
  free(self->last_signature);
  self->last_signature = NULL;
  self->reason[0] = '\0';
}

/*  Drop restarts that left the window. */
static void
s_expire(kg_policy_t *self, int64_t now_ms)
{
  assert(self);
  size_t k = 0;
  while (k < self->nhistory && now_ms - self->history[k] >= self->config.window_ms)
    k++;
  memmove(self->history, self->history + k, (self->nhistory - k) * sizeof self->history[0]);
  self->nhistory -= k;
}

int
kg_policy_restarts_in_window(const kg_policy_t *self, int64_t now_ms)
{
  assert(self);
  int n = 0;
  for (size_t i = 0; i < self->nhistory; i++)
    if (now_ms - self->history[i] < self->config.window_ms)
      n++;
  return n;
}

int
kg_policy_restart_count(const kg_policy_t *self)
{
  assert(self);
  return self->total;
}

static void
s_duration(int64_t ms, char *buf, size_t size)
{
  if (ms % 60000 == 0 && ms >= 60000)
    snprintf(buf, size, "%lld min", (long long) (ms / 60000));
  else if (ms % 1000 == 0)
    snprintf(buf, size, "%lld s", (long long) (ms / 1000));
  else
    snprintf(buf, size, "%lld ms", (long long) ms);
}

kg_policy_action_t
kg_policy_decide(kg_policy_t *self, int64_t now_ms, const char *signature, int64_t *delay_ms,
                 const char **reason)
{
  assert(self);
  char window[32];
  s_duration(self->config.window_ms, window, sizeof window);
  kg_policy_action_t action;
  int64_t delay = 0;
  s_expire(self, now_ms);
  bool known = signature && signature[0];
  if (self->config.stop_on_repeat && known && self->last_signature &&
      strcmp(self->last_signature, signature) == 0) {
    action = KG_POLICY_GIVE_UP;
    snprintf(self->reason, sizeof self->reason,
             "the same failure happened twice in a row (same error family, same assertion, "
             "same cell): a restart does not fix its cause. Fix the cause, then run "
             "`%%kguard restart`.");
  } else if ((int) self->nhistory >= self->config.max_restarts) {
    action = KG_POLICY_GIVE_UP;
    snprintf(self->reason, sizeof self->reason,
             "the restart budget is spent (%d restarts within %s). Find the cause, then run "
             "`%%kguard restart`.",
             self->config.max_restarts, window);
  } else {
    action = KG_POLICY_RESTART;
    /* First restart of a window at once; then initial, doubling, capped. */
    size_t k = self->nhistory;
    if (k > 0) {
      delay = self->config.backoff_initial_ms;
      for (size_t i = 1; i < k && delay < self->config.backoff_max_ms; i++)
        delay *= 2;
      if (delay > self->config.backoff_max_ms)
        delay = self->config.backoff_max_ms;
    }
    self->history[self->nhistory++] = now_ms;
    self->total++;
    char d[32];
    s_duration(delay, d, sizeof d);
    snprintf(self->reason, sizeof self->reason, "restart %d of %d allowed within %s%s%s.",
             (int) self->nhistory, self->config.max_restarts, window,
             delay ? ", after a back-off of " : ", at once", delay ? d : "");
  }
  /* "Twice in a row" compares with the previous failure, whatever became of it. */
  free(self->last_signature);
  self->last_signature = known ? strdup(signature) : NULL;
  if (delay_ms)
    *delay_ms = delay;
  if (reason)
    *reason = self->reason;
  return action;
}
