/*  kg_ckpt_verify: one pass over a checkpoint archive (the manifest, then
    every member's header; kg_ckpt_verify_priv.h says where the rest is). */
#include "kg_ckpt_verify.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_ckpt_chunker.h"
#include "kg_ckpt_util.h"
#include "kg_ckpt_verify_priv.h"
#include "kg_error.h"
#include "kg_keys.h"

/*  Name of entry as UTF-8 bytes, or NULL when it is not UTF-8. */
static const char *
s_entry_name(struct archive_entry *e)
{
  const char *name = archive_entry_pathname(e);
  if (!name)
    name = archive_entry_pathname_utf8(e);
  if (!name || !kg_ckpt_utf8_valid(name, strlen(name)))
    return NULL;
  return name;
}

/*  Read the whole current entry (size bytes, small) into buf. */
static int
s_read_small(struct archive *a, kg_ckpt_report_t *r, const char *member, void *buf, size_t size)
{
  size_t got = 0;
  while (got < size) {
    la_ssize_t n = archive_read_data(a, (char *) buf + got, size - got);
    if (n < 0)
      return kg__ckpt_archive_fail(r, a, member, "reading");
    if (n == 0)
      return kg__ckpt_set(r, KG_ECKPT_TRUNC, member, "member '%s' ends early", member);
    got += (size_t) n;
  }
  return 0;
}

/*  Check an entry's type before anything of it is read. */
static int
s_check_type(kg_ckpt_report_t *r, struct archive_entry *e, const char *name)
{
  if (archive_entry_hardlink(e))
    return kg__ckpt_set(r, KG_ECKPT_UNSAFE, name, "member '%s' is a hard link to '%.200s'",
                        name, archive_entry_hardlink(e));
  if (archive_entry_symlink(e) || archive_entry_filetype(e) == AE_IFLNK)
    return kg__ckpt_set(r, KG_ECKPT_UNSAFE, name, "member '%s' is a symbolic link", name);
  mode_t t = archive_entry_filetype(e);
  if (t != AE_IFREG) {
    const char *kind = t == AE_IFDIR ? "a directory" : t == AE_IFIFO ? "a fifo"
                       : t == AE_IFCHR ? "a character device" : t == AE_IFBLK ? "a block device"
                       : t == AE_IFSOCK ? "a socket" : "not a regular file";
    return kg__ckpt_set(r, KG_ECKPT_UNSAFE, name, "member '%s' is %s", name, kind);
  }
  if (archive_entry_sparse_count(e) > 0)
    return kg__ckpt_set(r, KG_ECKPT_UNSAFE, name, "member '%s' is sparse", name);
  if (!archive_entry_size_is_set(e) || archive_entry_size(e) < 0)
    return kg__ckpt_set(r, KG_ECKPT_MALFORMED, name, "member '%s' has no size", name);
  return 0;
}


/* ---- kguard archives --------------------------------------------------- */

/*  Three ways to check the payload. An uncompressed archive verified
    without a sink is checked in place: this thread walks the headers
    (skipping the data) and hands each member's byte range to the
    rangecheck pool, whose workers pread and hash it on every core. A
    compressed one is streamed: this thread decompresses and the chunker
    hashes version 2 chunks on other threads (version 1 here). A sink with
    finish (restore) hashes what it wrote in its own threads and is asked
    at the end. */
static int s_verify_members(struct archive *a, kg_ckpt_report_t *r, const kg_ckpt_sink_t *sink,
                            kg_ckpt_chunker_t *c, kg_ckpt_reader_t *rd);

static int
s_verify_payload(struct archive *a, kg_ckpt_report_t *r, const kg_ckpt_sink_t *sink,
                 kg_ckpt_reader_t *rd)
{
  kg_ckpt_chunker_t c = {0};
  int rc = s_verify_members(a, r, sink, &c, rd);
  kg_ckpt_chunker_stop(&c);
  return rd->pool ? kg__ckpt_in_place_result(r, rd, rc) : rc;
}

