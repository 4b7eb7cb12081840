/*  kg_replay: which signed frontend messages have been accepted, so that a
    captured message is never accepted twice, and what each sender's clock
    says.

    Anyone who can read the frontend's traffic (it is signed, not
    encrypted) can send a captured message again; its signature is still
    valid. jupyter_client remembers the last 65,536 signatures, so a replay
    that comes after as many newer messages passes. kg_replay bounds the
    history by time instead, using the header's date and session:

    - Each session (the header's `session`, one per client connection) has
      a clock of its own (a laptop's browser may be minutes off). kguard
      learns its offset from that session's accepted messages: the smallest
      (arrival on kguard's clock - header date) seen, i.e. the real offset
      plus the fastest delivery. A date mapped to kguard's clock (date +
      offset) is then comparable to kguard's own times, whatever that
      clock's skew, in either direction (kg_replay_clock).
    - A message of a known session whose mapped date is more than the
      window (KG_REPLAY_WINDOW_MS) in the past is refused (KG_EEXPIRED); so
      a signature needs to be remembered only while its mapped date is
      within the window, and a captured message is refused for its date
      once its signature is forgotten.
    - The history is bounded in entries too; when a flood of signed
      messages fills it within the window, the oldest entries are dropped
      and everything dated at or before them is refused from then on
      (the floor): honest messages, dated now, still pass.
    - A session's first message cannot be judged by its date (its clock is
      not known yet): it sets the clock, and only its signature is checked.
      Hence what is NOT promised: a message captured before this kguard
      started (a Jupyter restart keeps the key) or from a session forgotten
      since (more than max_sessions newer ones) can be replayed once to
      this process; the frontend's ports must not be readable by others
      (docs/SECURITY.md).
    - Messages whose session is one the inner kernel signs with (noted with
      kg_replay_kernel_session) are the kernel's own output sent back:
      refused (KG_EREFLECTED). No frontend shares the kernel's session, and
      the session is inside the signed header, so a reflected message
      cannot change it.

    Pure: no clock of its own (times are passed in, Unix ms), no I/O. Grows
    with use up to its bounds (kg_replay_memory).

    Ownership: the object owns copies of the session strings.
*/
#ifndef KG_REPLAY_H
#define KG_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KG_REPLAY_MAC_BYTES 32
#define KG_REPLAY_WINDOW_MS (10 * 60 * 1000)   /*  10 min                      */
#define KG_REPLAY_MAX_MACS (256u * 1024u)      /*  12 MiB at most              */
#define KG_REPLAY_MAX_SESSIONS (64u * 1024u)

typedef struct kg_replay_t kg_replay_t;

/*  A history with the given window (ms, > 0) and bounds (> 0). NULL on
    allocation failure or bad arguments. */
kg_replay_t *kg_replay_new(int64_t window_ms, size_t max_macs, size_t max_sessions);

/*  Free self; *self_p becomes NULL. Safe on NULL. */
void kg_replay_destroy(kg_replay_t **self_p);

/*  A frontend message whose signature checked: its MAC (the signature's
    32 bytes), its header's session and date (Unix ms; <= 0: none or
    unreadable) and its arrival now_ms (kguard's wall clock). Returns 0
    (accepted: remembered, its session's clock updated), KG_EREFLECTED (a
    kernel session), KG_EEXPIRED (dated before the window, or at or before
    the floor), KG_EREPLAY (accepted before), KG_ENODATE (no date: nothing
    to bound its replay by), KG_ENOMEM. */
int kg_replay_check(kg_replay_t *self, const unsigned char mac[KG_REPLAY_MAC_BYTES],
                    const char *session, int64_t date_ms, int64_t now_ms);

/*  The inner kernel signs with session (any generation's): a frontend
    message under it is reflected. Idempotent; NULL or "" ignored. */
void kg_replay_kernel_session(kg_replay_t *self, const char *session);

/*  The clock of session: *offset_ms to add to its header dates to get
    kguard's wall clock, and *count, the accepted messages the estimate
    rests on. False (nothing set) for a session never accepted. */
bool kg_replay_clock(const kg_replay_t *self, const char *session, int64_t *offset_ms,
                     unsigned long *count);

/*  Signatures and sessions remembered now; bytes allocated for both; the
    floor (Unix ms on kguard's clock; 0 while nothing was dropped early). */
size_t kg_replay_macs(const kg_replay_t *self);
size_t kg_replay_sessions(const kg_replay_t *self);
size_t kg_replay_memory(const kg_replay_t *self);
int64_t kg_replay_floor(const kg_replay_t *self);

#endif
