/*  kg_loop: the one reactor every kguard loop runs on (in the spirit of
    CZMQ's zloop and redis's ae): readers and writers by file descriptor or
    ZeroMQ socket, timers by deadline, signals through a kg_sigsrc. One
    thread, one poll(2) per iteration, whose timeout is the time to the
    earliest deadline any source registered; nothing sleeps.

    Sources register themselves. A concern adds its own readers, writers and
    timers once, in its own file, and the loop asks them before each wait;
    no central function gathers deadlines or descriptors. A source whose
    descriptor, socket or deadline changes over time (a kernel restarted
    with fresh sockets, a pipe closed at end of file, a stall deadline
    pushed back by output) registers a function that says the current one:
    the loop calls it before each wait and polls what it returns. Such
    functions are queries: they must not change anything, nor call the
    loop.

    One iteration (kg_loop_once; kg_loop_run repeats it):
      1. ask every source for its current descriptor or socket;
      2. wait in poll(2) until a descriptor is ready or the earliest
         deadline passes (no wait if a socket must be looked at again);
      3. for the sockets that woke, or must be looked at, ask ZMQ_EVENTS;
      4. call the handlers of the ready readers and writers, in the order
         they were registered (register the most urgent first);
      5. read the clock again and call the handlers of the timers whose
         deadline has passed, in the order they were registered.
    A handler may register and remove sources (a removed source is never
    called again, also later in the same iteration); transitions and sends
    happen inside handlers, never inside the loop itself.

    ZeroMQ sockets are polled through their ZMQ_FD, which is edge-triggered
    and signals only that the socket's state may have changed: the loop asks
    ZMQ_EVENTS (which processes the socket's pending commands) before it
    dispatches, and only for the sockets that can have something: those
    whose fd woke, those just registered or replaced, those whose handler
    returned KG_LOOP_MORE (it stopped before a receive said EAGAIN), those
    armed for writing, and those a message was sent on. A send on a socket
    may process its commands too, consuming the edge that announced input:
    whoever sends on a socket of the loop (kg_front, kg_kernel, kg_client)
    calls kg_loop_sent afterwards, or that input waits for the next wake-up.

    Time is the loop's clock: CLOCK_MONOTONIC in milliseconds unless a test
    injects its own (kg_loop_set_clock); kg_loop_timeout says how long the
    next wait would be, so a test checks deadlines without waiting.

    Ownership: the loop owns its registrations only. Descriptors, sockets
    and the kg_sigsrc stay the caller's, who removes a source before
    closing what it polls (or makes its function return -1 or NULL).
*/
#ifndef KG_LOOP_H
#define KG_LOOP_H

#include <stdbool.h>
#include <stdint.h>

#include "kg_sigsrc.h"

typedef struct kg_loop_t kg_loop_t;

/*  Events of a reader or writer. */
#define KG_LOOP_IN 1            /*  readable (or at end of file, or failed)  */
#define KG_LOOP_OUT 2           /*  writable                                 */

/*  What a handler returns. */
#define KG_LOOP_OK 0            /*  done                                     */
#define KG_LOOP_MORE 1          /*  a socket reader stopped before a receive
                                    said EAGAIN (a bounded batch): the socket
                                    is looked at again before the next wait */
#define KG_LOOP_STOP (-1)       /*  end the loop: kg_loop_run returns 0      */

/*  A reader or writer is ready: events holds KG_LOOP_IN and/or KG_LOOP_OUT
    (only those it asked for). id is the registration's. */
typedef int (kg_loop_io_fn)(kg_loop_t *loop, int id, int events, void *arg);

/*  A timer's deadline has passed. */
typedef int (kg_loop_timer_fn)(kg_loop_t *loop, int id, void *arg);

/*  A signal of the kg_sigsrc arrived (one call per signal, in order). */
typedef int (kg_loop_signal_fn)(kg_loop_t *loop, int signo, void *arg);

/*  Queries asked before each wait (no side effects): the current
    descriptor (-1: none now), socket (NULL: none now), or deadline in the
    loop's milliseconds (0: none now). */
typedef int (kg_loop_fd_of_fn)(void *arg);
typedef void *(kg_loop_socket_of_fn)(void *arg);
typedef int64_t (kg_loop_when_fn)(void *arg);

/*  The clock a test injects. */
typedef int64_t (kg_loop_clock_fn)(void *arg);