/*  The check of one member header e against the manifest of r: a valid,
    safe, listed name seen once, of a regular type, whose header size is the
    manifest's. *mem_p: its manifest row. Returns 0, or the verdict with r
    filled. */
static int
s_member_header(struct archive_entry *e, kg_ckpt_report_t *r, kg_ckpt_member_t **mem_p)
{
  const char *name = s_entry_name(e);
  if (!name)
    return kg__ckpt_set(r, KG_ECKPT_UNSAFE, NULL, "a member name is not valid UTF-8");
  int rc = s_check_type(r, e, name);
  if (rc < 0)
    return rc;
  const char *problem = kg_ckpt_path_problem(name);
  if (problem)
    return kg__ckpt_set(r, KG_ECKPT_UNSAFE, name, "member '%.300s': %s", name, problem);
  kg_ckpt_member_t *mem = kg_ckpt_manifest_find(r->manifest, name);
  if (!mem)
    return kg__ckpt_set(r, KG_ECKPT_UNSAFE, name, "member '%s' is not listed in the manifest",
                        name);
  if (mem->seen)
    return kg__ckpt_set(r, KG_ECKPT_UNSAFE, name, "member '%s' appears twice", name);
  mem->seen = true;
  uint64_t hsize = (uint64_t) archive_entry_size(e);
  if (hsize > mem->size)
    return kg__ckpt_set(r, KG_ECKPT_UNSAFE, name,
                        "member '%s' claims %llu bytes, more than the manifest's %llu", name,
                        (unsigned long long) hsize, (unsigned long long) mem->size);
  if (hsize < mem->size)
    return kg__ckpt_set(r, KG_ECKPT_CORRUPT, name,
                        "member '%s' has %llu bytes, the manifest says %llu", name,
                        (unsigned long long) hsize, (unsigned long long) mem->size);
  *mem_p = mem;
  return 0;
}

/*  Stream member mem's data from a: no holes, no more than its size, fed to
    the chunker c (chunked members) or hashed here (whole-digest members,
    unless the sink hashes), and handed to the sink. Returns 0 once it is
    complete and matches its digest, or the verdict with r filled. */
static int
s_member_data(struct archive *a, kg_ckpt_report_t *r, const kg_ckpt_sink_t *sink,
              kg_ckpt_chunker_t *c, kg_ckpt_member_t *mem)
{
  const char *name = mem->path;
  bool sink_hashes = sink && sink->finish;
  int rc;
  if (sink && sink->begin && (rc = sink->begin(sink->arg, mem)) < 0)
    return kg__ckpt_set(r, rc, name, "restoring '%s': %s", name, kg_strerror(rc));
  bool chunked = mem->chunks != NULL;
  if (chunked) {
    free(c->got);
    if (kg_ckpt_chunker_start(c) < 0 || !(c->got = calloc(mem->nchunks, sizeof *c->got)))
      return kg__ckpt_set(r, KG_ENOMEM, name, "out of memory");
  }
  bool hash_here = !sink_hashes && !chunked;
  crypto_generichash_state st;
  crypto_generichash_init(&st, NULL, 0, KG_CKPT_DIGEST_BYTES);
  uint64_t got = 0;
  const void *buf;
  size_t len;
  la_int64_t off;
  int d;
  while ((d = archive_read_data_block(a, &buf, &len, &off)) == ARCHIVE_OK) {
    if (off < 0 || (uint64_t) off != got)
      return kg__ckpt_set(r, KG_ECKPT_UNSAFE, name, "member '%s' has holes", name);
    if (len > mem->size - got)
      return kg__ckpt_set(r, KG_ECKPT_UNSAFE, name,
                          "member '%s' holds more than its manifest size", name);
    if (chunked)
      kg_ckpt_chunker_feed(c, mem, got, buf, len);
    got += len;
    if (hash_here)
      crypto_generichash_update(&st, buf, len);
    if (sink && sink->data && (rc = sink->data(sink->arg, buf, len)) < 0)
      return kg__ckpt_set(r, rc, name, "restoring '%s': %s", name, kg_strerror(rc));
  }
  if (d != ARCHIVE_EOF)
    return kg__ckpt_archive_fail(r, a, name, "reading");
  if (got != mem->size)
    return kg__ckpt_set(r, KG_ECKPT_TRUNC, name, "member '%s' ends after %llu of %llu bytes",
                        name, (unsigned long long) got, (unsigned long long) mem->size);
  long bad;
  if (chunked && (bad = kg_ckpt_chunker_check(c, mem)) >= 0)
    return kg__ckpt_set(r, KG_ECKPT_CORRUPT, name,
                        "member '%s' does not match its digest (chunk %ld, bytes %llu..%llu)",
                        name, bad, (unsigned long long) bad * KG_CKPT_CHUNK_SIZE,
                        (unsigned long long) (bad + 1) * KG_CKPT_CHUNK_SIZE - 1);
  if (hash_here) {
    unsigned char digest[KG_CKPT_DIGEST_BYTES];
    crypto_generichash_final(&st, digest, sizeof digest);
    if (sodium_memcmp(digest, mem->digest, sizeof digest) != 0)
      return kg__ckpt_set(r, KG_ECKPT_CORRUPT, name, "member '%s' does not match its digest",
                          name);
  }
  if (sink && sink->end && (rc = sink->end(sink->arg, mem)) < 0)
    return kg__ckpt_set(r, rc, name, "restoring '%s': %s", name, kg_strerror(rc));
  return 0;
}

