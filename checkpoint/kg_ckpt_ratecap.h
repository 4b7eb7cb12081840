/*  kg_ckpt_ratecap: the slow-disk test hook's read-rate cap, shared by every
    thread that reads one archive.

    When KGUARD_TEST_READ_BPS (KG_CKPT_TEST_READ_BPS_ENV, documented in
    FORMAT.md) holds a positive integer, verify, restore and resume-prepare
    read the archive at most that many bytes per second in all, whichever
    thread reads: the reading thread of the streaming pass and the threads
    that check chunks in place alike. This is a simulated slow disk for
    tests, never synchronisation: nothing waits for anything else to
    happen, only for the time the bytes are due.

        kg_ckpt_ratecap_t cap;
        kg_ckpt_ratecap_init(&cap);          reads the environment once
        kg_ckpt_ratecap_take(&cap, n, tick, arg);   before/after reading n bytes
        kg_ckpt_ratecap_fini(&cap);

    Plain struct: the caller owns it; thread-safe between init and fini.
*/
#ifndef KG_CKPT_RATECAP_H
#define KG_CKPT_RATECAP_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint64_t bps;            /* cap in bytes per second; 0: none (the default) */
  int64_t start_ns;        /* when init ran (CLOCK_MONOTONIC)               */
  uint64_t taken;          /* bytes read so far, by every thread (locked)   */
  pthread_mutex_t lock;
} kg_ckpt_ratecap_t;

/*  Read KGUARD_TEST_READ_BPS and start the clock. */
void kg_ckpt_ratecap_init(kg_ckpt_ratecap_t *cap);

/*  Destroy the lock. */
void kg_ckpt_ratecap_fini(kg_ckpt_ratecap_t *cap);

/*  The most bytes one read should ask for under the cap (so that the rate
    is smooth), or want itself when there is no cap. */
size_t kg_ckpt_ratecap_piece(const kg_ckpt_ratecap_t *cap, size_t want);

/*  Count n more bytes read and wait until they are due. tick (may be
    NULL) is called with arg at least every 200 ms while waiting, so the
    caller can keep reporting progress. Returns at once when there is no
    cap. */
void kg_ckpt_ratecap_take(kg_ckpt_ratecap_t *cap, uint64_t n, void (*tick)(void *arg),
                          void *arg);

/*  CLOCK_MONOTONIC in nanoseconds. */
int64_t kg_ckpt_now_ns(void);

#endif
