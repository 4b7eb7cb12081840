/*  kg_ckpt_ratecap: the test hook's read-rate cap across threads. */
#include "kg_ckpt_ratecap.h"

#include <stdlib.h>
#include <time.h>

#include "kg_ckpt_verify.h"

int64_t
kg_ckpt_now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void
kg_ckpt_ratecap_init(kg_ckpt_ratecap_t *cap)
{
  cap->bps = 0;
  cap->taken = 0;
  cap->start_ns = kg_ckpt_now_ns();
  pthread_mutex_init(&cap->lock, NULL);
  const char *bps = getenv(KG_CKPT_TEST_READ_BPS_ENV);
  if (bps && *bps) {
    char *end;
    /* strtoull takes "-1" for a huge cap: only digits are a rate. */
    unsigned long long v = bps[0] >= '0' && bps[0] <= '9' ? strtoull(bps, &end, 10) : 0;
    if (v > 0 && *end == '\0')
      cap->bps = v;
  }
}

void
kg_ckpt_ratecap_fini(kg_ckpt_ratecap_t *cap)
{
  pthread_mutex_destroy(&cap->lock);
}

size_t
kg_ckpt_ratecap_piece(const kg_ckpt_ratecap_t *cap, size_t want)
{
  if (cap->bps && want > cap->bps / 8 + 4096)
    return (size_t) (cap->bps / 8 + 4096);
  return want;
}

void
kg_ckpt_ratecap_take(kg_ckpt_ratecap_t *cap, uint64_t n, void (*tick)(void *arg), void *arg)
{
  if (!cap->bps)
    return;
  pthread_mutex_lock(&cap->lock);
  cap->taken += n;
  int64_t due = cap->start_ns + (int64_t) ((double) cap->taken * 1e9 / (double) cap->bps);
  pthread_mutex_unlock(&cap->lock);
  int64_t now;
  while ((now = kg_ckpt_now_ns()) < due) {
    int64_t left = due - now;
    if (left > 200000000LL)
      left = 200000000LL; /* keep reporting progress while slowed */
    struct timespec ts = {.tv_sec = left / 1000000000LL, .tv_nsec = left % 1000000000LL};
    nanosleep(&ts, NULL);
    if (tick)
      tick(arg);
  }
}
