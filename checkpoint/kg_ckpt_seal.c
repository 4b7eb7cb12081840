/*  kg_ckpt_seal: hash, sign and write a checkpoint archive atomically. */
#include "kg_ckpt_seal.h"
#include "kg_ckpt_inflight.h"
#include "kg_ckpt_seal_names.h"
#include "kg_ckpt_seal_scan.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_clock.h"
#include "kg_ckpt_gc.h"
#include "kg_ckpt_hasher.h"
#include "kg_ckpt_manifest.h"
#include "kg_ckpt_util.h"
#include "kg_error.h"
#include "kg_file.h"

#define IO_BLOCK (1 << 20)
_Static_assert(IO_BLOCK <= KG_CKPT_HASHER_BLOCK, "a read must fit a hasher block");
#define KICK_BYTES (8 << 20) /* start writeback this often */

/*  What the writers read: the manifest (digests filled in by
    kg_ckpt_seal_hash_all), the directory it was walked from, and each
    member's mtime when it was hashed (a file changed since is refused). */
typedef struct {
  kg_ckpt_manifest_t *m;
  struct timespec *mtimes;  /* per member, from hashing */
  int rootfd;
  const kg_ckpt_seal_opts_t *o;   /* its progress callback */
  uint64_t done, total;     /* bytes of the members written, of all */
} s_hash_job_t;


/* ---- writing the archive ---------------------------------------------- */

static int
s_archive_errno(struct archive *a)
{
  int e = archive_errno(a);
  return e > 0 ? -e : -EIO;
}

static int
s_write_entry_header(struct archive *a, struct archive_entry *e, const char *path,
                     uint64_t size, time_t mtime)
{
  archive_entry_clear(e);
  archive_entry_set_pathname(e, path);
  archive_entry_set_filetype(e, AE_IFREG);
  archive_entry_set_perm(e, 0644);
  archive_entry_set_size(e, (la_int64_t) size);
  archive_entry_set_mtime(e, mtime, 0);
  return archive_write_header(a, e) < ARCHIVE_WARN ? s_archive_errno(a) : 0;
}

static int
s_write_bytes(struct archive *a, const void *buf, size_t len)
{
  la_ssize_t n = archive_write_data(a, buf, len);
  return n < 0 || (size_t) n != len ? s_archive_errno(a) : 0;
}

/*  Start writeback of what was written since the last call, every
    KICK_BYTES, so the disk works while we hash and the final fsync only
    waits for the tail instead of the whole archive. Best effort: fsync
    still decides durability. */
static void
s_kick_writeback(int fd, off_t *kicked)
{
  off_t pos = lseek(fd, 0, SEEK_CUR);
  if (pos < 0 || pos - *kicked < KICK_BYTES)
    return;
  sync_file_range(fd, *kicked, pos - *kicked, SYNC_FILE_RANGE_WRITE);
  *kicked = pos;
}

