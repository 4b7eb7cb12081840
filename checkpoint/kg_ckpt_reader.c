/*  kg_ckpt_reader: the archive file as verify reads it (progress, the
    slow-disk test hook, data skipped when it is checked in place) and
    members checked in place by the rangecheck pool. */
#include <archive.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kg_ckpt_verify_priv.h"
#include "kg_error.h"

/*  Bytes of the archive checked so far: what was read here, or, when the
    pool reads the members, the headers passed plus what the pool hashed. */
static uint64_t
s_done(kg_ckpt_reader_t *rd)
{
  if (!rd->pool)
    return rd->done;
  uint64_t d = rd->meta + kg_ckpt_rangecheck_hashed(rd->pool);
  return d < rd->total ? d : rd->total;
}

void
kg__ckpt_reader_report(kg_ckpt_reader_t *rd, bool force)
{
  if (!rd->sink || !rd->sink->progress)
    return;
  int64_t now = kg_ckpt_now_ns();
  uint64_t done = s_done(rd);
  if (!force && (now - rd->last_report_ns < 1000000000LL || done == rd->last_report_done))
    return;
  rd->last_report_ns = now;
  rd->last_report_done = done;
  rd->sink->progress(rd->sink->arg, done, rd->total);
}

static void
s_report_tick(void *arg)
{
  kg__ckpt_reader_report(arg, false);
}

static void
s_report_hashed(void *arg, uint64_t hashed)
{
  (void) hashed;
  kg__ckpt_reader_report(arg, false);
}

la_ssize_t
kg__ckpt_reader_read(struct archive *a, void *arg, const void **out)
{
  kg_ckpt_reader_t *rd = arg;
  size_t want = kg_ckpt_ratecap_piece(&rd->cap, KG_CKPT_READ_BLOCK);
  ssize_t n;
  do
    n = read(rd->fd, rd->buf, want);
  while (n < 0 && errno == EINTR);
  if (n < 0) {
    archive_set_error(a, errno, "read: %s", strerror(errno));
    return -1;
  }
  rd->done += (uint64_t) n;
  kg_ckpt_ratecap_take(&rd->cap, (uint64_t) n, s_report_tick, rd);
  kg__ckpt_reader_report(rd, false);
  *out = rd->buf;
  return n;
}

/*  Checking in place: member data the pool reads is skipped here, never
    read. Never past the end of the file, so libarchive sees a truncated
    archive as it would when reading. */
la_int64_t
kg__ckpt_reader_skip(struct archive *a, void *arg, la_int64_t request)
{
  (void) a;
  kg_ckpt_reader_t *rd = arg;
  if (!rd->pool || request <= 0)
    return 0;                      /* libarchive then reads instead */
  off_t cur = lseek(rd->fd, 0, SEEK_CUR);
  if (cur < 0 || (uint64_t) cur >= rd->total)
    return 0;
  uint64_t n = (uint64_t) request;
  if (n > rd->total - (uint64_t) cur)
    n = rd->total - (uint64_t) cur;
  if (lseek(rd->fd, (off_t) n, SEEK_CUR) < 0)
    return 0;
  return (la_int64_t) n;
}

void
kg__ckpt_reader_init(kg_ckpt_reader_t *rd, int fd, uint64_t total, const kg_ckpt_sink_t *sink)
{
  memset(rd, 0, sizeof *rd);
  rd->fd = fd;
  rd->total = total;
  rd->sink = sink;
  kg_ckpt_ratecap_init(&rd->cap);
  kg__ckpt_reader_report(rd, true);
}

void
kg__ckpt_reader_fini(kg_ckpt_reader_t *rd)
{
  kg_ckpt_rangecheck_destroy(&rd->pool);
  kg_ckpt_ratecap_fini(&rd->cap);
}

/* ---- members checked in place ------------------------------------------ */

