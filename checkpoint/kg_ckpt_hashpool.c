/*  kg_ckpt_hashpool: workers hashing files as they are written. */
#include "kg_ckpt_hashpool.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kg_ckpt_hasher.h"
#include "kg_ckpt_manifest.h"
#include "kg_error.h"

struct _kg_ckpt_hashjob_t {
  int fd;                  /* the pool's duplicate; -1 once closed        */
  uint64_t size;
  uint64_t written;        /* readable so far (under the lock)           */
  unsigned char digest[KG_CKPT_DIGEST_BYTES];
  const void *tag;
  int result;              /* 0, KG_ECKPT_CORRUPT or -errno, once done   */
  bool done;
};

struct _kg_ckpt_hashpool_t {
  pthread_mutex_t lock;
  pthread_cond_t work;     /* workers: a new job, progress, or stop      */
  pthread_cond_t idle;     /* producer: a job done                       */
  kg_ckpt_hashjob_t **jobs;
  size_t njobs, cap;
  size_t taken;            /* jobs handed to a worker                    */
  size_t ndone;
  bool closing;            /* no more jobs: workers leave when idle      */
  bool abort;              /* stop now, results no longer wanted         */
  pthread_t threads[KG_CKPT_HASHPOOL_MAX_THREADS];
  int nthreads;
};

/*  Hash one job, following its writer. Called without the lock. */
static int
s_hash(kg_ckpt_hashpool_t *self, kg_ckpt_hashjob_t *job, unsigned char *buf)
{
  crypto_generichash_state st;
  crypto_generichash_init(&st, NULL, 0, KG_CKPT_DIGEST_BYTES);
  uint64_t off = 0;
  while (off < job->size) {
    pthread_mutex_lock(&self->lock);
    while (job->written == off && !self->abort)
      pthread_cond_wait(&self->work, &self->lock);
    uint64_t avail = job->written;
    bool stop = self->abort;
    pthread_mutex_unlock(&self->lock);
    if (stop)
      return -ECANCELED;
    size_t want = avail - off < KG_CKPT_HASHER_BLOCK ? (size_t) (avail - off)
                                                     : KG_CKPT_HASHER_BLOCK;
    ssize_t n = pread(job->fd, buf, want, (off_t) off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return n < 0 ? -errno : -EIO;   /* shorter than what was written */
    crypto_generichash_update(&st, buf, (size_t) n);
    off += (uint64_t) n;
  }
  unsigned char got[KG_CKPT_DIGEST_BYTES];
  crypto_generichash_final(&st, got, sizeof got);
  return sodium_memcmp(got, job->digest, sizeof got) == 0 ? 0 : KG_ECKPT_CORRUPT;
}

static void *
s_worker(void *arg)
{
  kg_ckpt_hashpool_t *self = arg;
  unsigned char *buf = malloc(KG_CKPT_HASHER_BLOCK);
  pthread_mutex_lock(&self->lock);
  while (!self->abort) {
    if (self->taken == self->njobs) {
      if (self->closing)
        break;
      pthread_cond_wait(&self->work, &self->lock);
      continue;
    }
    kg_ckpt_hashjob_t *job = self->jobs[self->taken++];
    pthread_mutex_unlock(&self->lock);
    int rc = buf ? s_hash(self, job, buf) : -ENOMEM;
    close(job->fd);
    pthread_mutex_lock(&self->lock);
    job->fd = -1;
    job->result = rc;
    job->done = true;
    self->ndone++;
    pthread_cond_broadcast(&self->idle);
  }
  pthread_mutex_unlock(&self->lock);
  free(buf);
  return NULL;
}

kg_ckpt_hashpool_t *
kg_ckpt_hashpool_new(void)
{
  kg_ckpt_hashpool_t *self = calloc(1, sizeof *self);
  if (!self)
    return NULL;
  pthread_mutex_init(&self->lock, NULL);
  pthread_cond_init(&self->work, NULL);
  pthread_cond_init(&self->idle, NULL);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int want = cpus < 1 ? 1 : cpus > KG_CKPT_HASHPOOL_MAX_THREADS ? KG_CKPT_HASHPOOL_MAX_THREADS
                                                                : (int) cpus;
  for (int i = 0; i < want; i++)
    if (pthread_create(&self->threads[self->nthreads], NULL, s_worker, self) == 0)
      self->nthreads++;
  if (self->nthreads == 0) {
    kg_ckpt_hashpool_destroy(&self);
    return NULL;
  }
  return self;
}

static void
s_stop(kg_ckpt_hashpool_t *self, bool abort)
{
  pthread_mutex_lock(&self->lock);
  self->closing = true;
  self->abort = self->abort || abort;
  pthread_cond_broadcast(&self->work);
  pthread_mutex_unlock(&self->lock);
  for (int i = 0; i < self->nthreads; i++)
    pthread_join(self->threads[i], NULL);
  self->nthreads = 0;
}

void
kg_ckpt_hashpool_destroy(kg_ckpt_hashpool_t **p)
{
  kg_ckpt_hashpool_t *self = *p;
  if (!self)
    return;
  s_stop(self, true);
  for (size_t i = 0; i < self->njobs; i++) {
    if (self->jobs[i]->fd >= 0)   /* never taken by a worker */
      close(self->jobs[i]->fd);
    free(self->jobs[i]);
  }
  free(self->jobs);
  pthread_cond_destroy(&self->idle);
  pthread_cond_destroy(&self->work);
  pthread_mutex_destroy(&self->lock);
  free(self);
  *p = NULL;
}

kg_ckpt_hashjob_t *
kg_ckpt_hashpool_add(kg_ckpt_hashpool_t *self, int fd, uint64_t size,
                     const unsigned char *digest, const void *tag)
{
  kg_ckpt_hashjob_t *job = calloc(1, sizeof *job);
  if (!job)
    return NULL;
  job->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (job->fd < 0) {
    free(job);
    return NULL;
  }
  job->size = size;
  job->tag = tag;
  memcpy(job->digest, digest, sizeof job->digest);
  pthread_mutex_lock(&self->lock);
  while (self->njobs - self->ndone >= KG_CKPT_HASHPOOL_OPEN)
    pthread_cond_wait(&self->idle, &self->lock);
  if (self->njobs == self->cap) {
    size_t cap = self->cap ? 2 * self->cap : 16;
    kg_ckpt_hashjob_t **jobs = realloc(self->jobs, cap * sizeof *jobs);
    if (!jobs) {
      pthread_mutex_unlock(&self->lock);
      close(job->fd);
      free(job);
      errno = ENOMEM;
      return NULL;
    }
    self->jobs = jobs;
    self->cap = cap;
  }
  self->jobs[self->njobs++] = job;
  pthread_cond_broadcast(&self->work);
  pthread_mutex_unlock(&self->lock);
  return job;
}

void
kg_ckpt_hashpool_progress(kg_ckpt_hashpool_t *self, kg_ckpt_hashjob_t *job, uint64_t written)
{
  pthread_mutex_lock(&self->lock);
  job->written = written;
  pthread_cond_broadcast(&self->work);
  pthread_mutex_unlock(&self->lock);
}

int
kg_ckpt_hashpool_finish(kg_ckpt_hashpool_t *self, const void **bad)
{
  s_stop(self, false);
  /* In the order added: the same member a one-at-a-time check would name. */
  for (size_t i = 0; i < self->njobs; i++) {
    kg_ckpt_hashjob_t *job = self->jobs[i];
    int rc = job->done ? job->result : -ECANCELED;
    if (rc != 0) {
      *bad = job->tag;
      return rc;
    }
  }
  return 0;
}
