/*  kg_ckpt_verify_zip: a plain zip file (a torch.save file) is read to the
    end of every member, so that libarchive checks each CRC-32; nothing is
    unpickled, and it is at best complete but not authenticated. */
#include <archive.h>
#include <archive_entry.h>
#include <stdint.h>

#include "kg_ckpt_verify_priv.h"
#include "kg_error.h"

#define ZIP_TOTAL_MAX (64ULL << 30) /* bytes a plain zip may inflate to */
#define ZIP_MEMBERS_MAX 1000000

int
kg__ckpt_verify_zip(int fd, kg_ckpt_report_t *r)
{
  struct archive *a = archive_read_new();
  if (!a)
    return kg__ckpt_set(r, KG_ENOMEM, NULL, "out of memory");
  int rc = 0;
  /* ARCHIVE_FATAL here is libarchive failing to allocate its reader, not
     anything about the file. */
  if (archive_read_support_format_zip_seekable(a) != ARCHIVE_OK) {
    archive_read_free(a);
    return kg__ckpt_set(r, KG_ENOMEM, NULL, "out of memory");
  }
  if (archive_read_open_fd(a, fd, KG_CKPT_READ_BLOCK) != ARCHIVE_OK) {
    /* A zip whose central directory is gone was cut short. */
    rc = kg__ckpt_set(r, KG_ECKPT_TRUNC, NULL,
                      "zip archive without a readable central directory (%s)",
                      archive_error_string(a) ? archive_error_string(a) : "?");
    archive_read_free(a);
    return rc;
  }
  struct archive_entry *e;
  unsigned long count = 0;
  uint64_t total = 0;
  int h;
  while ((h = archive_read_next_header(a, &e)) == ARCHIVE_OK || h == ARCHIVE_WARN) {
    const char *name = archive_entry_pathname(e);
    if (!name)
      name = "?";
    if (++count > ZIP_MEMBERS_MAX) {
      rc = kg__ckpt_set(r, KG_ECKPT_UNSAFE, NULL, "zip has more than %d members", ZIP_MEMBERS_MAX);
      goto done;
    }
    const void *buf;
    size_t len;
    la_int64_t off;
    int d;
    /* Reading each member to its end makes libarchive check its CRC-32. */
    while ((d = archive_read_data_block(a, &buf, &len, &off)) == ARCHIVE_OK) {
      total += len;
      if (total > ZIP_TOTAL_MAX) {
        rc = kg__ckpt_set(r, KG_ECKPT_UNSAFE, name, "zip inflates past %llu bytes",
                          (unsigned long long) ZIP_TOTAL_MAX);
        goto done;
      }
    }
    if (d != ARCHIVE_EOF) {
      rc = kg__ckpt_archive_fail(r, a, name, "zip member");
      goto done;
    }
  }
  if (h != ARCHIVE_EOF) {
    rc = kg__ckpt_archive_fail(r, a, NULL, "zip header");
    goto done;
  }
  r->zip = true;
  rc = kg__ckpt_set(r, KG_ECKPT_UNSIGNED, NULL,
                    "plain zip (torch.save file): complete, %lu members, every CRC "
                    "matches, but not authenticated",
                    count);
done:
  archive_read_free(a);
  return rc;
}