/*  The verdict for the first range of the pool that failed. */
static int
s_range_fail(kg_ckpt_report_t *r, int rc, const kg_ckpt_rangecheck_bad_t *bad)
{
  const kg_ckpt_member_t *mem = bad->tag;
  const char *name = mem->path;
  uint64_t start = bad->chunk < 0 ? 0 : (uint64_t) bad->chunk * KG_CKPT_CHUNK_SIZE;
  if (rc == KG_ECKPT_CORRUPT && bad->chunk < 0)
    return kg__ckpt_set(r, rc, name, "member '%s' does not match its digest", name);
  if (rc == KG_ECKPT_CORRUPT)
    return kg__ckpt_set(r, rc, name,
                        "member '%s' does not match its digest (chunk %ld, bytes %llu..%llu)", name,
                        bad->chunk, (unsigned long long) start,
                        (unsigned long long) start + KG_CKPT_CHUNK_SIZE - 1);
  if (rc == KG_ECKPT_TRUNC)
    return kg__ckpt_set(r, rc, name, "member '%s' ends after %llu of %llu bytes", name,
                        (unsigned long long) (start + bad->got), (unsigned long long) mem->size);
  return kg__ckpt_set(r, rc, name, "reading member '%s': %s", name, kg_strerror(rc));
}

/*  In place: the member's data starts where libarchive stands after its
    header. Check that it lies within the file and that libarchive's first
    data bytes are the file's bytes there (so the ranges hashed are the
    bytes any tar reader extracts), then hand its chunks (version 2) or
    the whole member (version 1) to the pool. *data_before: member bytes
    before this one, updated. */
int
kg__ckpt_check_in_place(struct archive *a, kg_ckpt_report_t *r, kg_ckpt_reader_t *rd,
                        const kg_ckpt_member_t *mem, uint64_t *data_before)
{
  const char *name = mem->path;
  la_int64_t pos = archive_filter_bytes(a, 0);
  if (pos < 0 || (uint64_t) pos < *data_before)
    return kg__ckpt_set(r, KG_EINTERNAL, name, "member '%s': no data offset", name);
  uint64_t off = (uint64_t) pos;
  rd->meta = off - *data_before;
  if (off > rd->total || mem->size > rd->total - off)
    return kg__ckpt_set(r, KG_ECKPT_TRUNC, name, "member '%s' ends after %llu of %llu bytes", name,
                        (unsigned long long) (off < rd->total ? rd->total - off : 0),
                        (unsigned long long) mem->size);
  if (mem->size > 0) {
    const void *buf;
    size_t len;
    la_int64_t boff;
    int d = archive_read_data_block(a, &buf, &len, &boff);
    if (d == ARCHIVE_EOF)
      return kg__ckpt_set(r, KG_ECKPT_TRUNC, name, "member '%s' ends after 0 of %llu bytes", name,
                          (unsigned long long) mem->size);
    if (d != ARCHIVE_OK)
      return kg__ckpt_archive_fail(r, a, name, "reading");
    if (boff != 0)
      return kg__ckpt_set(r, KG_ECKPT_UNSAFE, name, "member '%s' has holes", name);
    unsigned char peek[4096];
    size_t n = len < sizeof peek ? len : sizeof peek;
    if (n > mem->size)
      n = (size_t) mem->size;
    ssize_t got = pread(rd->fd, peek, n, (off_t) off);
    if (got < 0)
      return kg__ckpt_set(r, -errno, name, "reading member '%s': %s", name, strerror(errno));
    if ((size_t) got != n || memcmp(peek, buf, n) != 0)
      return kg__ckpt_set(r, KG_ECKPT_CORRUPT, name, "member '%s' changed while it was read", name);
  }
  if (mem->chunks) {
    for (size_t k = 0; k < mem->nchunks; k++) {
      uint64_t at = (uint64_t) k * KG_CKPT_CHUNK_SIZE;
      uint64_t len = mem->size - at < KG_CKPT_CHUNK_SIZE ? mem->size - at : KG_CKPT_CHUNK_SIZE;
      if (kg_ckpt_rangecheck_add(rd->pool, off + at, len, mem->chunks[k], mem, (long) k) < 0)
        return kg__ckpt_set(r, KG_ENOMEM, name, "out of memory");
    }
  } else if (kg_ckpt_rangecheck_add(rd->pool, off, mem->size, mem->digest, mem, -1) < 0) {
    return kg__ckpt_set(r, KG_ENOMEM, name, "out of memory");
  }
  *data_before += mem->size;
  return 0;
}

int
kg__ckpt_in_place_result(kg_ckpt_report_t *r, kg_ckpt_reader_t *rd, int rc)
{
  /* Every range handed over lies before whatever stopped the walk (a bad
     header, a missing member): a range that failed is what a one-pass
     reader would have met first. */
  kg_ckpt_rangecheck_bad_t bad;
  int prc = kg_ckpt_rangecheck_wait(rd->pool, s_report_hashed, rd, &bad);
  return prc != 0 ? s_range_fail(r, prc, &bad) : rc;
}