/*  Every member after the signature, in archive order: each header checked,
    its data streamed (or checked in place through rd's pool), then every
    listed member seen and the sink's own digests confirmed. Returns 0 with
    r "valid", or the verdict with r filled. */
static int
s_verify_members(struct archive *a, kg_ckpt_report_t *r, const kg_ckpt_sink_t *sink,
                 kg_ckpt_chunker_t *c, kg_ckpt_reader_t *rd)
{
  uint64_t data_before = 0;   /* in place: member bytes before this header */
  bool sink_hashes = sink && sink->finish;
  kg_ckpt_manifest_t *m = r->manifest;
  struct archive_entry *e;
  int h;
  while ((h = archive_read_next_header(a, &e)) == ARCHIVE_OK || h == ARCHIVE_WARN) {
    kg_ckpt_member_t *mem = NULL;
    int rc = s_member_header(e, r, &mem);
    if (rc < 0)
      return rc;
    if (rd->pool)
      rc = kg__ckpt_check_in_place(a, r, rd, mem, &data_before);
    else
      rc = s_member_data(a, r, sink, c, mem);
    if (rc < 0)
      return rc;
  }
  if (h != ARCHIVE_EOF)
    return kg__ckpt_archive_fail(r, a, NULL, "reading a member header");
  for (size_t i = 0; i < m->count; i++)
    if (!m->members[i].seen)
      return kg__ckpt_set(r, KG_ECKPT_TRUNC, m->members[i].path,
                          "listed member '%s' is missing", m->members[i].path);
  if (sink_hashes) {
    const kg_ckpt_member_t *bad = NULL;
    int rc = sink->finish(sink->arg, &bad);
    const char *name = bad ? bad->path : NULL;
    if (rc == KG_ECKPT_CORRUPT && name)
      return kg__ckpt_set(r, rc, name, "member '%s' does not match its digest", name);
    if (rc != 0)
      return kg__ckpt_set(r, rc, name, "restoring '%s': %s", name ? name : "the archive",
                          kg_strerror(rc));
  }
  return kg__ckpt_set(r, 0, NULL, "valid");
}

/*  The signature member that must follow the manifest, read into
    sig[crypto_sign_BYTES]. Returns 0, or the verdict with r filled. */