static bool
s_same_file_state(const struct stat *a, const struct stat *b)
{
  return a->st_size == b->st_size && a->st_mtim.tv_sec == b->st_mtim.tv_sec
         && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/*  Stream member i into the archive. With a hasher h (one-pass seal), the
    bytes are hashed (in the hasher's thread) as they are written, so the
    digest is of exactly what the archive holds, and the file must not
    change while it is read; otherwise (two-pass seal, h NULL, buf used) it
    must be as the hashing pass saw it. */
static int
s_write_member(struct archive *a, struct archive_entry *e, s_hash_job_t *job, size_t i,
               kg_ckpt_hasher_t *h, unsigned char *buf, time_t mtime, int outfd,
               off_t *kicked, char *why, size_t whysize)
{
  bool hash = h != NULL;
  kg_ckpt_member_t *mem = &job->m->members[i];
  int fd = openat(job->rootfd, mem->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return kg_ckpt_fail(why, whysize, -errno, "opening '%s': %s", mem->path);
  struct stat st, after;
  int rc = 0;
  if (fstat(fd, &st) < 0) {
    rc = kg_ckpt_fail(why, whysize, -errno, "stat '%s': %s", mem->path);
    goto out;
  }
  if ((uint64_t) st.st_size != mem->size
      || (!hash && (st.st_mtim.tv_sec != job->mtimes[i].tv_sec
                    || st.st_mtim.tv_nsec != job->mtimes[i].tv_nsec))) {
    snprintf(why, whysize, "'%s' changed while sealing", mem->path);
    rc = -EAGAIN;
    goto out;
  }
  posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  if ((rc = s_write_entry_header(a, e, mem->path, mem->size, mtime)) < 0) {
    kg_ckpt_fail(why, whysize, rc, "writing header of '%s': %s", mem->path);
    goto out;
  }
  uint64_t left = mem->size;
  size_t chunk = 0;
  while (left > 0) {
    if (h)
      buf = kg_ckpt_hasher_slot(h);
    size_t want = left < IO_BLOCK ? (size_t) left : IO_BLOCK;
    uint64_t done = mem->size - left;
    if (hash && mem->chunks && KG_CKPT_CHUNK_SIZE - done % KG_CKPT_CHUNK_SIZE < want)
      want = (size_t) (KG_CKPT_CHUNK_SIZE - done % KG_CKPT_CHUNK_SIZE);
    ssize_t n = read(fd, buf, want);
    if (n <= 0) {
      rc = n < 0 ? -errno : -EAGAIN;
      kg_ckpt_fail(why, whysize, rc, "reading '%s': %s", mem->path);
      goto out;
    }
    if (h)
      kg_ckpt_hasher_push(h, (size_t) n);
    /* v2: a chunk ends here (the last one ends with the member, below). */
    if (h && mem->chunks && (done + (uint64_t) n) % KG_CKPT_CHUNK_SIZE == 0
        && chunk + 1 < mem->nchunks)
      kg_ckpt_hasher_end(h, mem->chunks[chunk++]);
    if ((rc = s_write_bytes(a, buf, (size_t) n)) < 0) {
      kg_ckpt_fail(why, whysize, rc, "writing the archive: %s%s", "");
      goto out;
    }
    left -= (uint64_t) n;
    s_kick_writeback(outfd, kicked);
    job->done += (uint64_t) n;
    if (job->o->progress)
      job->o->progress(job->o->progress_arg, job->done, job->total);
  }
  if (hash) {
    if (fstat(fd, &after) < 0 || !s_same_file_state(&st, &after)) {
      snprintf(why, whysize, "'%s' changed while sealing", mem->path);
      rc = -EAGAIN;
      goto out;
    }
    kg_ckpt_hasher_end(h, mem->chunks ? mem->chunks[chunk] : mem->digest);
  }
out:
  close(fd);
  return rc;
}

/*  Where the manifest's and the signature's data lie in the archive file:
    the one-pass seal writes placeholders there and fills them in last. */
typedef struct {
  off_t json_at, sig_at;
} s_slots_t;

static int
s_write_archive(int outfd, s_hash_job_t *job, const char *json, size_t jlen,
                const unsigned char *sig, bool zstd, kg_ckpt_hasher_t *h, s_slots_t *slots,
                time_t mtime, char *why, size_t whysize)
{
  struct archive *a = archive_write_new();
  struct archive_entry *e = archive_entry_new();
  unsigned char *buf = h ? NULL : malloc(IO_BLOCK);
  off_t kicked = 0;
  int rc = 0;
  if (!a || !e || (!h && !buf)) {
    rc = kg_ckpt_fail(why, whysize, KG_ENOMEM, "%s%s", "");
    goto out;
  }
  archive_write_set_format_pax_restricted(a);
  if (zstd && archive_write_add_filter_zstd(a) != ARCHIVE_OK) {
    snprintf(why, whysize, "zstd: %s", archive_error_string(a));
    rc = KG_EINTERNAL;
    goto out;
  }
  /* Uncompressed: no blocking, so libarchive hands our 1 MiB blocks
     straight to write(2) without copying them, and each header is in the
     file when archive_write_header returns (the slots' offsets rely on
     it). The zstd filter blocks its own output. */
  archive_write_set_bytes_per_block(a, zstd ? 64 * 1024 : 0);
  archive_write_set_bytes_in_last_block(a, 1);
  job->done = 0;
  if (job->o->progress)
    job->o->progress(job->o->progress_arg, 0, job->total);
  if (archive_write_open_fd(a, outfd) != ARCHIVE_OK) {
    rc = kg_ckpt_fail(why, whysize, s_archive_errno(a), "opening the archive: %s%s", "");
    goto out;
  }
  if ((rc = s_write_entry_header(a, e, KG_CKPT_MANIFEST_NAME, jlen, mtime)) < 0
      || (slots && (slots->json_at = lseek(outfd, 0, SEEK_CUR)) < 0)
      || (rc = s_write_bytes(a, json, jlen)) < 0
      || (rc = s_write_entry_header(a, e, KG_CKPT_SIG_NAME, crypto_sign_BYTES, mtime)) < 0
      || (slots && (slots->sig_at = lseek(outfd, 0, SEEK_CUR)) < 0)
      || (rc = s_write_bytes(a, sig, crypto_sign_BYTES)) < 0) {
    rc = kg_ckpt_fail(why, whysize, rc < 0 ? rc : -errno, "writing the manifest: %s%s", "");
    goto out;
  }
  for (size_t i = 0; i < job->m->count && rc == 0; i++)
    rc = s_write_member(a, e, job, i, h, buf, mtime, outfd, &kicked, why, whysize);
  if (rc == 0 && archive_write_close(a) != ARCHIVE_OK)
    rc = kg_ckpt_fail(why, whysize, s_archive_errno(a), "finishing the archive: %s%s", "");
out:
  if (a)
    archive_write_free(a);
  archive_entry_free(e);
  free(buf);
  return rc;
}

static int
s_pwrite_all(int fd, const void *buf, size_t len, off_t at)
{
  const char *p = buf;
  while (len > 0) {
    ssize_t n = pwrite(fd, p, len, at);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return n < 0 ? -errno : -EIO;
    p += n;
    len -= (size_t) n;
    at += n;
  }
  return 0;
}

/*  Replace the placeholder at `at` (len bytes, must read back as old) by
    new: the read-back proves the slot offsets right before anything is
    overwritten. */
static int
s_fill_slot(int fd, off_t at, const void *old, const void *new, size_t len)
{
  unsigned char *cur = malloc(len);
  if (!cur)
    return KG_ENOMEM;
  ssize_t n = pread(fd, cur, len, at);
  int rc = n < 0 ? -errno : (size_t) n != len || memcmp(cur, old, len) != 0 ? KG_EINTERNAL : 0;
  free(cur);
  return rc < 0 ? rc : s_pwrite_all(fd, new, len, at);
}

/*  One pass over the payload (uncompressed archives): the manifest member
    is written first with every digest zero and a zero signature, which
    have the same length as the real ones (only the 64 hex digits of each
    digest differ); the payload is hashed while it is written; then the
    real manifest and its signature are written over the placeholders. The
    temporary file is never renamed before that, so no reader sees one. */
static int
s_write_one_pass(int outfd, s_hash_job_t *job, const unsigned char *sk, time_t mtime, char *why,
                 size_t whysize)
{
  kg_ckpt_manifest_t *m = job->m;
  for (size_t i = 0; i < m->count; i++) {
    memset(m->members[i].digest, 0, sizeof m->members[i].digest);
    if (m->members[i].chunks)
      memset(m->members[i].chunks, 0, m->members[i].nchunks * KG_CKPT_DIGEST_BYTES);
  }
  char *placeholder = kg_ckpt_manifest_encode(m);
  char *json = NULL;
  unsigned char zero_sig[crypto_sign_BYTES] = {0}, sig[crypto_sign_BYTES];
  s_slots_t slots = {0};
  kg_ckpt_hasher_t *h = kg_ckpt_hasher_new();
  int rc;
  if (!placeholder || !h) {
    rc = kg_ckpt_fail(why, whysize, KG_ENOMEM, "%s%s", "");
    goto out;
  }
  size_t plen = strlen(placeholder);
  if ((rc = s_write_archive(outfd, job, placeholder, plen, zero_sig, false, h, &slots, mtime,
                            why, whysize)) < 0)
    goto out;
  kg_ckpt_hasher_wait(h); /* every digest stored */
  if (!(json = kg_ckpt_manifest_encode(m))) {
    rc = kg_ckpt_fail(why, whysize, KG_ENOMEM, "%s%s", "");
    goto out;
  }
  if (strlen(json) != plen) {
    rc = kg_ckpt_fail(why, whysize, KG_EINTERNAL, "manifest length changed while sealing%s%s", "");
    goto out;
  }
  crypto_sign_detached(sig, NULL, (unsigned char *) json, plen, sk);
  if ((rc = s_fill_slot(outfd, slots.json_at, placeholder, json, plen)) < 0
      || (rc = s_fill_slot(outfd, slots.sig_at, zero_sig, sig, sizeof sig)) < 0)
    kg_ckpt_fail(why, whysize, rc, "writing the manifest: %s%s", "");
out:
  kg_ckpt_hasher_destroy(&h);
  free(placeholder);
  free(json);
  return rc;
}

/* ---- sealing ------------------------------------------------------------ */

/*  The options make sense: a directory, one destination, a key, a step,
    a rank within its set, a run id of at most 128 bytes of UTF-8. */
static int
s_check_opts(const kg_ckpt_seal_opts_t *o, const char *run, char *why, size_t whysize)
{
  if (!o->dir || (!o->into == !o->output) || !o->sk || o->step < 0
      || (o->world_size >= 2 && (o->rank < 0 || o->rank >= o->world_size
                                 || o->world_size > KG_CKPT_WORLD_MAX)))
    return kg_ckpt_fail(why, whysize, KG_EUSAGE, "bad seal options%s%s", "");
  if (strlen(run) > KG_CKPT_RUN_MAX || !kg_ckpt_utf8_valid(run, strlen(run)))
    return kg_ckpt_fail(why, whysize, KG_EUSAGE, "run id must be UTF-8, at most 128 bytes%s%s", "");
  return 0;
}

/*  Walk o->dir into job's manifest and fill its signed fields (digests
    come from hashing). */
static int
s_manifest(s_hash_job_t *job, const kg_ckpt_seal_opts_t *o, const char *run, int64_t now,
           char *why, size_t whysize)
{
  kg_ckpt_manifest_t *m = job->m;
  int rc, walkfd = dup(job->rootfd);
  if (walkfd < 0)
    return kg_ckpt_fail(why, whysize, -errno, "dup: %s%s", "");
  if ((rc = kg_ckpt_seal_walk(walkfd, "", m, why, whysize)) < 0)
    return rc;
  kg_ckpt_manifest_sort(m);
  for (size_t i = 0; i < m->count; i++)
    job->total += m->members[i].size;
  if (!(job->mtimes = calloc(m->count ? m->count : 1, sizeof *job->mtimes)))
    return kg_ckpt_fail(why, whysize, KG_ENOMEM, "%s%s", "");
  snprintf(m->run, sizeof m->run, "%s", run);
  m->step = o->step;
  m->sealed_at_ms = now;
  kg_clock_iso_ms(now, m->sealed_at, sizeof m->sealed_at);
  snprintf(m->producer, sizeof m->producer, "%s", o->producer ? o->producer : "kguard");
  kg_keys_id(o->sk + 32, m->key_id);
  m->zstd = o->zstd;
  m->version = o->format == 1 ? 1 : KG_CKPT_FORMAT_VERSION;
  if (m->version >= 2 && (rc = kg_ckpt_manifest_alloc_chunks(m)) < 0)
    return kg_ckpt_fail(why, whysize, rc, "chunk digests: %s%s", "");
  if (o->world_size >= 2) {
    m->rank = o->rank;
    m->world_size = o->world_size;
  }
  return 0;
}

/*  The archive's final name (step-<N>-<compact UTC time>[-rankRofW].kgckpt.tar[.zst]
    inside o->into, created if missing; or o->output), its directory, and
    a dot-named temporary beside it. */
static int
s_names(const kg_ckpt_seal_opts_t *o, int64_t now, char *final, size_t fsize, char *tmp,
        size_t tsize, char *dir, size_t dsize, char *why, size_t whysize)
{
  int rc;
  if (o->into) {
    /* Modes as for any file the user writes (torch.save's, tar's): the
       umask and the directory decide who may read checkpoints. */
    if ((rc = kg_file_mkdirs(o->into, 0777, 0777)) < 0)
      return kg_ckpt_fail(why, whysize, rc, "creating '%s': %s", o->into);
    char stamp[32], compact[32], shard[48] = "";
    kg_clock_iso_ms(now, stamp, sizeof stamp);
    size_t k = 0;
    for (const char *p = stamp; *p && k + 1 < sizeof compact; p++)
      if (*p != '-' && *p != ':' && *p != '.')
        compact[k++] = *p;
    compact[k] = '\0';
    if (o->world_size >= 2)
      snprintf(shard, sizeof shard, "-rank%lldof%lld", (long long) o->rank,
               (long long) o->world_size);
    if (snprintf(final, fsize, "%s/step-%010lld-%s%s%s", o->into, (long long) o->step,
                 compact, shard, o->zstd ? KG_CKPT_SUFFIX_ZSTD : KG_CKPT_SUFFIX)
        >= (int) fsize)
      return kg_ckpt_fail(why, whysize, KG_ETOOBIG, "path too long: '%.200s' (%s)", o->into);
  } else if (snprintf(final, fsize, "%s", o->output) >= (int) fsize) {
    return kg_ckpt_fail(why, whysize, KG_ETOOBIG, "path too long: '%.200s' (%s)", o->output);
  }
  kg_ckpt_dirname(final, dir, dsize);
  const char *base = strrchr(final, '/') ? strrchr(final, '/') + 1 : final;
  if (snprintf(tmp, tsize, "%s/.%s" KG_CKPT_TMP_MARK "XXXXXX", dir, base) >= (int) tsize)
    return kg_ckpt_fail(why, whysize, KG_ETOOBIG, "path too long: '%.200s' (%s)", final);
  return 0;
}

/*  The archive's bytes into outfd: one pass (uncompressed), or hash first,
    in parallel across files, then write (zstd: the compressed offsets of
    the manifest are not known ahead). */
static int
s_write_payload(int outfd, s_hash_job_t *job, const kg_ckpt_seal_opts_t *o, time_t mtime,
                char *why, size_t whysize)
{
  if (!o->zstd)
    return s_write_one_pass(outfd, job, o->sk, mtime, why, whysize);
  if (o->phase)
    o->phase(o->progress_arg, "hashing", o->dir);
  int rc = kg_ckpt_seal_hash_all(job->m, job->rootfd, job->mtimes, o->progress,
                                 o->progress_arg, why, whysize);
  if (rc < 0)
    return rc;
  if (o->phase)
    o->phase(o->progress_arg, "sealing", o->dir);
  char *json = kg_ckpt_manifest_encode(job->m);
  if (!json)
    return kg_ckpt_fail(why, whysize, KG_ENOMEM, "%s%s", "");
  size_t jlen = strlen(json);
  unsigned char sig[crypto_sign_BYTES];
  crypto_sign_detached(sig, NULL, (unsigned char *) json, jlen, o->sk);
  rc = s_write_archive(outfd, job, json, jlen, sig, true, NULL, NULL, mtime, why, whysize);
  free(json);
  return rc;
}

/*  Make the written temporary the archive: fsync, rename (never
    replacing), close, fsync the directory. *outfd is closed and set to -1
    once renamed; *have_tmp cleared then. Any fsync or close error makes
    the archive untrustworthy: never retried, and a renamed archive is
    taken back (unlinked) rather than trusted. */
static int
s_publish(const kg_ckpt_seal_opts_t *o, int *outfd, const char *tmp, char *final, size_t fsize,
          const char *dir, bool *have_tmp, char *why, size_t whysize)
{
  int rc;
  kg_ckpt_inflight_test_hold("written");
  if (fsync(*outfd) < 0)
    return kg_ckpt_fail(why, whysize, -errno, "syncing the archive: %s%s", "");
  kg_ckpt_inflight_test_hold("synced");
  /* The temporary stays open, and so locked, until it has its final name:
     another writer's kg_ckpt_gc in the same directory (every seal starts
     with one) takes an unlocked temporary for an abandoned one. Two seals
     of one step in the same millisecond: the second takes "...-N" before
     the suffix rather than failing. */
  for (int k = 2; (rc = kg_ckpt_seal_rename_noreplace(tmp, final)) == KG_EEXISTS && o->into
                  && k < 100; k++)
    if ((rc = kg_ckpt_seal_numbered(final, fsize, o->zstd, k)) < 0)
      break;
  if (rc < 0)
    return kg_ckpt_fail(why, whysize, rc, "renaming into place '%s': %s", final);
  *have_tmp = false;
  rc = close(*outfd) < 0 ? -errno : 0;
  *outfd = -1;
  if (rc == 0)
    rc = kg_ckpt_fsync_dir(dir);
  if (rc < 0) {
    unlink(final);
    return kg_ckpt_fail(why, whysize, rc, "syncing '%s': %s", final);
  }
  return 0;
}

int
kg_ckpt_seal(const kg_ckpt_seal_opts_t *o, char *out, size_t size, char *why, size_t whysize)
{
  char final[PATH_MAX], tmp[PATH_MAX + 64], dir[PATH_MAX];
  why[0] = '\0';
  /* No sodium_init() here, on purpose: see "Why there is no sodium_init()" in
     kg_ckpt_util.h. */
  int64_t now = o->now_ms ? o->now_ms : kg_clock_wall_ms();
  const char *run = o->run ? o->run : "default";
  int rc = s_check_opts(o, run, why, whysize);
  if (rc < 0)
    return rc;
  kg_ckpt_manifest_t *m = kg_ckpt_manifest_new();
  if (!m)
    return kg_ckpt_fail(why, whysize, KG_ENOMEM, "%s%s", "");
  s_hash_job_t job = {.m = m, .rootfd = -1, .o = o};
  int outfd = -1;
  bool have_tmp = false;
  job.rootfd = open(o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (job.rootfd < 0) {
    rc = kg_ckpt_fail(why, whysize, -errno, "opening '%s': %s", o->dir);
    goto out;
  }
  if ((rc = s_manifest(&job, o, run, now, why, whysize)) < 0
      || (rc = s_names(o, now, final, sizeof final, tmp, sizeof tmp, dir, sizeof dir, why,
                       whysize)) < 0)
    goto out;
  /* Temporaries of seals whose writer is gone (kg_ckpt_gc.h). */
  kg_ckpt_gc(dir, INT64_MIN, NULL);
  if ((rc = kg_ckpt_seal_tmp_create(tmp, &outfd)) < 0) {
    kg_ckpt_fail(why, whysize, rc, "creating a temporary file in '%s': %s", dir);
    goto out;
  }
  have_tmp = true;
  fchmod(outfd, 0666 & ~kg_file_umask()); /* mkostemp made it 0600 */
  if ((rc = s_write_payload(outfd, &job, o, (time_t) (now / 1000), why, whysize)) < 0
      || (rc = s_publish(o, &outfd, tmp, final, sizeof final, dir, &have_tmp, why,
                         whysize)) < 0)
    goto out;
  snprintf(out, size, "%s", final);
  /* A newer checkpoint is sealed: copies of zstd checkpoints restored
     earlier are behind the run now. */
  if (o->into)
    kg_ckpt_gc(dir, now, NULL);
out:
  if (outfd >= 0)
    close(outfd);
  if (have_tmp)
    unlink(tmp);
  if (job.rootfd >= 0)
    close(job.rootfd);
  free(job.mtimes);
  kg_ckpt_manifest_destroy(&m);
  return rc;
}
