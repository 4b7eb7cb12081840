/*  kg_replay: the time-bounded signature history and the per-session
    clocks (kg_replay.h).

    Signatures: a ring of (MAC, keep-until) in arrival order, grown by
    doubling up to max_macs, plus an open-addressing set of ring indexes
    (linear probing, backward-shift deletion; the MAC's first 8 bytes are
    its hash: nobody can choose them without the key). Entries leave from
    the ring's head once their mapped date is out of the window, or, when
    the ring is full at its bound, early (raising the floor).

    Sessions: a growable array of entries with an open-addressing index
    (SipHash of the id under a random key, so ids cannot be chosen to
    collide), and a least-recently-used list for eviction at the bound.
*/
#include "kg_replay.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "kg_error.h"

#define S_NONE UINT32_MAX
#define S_FIRST_MACS 256
#define S_FIRST_SESSIONS 16

typedef struct {
  unsigned char mac[KG_REPLAY_MAC_BYTES];
  int64_t keep;                 /*  its date on kguard's clock: kept while
                                    within the window                       */
} s_mac_t;

typedef struct {
  char *id;                     /*  owned; NULL: a free entry               */
  uint64_t hash;
  int64_t offset;               /*  kguard's clock - its dates (min seen)   */
  unsigned long count;          /*  accepted messages                       */
  bool kernel;                  /*  the inner kernel signs with it          */
  uint32_t prev, next;          /*  LRU list (prev: more recent), or free list */
} s_sess_t;

struct kg_replay_t {
  int64_t window;
  size_t max_macs, max_sessions;
  int64_t floor;
  /* signatures */
  s_mac_t *ring;
  size_t cap, head, count;
  uint32_t *table;              /*  ring index + 1; 0 empty                 */
  size_t tmask;
  /* sessions */
  s_sess_t *sess;
  size_t scap, scount;
  uint32_t *stable;             /*  entry index + 1; 0 empty                */
  size_t smask;
  uint32_t lru_head, lru_tail, free_head;
  unsigned char skey[crypto_shorthash_KEYBYTES];
};

kg_replay_t *
kg_replay_new(int64_t window_ms, size_t max_macs, size_t max_sessions)
{
  if (window_ms <= 0 || max_macs == 0 || max_sessions == 0 || max_macs >= UINT32_MAX / 4
      || max_sessions >= UINT32_MAX / 4 || sodium_init() < 0)
    return NULL;
  kg_replay_t *self = calloc(1, sizeof *self);
  if (!self)
    return NULL;
  self->window = window_ms;
  self->max_macs = max_macs;
  self->max_sessions = max_sessions;
  self->lru_head = self->lru_tail = self->free_head = S_NONE;
  randombytes_buf(self->skey, sizeof self->skey);
  return self;
}

void
kg_replay_destroy(kg_replay_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_replay_t *self = *self_p;
  for (size_t i = 0; i < self->scap; i++)
    free(self->sess[i].id);
  free(self->sess);
  free(self->stable);
  free(self->ring);
  free(self->table);
  free(self);
  *self_p = NULL;
}

/* ------------------------------------------------------------------------
   Signatures. */

static size_t
s_mac_slot(const kg_replay_t *self, const unsigned char *mac)
{
  uint64_t h;
  memcpy(&h, mac, sizeof h);
  return (size_t) h & self->tmask;
}

static bool
s_mac_seen(const kg_replay_t *self, const unsigned char *mac)
{
  if (!self->table)
    return false;
  for (size_t i = s_mac_slot(self, mac);; i = (i + 1) & self->tmask) {
    uint32_t v = self->table[i];
    if (v == 0)
      return false;
    if (sodium_memcmp(self->ring[v - 1].mac, mac, KG_REPLAY_MAC_BYTES) == 0)
      return true;
  }
}

static void
s_mac_link(kg_replay_t *self, size_t idx)
{
  size_t i = s_mac_slot(self, self->ring[idx].mac);
  while (self->table[i] != 0)
    i = (i + 1) & self->tmask;
  self->table[i] = (uint32_t) idx + 1;
}

/*  Remove ring index idx from the set, shifting the rest of its probe run
    back so that lookups stay correct. */
static void
s_mac_unlink(kg_replay_t *self, size_t idx)
{
  size_t mask = self->tmask;
  size_t i = s_mac_slot(self, self->ring[idx].mac);
  while (self->table[i] != idx + 1)
    i = (i + 1) & mask;
  for (size_t j = (i + 1) & mask;; j = (j + 1) & mask) {
    uint32_t v = self->table[j];
    if (v == 0)
      break;
    size_t home = s_mac_slot(self, self->ring[v - 1].mac);
    bool in_range = i <= j ? (home > i && home <= j) : (home > i || home <= j);
    if (!in_range) {
      self->table[i] = v;
      i = j;
    }
  }
  self->table[i] = 0;
}

/*  The oldest signature leaves. */
static void
s_mac_pop(kg_replay_t *self)
{
  s_mac_unlink(self, self->head);
  self->head = (self->head + 1) % self->cap;
  self->count--;
}

