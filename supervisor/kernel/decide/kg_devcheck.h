/*  kg_devcheck: the device probe's bookkeeping.

    When output shows sticky GPU error text that proves nothing by itself,
    the supervisor probes the device with a silent execute_request of its
    own (kg_sup_devcheck.c sends it). This object remembers, for ONE kernel:
      * when the suspicion came (the gate dates a confirmed fault from it);
      * the probe's msg_id, when it was sent and its deadline;
      * the suspected cell's execute_reply and idle status, held until the
        probe decides, so that a confirmed fault is reported in that cell.
    It sends nothing, reads no clock (the caller passes now) and calls no
    supervisor file: its functions take what they need and RETURN verdicts,
    so the timing and verdict logic is tested by tables
    (tests/unit/kernel/decide/test_devcheck.c).

    Ownership: the object owns the probe id (a copy), the held reply and the
    held idle header; kg_devcheck_release hands the last two to the caller.
*/
#ifndef KG_DEVCHECK_H
#define KG_DEVCHECK_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "kg_classifier.h"
#include "kg_msg.h"

#define KG_DEVCHECK_MS 10000     /*  the probe's answer is awaited this long */

typedef struct kg_devcheck_t kg_devcheck_t;

/*  What the probe's execute_reply says. */
typedef enum {
  KG_DEVCHECK_PASSED = 0,       /*  status ok (or anything but "error")      */
  KG_DEVCHECK_NOT_GPU,          /*  it raised an error that is not sticky    */
  KG_DEVCHECK_CONFIRMED         /*  it raised a sticky GPU error             */
} kg_devcheck_verdict_t;

/*  A tracker with no suspicion, no probe and nothing held, or NULL. */
kg_devcheck_t *kg_devcheck_new(void);

/*  Free self and what it holds; *self_p becomes NULL. Safe on NULL. */
void kg_devcheck_destroy(kg_devcheck_t **self_p);

/*  A fresh kernel: forget the probe (its kernel is gone) and drop the held
    reply and idle. The suspicion's time is kept (the gate may still date
    the fault of the kernel that was stopped). */
void kg_devcheck_reset(kg_devcheck_t *self);

/*  A suspicion came at now (monotonic ms). */
void kg_devcheck_suspected(kg_devcheck_t *self, int64_t now);

/*  When the last suspicion came (monotonic ms), 0 if none yet. */
int64_t kg_devcheck_suspect_ms(const kg_devcheck_t *self);

/*  The probe msg_id was sent at now: its answer is due before
    now + KG_DEVCHECK_MS. Returns 0, KG_EUSAGE for a NULL or empty id, or
    KG_ENOMEM (then no probe is running). */
int kg_devcheck_sent(kg_devcheck_t *self, const char *msg_id, int64_t now);

/*  True while a probe is sent and has neither answered nor expired. */
bool kg_devcheck_probing(const kg_devcheck_t *self);

/*  True if parent (a message's parent msg_id, may be NULL) is the running
    probe's: its output and reply never reach the frontend. */
bool kg_devcheck_is_probe(const kg_devcheck_t *self, const char *parent);

/*  The running probe's deadline (monotonic ms), 0 when none runs. */
int64_t kg_devcheck_deadline(const kg_devcheck_t *self);

/*  True, once, if a probe is running and its deadline is reached at now:
    the probe is then over (no answer in time: a hung device). */
bool kg_devcheck_expired(kg_devcheck_t *self, int64_t now);

/*  The probe answered at now: it is over. Returns how long it took (ms). */
int64_t kg_devcheck_answered(kg_devcheck_t *self, int64_t now);

/*  Pure: the verdict of a probe reply's content (any JSON, NULL allowed).
    status "error" with ename/evalue whose "ename: evalue" the rules match
    as a sticky family (source execute_reply) is CONFIRMED, with the match
    in *match; another error is NOT_GPU; anything else PASSED. Missing or
    non-string fields count as "". match may be NULL. */
kg_devcheck_verdict_t kg_devcheck_verdict(const cJSON *content, const kg_classifier_t *rules,
                                          kg_match_t *match);

/*  Hold the suspected cell's execute_reply (*msg_p is taken, becomes
    NULL). A reply already held is kept and the new one is left to the
    caller (returns false). */
bool kg_devcheck_hold_reply(kg_devcheck_t *self, kg_msg_t **msg_p);

/*  True while a reply is held. */
bool kg_devcheck_holding(const kg_devcheck_t *self);

/*  Hold the idle status of the held reply's request: parent_header is that
    status's parent header (copied). Returns true if parent_id is the held
    reply's parent (then it is held, replacing an earlier one), false (nothing
    held) otherwise or when no reply is held. */
bool kg_devcheck_hold_idle(kg_devcheck_t *self, const char *parent_id,
                           const cJSON *parent_header);

/*  Hand the held reply and idle header to the caller (either may be NULL;
    the caller owns and frees them); nothing is held afterwards. */
void kg_devcheck_release(kg_devcheck_t *self, kg_msg_t **reply_p, cJSON **idle_p);

#endif
