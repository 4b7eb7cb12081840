/*  kg_gate: where a message from the frontend goes, decided without sockets
    and without a clock of its own: (message kind, what the supervisor knows,
    now) in, an action out. It is the whole routing decision: the requests
    kguard answers itself (a shutdown with no kernel to take it, a
    signal-mode interrupt, kernel_info while no kernel answers, a `%kguard`
    cell on control) are kinds of its input like the others. Pure, so that
    it is proven by tables (tests/unit/kernel/decide/test_gate.c: every kernel state
    x channel x message kind x queue x timing) rather than by racing a
    kernel.

    Actions:
      FORWARD   deliver now (to the kernel, or to kguard's own handler for a
                `%kguard` cell, or while DOWN to kguard's KernelDown answer)
      ANSWER    kguard answers it itself and it never runs anywhere (why:
                kg_gate_why_t)
      HOLD      keep it in kguard's queue, in arrival order, until its turn
      DROP      nothing can take it (stdin input for a kernel that is gone,
                a kernel that did not ask for input (kg_gate_input_asked),
                anything while kguard shuts down)

    The stale-request rule. After a fault at T (a sticky GPU error, or the
    kernel's death), an execute_request that reaches kguard after T and
    before kguard has told the frontend (the failing cell's reply with
    kguard's metadata, or the notice, whichever comes first), or within
    the stale window after the notice (default 2 s), was sent by a frontend
    that had not yet seen the failure: a browser's Run All sends every cell
    at once, and over a slow link the later ones arrive while kguard is
    restarting. Running it in the fresh kernel would rerun a training cell
    from scratch on top of the run. It is answered KernelRestarted naming the
    incident. Requests that arrive later run, and so does one that arrives
    within the window but whose header says it was created after the notice
    was published (its `date`, set by the frontend when it made the request
    and read by ipc/kg_date: that frontend had the notice). The date is the
    frontend's clock, which may be seconds or hours off kguard's (a laptop's
    browser talking to a GPU server): it is read on that frontend's own
    clock, as kguard measured it from the session's earlier messages
    (kg_gate_clock_t, kg_front_clock: the smallest arrival - date seen), so
    a skew in either direction neither turns a stale request into a fresh
    one nor the reverse; what remains is the link's one-way delay, as with
    synchronised clocks. A request without a readable date, or whose session
    sent nothing before it (its clock is unknown), counts as created before.
    A restart the user asks for (`%kguard restart`) ends the rule: what
    follows it is meant for the new kernel. (ipykernel has the same problem
    inside one process and the same answer: after an error it aborts what
    arrives within
    stop_on_error_timeout.)

    Ownership: the gate owns its incident id copy and the ids it keeps;
    nothing else.
*/
#ifndef KG_GATE_H
#define KG_GATE_H

#include <stdbool.h>
#include <stdint.h>

#include "kg_conninfo.h"
#include "kg_state.h"

#define KG_GATE_STALE_WINDOW_MS_DEFAULT 2000

typedef enum {
  KG_GATE_FORWARD = 0,
  KG_GATE_ANSWER,
  KG_GATE_HOLD,
  KG_GATE_DROP
} kg_gate_action_t;

typedef enum {
  KG_GATE_WHY_NONE = 0,
  KG_GATE_WHY_STALE,            /*  sent before the user saw the fault:
                                    KernelRestarted                           */
  KG_GATE_WHY_DOWN,             /*  no kernel (policy gave up, spawn failed):
                                    KernelDown                                */
  KG_GATE_WHY_SHUTDOWN,         /*  a shutdown_request no kernel can take:
                                    kguard replies and shuts down             */
  KG_GATE_WHY_INTERRUPT,        /*  a signal-mode interrupt: kguard replies   */
  KG_GATE_WHY_SIGNAL,           /*  ... after SIGINT to the kernel's group    */
  KG_GATE_WHY_INFO              /*  kernel_info while no kernel answers:
                                    kguard replies with the last one          */
} kg_gate_why_t;

