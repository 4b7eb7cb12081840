/*  kg_fsm: a state machine as data (s6-supervise's actions[state][event],
    with the deadlines in the rows): one row per state says what entering
    it does, how long the state may last, and which event its deadline
    posts; a function (usually a table lookup) says where an event leads.
    Events are queued, so no transition ever runs inside another.

    The machine's owner names its states and events with X-macros and
    fills in a kg_fsm_def_t once (static const); the engine keeps the
    current state, its deadline and the queue:

      #define MY_STATES(X) X(IDLE) X(BUSY)
      #define MY_EVENTS(X) X(WORK) X(DONE) X(TIMER)
      static const kg_fsm_row_t rows[] = {
        [MY_IDLE] = {enter_idle, 0, KG_FSM_NONE},
        [MY_BUSY] = {enter_busy, 5000, MY_EV_TIMER},   (5 s, then TIMER)
      };

    Applying an event: next(arg, state, event) gives the state it leads to
    (KG_FSM_NONE: the state ignores it, nothing happens); the state
    changes, its deadline is armed (the row's, from the event's time; 0:
    none), trace (if any) is told, and the row's entry action runs. A
    transition to the same state is a re-entry: the action runs again and
    the deadline is armed again. An entry action may replace the deadline
    (kg_fsm_set_deadline: a delay known only then, or "at once") and may
    post events: they wait until it has returned, then apply in order.
    A post from outside any transition applies at once, with whatever
    the transitions it causes post after it.

    Pure: no sockets, no clock of its own (every post and tick carries the
    caller's time in ms, monotonic), no logging (trace is the owner's).
    tests/unit/common/test_fsm.c runs a recording machine.

    Ownership: the definition and arg are borrowed and outlive the engine.
*/
#ifndef KG_FSM_H
#define KG_FSM_H

#include <stdbool.h>
#include <stdint.h>

#define KG_FSM_NONE (-1)        /*  no state / no event                      */

typedef struct kg_fsm_t kg_fsm_t;

/*  An event and its argument (what the owner needs with it: a wait status,
    a signal number, a step; 0 if none). */
typedef struct {
  int id;
  int64_t arg;
} kg_fsm_event_t;

/*  One state's row. */
typedef struct {
  /*  Entering the state: from the state before (KG_FSM_NONE at start), on
      event (id KG_FSM_NONE at start). NULL: nothing to do. */
  void (*enter)(void *arg, int from, const kg_fsm_event_t *event);
  int64_t deadline_ms;          /*  armed at entry, from the event's time;
                                    0: none                                 */
  int on_deadline;              /*  posted when it passes (KG_FSM_NONE: none) */
} kg_fsm_row_t;

typedef struct {
  int nstates, nevents;
  const char *const *state_names;       /*  [nstates]                       */
  const char *const *event_names;       /*  [nevents]                       */
  const kg_fsm_row_t *rows;             /*  [nstates]                       */
  /*  The state event leads to from state, or KG_FSM_NONE (ignored). */
  int (*next)(void *arg, int state, const kg_fsm_event_t *event);
  /*  Told of every event applied, before the entry action: to is the new
      state, or KG_FSM_NONE if from ignored it. NULL: none. */
  void (*trace)(void *arg, int from, const kg_fsm_event_t *event, int to);
} kg_fsm_def_t;

/*  A machine over def, not started (no state), whose functions get arg,
    with room for queue_max (>= 1) events waiting at once. NULL on
    allocation failure or a bad definition. */
kg_fsm_t *kg_fsm_new(const kg_fsm_def_t *def, void *arg, int queue_max);

/*  Free self; *self_p becomes NULL. Safe on NULL. Not from inside a
    transition. */
void kg_fsm_destroy(kg_fsm_t **self_p);

/*  Enter the initial state at now_ms (its row's deadline armed, its entry
    action run, what it posts applied). 0, or KG_EUSAGE (already started,
    or not a state). */
int kg_fsm_start(kg_fsm_t *self, int initial, int64_t now_ms);

/*  Post event (with arg) at now_ms: applied now, or after the running
    transition if posted from inside one. 0, or KG_ETOOBIG (the queue is
    full: the event is dropped; the caller logs it), or KG_EUSAGE (not an
    event, or not started). */
int kg_fsm_post(kg_fsm_t *self, int event, int64_t arg, int64_t now_ms);

/*  Queue event (with arg) without applying it, also outside a transition:
    for an owner that first gathers everything one wake-up brought (every
    child reaped, every line read) and only then lets the machine judge it,
    in order. kg_fsm_run applies what waits. 0, KG_ETOOBIG (full: dropped),
    or KG_EUSAGE (not an event, or not started). */
int kg_fsm_queue(kg_fsm_t *self, int event, int64_t arg);

/*  Apply what waits at now_ms, in order, until nothing does (what the
    transitions post included). From inside a transition: nothing (what
    waits is applied when it returns). */
void kg_fsm_run(kg_fsm_t *self, int64_t now_ms);

/*  At now_ms: if the state's deadline has passed, disarm it and post the
    row's on_deadline event. Returns true if it did. */
bool kg_fsm_tick(kg_fsm_t *self, int64_t now_ms);

/*  The current state (KG_FSM_NONE before kg_fsm_start). */
int kg_fsm_state(const kg_fsm_t *self);

/*  The state's deadline in the caller's ms, 0 if none. */
int64_t kg_fsm_deadline(const kg_fsm_t *self);

/*  Replace the state's deadline (at_ms; 0 disarms): an entry action's
    delay known only when it runs. */
void kg_fsm_set_deadline(kg_fsm_t *self, int64_t at_ms);

/*  The time of the event being applied (or of the last one): what an
    entry action counts its own delays from. */
int64_t kg_fsm_now(const kg_fsm_t *self);

/*  True if an event waits (posted during the running transition). */
bool kg_fsm_pending(const kg_fsm_t *self);

/*  "STARTING", "TIMER"...: the definition's names, "NONE" for KG_FSM_NONE
    or out of range. Static storage (the definition's). */
const char *kg_fsm_state_name(const kg_fsm_t *self, int state);
const char *kg_fsm_event_name(const kg_fsm_t *self, int event);

#endif