static int
s_read_signature(struct archive *a, kg_ckpt_report_t *r, unsigned char *sig)
{
  struct archive_entry *e;
  int h = archive_read_next_header(a, &e);
  if (h == ARCHIVE_EOF)
    return kg__ckpt_set(r, KG_ECKPT_TRUNC, NULL, "archive ends after the manifest");
  if (h < ARCHIVE_WARN)
    return kg__ckpt_archive_fail(r, a, NULL, "reading the signature header");
  const char *name = s_entry_name(e);
  if (!name || strcmp(name, KG_CKPT_SIG_NAME) != 0)
    return kg__ckpt_set(r, KG_ECKPT_UNSIGNED, NULL, "no " KG_CKPT_SIG_NAME " after the manifest");
  int rc = s_check_type(r, e, name);
  if (rc < 0)
    return rc;
  if (archive_entry_size(e) != crypto_sign_BYTES)
    return kg__ckpt_set(r, KG_ECKPT_MALFORMED, name, "signature is not %d bytes",
                        crypto_sign_BYTES);
  return s_read_small(a, r, name, sig, crypto_sign_BYTES);
}

/*  Authenticate json[msize] with sig against keys: signed by a held key and
    naming it, r->manifest is the decoded manifest (r owns it). Otherwise the
    verdict says whether the signer is a key not trusted, there is no key at
    all, or the manifest or signature was altered. Returns 0 or the verdict. */
static int
s_authenticate(kg_ckpt_report_t *r, const kg_keyring_t *keys, const char *json, size_t msize,
               const unsigned char *sig)
{
  char why[256] = "";
  int rc = 0;
  kg_ckpt_manifest_t *m = NULL;
  const kg_key_t *signer = kg_keyring_verify(keys, sig, json, msize);
  if (signer) {
    r->authenticated = true;
    snprintf(r->signer, sizeof r->signer, "%s", signer->name);
    snprintf(r->signer_id, sizeof r->signer_id, "%s", signer->id);
    if ((rc = kg_ckpt_manifest_decode(json, msize, &m, why, sizeof why)) < 0)
      kg__ckpt_set(r, rc, KG_CKPT_MANIFEST_NAME, "%s", why);
    else if (strcmp(m->key_id, signer->id) != 0)
      rc = kg__ckpt_set(r, KG_ECKPT_MALFORMED, KG_CKPT_MANIFEST_NAME,
                        "manifest names key %s but is signed by %s", m->key_id, signer->id);
    else
      r->manifest = m, m = NULL;
    kg_ckpt_manifest_destroy(&m);
    return rc;
  }
  /* Not verified: say whether it names a key we do not hold or was altered. */
  char held[96];
  kg_keyring_describe(keys, held, sizeof held);
  if (kg_ckpt_manifest_decode(json, msize, &m, why, sizeof why) == 0
      && !kg_keyring_find(keys, m->key_id))
    rc = kg__ckpt_set(r, KG_ECKPT_UNSIGNED, NULL,
                      "signed by key %s, which you do not trust (%s); "
                      "if you trust its owner, import their `kguard keys export` with "
                      "`kguard keys import NAME FILE`", m->key_id, held);
  else if (!keys || keys->count == 0)
    rc = kg__ckpt_set(r, KG_ECKPT_UNSIGNED, NULL, "no key to check its signature with: "
                      "`kguard keys import NAME FILE` trusts the signer's public key");
  else
    rc = kg__ckpt_set(r, KG_ECKPT_CORRUPT, KG_CKPT_MANIFEST_NAME,
                      "manifest signature does not match (manifest or signature altered)");
  kg_ckpt_manifest_destroy(&m);
  return rc;
}

