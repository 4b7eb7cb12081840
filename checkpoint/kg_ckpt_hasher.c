/*  kg_ckpt_hasher: a producer/consumer ring of blocks hashed in order. */
#include "kg_ckpt_hasher.h"

#include <assert.h>
#include <pthread.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "kg_ckpt_manifest.h"

struct _kg_ckpt_hasher_t {
  size_t slots;                             /* blocks in the ring */
  unsigned char **buf;                      /* slots blocks of KG_CKPT_HASHER_BLOCK */
  size_t *len;
  unsigned char **out;                      /* non-NULL: an end marker */
  uint64_t issued;                          /* slots handed out */
  uint64_t pushed;                          /* slots queued */
  uint64_t hashed;                          /* slots the thread is done with */
  bool stop;
  crypto_generichash_state state;           /* touched by the thread only */
  pthread_mutex_t lock;
  pthread_cond_t cond;
  pthread_t thread;
};

static void *
s_run(void *arg)
{
  kg_ckpt_hasher_t *self = arg;
  pthread_mutex_lock(&self->lock);
  while (1) {
    while (self->hashed == self->pushed && !self->stop)
      pthread_cond_wait(&self->cond, &self->lock);
    if (self->hashed == self->pushed)
      break;
    size_t i = self->hashed % self->slots;
    pthread_mutex_unlock(&self->lock);
    if (self->out[i]) {
      crypto_generichash_final(&self->state, self->out[i], KG_CKPT_DIGEST_BYTES);
      crypto_generichash_init(&self->state, NULL, 0, KG_CKPT_DIGEST_BYTES);
    } else {
      crypto_generichash_update(&self->state, self->buf[i], self->len[i]);
    }
    pthread_mutex_lock(&self->lock);
    self->hashed++;
    pthread_cond_broadcast(&self->cond);
  }
  pthread_mutex_unlock(&self->lock);
  return NULL;
}

kg_ckpt_hasher_t *
kg_ckpt_hasher_new(void)
{
  return kg_ckpt_hasher_new_depth(KG_CKPT_HASHER_SLOTS);
}

static void
s_free_ring(kg_ckpt_hasher_t *self)
{
  for (size_t i = 0; self->buf && i < self->slots; i++)
    free(self->buf[i]);
  free(self->buf);
  free(self->len);
  free(self->out);
}

kg_ckpt_hasher_t *
kg_ckpt_hasher_new_depth(size_t slots)
{
  kg_ckpt_hasher_t *self = calloc(1, sizeof *self);
  if (!self)
    return NULL;
  self->slots = slots ? slots : 1;
  self->buf = calloc(self->slots, sizeof *self->buf);
  self->len = calloc(self->slots, sizeof *self->len);
  self->out = calloc(self->slots, sizeof *self->out);
  if (!self->buf || !self->len || !self->out)
    goto fail;
  /* Blocks over malloc's mmap threshold: pages count only once written,
     so a deep ring costs memory only when the data fills it. */
  for (size_t i = 0; i < self->slots; i++)
    if (!(self->buf[i] = malloc(KG_CKPT_HASHER_BLOCK)))
      goto fail;
  crypto_generichash_init(&self->state, NULL, 0, KG_CKPT_DIGEST_BYTES);
  pthread_mutex_init(&self->lock, NULL);
  pthread_cond_init(&self->cond, NULL);
  if (pthread_create(&self->thread, NULL, s_run, self) != 0) {
    pthread_mutex_destroy(&self->lock);
    pthread_cond_destroy(&self->cond);
    goto fail;
  }
  return self;
fail:
  s_free_ring(self);
  free(self);
  return NULL;
}

void
kg_ckpt_hasher_destroy(kg_ckpt_hasher_t **p)
{
  if (!p || !*p)
    return;
  kg_ckpt_hasher_t *self = *p;
  pthread_mutex_lock(&self->lock);
  self->stop = true;
  pthread_cond_broadcast(&self->cond);
  pthread_mutex_unlock(&self->lock);
  pthread_join(self->thread, NULL);
  pthread_mutex_destroy(&self->lock);
  pthread_cond_destroy(&self->cond);
  s_free_ring(self);
  sodium_memzero(&self->state, sizeof self->state);
  free(self);
  *p = NULL;
}

unsigned char *
kg_ckpt_hasher_slot(kg_ckpt_hasher_t *self)
{
  assert(self->issued == self->pushed); /* the previous slot was pushed */
  pthread_mutex_lock(&self->lock);
  /* Slot issued % slots last held block issued - SLOTS: wait until hashed. */
  while (self->issued - self->hashed >= self->slots)
    pthread_cond_wait(&self->cond, &self->lock);
  pthread_mutex_unlock(&self->lock);
  return self->buf[self->issued++ % self->slots];
}

static void
s_queue(kg_ckpt_hasher_t *self, size_t len, unsigned char *out)
{
  assert(self->issued == self->pushed + 1); /* a slot was taken */
  size_t i = self->pushed % self->slots;
  self->len[i] = len;
  self->out[i] = out;
  pthread_mutex_lock(&self->lock);
  self->pushed++;
  pthread_cond_broadcast(&self->cond);
  pthread_mutex_unlock(&self->lock);
}

void
kg_ckpt_hasher_push(kg_ckpt_hasher_t *self, size_t len)
{
  assert(len <= KG_CKPT_HASHER_BLOCK);
  s_queue(self, len, NULL);
}

void
kg_ckpt_hasher_end(kg_ckpt_hasher_t *self, unsigned char *out)
{
  assert(out);
  kg_ckpt_hasher_slot(self);
  s_queue(self, 0, out);
}

void
kg_ckpt_hasher_wait(kg_ckpt_hasher_t *self)
{
  pthread_mutex_lock(&self->lock);
  while (self->hashed != self->pushed)
    pthread_cond_wait(&self->cond, &self->lock);
  pthread_mutex_unlock(&self->lock);
}