/*  Room for one more signature: a bigger ring, or (at the bound) the
    oldest entry leaves and the floor rises to its date. */
static int
s_mac_room(kg_replay_t *self)
{
  if (self->count < self->cap)
    return 0;
  if (self->cap >= self->max_macs) {
    if (self->ring[self->head].keep > self->floor)
      self->floor = self->ring[self->head].keep;
    s_mac_pop(self);
    return 0;
  }
  size_t cap = self->cap ? self->cap * 2 : S_FIRST_MACS;
  if (cap > self->max_macs)
    cap = self->max_macs;
  size_t tsize = 16;
  while (tsize < cap * 2)
    tsize *= 2;
  s_mac_t *ring = malloc(cap * sizeof *ring);
  uint32_t *table = calloc(tsize, sizeof *table);
  if (!ring || !table) {
    free(ring);
    free(table);
    return KG_ENOMEM;
  }
  for (size_t i = 0; i < self->count; i++)   /* oldest first, from index 0 */
    ring[i] = self->ring[(self->head + i) % self->cap];
  free(self->ring);
  free(self->table);
  self->ring = ring;
  self->table = table;
  self->tmask = tsize - 1;
  self->cap = cap;
  self->head = 0;
  for (size_t i = 0; i < self->count; i++)
    s_mac_link(self, i);
  return 0;
}

/*  Forget signatures whose date left the window (their date now refuses a
    replay on its own). Arrival order is nearly date order; an entry kept
    behind an older-dated head is only kept longer. */
static void
s_mac_expire(kg_replay_t *self, int64_t now)
{
  while (self->count && self->ring[self->head].keep < now - self->window)
    s_mac_pop(self);
}

/* ------------------------------------------------------------------------
   Sessions. */

static uint64_t
s_hash(const kg_replay_t *self, const char *id)
{
  unsigned char out[crypto_shorthash_BYTES];
  crypto_shorthash(out, (const unsigned char *) id, strlen(id), self->skey);
  uint64_t h;
  memcpy(&h, out, sizeof h);
  return h;
}

/*  The entry of id, or S_NONE. */
static uint32_t
s_sess_find(const kg_replay_t *self, const char *id, uint64_t h)
{
  if (!self->stable)
    return S_NONE;
  for (size_t i = (size_t) h & self->smask;; i = (i + 1) & self->smask) {
    uint32_t v = self->stable[i];
    if (v == 0)
      return S_NONE;
    const s_sess_t *e = &self->sess[v - 1];
    if (e->hash == h && strcmp(e->id, id) == 0)
      return v - 1;
  }
}

static void
s_sess_link(kg_replay_t *self, uint32_t idx)
{
  size_t i = (size_t) self->sess[idx].hash & self->smask;
  while (self->stable[i] != 0)
    i = (i + 1) & self->smask;
  self->stable[i] = idx + 1;
}

static void
s_sess_unlink(kg_replay_t *self, uint32_t idx)
{
  size_t mask = self->smask;
  size_t i = (size_t) self->sess[idx].hash & mask;
  while (self->stable[i] != idx + 1)
    i = (i + 1) & mask;
  for (size_t j = (i + 1) & mask;; j = (j + 1) & mask) {
    uint32_t v = self->stable[j];
    if (v == 0)
      break;
    size_t home = (size_t) self->sess[v - 1].hash & mask;
    bool in_range = i <= j ? (home > i && home <= j) : (home > i || home <= j);
    if (!in_range) {
      self->stable[i] = v;
      i = j;
    }
  }
  self->stable[i] = 0;
}

static void
s_lru_remove(kg_replay_t *self, uint32_t idx)
{
  s_sess_t *e = &self->sess[idx];
  if (e->prev != S_NONE)
    self->sess[e->prev].next = e->next;
  else
    self->lru_head = e->next;
  if (e->next != S_NONE)
    self->sess[e->next].prev = e->prev;
  else
    self->lru_tail = e->prev;
}

static void
s_lru_front(kg_replay_t *self, uint32_t idx)
{
  s_sess_t *e = &self->sess[idx];
  e->prev = S_NONE;
  e->next = self->lru_head;
  if (self->lru_head != S_NONE)
    self->sess[self->lru_head].prev = idx;
  self->lru_head = idx;
  if (self->lru_tail == S_NONE)
    self->lru_tail = idx;
}

