/*  kg_policy: may the supervisor restart the kernel once more?

    A budget of max_restarts within a sliding window, exponential backoff
    between restarts (the first restart of a window is immediate; then
    backoff_initial_ms, doubling, capped at backoff_max_ms), and the rule that
    the same failure signature twice in a row stops automatic restarts: a
    restart does not fix a wrong label. After GIVE_UP the supervisor is DOWN
    until a manual `%kguard restart`, which calls kg_policy_reset.
*/
#ifndef KG_POLICY_H
#define KG_POLICY_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
  int max_restarts;           /* restarts allowed per window (default 3)     */
  int64_t window_ms;          /* sliding window (default 10 min)             */
  int64_t backoff_initial_ms; /* delay before the 2nd restart (default 1 s)  */
  int64_t backoff_max_ms;     /* cap (default 30 s)                          */
  bool stop_on_repeat;        /* same signature twice → give up (default on) */
} kg_policy_config_t;

typedef enum {
  KG_POLICY_RESTART = 0,
  KG_POLICY_GIVE_UP
} kg_policy_action_t;

typedef struct kg_policy_t kg_policy_t;

/*  Fill *config with the defaults above. */
void kg_policy_config_default(kg_policy_config_t *config);

/*  New policy; config is copied (NULL = defaults). NULL on allocation failure. */
kg_policy_t *kg_policy_new(const kg_policy_config_t *config);

/*  Free self and set *self_p to NULL. Safe on NULL. */
void kg_policy_destroy(kg_policy_t **self_p);

/*  A failure happened at now_ms with signature (NULL or "" = unknown, never a
    repeat). Returns RESTART with *delay_ms set (0 = at once), recording the
    restart, or GIVE_UP. *reason (borrowed, valid until the next call on self)
    is a human-readable sentence either way. delay_ms and reason may be NULL. */
kg_policy_action_t kg_policy_decide(kg_policy_t *self, int64_t now_ms, const char *signature,
                                    int64_t *delay_ms, const char **reason);

/*  Forget the history and the last signature (after a manual restart). */
void kg_policy_reset(kg_policy_t *self);

/*  Restarts granted within the window ending at now_ms. */
int kg_policy_restarts_in_window(const kg_policy_t *self, int64_t now_ms);

/*  Restarts granted since creation or the last reset. */
int kg_policy_restart_count(const kg_policy_t *self);

#endif
