/*  kg_ckpt_verify_priv: what the files of kg_ckpt_verify share (private to
    checkpoint/): the report setters, the archive reader (progress, the
    slow-disk test hook, skipping data that is checked in place), members
    checked in place, and plain zip files.

    kg_ckpt_verify.c   the entry point, the manifest, the members' headers
    kg_ckpt_reader.c   the reader and checking members in place
    kg_ckpt_verify_zip.c  plain zip files (torch.save)
    kg_ckpt_verdict.c  the report setters, below the three others
*/
#ifndef KG_CKPT_VERIFY_PRIV_H
#define KG_CKPT_VERIFY_PRIV_H

#include <archive.h>
#include <stdbool.h>
#include <stdint.h>

#include "kg_ckpt_rangecheck.h"
#include "kg_ckpt_ratecap.h"
#include "kg_ckpt_verify.h"

#define KG_CKPT_READ_BLOCK (1 << 20)

/*  Fill r's reason (printf) and member and return rc. */
int kg__ckpt_set(kg_ckpt_report_t *r, int rc, const char *member, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));

/*  Turn a libarchive failure into a verdict (truncation, damage, system). */
int kg__ckpt_archive_fail(kg_ckpt_report_t *r, struct archive *a, const char *member,
                          const char *what);

/*  The archive file as libarchive reads it. Plain struct, one thread. */
typedef struct {
  int fd;
  unsigned char *buf;              /* KG_CKPT_READ_BLOCK bytes (the caller's) */
  uint64_t done, total;            /* bytes of the file read, its size     */
  const kg_ckpt_sink_t *sink;      /* progress callback, or NULL           */
  int64_t last_report_ns;          /* when progress was last reported      */
  uint64_t last_report_done;
  kg_ckpt_ratecap_t cap;           /* test hook: read rate cap             */
  /* Checking in place: member bytes are read by the pool's workers, not
     here; data is skipped (lseek) instead of read. */
  kg_ckpt_rangecheck_t *pool;
  uint64_t meta;                   /* bytes of the file that are not member
                                      data, up to the last header seen    */
} kg_ckpt_reader_t;

/*  Start reading fd (total bytes) for sink's progress (may be NULL): the
    first progress report (0) is made here. Fini with kg__ckpt_reader_fini. */
void kg__ckpt_reader_init(kg_ckpt_reader_t *rd, int fd, uint64_t total,
                          const kg_ckpt_sink_t *sink);
void kg__ckpt_reader_fini(kg_ckpt_reader_t *rd);

/*  libarchive's read and skip callbacks (arg: the reader). Skipping only
    happens once rd->pool is set, never past the end of the file. */
la_ssize_t kg__ckpt_reader_read(struct archive *a, void *arg, const void **out);
la_int64_t kg__ckpt_reader_skip(struct archive *a, void *arg, la_int64_t request);

/*  Report progress: at least a second after the last report and with more
    bytes done, or at once when force. */
void kg__ckpt_reader_report(kg_ckpt_reader_t *rd, bool force);

/*  In place: hand mem's byte range (starting where libarchive stands after
    its header) to rd->pool, chunk by chunk, after checking it lies within
    the file and that libarchive's first data bytes are the file's bytes
    there. *data_before: member bytes before this one, updated. Returns 0
    or the verdict (r filled). */
int kg__ckpt_check_in_place(struct archive *a, kg_ckpt_report_t *r, kg_ckpt_reader_t *rd,
                            const kg_ckpt_member_t *mem, uint64_t *data_before);

/*  Wait for rd->pool; when a range failed, the verdict for the first one
    (r filled) replaces rc. */
int kg__ckpt_in_place_result(kg_ckpt_report_t *r, kg_ckpt_reader_t *rd, int rc);

/*  A plain zip file (torch.save): every member read so its CRC is checked;
    at best KG_ECKPT_UNSIGNED. */
int kg__ckpt_verify_zip(int fd, kg_ckpt_report_t *r);

#endif
