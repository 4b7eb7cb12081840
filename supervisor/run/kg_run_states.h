/*  kg_run_states: the life of `kguard run`, as data: its states and events
    (X-macro lists, so names never drift from the enums), where each event
    leads (kg_run_next), and the run's other pure choices: what a signal
    does, how a cell's deadlines are read, and what a finished cell means.
    kg_runner runs the table on the state engine (common/kg_fsm.h) with one
    row per state (entry action, deadline, event on deadline).

    Time is passed in (the loop's clock, ms): a cell's deadlines are facts
    (kg_run_clock_t) the owner keeps, and TIMER is read against them, so
    tests/unit/run/test_run_states.c checks every state x event with a clock
    of its own.
*/
#ifndef KG_RUN_STATES_H
#define KG_RUN_STATES_H

#include <stdbool.h>
#include <stdint.h>

/*  X(name, what it means) */
#define KG_RUN_STATE_LIST(X)                                                             \
  X(STARTING,     "the kguard kernel is being spawned")                                  \
  X(WAITING,      "kernel_info nudged every second until a reply and an iopub message")  \
  X(EXECUTING,    "one cell's execute_request sent: its reply and idle awaited")         \
  X(INTERRUPTING, "the cell ran past --timeout: interrupted, a grace to answer")          \
  X(JUDGING,      "the cell is over: its outcome says what follows")                     \
  X(RESTARTING,   "kguard restarted the kernel: the notebook runs again from its top")   \
  X(STOPPING,     "the result is known: shutdown_request sent, a grace")                 \
  X(TERMINATING,  "the grace ran out: SIGTERM to the kernel's group")                    \
  X(KILLING,      "SIGTERM was not enough: SIGKILL to the group")                        \
  X(DONE,         "the kernel is gone: the loop ends")

#define KG_RUN_EVENT_LIST(X)                                                             \
  X(SPAWNED,   "the kguard kernel was spawned")                                          \
  X(SPAWN_FAILED, "it could not be")                                                     \
  X(READY,     "kernel_info answered and iopub seen")                                    \
  X(DOWN,      "kguard answered kernel_info itself: no kernel could start")              \
  X(TIMER,     "the state's deadline passed (read against kg_run_clock_t)")              \
  X(FINISHED,  "the cell's reply and its iopub idle both arrived")                       \
  X(CHILD_EXIT, "the kguard kernel process ended")                                       \
  X(STOP,      "a signal that ends the run now (arg: its number)")                       \
  X(FAILED,    "a send or a receive failed (arg: the code)")                             \
  X(NEXT,      "the next cell is due")                                                   \
  X(RESTART,   "kguard replaced the kernel: run the notebook again")                     \
  X(END,       "the run's result is known (arg: the exit code)")

typedef enum {
  KG_RUN_ST_NONE = -1,
#define X(name, what) KG_RUN_ST_##name,
  KG_RUN_STATE_LIST(X)
#undef X
  KG_RUN_ST_COUNT
} kg_run_state_t;

typedef enum {
#define X(name, what) KG_RUN_EV_##name,
  KG_RUN_EVENT_LIST(X)
#undef X
  KG_RUN_EV_COUNT
} kg_run_event_t;

extern const char *const kg_run_state_names[KG_RUN_ST_COUNT];
extern const char *const kg_run_event_names[KG_RUN_EV_COUNT];

/*  The deadlines TIMER is read against, in the loop's ms; 0: none. */
typedef struct {
  int64_t start_limit;          /*  WAITING: the kernel must be ready by   */
  int64_t limit;                /*  a cell: --timeout, then once it is
                                    interrupted, the grace to answer       */
  int64_t idle_limit;           /*  a cell that replied: its idle awaited
                                    until                                  */
} kg_run_clock_t;

/*  Which of a cell's deadlines has passed at now: the idle's first (the
    cell did reply), then the limit's. */
typedef enum {
  KG_RUN_LATE_NONE = 0,
  KG_RUN_LATE_IDLE,             /*  replied, but no idle in time           */
  KG_RUN_LATE_LIMIT             /*  --timeout, or the interrupt's grace    */
} kg_run_late_t;

kg_run_late_t kg_run_cell_late(const kg_run_clock_t *clock, int64_t now_ms);

/*  The earliest of a cell's deadlines (limit, idle_limit), 0 if none. */
int64_t kg_run_cell_due(const kg_run_clock_t *clock);

/*  How long a cell's idle is awaited once its reply arrived: briefly when
    the reply reports a kguard event (the kernel that would publish it may
    be gone already), else as nbclient does, with one hop more. */
int64_t kg_run_idle_grace_ms(bool kguard_event);

/*  The state event leads to from state at now_ms (TIMER is read against
    clock), or KG_RUN_ST_NONE if state ignores it (or either is out of
    range). */
kg_run_state_t kg_run_next(kg_run_state_t state, kg_run_event_t event,
                           const kg_run_clock_t *clock, int64_t now_ms);

/*  What a signal does. */
typedef enum {
  KG_RUN_SIG_IGNORE = 0,        /*  shutting down: it stays pending        */
  KG_RUN_SIG_INTERRUPT,         /*  interrupt the running cell only        */
  KG_RUN_SIG_STOP               /*  post STOP: the run ends now            */
} kg_run_signal_t;

/*  In state, signo arrives after sigints earlier SIGINTs: the first Ctrl-C
    of a run interrupts the running cell, any other signal (or a second
    Ctrl-C) stops the run, and none is read while the kernel shuts down. */
kg_run_signal_t kg_run_on_signal(kg_run_state_t state, int signo, int sigints);

/*  What JUDGING learnt about the cell. */
typedef struct {
  int failure;                  /*  a negative code: it could not be run   */
  int stop_signal;              /*  a signal ended the run, or 0           */
  bool child_exited;            /*  the kguard kernel ended                */
  const char *event;            /*  kguard's strongest event, or NULL      */
  bool timed_out;               /*  it ran past --timeout                  */
  bool user_interrupt;          /*  Ctrl-C interrupted it                  */
  const char *status;           /*  its reply's status, or NULL            */
  bool raises_exception;        /*  tagged: an error is expected           */
} kg_run_cell_t;

/*  The outcome of a cell, in the order they are judged. */
typedef enum {
  KG_RUN_OUT_FAILED = 0,        /*  it could not be run (system failure)   */
  KG_RUN_OUT_STOPPED,           /*  a signal ended the run                 */
  KG_RUN_OUT_KERNEL_GONE,       /*  the kguard kernel exited               */
  KG_RUN_OUT_DOWN,              /*  kguard gave up on the kernel           */
  KG_RUN_OUT_RESTARTED,         /*  kguard restarted the kernel            */
  KG_RUN_OUT_TIMED_OUT,         /*  --timeout                              */
  KG_RUN_OUT_INTERRUPTED,       /*  Ctrl-C                                 */
  KG_RUN_OUT_ERROR,             /*  it raised an error                     */
  KG_RUN_OUT_OK                 /*  ok, or the error it was tagged to raise */
} kg_run_outcome_t;

kg_run_outcome_t kg_run_outcome(const kg_run_cell_t *cell);

/*  The exit code an outcome ends the run with (kg_runner.h, kg_exit.h), or
    -1 when the run goes on (OK, RESTARTED: --max-restarts decides). */
int kg_run_outcome_exit(kg_run_outcome_t outcome, int stop_signal);

#endif