/*  A bigger array and index (entries keep their indexes). */
static int
s_sess_grow(kg_replay_t *self)
{
  size_t cap = self->scap ? self->scap * 2 : S_FIRST_SESSIONS;
  if (cap > self->max_sessions)
    cap = self->max_sessions;
  size_t tsize = 16;
  while (tsize < cap * 2)
    tsize *= 2;
  s_sess_t *sess = realloc(self->sess, cap * sizeof *sess);
  if (!sess)
    return KG_ENOMEM;
  self->sess = sess;
  uint32_t *stable = calloc(tsize, sizeof *stable);
  if (!stable)
    return KG_ENOMEM;
  for (size_t i = self->scap; i < cap; i++) {   /* new entries join the free list */
    sess[i] = (s_sess_t) {.id = NULL, .prev = S_NONE, .next = self->free_head};
    self->free_head = (uint32_t) i;
  }
  self->scap = cap;
  free(self->stable);
  self->stable = stable;
  self->smask = tsize - 1;
  for (size_t i = 0; i < cap; i++)
    if (sess[i].id)
      s_sess_link(self, (uint32_t) i);
  return 0;
}

/*  A new entry for id (the least recently seen one leaves at the bound),
    or S_NONE on allocation failure. */
static uint32_t
s_sess_add(kg_replay_t *self, const char *id, uint64_t h)
{
  char *copy = strdup(id);
  if (!copy)
    return S_NONE;
  if (self->free_head == S_NONE && self->scap < self->max_sessions && s_sess_grow(self) != 0) {
    free(copy);
    return S_NONE;
  }
  if (self->free_head == S_NONE) {   /* at the bound: the oldest leaves */
    uint32_t old = self->lru_tail;
    s_lru_remove(self, old);
    s_sess_unlink(self, old);
    free(self->sess[old].id);
    self->sess[old].id = NULL;
    self->sess[old].next = self->free_head;
    self->free_head = old;
    self->scount--;
  }
  uint32_t idx = self->free_head;
  self->free_head = self->sess[idx].next;
  self->sess[idx] = (s_sess_t) {.id = copy, .hash = h};
  s_sess_link(self, idx);
  s_lru_front(self, idx);
  self->scount++;
  return idx;
}

void
kg_replay_kernel_session(kg_replay_t *self, const char *session)
{
  if (!session || !*session)
    return;
  uint64_t h = s_hash(self, session);
  uint32_t idx = s_sess_find(self, session, h);
  if (idx == S_NONE)
    idx = s_sess_add(self, session, h);
  if (idx == S_NONE)
    return;
  self->sess[idx].kernel = true;
}

/* ------------------------------------------------------------------------
   The check. */

int
kg_replay_check(kg_replay_t *self, const unsigned char mac[KG_REPLAY_MAC_BYTES],
                const char *session, int64_t date_ms, int64_t now_ms)
{
  if (!session)
    session = "";
  uint64_t h = s_hash(self, session);
  uint32_t idx = s_sess_find(self, session, h);
  if (idx != S_NONE && self->sess[idx].kernel)
    return KG_EREFLECTED;
  if (date_ms <= 0)
    return KG_ENODATE;
  s_mac_expire(self, now_ms);
  /* its date on kguard's clock: by its session's clock, or (a first
     message) now, which also sets that clock */
  int64_t mapped = idx != S_NONE ? date_ms + self->sess[idx].offset : now_ms;
  if (mapped < now_ms - self->window || mapped <= self->floor)
    return KG_EEXPIRED;
  if (s_mac_seen(self, mac))
    return KG_EREPLAY;
  if (idx == S_NONE && (idx = s_sess_add(self, session, h)) == S_NONE)
    return KG_ENOMEM;
  int rc = s_mac_room(self);
  if (rc != 0)
    return rc;
  size_t at = (self->head + self->count) % self->cap;
  memcpy(self->ring[at].mac, mac, KG_REPLAY_MAC_BYTES);
  self->ring[at].keep = mapped;
  s_mac_link(self, at);
  self->count++;
  s_sess_t *e = &self->sess[idx];
  int64_t offset = now_ms - date_ms;
  if (e->count == 0 || offset < e->offset)
    e->offset = offset;
  e->count++;
  s_lru_remove(self, idx);
  s_lru_front(self, idx);
  return 0;
}

bool
kg_replay_clock(const kg_replay_t *self, const char *session, int64_t *offset_ms,
                unsigned long *count)
{
  if (!session)
    return false;
  uint32_t idx = s_sess_find(self, session, s_hash(self, session));
  if (idx == S_NONE || self->sess[idx].count == 0)
    return false;
  *offset_ms = self->sess[idx].offset;
  *count = self->sess[idx].count;
  return true;
}

size_t
kg_replay_macs(const kg_replay_t *self)
{
  return self->count;
}

size_t
kg_replay_sessions(const kg_replay_t *self)
{
  return self->scount;
}

size_t
kg_replay_memory(const kg_replay_t *self)
{
  size_t n = sizeof *self + self->cap * sizeof(s_mac_t)
             + (self->table ? (self->tmask + 1) * sizeof(uint32_t) : 0)
             + self->scap * sizeof(s_sess_t)
             + (self->stable ? (self->smask + 1) * sizeof(uint32_t) : 0);
  for (size_t i = 0; i < self->scap; i++)
    if (self->sess[i].id)
      n += strlen(self->sess[i].id) + 1;
  return n;
}

int64_t
kg_replay_floor(const kg_replay_t *self)
{
  return self->floor;
}
