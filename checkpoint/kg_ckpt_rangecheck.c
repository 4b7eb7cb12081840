/*  kg_ckpt_rangecheck: workers that pread and hash ranges of one file. */
#include "kg_ckpt_rangecheck.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kg_ckpt_manifest.h"
#include "kg_error.h"

typedef struct {
  uint64_t off, len;
  unsigned char digest[KG_CKPT_DIGEST_BYTES];
  const void *tag;
  long chunk;
} s_range_t;

struct _kg_ckpt_rangecheck_t {
  int fd;                          /* the caller's (borrowed)                 */
  kg_ckpt_ratecap_t *cap;          /* borrowed, or NULL                        */
  pthread_mutex_t lock;
  pthread_cond_t work;             /* workers: a range added, closed, stop     */
  pthread_cond_t idle;             /* the waiter: a range finished             */
  s_range_t *ranges;               /* every range added (under the lock)       */
  size_t count, alloc;
  size_t next;                     /* the next range to hand out               */
  size_t finished;                 /* ranges checked or skipped                */
  size_t fail;                     /* first failed range so far, or SIZE_MAX   */
  int fail_rc;
  uint64_t fail_got;
  uint64_t hashed;                 /* bytes hashed, all workers                */
  bool closed;                     /* no more ranges                           */
  bool stop;                       /* destroy: leave now                       */
  pthread_t threads[KG_CKPT_RANGECHECK_MAX_THREADS];
  int nthreads;
};

/*  A file description of its own for this worker (so that the kernel's
    read-ahead sees one sequential reader), of the very file fd is open on:
    reopened through /proc and checked by inode. The shared fd when that is
    not possible (pread needs no position, only read-ahead suffers). */
static int
s_own_fd(int fd, bool *own)
{
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  int mine = open(path, O_RDONLY | O_CLOEXEC);
  struct stat a, b;
  if (mine >= 0 && fstat(mine, &a) == 0 && fstat(fd, &b) == 0 && a.st_dev == b.st_dev
      && a.st_ino == b.st_ino) {
    posix_fadvise(mine, 0, 0, POSIX_FADV_SEQUENTIAL);
    *own = true;
    return mine;
  }
  if (mine >= 0)
    close(mine);
  *own = false;
  return fd;
}

/*  Hash range i (not under the lock). Returns 0, KG_ECKPT_CORRUPT,
    KG_ECKPT_TRUNC (with *got), -errno, or -ECANCELED when it no longer
    matters (stopping, or an earlier range failed). */
