/*  kg_ckpt_verdict: the report setters of a verification (contracts in
    kg_ckpt_verify_priv.h): a reason and its code, and a libarchive
    failure turned into a verdict. Below every file of the verification
    (kg_ckpt_verify.c, kg_ckpt_reader.c, kg_ckpt_verify_zip.c), which all
    fill the report through it; it calls none of them. */
#include <archive.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "kg_ckpt_verify_priv.h"
#include "kg_error.h"

int
kg__ckpt_set(kg_ckpt_report_t *r, int rc, const char *member, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->reason, sizeof r->reason, fmt, ap);
  va_end(ap);
  snprintf(r->member, sizeof r->member, "%s", member ? member : "");
  r->rc = rc;
  return rc;
}

/*  Turn a libarchive failure into a verdict. Truncation is reported in a
    few wordings depending on the layer (tar, zstd, zip). */
int
kg__ckpt_archive_fail(kg_ckpt_report_t *r, struct archive *a, const char *member,
                      const char *what)
{
  const char *msg = archive_error_string(a);
  int err = archive_errno(a);
  /* libarchive names every problem it finds in the file; it fails
     without a word only where its own allocation failed (e.g. a filter
     slot calloc'd in archive_read_open1): a system failure, not a verdict. */
  if (!msg && err == 0)
    return kg__ckpt_set(r, KG_ENOMEM, member, "%s: libarchive failed without a reason "
                        "(out of memory)", what);
  if (!msg)
    msg = "unknown libarchive error";
  if (err == EIO || err == ENOMEM || err == EBADF)
    return kg__ckpt_set(r, -err, member, "%s: %s", what, msg);
  int rc = KG_ECKPT_MALFORMED;
  if (strstr(msg, "runcat") || strstr(msg, "remature") || strstr(msg, "nexpected end")
      || strstr(msg, "EOF"))
    rc = KG_ECKPT_TRUNC;
  else if (strstr(msg, "amaged") || strstr(msg, "hecksum") || strstr(msg, "CRC"))
    rc = KG_ECKPT_CORRUPT;
  if (member && *member)
    return kg__ckpt_set(r, rc, member, "%s member '%s': %s", what, member, msg);
  return kg__ckpt_set(r, rc, member, "%s: %s", what, msg);
}
