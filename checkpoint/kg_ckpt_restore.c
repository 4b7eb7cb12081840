/*  kg_ckpt_restore: verify-while-extracting into a temporary directory. */
#include "kg_ckpt_restore.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_ckpt_util.h"
#include "kg_error.h"

/*  Writing runs in its own thread so that on two or more cores the disk
    writes overlap with decompression and hashing: restore then costs about
    what `tar -xf` costs. Blocks are copied (libarchive reuses its buffer)
    into a small ring, which bounds memory at RING_SLOTS * SLOT_BYTES. */
#define RING_SLOTS 4
#define SLOT_BYTES (1 << 20)

typedef struct {
  unsigned char *buf;  /* SLOT_BYTES */
  size_t len;          /* bytes in buf */
  int fd;              /* file to write to */
  bool close_after;    /* close fd once written */
} s_slot_t;

typedef struct {
  int rootfd;                  /* the temporary directory */
  int fd;                      /* member being written, or -1 */
  s_slot_t slots[RING_SLOTS];  /* the ring */
  size_t head, tail, used;     /* producer index, consumer index, count */
  bool fill;                   /* slots[head] is partly filled */
  bool stop;                   /* no more work: writer exits when drained */
  int err;                     /* first write/close error */
  pthread_mutex_t lock;
  pthread_cond_t cond;
  pthread_t writer;
  bool started;
} s_sink_t;

static int
s_write_all(int fd, const unsigned char *p, size_t len)
{
  while (len > 0) {
    ssize_t n = write(fd, p, len);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return -errno;
    }
    p += n;
    len -= (size_t) n;
  }
  return 0;
}

static void *
s_writer(void *arg)
{
  s_sink_t *s = arg;
  pthread_mutex_lock(&s->lock);
  while (1) {
    while (s->used == 0 && !s->stop)
      pthread_cond_wait(&s->cond, &s->lock);
    if (s->used == 0 && s->stop)
      break;
    s_slot_t *slot = &s->slots[s->tail];
    pthread_mutex_unlock(&s->lock);
    int rc = slot->len ? s_write_all(slot->fd, slot->buf, slot->len) : 0;
    if (slot->close_after && close(slot->fd) < 0 && rc == 0)
      rc = -errno;
    pthread_mutex_lock(&s->lock);
    if (rc < 0 && s->err == 0)
      s->err = rc;
    s->tail = (s->tail + 1) % RING_SLOTS;
    s->used--;
    pthread_cond_broadcast(&s->cond);
  }
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

/*  Hand the slot at head to the writer and wait for a free one. */
static int
s_push(s_sink_t *s, bool close_after)
{
  pthread_mutex_lock(&s->lock);
  s_slot_t *slot = &s->slots[s->head];
  slot->fd = s->fd;
  slot->close_after = close_after;
  if (!s->fill)
    slot->len = 0;
  s->fill = false;
  s->head = (s->head + 1) % RING_SLOTS;
  s->used++;
  pthread_cond_broadcast(&s->cond);
  while (s->used == RING_SLOTS && s->err == 0)
    pthread_cond_wait(&s->cond, &s->lock);
  int rc = s->err;
  pthread_mutex_unlock(&s->lock);
  return rc;
}

/*  Stop the writer after it drained the ring; return its first error. */
static int
s_finish(s_sink_t *s)
{
  if (!s->started)
    return 0;
  pthread_mutex_lock(&s->lock);
  s->stop = true;
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->lock);
  pthread_join(s->writer, NULL);
  s->started = false;
  /* A member cut short by an error is still open on our side. */
  if (s->fd >= 0)
    close(s->fd);
  s->fd = -1;
  return s->err;
}

/*  Open (creating) each directory of path's parent under rootfd without
    following links; returns the parent's fd and sets *leaf. */
static int
s_open_parent(int rootfd, const char *path, const char **leaf)
{
  int fd = dup(rootfd);
  if (fd < 0)
    return -errno;
  const char *comp = path;
  const char *slash;
  while ((slash = strchr(comp, '/'))) {
    char name[256];
    size_t n = (size_t) (slash - comp);
    if (n >= sizeof name) {
      close(fd);
      return -ENAMETOOLONG;
    }
    memcpy(name, comp, n);
    name[n] = '\0';
    if (mkdirat(fd, name, 0755) < 0 && errno != EEXIST) {
      int e = -errno;
      close(fd);
      return e;
    }
    int sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int e = -errno;
    close(fd);
    if (sub < 0)
      return e;
    fd = sub;
    comp = slash + 1;
  }
  *leaf = comp;
  return fd;
}