/*  What arrived (kg_gate_kind). */
typedef enum {
  KG_GATE_MSG_EXECUTE = 0,      /*  execute_request (not a %kguard cell)      */
  KG_GATE_MSG_INBAND,           /*  execute_request that is a %kguard cell    */
  KG_GATE_MSG_REQUEST,          /*  any other *_request                       */
  KG_GATE_MSG_OTHER,            /*  comm_msg, input_reply...                  */
  KG_GATE_MSG_SHUTDOWN,         /*  shutdown_request                          */
  KG_GATE_MSG_INTERRUPT,        /*  interrupt_request                         */
  KG_GATE_MSG_KERNEL_INFO,      /*  kernel_info_request                       */
  KG_GATE_MSG_COUNT
} kg_gate_msg_t;

/*  What caused the fault the stale rule is about. */
typedef enum {
  KG_GATE_FAULT_STICKY = 0,
  KG_GATE_FAULT_DIED
} kg_gate_fault_t;

/*  A frontend's clock as kguard measured it: offset_ms added to its
    header dates gives kguard's wall clock. known: measured from at least
    one earlier message of the same session (kg_front_clock). */
typedef struct {
  int64_t offset_ms;
  bool known;
} kg_gate_clock_t;

/*  What the supervisor knows when a message arrives. */
typedef struct {
  kg_state_t state;             /*  the kernel's life-cycle state             */
  kg_channel_t channel;         /*  shell, control or stdin                   */
  kg_gate_msg_t kind;
  bool in_flight;               /*  an execute_request is in the kernel (or
                                    kguard's stop_on_error probe is pending) */
  bool queue_waiting;           /*  kguard's shell queue holds messages       */
  int64_t now_ms;               /*  monotonic                                 */
  int64_t sent_wall_ms;         /*  the request header's date (Unix ms on the
                                    frontend's clock: kg_date_ms), 0 if
                                    absent or unreadable                     */
  kg_gate_clock_t clock;        /*  that frontend's clock                    */
  bool kernel_alive;            /*  the kernel process runs                  */
  bool info_cached;             /*  a kernel_info_reply was seen             */
  bool interrupt_by_signal;     /*  the inner kernel takes interrupts as
                                    signals (its kernelspec's interrupt_mode
                                    is not "message")                        */
} kg_gate_input_t;

typedef struct {
  kg_gate_action_t action;
  kg_gate_why_t why;            /*  for ANSWER                                */
} kg_gate_decision_t;

typedef struct kg_gate_t kg_gate_t;

/*  How long kguard waits for the idle and the probe's answer after an
    error reply before the next request goes in anyway. */
#define KG_GATE_ABORT_PROBE_MS 2000

/*  A gate with the given stale window (ms; < 0: the default). NULL on
    allocation failure. */
kg_gate_t *kg_gate_new(int64_t stale_window_ms);

/*  Free self and set *self_p to NULL. Safe on NULL. */
void kg_gate_destroy(kg_gate_t **self_p);

/*  The kind of a message of msg_type (NULL: OTHER); inband says an
    execute_request is a `%kguard` cell. Pure. */
kg_gate_msg_t kg_gate_kind(const char *msg_type, bool inband);

/*  Where the message described by in goes. Pure: reads self, changes
    nothing. In order: nothing while shutting down; stdin input only to
    the kernel that asked; on control, a shutdown_request is forwarded
    while a READY kernel runs (the caller posts SHUTDOWN_REQUEST) and
    answered otherwise, a signal-mode interrupt is answered (after SIGINT
    to a READY kernel that runs: WHY_SIGNAL), a `%kguard` cell is
    delivered at once; kernel_info is answered by kguard while no kernel
    answers (a cached reply, or DOWN); then DOWN, the stale rule, and one
    execute in flight on shell. */
kg_gate_decision_t kg_gate_decide(const kg_gate_t *self, const kg_gate_input_t *in);

/*  A fault was detected at now_ms (the first one of an incident counts: a
    second fault before the notice of the first keeps T). */
void kg_gate_fault(kg_gate_t *self, kg_gate_fault_t cause, int64_t now_ms);

/*  The incident's id, for the answer's text (copied; NULL clears). */
void kg_gate_set_incident(kg_gate_t *self, const char *incident_id);

/*  kguard published the notice for the current fault at now_ms (monotonic)
    and wall_ms (Unix ms): the stale window starts. Without a fault, or
    after this fault's notice, nothing. */
void kg_gate_notice(kg_gate_t *self, int64_t now_ms, int64_t wall_ms);