/*  Read the manifest and signature members and authenticate. */
static int
s_verify_manifest(struct archive *a, kg_ckpt_report_t *r, const kg_keyring_t *keys)
{
  struct archive_entry *e;
  int h = archive_read_next_header(a, &e);
  if (h == ARCHIVE_EOF)
    return kg__ckpt_set(r, KG_ECKPT_MALFORMED, NULL, "archive has no members (no manifest)");
  if (h < ARCHIVE_WARN)
    return kg__ckpt_archive_fail(r, a, NULL, "reading the first header");
  const char *name = s_entry_name(e);
  if (!name || strcmp(name, KG_CKPT_MANIFEST_NAME) != 0)
    return kg__ckpt_set(r, KG_ECKPT_MALFORMED, NULL,
                        "no manifest (first member is '%.200s', not " KG_CKPT_MANIFEST_NAME ")",
                        name ? name : "(not UTF-8)");
  int rc = s_check_type(r, e, name);
  if (rc < 0)
    return rc;
  la_int64_t msize = archive_entry_size(e);
  if (msize <= 0 || msize > KG_CKPT_MANIFEST_MAX)
    return kg__ckpt_set(r, KG_ECKPT_UNSAFE, name, "manifest size %lld outside 1..%d bytes",
                        (long long) msize, KG_CKPT_MANIFEST_MAX);
  char *json = malloc((size_t) msize);
  if (!json)
    return kg__ckpt_set(r, KG_ENOMEM, name, "out of memory");
  unsigned char sig[crypto_sign_BYTES];
  if ((rc = s_read_small(a, r, name, json, (size_t) msize)) < 0)
    goto done;
  unsigned char md[KG_CKPT_DIGEST_BYTES];
  crypto_generichash(md, sizeof md, (unsigned char *) json, (unsigned long long) msize, NULL, 0);
  kg_ckpt_hex(md, sizeof md, r->manifest_digest);
  if ((rc = s_read_signature(a, r, sig)) < 0)
    goto done;
  rc = s_authenticate(r, keys, json, (size_t) msize, sig);
done:
  free(json);
  return rc;
}

/*  Open path for reading under its shared lock: a reader in progress;
    pruning takes the lock exclusively, without waiting, and keeps an
    archive whose lock is held (kg_ckpt_retain.h). A regular, non-empty
    file: 0 with *fd and *st; else the verdict (r filled), *fd open or -1. */
static int
s_open_archive(const char *path, kg_ckpt_report_t *r, int *fd, struct stat *st)
{
  *fd = open(path, O_RDONLY | O_CLOEXEC);
  if (*fd < 0)
    return kg__ckpt_set(r, -errno, NULL, "cannot open: %s", strerror(errno));
  while (flock(*fd, LOCK_SH) < 0 && errno == EINTR)
    ;
  if (fstat(*fd, st) < 0)
    return kg__ckpt_set(r, -errno, NULL, "cannot stat: %s", strerror(errno));
  if (!S_ISREG(st->st_mode))
    return kg__ckpt_set(r, KG_ECKPT_MALFORMED, NULL, "not a regular file");
  r->archive_size = (uint64_t) st->st_size;
  if (st->st_size == 0)
    return kg__ckpt_set(r, KG_ECKPT_TRUNC, NULL, "empty file");
  return 0;
}