static int
s_begin(void *arg, const kg_ckpt_member_t *m)
{
  s_sink_t *s = arg;
  const char *leaf;
  int dirfd = s_open_parent(s->rootfd, m->path, &leaf);
  if (dirfd < 0)
    return dirfd;
  s->fd = openat(dirfd, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  int e = -errno;
  close(dirfd);
  return s->fd < 0 ? e : 0;
}

static int
s_data(void *arg, const void *buf, size_t len)
{
  s_sink_t *s = arg;
  const unsigned char *p = buf;
  while (len > 0) {
    s_slot_t *slot = &s->slots[s->head];
    if (!s->fill) {
      slot->len = 0;
      s->fill = true;
    }
    size_t n = SLOT_BYTES - slot->len < len ? SLOT_BYTES - slot->len : len;
    memcpy(slot->buf + slot->len, p, n);
    slot->len += n;
    p += n;
    len -= n;
    if (slot->len == SLOT_BYTES) {
      int rc = s_push(s, false);
      if (rc < 0)
        return rc;
    }
  }
  return 0;
}

static int
s_end(void *arg, const kg_ckpt_member_t *m)
{
  s_sink_t *s = arg;
  int rc = s_push(s, true); /* the rest of the data, then close */
  s->fd = -1;
  return rc;
}

static int
s_sink_init(s_sink_t *s, int rootfd)
{
  memset(s, 0, sizeof *s);
  s->rootfd = rootfd;
  s->fd = -1;
  for (int i = 0; i < RING_SLOTS; i++)
    if (!(s->slots[i].buf = malloc(SLOT_BYTES)))
      return KG_ENOMEM;
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->cond, NULL);
  if (pthread_create(&s->writer, NULL, s_writer, s) != 0)
    return KG_EINTERNAL;
  s->started = true;
  return 0;
}

static void
s_sink_free(s_sink_t *s)
{
  s_finish(s);
  pthread_mutex_destroy(&s->lock);
  pthread_cond_destroy(&s->cond);
  for (int i = 0; i < RING_SLOTS; i++)
    free(s->slots[i].buf);
}

int
kg_ckpt_restore(const char *archive, const char *dest, const unsigned char *pk,
                kg_ckpt_report_t *report)
{
  memset(report, 0, sizeof *report);
  char parent[PATH_MAX], tmp[PATH_MAX + 64], dbuf[PATH_MAX];
  struct stat st;
  /* "out/" and "out" name the same directory. */
  size_t dl = strlen(dest);
  while (dl > 1 && dest[dl - 1] == '/')
    dl--;
  if (dl == 0 || dl >= sizeof dbuf) {
    snprintf(report->reason, sizeof report->reason, "bad destination path");
    return report->rc = KG_EUSAGE;
  }
  memcpy(dbuf, dest, dl);
  dbuf[dl] = '\0';
  dest = dbuf;
  if (lstat(dest, &st) == 0) {
    snprintf(report->reason, sizeof report->reason, "destination '%.300s' already exists", dest);
    return report->rc = KG_EEXISTS;
  }
  if (kg_ckpt_dirname(dest, parent, sizeof parent) < 0) {
    snprintf(report->reason, sizeof report->reason, "destination path too long");
    return report->rc = KG_ETOOBIG;
  }
  /* Create missing parents (private: restored state may be sensitive). */
  for (char *p = parent + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    mkdir(parent, 0700);
    *p = '/';
  }
  mkdir(parent, 0700);
  size_t dlen = strlen(dest);
  while (dlen > 1 && dest[dlen - 1] == '/')
    dlen--;
  const char *base = dest + dlen;
  while (base > dest && base[-1] != '/')
    base--;
  snprintf(tmp, sizeof tmp, "%s/.%.*s.restore-XXXXXX", parent, (int) (dest + dlen - base), base);
  if (!mkdtemp(tmp)) {
    int e = -errno;
    snprintf(report->reason, sizeof report->reason, "creating a temporary directory in '%.300s': %s",
             parent, strerror(errno));
    return report->rc = e;
  }
  s_sink_t s;
  int rootfd = open(tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  int rc;
  if (rootfd < 0) {
    rc = report->rc = -errno;
    snprintf(report->reason, sizeof report->reason, "opening '%.300s': %s", tmp, strerror(errno));
  } else if ((rc = s_sink_init(&s, rootfd)) < 0) {
    report->rc = rc;
    snprintf(report->reason, sizeof report->reason, "%s", kg_strerror(rc));
    s_sink_free(&s);
    close(rootfd);
  } else {
    kg_ckpt_sink_t sink = {.arg = &s, .begin = s_begin, .data = s_data, .end = s_end};
    rc = kg_ckpt_verify(archive, pk, 0, &sink, report);
    /* Every byte must be on its way to disk before DEST gets its name. */
    int werr = s_finish(&s);
    s_sink_free(&s);
    if (rc == 0 && werr < 0) {
      rc = report->rc = werr;
      snprintf(report->reason, sizeof report->reason, "writing: %s", kg_strerror(werr));
    }
    if (rc == 0 && renameat2(AT_FDCWD, tmp, AT_FDCWD, dest, RENAME_NOREPLACE) < 0) {
      rc = report->rc = errno == EEXIST ? KG_EEXISTS : -errno;
      snprintf(report->reason, sizeof report->reason, "renaming into '%.300s': %s", dest,
               kg_strerror(rc));
    }
    close(rootfd);
  }
  if (rc < 0) {
    int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (pfd >= 0) {
      kg_ckpt_remove_tree_at(pfd, strrchr(tmp, '/') + 1);
      close(pfd);
    }
    return rc;
  }
  kg_ckpt_fsync_dir(parent);
  return 0;
}
