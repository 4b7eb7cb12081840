/*  kg_kernel_hb: is the inner kernel still alive while a request waits on
    it? Pings the inner kernel's heartbeat socket and says HUNG after a
    configured number of missed beats.

    Why: kguard answers the frontend's heartbeat itself (its own thread), so
    a kernel stopped with SIGSTOP, or stuck in a driver call with the GIL
    released and its threads frozen, looks alive to Jupyter while requests
    wait forever. ipykernel answers heartbeats on a thread of its own (a
    zmq ROUTER echoing everything back), which keeps answering while a cell
    computes and stops only when the whole process is stopped or wedged:
    exactly the case to detect. It is only pinged while a request is
    outstanding (kg_kernel_hb_arm): an idle stopped kernel harms nothing,
    and a user may stop one on purpose.

    The socket is a DEALER (as jupyter_client's heartbeat could be: no
    REQ lockstep to reset after a lost reply); each ping is a distinct
    payload "kguard-hb <n>", and any echo of a ping sent since arming counts
    as a beat. Non-blocking sends with a small high-water mark: pings never
    pile up behind a stopped peer, a send that would block counts as missed.

    The clock is the caller's (monotonic ms in every call): the loop wakes
    at kg_kernel_hb_deadline and calls kg_kernel_hb_tick, which reads the
    echoes there (the socket need not be polled; kg_kernel_hb_read reads
    them sooner for a caller that does). HUNG is reported once per arming
    (tick returns KG_KHB_HUNG on the transition); the supervisor then treats
    it as a hang fault (see the hook in docs/SECURITY.md).

    Ownership: the class owns its socket; the zmq context is the caller's
    and must outlive it.
*/
#ifndef KG_KERNEL_HB_H
#define KG_KERNEL_HB_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define KG_KHB_PERIOD_MS_DEFAULT 1000
#define KG_KHB_MISSES_DEFAULT 5
#define KG_KHB_PERIOD_MS_MIN 100     /*  the period's range                    */
#define KG_KHB_PERIOD_MS_MAX 60000
#define KG_KHB_MISSES_MAX 1000

typedef struct {
  int64_t period_ms;            /*  one ping per period (100 .. 60000)        */
  int max_missed;               /*  HUNG after this many in a row (1 .. 1000) */
} kg_kernel_hb_config_t;

typedef enum {
  KG_KHB_IDLE = 0,              /*  not armed: no request outstanding         */
  KG_KHB_ALIVE,                 /*  armed, beats answered (or too few missed) */
  KG_KHB_HUNG                   /*  max_missed beats in a row unanswered      */
} kg_khb_status_t;

typedef struct kg_kernel_hb_t kg_kernel_hb_t;

/*  The defaults, overridden by KGUARD_KERNEL_HB_PERIOD (seconds, 0.1 to 60)
    and KGUARD_KERNEL_HB_MISSES (1 to 1000) when set. Returns 0, or
    KG_EUSAGE with a sentence naming the bad variable in err. */
int kg_kernel_hb_config_env(kg_kernel_hb_config_t *cfg, char *err, size_t errlen);

/*  A pinger connected to endpoint (the inner kernel's hb endpoint, e.g.
    "ipc:///run/.../hb"), not armed. cfg NULL: the defaults. NULL on
    failure (out of memory, a bad endpoint, a bad cfg). */
kg_kernel_hb_t *kg_kernel_hb_new(void *zmq_ctx, const char *endpoint,
                                 const kg_kernel_hb_config_t *cfg);

/*  Close the socket, free self, set *self_p to NULL. Safe on NULL. */
void kg_kernel_hb_destroy(kg_kernel_hb_t **self_p);

/*  The socket to poll for input (ZMQ_POLLIN), borrowed. */
void *kg_kernel_hb_socket(kg_kernel_hb_t *self);

/*  A request is outstanding (on: the first ping one period from now, then
    one per period; a request answered within a period costs no ping), or
    no longer (off: stop, forget misses and any HUNG). Arming an armed
    pinger changes nothing. HUNG comes max_missed periods after the first
    ping, so (max_missed + 1) periods after arming at the earliest. */
void kg_kernel_hb_arm(kg_kernel_hb_t *self, bool on, int64_t now_ms);

/*  At or after the deadline: read the echoes waiting on the socket, count
    a missed beat if none answered this arming's pings since the last
    deadline, send the next ping. Before it: nothing (no system call).
    Returns
    the status; KG_KHB_HUNG only on the call that crossed max_missed (later
    calls return ALIVE-or-HUNG via kg_kernel_hb_status). */
kg_khb_status_t kg_kernel_hb_tick(kg_kernel_hb_t *self, int64_t now_ms);

/*  Read the echoes waiting on the socket now (a beat resets the misses);
    for a caller that polls kg_kernel_hb_socket. */
void kg_kernel_hb_read(kg_kernel_hb_t *self);

/*  The current status (IDLE, ALIVE or HUNG), and the misses in a row. */
kg_khb_status_t kg_kernel_hb_status(const kg_kernel_hb_t *self);
int kg_kernel_hb_missed(const kg_kernel_hb_t *self);

/*  Echoes of this arming's pings counted so far (a test's condition to
    wait on; 0 after arming). */
uint64_t kg_kernel_hb_beats(const kg_kernel_hb_t *self);

/*  Pings sent by this pinger, all armings together. */
uint64_t kg_kernel_hb_pings(const kg_kernel_hb_t *self);

/*  When tick must run next (monotonic ms), or 0 when not armed. */
int64_t kg_kernel_hb_deadline(const kg_kernel_hb_t *self);

/*  Why a process silent for cfg's misses x period whose /proc state letter
    is proc_state ('T': stopped; 0: unknown) is declared hung, as the notice
    and the log say it: "it stopped answering its heartbeat for 5 s (the
    process is stopped: SIGSTOP)". A new string (NULL on allocation
    failure). Pure. */
char *kg_kernel_hb_describe(const kg_kernel_hb_config_t *cfg, char proc_state);

#endif