/*  An empty loop on CLOCK_MONOTONIC, or NULL (allocation failure). */
kg_loop_t *kg_loop_new(void);

/*  Free the loop and its registrations (nothing it polls is closed).
    *self_p becomes NULL; safe on NULL. Not from inside a handler. */
void kg_loop_destroy(kg_loop_t **self_p);

/*  Read time from clock(arg) instead of CLOCK_MONOTONIC (tests). */
void kg_loop_set_clock(kg_loop_t *self, kg_loop_clock_fn *clock, void *arg);

/*  The loop's time now, in milliseconds. */
int64_t kg_loop_now(kg_loop_t *self);

/*  Readers and writers. events: KG_LOOP_IN, KG_LOOP_OUT or both (0: none
    until kg_loop_set_events). Each returns the registration's id (> 0), or
    KG_ENOMEM. fn is called while the descriptor or socket is ready for one
    of events (level-triggered: a writer with nothing to write disarms
    itself with kg_loop_set_events). An fd at end of file or failed counts
    as readable; a closed fd still registered is a bug, logged once and
    disarmed. */
int kg_loop_fd(kg_loop_t *self, int fd, int events, kg_loop_io_fn *fn, void *arg);
int kg_loop_fd_of(kg_loop_t *self, kg_loop_fd_of_fn *fd_of, int events, kg_loop_io_fn *fn,
                  void *arg);
int kg_loop_socket(kg_loop_t *self, void *socket, int events, kg_loop_io_fn *fn, void *arg);
int kg_loop_socket_of(kg_loop_t *self, kg_loop_socket_of_fn *socket_of, int events,
                      kg_loop_io_fn *fn, void *arg);

/*  Change what a reader or writer waits for (KG_LOOP_IN, KG_LOOP_OUT, both
    or 0). 0, or KG_ENOTFOUND for an unknown id. */
int kg_loop_set_events(kg_loop_t *self, int id, int events);

/*  A message was sent on socket: if a reader or writer of the loop polls
    it, it is looked at before the next wait. Cheap; call it after every
    send on a socket the loop may poll. */
void kg_loop_sent(kg_loop_t *self, void *socket);

/*  A timer at deadline_ms (the loop's clock; 0: not armed). It fires once
    when the deadline has passed, then is disarmed until kg_loop_timer_set
    arms it again (fn may do so). Returns the id (> 0) or KG_ENOMEM. */
int kg_loop_timer(kg_loop_t *self, int64_t deadline_ms, kg_loop_timer_fn *fn, void *arg);

/*  A timer whose deadline when(arg) says, asked before each wait and again
    before the timers fire: fn is called in every iteration in which that
    deadline has passed, so fn must move it (or clear it to 0) by acting.
    Returns the id (> 0) or KG_ENOMEM. */
int kg_loop_timer_of(kg_loop_t *self, kg_loop_when_fn *when, kg_loop_timer_fn *fn, void *arg);

/*  Arm a kg_loop_timer at deadline_ms (0 disarms). 0, or KG_ENOTFOUND for
    an unknown id or a kg_loop_timer_of. */
int kg_loop_timer_set(kg_loop_t *self, int id, int64_t deadline_ms);

/*  The signals of sig (kept by the caller): each pending one is read and
    handed to fn when its fd is readable. Returns the id or KG_ENOMEM. */
int kg_loop_signals(kg_loop_t *self, kg_sigsrc_t *sig, kg_loop_signal_fn *fn, void *arg);

/*  Remove a registration of any kind (an unknown id is ignored). */
void kg_loop_remove(kg_loop_t *self, int id);

/*  How long the next wait would last, in ms: 0 if a socket must be looked
    at or a deadline has passed, -1 if nothing is due (wait for input).
    Asks the sources, as an iteration's first step does. */
int64_t kg_loop_timeout(kg_loop_t *self);

/*  One iteration (see above). Returns 0, 1 if a handler asked to stop (or
    kg_loop_stop was called), or a negative code if poll failed (EINTR is
    not a failure: the iteration ends without dispatching input). */
int kg_loop_once(kg_loop_t *self);

/*  Iterate until a handler returns KG_LOOP_STOP or calls kg_loop_stop
    (then 0), or poll fails (its -errno). */
int kg_loop_run(kg_loop_t *self);

/*  Stop after the handler that is running (kg_loop_run returns 0). */
void kg_loop_stop(kg_loop_t *self);

#endif