int
kg_ckpt_verify(const char *path, const kg_keyring_t *keys, unsigned flags,
               const kg_ckpt_sink_t *sink, kg_ckpt_report_t *r)
{
  memset(r, 0, sizeof *r);
  /* No sodium_init() here, on purpose: see "Why there is no sodium_init()" in
     kg_ckpt_util.h (the portable BLAKE2b is the faster one on our CPUs). */
  struct stat st;
  int fd = -1, rc = s_open_archive(path, r, &fd, &st);
  if (rc != 0)
    goto out;
  posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  unsigned char magic[4] = {0};
  if (pread(fd, magic, sizeof magic, 0) == (ssize_t) sizeof magic && magic[0] == 'P'
      && magic[1] == 'K' && (magic[2] == 3 || magic[2] == 5) && magic[3] == magic[2] + 1) {
    rc = kg__ckpt_verify_zip(fd, r);
    goto out;
  }
  kg_ckpt_reader_t rd;
  kg__ckpt_reader_init(&rd, fd, r->archive_size, sink);
  struct archive *a = archive_read_new();
  if (!a || !(rd.buf = malloc(KG_CKPT_READ_BLOCK))) {
    archive_read_free(a);
    rc = kg__ckpt_set(r, KG_ENOMEM, NULL, "out of memory");
    goto out_reader;
  }
  /* As for zip: a registration that fails is out of memory. (zstd may
     answer ARCHIVE_WARN: an external program instead of the library.) */
  if (archive_read_support_filter_zstd(a) < ARCHIVE_WARN
      || archive_read_support_format_tar(a) != ARCHIVE_OK) {
    archive_read_free(a);
    free(rd.buf);
    rc = kg__ckpt_set(r, KG_ENOMEM, NULL, "out of memory");
    goto out_reader;
  }
  if (archive_read_open2(a, &rd, NULL, kg__ckpt_reader_read, kg__ckpt_reader_skip, NULL)
      != ARCHIVE_OK) {
    /* Our archives start with the manifest's header (or zstd's magic): one
       that cannot even be opened was cut inside its first header. */
    static const unsigned char zmagic[4] = {0x28, 0xb5, 0x2f, 0xfd};
    char head[sizeof KG_CKPT_MANIFEST_NAME] = "";
    ssize_t got = pread(fd, head, sizeof head, 0);
    if ((st.st_size < 1024 && got > 0
         && strncmp(head, KG_CKPT_MANIFEST_NAME, (size_t) got) == 0)
        || memcmp(magic, zmagic, sizeof zmagic) == 0)
      rc = kg__ckpt_set(r, KG_ECKPT_TRUNC, NULL, "archive ends inside its first header (%s)",
                        archive_error_string(a) ? archive_error_string(a) : "?");
    else
      rc = kg__ckpt_archive_fail(r, a, NULL, "opening");
  }
  else if ((rc = s_verify_manifest(a, r, keys)) == 0) {
    /* In place: uncompressed (libarchive's own view, not the manifest's
       word), and nothing wants the bytes themselves. */
    bool in_place = archive_filter_count(a) == 1
                    && archive_filter_code(a, 0) == ARCHIVE_FILTER_NONE
                    && (!sink || (!sink->begin && !sink->data && !sink->end && !sink->finish));
    if (flags & KG_CKPT_VERIFY_MANIFEST_ONLY) {
      rc = kg__ckpt_set(r, 0, NULL, "manifest authenticated");
    } else if (in_place && !(rd.pool = kg_ckpt_rangecheck_new(fd, &rd.cap))) {
      rc = kg__ckpt_set(r, KG_ENOMEM, NULL, "cannot start the hashing threads");
    } else {
      rc = s_verify_payload(a, r, sink, &rd);
    }
  }
  archive_read_free(a);
  free(rd.buf);
  /* The end: a valid archive was checked to its last byte. */
  if (rc == 0 && rd.pool)
    rd.meta = rd.total;
  kg__ckpt_reader_report(&rd, true);
out_reader:
  kg__ckpt_reader_fini(&rd);
out:
  if (fd >= 0)
    close(fd);
  return rc;
}

void
kg_ckpt_report_clear(kg_ckpt_report_t *r)
{
  kg_ckpt_manifest_destroy(&r->manifest);
  memset(r, 0, sizeof *r);
}

int
kg_ckpt_status_of(int rc)
{
  switch (rc) {
  case 0: return KG_CKPT_VALID;
  case KG_ECKPT_UNSIGNED: return KG_CKPT_UNSIGNED;
  case KG_ECKPT_CORRUPT: return KG_CKPT_CORRUPT;
  case KG_ECKPT_TRUNC: return KG_CKPT_INCOMPLETE;
  case KG_ECKPT_MALFORMED: return KG_CKPT_MALFORMED;
  case KG_ECKPT_UNSAFE: return KG_CKPT_UNSAFE;
  default: return -1;
  }
}

const char *
kg_ckpt_status_name(int rc)
{
  static const char *names[] = {"valid", "unsigned", "corrupt", "incomplete", "malformed", "unsafe"};
  int s = kg_ckpt_status_of(rc);
  return s < 0 ? "error" : names[s];
}