static int
s_check(kg_ckpt_rangecheck_t *self, size_t i, const s_range_t *r, int fd, unsigned char *buf,
        uint64_t *got)
{
  crypto_generichash_state st;
  crypto_generichash_init(&st, NULL, 0, KG_CKPT_DIGEST_BYTES);
  uint64_t done = 0;
  while (done < r->len) {
    uint64_t left = r->len - done;
    size_t want = left < KG_CKPT_RANGECHECK_PIECE ? (size_t) left : KG_CKPT_RANGECHECK_PIECE;
    if (self->cap)
      want = kg_ckpt_ratecap_piece(self->cap, want);
    ssize_t n = pread(fd, buf, want, (off_t) (r->off + done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return -errno;
    if (n == 0) {
      *got = done;
      return KG_ECKPT_TRUNC;
    }
    crypto_generichash_update(&st, buf, (size_t) n);
    done += (uint64_t) n;
    if (self->cap)
      kg_ckpt_ratecap_take(self->cap, (uint64_t) n, NULL, NULL);
    pthread_mutex_lock(&self->lock);
    self->hashed += (uint64_t) n;
    bool moot = self->stop || self->fail < i;
    pthread_mutex_unlock(&self->lock);
    if (moot)
      return -ECANCELED;
  }
  unsigned char mine[KG_CKPT_DIGEST_BYTES];
  crypto_generichash_final(&st, mine, sizeof mine);
  return sodium_memcmp(mine, r->digest, sizeof mine) == 0 ? 0 : KG_ECKPT_CORRUPT;
}

static void *
s_worker(void *arg)
{
  kg_ckpt_rangecheck_t *self = arg;
  unsigned char *buf = NULL;   /* allocated on the first range */
  bool own = false;
  int fd = -1;
  pthread_mutex_lock(&self->lock);
  while (!self->stop) {
    if (self->next == self->count) {
      if (self->closed)
        break;
      pthread_cond_wait(&self->work, &self->lock);
      continue;
    }
    size_t i = self->next++;
    s_range_t r = self->ranges[i];  /* the array may move while we hash */
    bool moot = self->fail < i;
    pthread_mutex_unlock(&self->lock);
    int rc = -ECANCELED;
    uint64_t got = r.len;
    if (!moot) {
      if (fd < 0)
        fd = s_own_fd(self->fd, &own);
      if (!buf)
        buf = malloc(KG_CKPT_RANGECHECK_PIECE);
      rc = buf ? s_check(self, i, &r, fd, buf, &got) : KG_ENOMEM;
    }
    pthread_mutex_lock(&self->lock);
    if (rc != 0 && rc != -ECANCELED && i < self->fail) {
      self->fail = i;
      self->fail_rc = rc;
      self->fail_got = got;
    }
    self->finished++;
    pthread_cond_broadcast(&self->idle);
  }
  pthread_mutex_unlock(&self->lock);
  if (own)
    close(fd);
  free(buf);
  return NULL;
}

/*  CPUs this process may run on, at least 1. */
static int
s_cpus(void)
{
  cpu_set_t set;
  int n = 0;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    n = CPU_COUNT(&set);
  if (n < 1) {
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    n = c > 0 ? (int) c : 1;
  }
  return n;
}

kg_ckpt_rangecheck_t *
kg_ckpt_rangecheck_new(int fd, kg_ckpt_ratecap_t *cap)
{
  kg_ckpt_rangecheck_t *self = calloc(1, sizeof *self);
  if (!self)
    return NULL;
  self->fd = fd;
  self->cap = cap;
  self->fail = SIZE_MAX;
  pthread_mutex_init(&self->lock, NULL);
  pthread_cond_init(&self->work, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&self->idle, &ca);
  pthread_condattr_destroy(&ca);
  int want = s_cpus();
  if (want > KG_CKPT_RANGECHECK_MAX_THREADS)
    want = KG_CKPT_RANGECHECK_MAX_THREADS;
  for (int i = 0; i < want; i++)
    if (pthread_create(&self->threads[self->nthreads], NULL, s_worker, self) == 0)
      self->nthreads++;
  if (self->nthreads == 0) {
    kg_ckpt_rangecheck_destroy(&self);
    return NULL;
  }
  return self;
}

void
kg_ckpt_rangecheck_destroy(kg_ckpt_rangecheck_t **p)
{
  kg_ckpt_rangecheck_t *self = *p;
  if (!self)
    return;
  pthread_mutex_lock(&self->lock);
  self->stop = true;
  pthread_cond_broadcast(&self->work);
  pthread_mutex_unlock(&self->lock);
  for (int i = 0; i < self->nthreads; i++)
    pthread_join(self->threads[i], NULL);
  pthread_cond_destroy(&self->idle);
  pthread_cond_destroy(&self->work);
  pthread_mutex_destroy(&self->lock);
  free(self->ranges);
  free(self);
  *p = NULL;
}

int
kg_ckpt_rangecheck_add(kg_ckpt_rangecheck_t *self, uint64_t off, uint64_t len,
                       const unsigned char *digest, const void *tag, long chunk)
{
  pthread_mutex_lock(&self->lock);
  if (self->count == self->alloc) {
    size_t alloc = self->alloc ? 2 * self->alloc : 64;
    s_range_t *r = realloc(self->ranges, alloc * sizeof *r);
    if (!r) {
      pthread_mutex_unlock(&self->lock);
      return KG_ENOMEM;
    }
    self->ranges = r;
    self->alloc = alloc;
  }
  s_range_t *r = &self->ranges[self->count++];
  r->off = off;
  r->len = len;
  memcpy(r->digest, digest, sizeof r->digest);
  r->tag = tag;
  r->chunk = chunk;
  pthread_cond_signal(&self->work);
  pthread_mutex_unlock(&self->lock);
  return 0;
}

void
kg_ckpt_rangecheck_close(kg_ckpt_rangecheck_t *self)
{
  pthread_mutex_lock(&self->lock);
  self->closed = true;
  pthread_cond_broadcast(&self->work);
  pthread_mutex_unlock(&self->lock);
}

uint64_t
kg_ckpt_rangecheck_hashed(kg_ckpt_rangecheck_t *self)
{
  pthread_mutex_lock(&self->lock);
  uint64_t h = self->hashed;
  pthread_mutex_unlock(&self->lock);
  return h;
}

int
kg_ckpt_rangecheck_wait(kg_ckpt_rangecheck_t *self, void (*tick)(void *arg, uint64_t hashed),
                        void *arg, kg_ckpt_rangecheck_bad_t *bad)
{
  kg_ckpt_rangecheck_close(self);
  struct timespec at;   /* the next tick (the idle condition's clock is monotonic) */
  clock_gettime(CLOCK_MONOTONIC, &at);
  at.tv_sec += 1;
  pthread_mutex_lock(&self->lock);
  while (self->finished < self->count) {
    if (pthread_cond_timedwait(&self->idle, &self->lock, &at) != ETIMEDOUT)
      continue;
    clock_gettime(CLOCK_MONOTONIC, &at);
    at.tv_sec += 1;
    if (tick) {
      uint64_t h = self->hashed;
      pthread_mutex_unlock(&self->lock);
      tick(arg, h);
      pthread_mutex_lock(&self->lock);
    }
  }
  int rc = 0;
  if (self->fail != SIZE_MAX) {
    const s_range_t *r = &self->ranges[self->fail];
    bad->tag = r->tag;
    bad->chunk = r->chunk;
    bad->got = self->fail_got;
    rc = self->fail_rc;
  }
  pthread_mutex_unlock(&self->lock);
  return rc;
}