/*  The frontend was told of the current fault at wall_ms (Unix ms) before
    the notice (the failing cell's reply carrying kguard's metadata): a
    request made after that, arriving before the window ends, runs (in the
    fresh kernel). Only the first call per fault counts. */
void kg_gate_told(kg_gate_t *self, int64_t wall_ms);

/*  The user asked for a restart: the rule ends at once. */
void kg_gate_clear(kg_gate_t *self);

/*  When a request dated sent_wall_ms (Unix ms on its frontend's clock, 0
    unknown) was made, on kguard's wall clock: its date plus the clock's
    offset, or 0 when either is unknown. */
int64_t kg_gate_made_ms(int64_t sent_wall_ms, kg_gate_clock_t clock);

/*  True if an execute_request arriving at now_ms (monotonic), made at
    made_wall_ms (Unix ms on kguard's clock: kg_gate_made_ms; 0 unknown),
    is stale. */
bool kg_gate_stale(const kg_gate_t *self, int64_t now_ms, int64_t made_wall_ms);

/*  The incident id (borrowed, "" if none), the fault's cause, the window. */
const char *kg_gate_incident(const kg_gate_t *self);
kg_gate_fault_t kg_gate_fault_cause(const kg_gate_t *self);
int64_t kg_gate_window_ms(const kg_gate_t *self);

/*  The kernel's own queue (ipykernel's stop_on_error). After an error
    reply ipykernel aborts every execute_request that reaches it until an
    event it schedules after that reply has run; one that lands first is
    aborted although it was sent after the error. So nothing more goes in
    (kg_gate_abort_active) until kguard's probe, a kernel_info_request
    (never aborted) sent once the kernel said idle for the failing request,
    has been answered: by then that event is queued ahead of anything new.
    The ids are the peer's (any length), copied. Times are the caller's
    monotonic ms; the gate reads no clock.

    The sequence, each step one call:
      error reply for request R:  kg_gate_abort_begin(R, idle_seen, now)
        returns true if idle for R was seen already: send the probe now
      idle for R:                 kg_gate_abort_idle(R) true: send the probe
      probe sent with id P:       kg_gate_abort_probe_sent(P)
      reply to P:                 kg_gate_abort_answered(P) true: go on
      no idle or answer in time:  kg_gate_abort_deadline passed: clear
    A kernel that is gone ends it (kg_gate_abort_clear). */
bool kg_gate_abort_begin(kg_gate_t *self, const char *request_id, bool idle_seen,
                         int64_t now_ms);
bool kg_gate_abort_idle(kg_gate_t *self, const char *parent_id);
void kg_gate_abort_probe_sent(kg_gate_t *self, const char *probe_id);
bool kg_gate_abort_answered(kg_gate_t *self, const char *parent_id);
void kg_gate_abort_clear(kg_gate_t *self);
/*  True while the idle or the probe's answer is awaited: nothing goes in. */
bool kg_gate_abort_active(const kg_gate_t *self);
/*  When the wait gives up (the error reply's time + KG_GATE_ABORT_PROBE_MS),
    or 0 if none is active. */
int64_t kg_gate_abort_deadline(const kg_gate_t *self);

/*  Input the kernel asked for. ipykernel reads its stdin channel only
    while it waits for an input(): an input_reply nobody asked for would sit
    in the kernel's queue (and, thousands of them, fill it), so stdin
    messages go to the kernel only while an input_request it sent is
    unanswered, one reply per request. kg_gate_input_asked(id) when the
    kernel's input_request was relayed to the frontend; NULL or "" when it
    was answered (the reply forwarded) or can no longer be (its cell ended,
    the kernel is gone). */
void kg_gate_input_asked(kg_gate_t *self, const char *request_id);
bool kg_gate_input_awaited(const kg_gate_t *self);

/*  The execute_request the kernel said busy for (its status' parent), or
    NULL: the request a raw-output fault belongs to. NULL or "" clears. */
void kg_gate_set_running(kg_gate_t *self, const char *request_id);
const char *kg_gate_running(const kg_gate_t *self);

/*  "FORWARD", "ANSWER"... Static storage. */
const char *kg_gate_action_name(kg_gate_action_t action);

#endif
