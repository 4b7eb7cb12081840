/*  kg_ckpt_seal_scan: the first half of sealing: walk the directory into a
    manifest, then hash its members in parallel (kg_ckpt_seal.c writes). */
#include "kg_ckpt_seal_scan.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_ckpt_hasher.h"
#include "kg_ckpt_util.h"
#include "kg_error.h"

#define IO_BLOCK (1 << 20)
_Static_assert(IO_BLOCK <= KG_CKPT_HASHER_BLOCK, "a read must fit a hasher block");
#define HASH_THREADS_MAX 4

/*  One parallel hashing run: workers take the next member index; the
    first failure stops them all and its message is kept. */
typedef struct {
  kg_ckpt_manifest_t *m;
  struct timespec *mtimes;  /* per member, as hashed */
  int rootfd;
  atomic_size_t next;
  atomic_int rc;
  char why[256];
  pthread_mutex_t lock;
  atomic_uint_least64_t hashed;   /* bytes hashed by every thread           */
  uint64_t total;                 /* bytes of every member                  */
  void (*progress)(void *arg, uint64_t done, uint64_t total);  /* or NULL */
  void *arg;
  pthread_t caller;               /* the only thread that reports progress  */
} s_hash_job_t;


/* ---- walking the directory -------------------------------------------- */

int
kg_ckpt_seal_walk(int dfd, const char *prefix, kg_ckpt_manifest_t *m, char *why, size_t whysize)
{
  DIR *d = fdopendir(dfd);
  if (!d) {
    int e = -errno;
    close(dfd);
    return kg_ckpt_fail(why, whysize, e, "reading directory '%s': %s", *prefix ? prefix : ".");
  }
  int rc = 0;
  struct dirent *de;
  while (rc == 0 && (de = readdir(d))) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    char rel[KG_CKPT_PATH_MAX + 2];
    if (snprintf(rel, sizeof rel, "%s%s%s", prefix, *prefix ? "/" : "", de->d_name)
        >= (int) sizeof rel)
      return closedir(d), kg_ckpt_fail(why, whysize, KG_ETOOBIG, "name too long: '%s' (%s)", de->d_name);
    struct stat st;
    if (fstatat((dirfd)(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
      rc = kg_ckpt_fail(why, whysize, -errno, "stat '%s': %s", rel);
      break;
    }
    if (S_ISDIR(st.st_mode)) {
      int sub = openat((dirfd)(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub < 0) {
        rc = kg_ckpt_fail(why, whysize, -errno, "opening '%s': %s", rel);
        break;
      }
      rc = kg_ckpt_seal_walk(sub, rel, m, why, whysize);
      continue;
    }
    if (!S_ISREG(st.st_mode)) {
      snprintf(why, whysize, "'%s' is not a regular file or directory; only those are sealed", rel);
      rc = KG_EUSAGE;
      break;
    }
    const char *problem = kg_ckpt_path_problem(rel);
    if (problem) {
      snprintf(why, whysize, "'%.300s': %s", rel, problem);
      rc = KG_EUSAGE;
      break;
    }
    if (strcmp(rel, KG_CKPT_MANIFEST_NAME) == 0 || strcmp(rel, KG_CKPT_SIG_NAME) == 0) {
      snprintf(why, whysize, "'%s' is a reserved name", rel);
      rc = KG_EUSAGE;
      break;
    }
    int idx = kg_ckpt_manifest_add(m, rel, (uint64_t) st.st_size);
    if (idx < 0) {
      rc = kg_ckpt_fail(why, whysize, idx, "adding '%s': %s", rel);
      break;
    }
  }
  closedir(d);
  return rc;
}

/* ---- hashing, in parallel across files --------------------------------- */

static int
s_hash_one(s_hash_job_t *job, size_t i, unsigned char *buf)
{
  kg_ckpt_member_t *mem = &job->m->members[i];
  int fd = openat(job->rootfd, mem->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  struct stat st;
  if (fstat(fd, &st) < 0) {
    close(fd);
    return -errno;
  }
  job->mtimes[i] = st.st_mtim;
  posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  crypto_generichash_state hs;
  crypto_generichash_init(&hs, NULL, 0, KG_CKPT_DIGEST_BYTES);
  uint64_t total = 0;
  size_t k = 0;
  ssize_t n;
  for (;;) {
    size_t want = IO_BLOCK;
    if (mem->chunks) { /* v2: stop at each chunk's end */
      uint64_t to_end = KG_CKPT_CHUNK_SIZE - total % KG_CKPT_CHUNK_SIZE;
      if (to_end < want)
        want = (size_t) to_end;
    }
    if ((n = read(fd, buf, want)) <= 0)
      break;
    crypto_generichash_update(&hs, buf, (size_t) n);
    total += (uint64_t) n;
    uint64_t all = atomic_fetch_add(&job->hashed, (uint64_t) n) + (uint64_t) n;
    if (job->progress && pthread_equal(pthread_self(), job->caller))
      job->progress(job->arg, all, job->total);
    if (mem->chunks && total % KG_CKPT_CHUNK_SIZE == 0 && k + 1 < mem->nchunks) {
      crypto_generichash_final(&hs, mem->chunks[k++], KG_CKPT_DIGEST_BYTES);
      crypto_generichash_init(&hs, NULL, 0, KG_CKPT_DIGEST_BYTES);
    }
  }
  int rc = n < 0 ? -errno : 0;
  close(fd);
  if (rc == 0 && (total != (uint64_t) st.st_size || total != mem->size))
    rc = -EAGAIN; /* changed while we read it */
  crypto_generichash_final(&hs, mem->chunks ? mem->chunks[k] : mem->digest,
                           KG_CKPT_DIGEST_BYTES);
  return rc;
}

static void *
s_hash_worker(void *arg)
{
  s_hash_job_t *job = arg;
  unsigned char *buf = malloc(IO_BLOCK);
  if (!buf) {
    atomic_store(&job->rc, KG_ENOMEM);
    return NULL;
  }
  size_t i;
  while (atomic_load(&job->rc) == 0 && (i = atomic_fetch_add(&job->next, 1)) < job->m->count) {
    int rc = s_hash_one(job, i, buf);
    if (rc < 0) {
      pthread_mutex_lock(&job->lock);
      if (atomic_load(&job->rc) == 0) {
        snprintf(job->why, sizeof job->why, "hashing '%.200s': %s", job->m->members[i].path,
                 rc == -EAGAIN ? "file changed while sealing" : kg_strerror(rc));
        atomic_store(&job->rc, rc);
      }
      pthread_mutex_unlock(&job->lock);
    }
  }
  free(buf);
  return NULL;
}

int
kg_ckpt_seal_hash_all(kg_ckpt_manifest_t *m, int rootfd, struct timespec *mtimes,
                      void (*progress)(void *arg, uint64_t done, uint64_t total), void *arg,
                      char *why, size_t whysize)
{
  s_hash_job_t jobv = {.m = m, .rootfd = rootfd, .mtimes = mtimes, .progress = progress,
                       .arg = arg, .caller = pthread_self()};
  s_hash_job_t *job = &jobv;
  atomic_init(&job->hashed, 0);
  for (size_t i = 0; i < m->count; i++)
    job->total += m->members[i].size;
  if (progress)
    progress(arg, 0, job->total);
  pthread_mutex_init(&job->lock, NULL);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  size_t n = cpus > 0 ? (size_t) cpus : 1;
  if (n > HASH_THREADS_MAX)
    n = HASH_THREADS_MAX;
  if (n > job->m->count)
    n = job->m->count;
  pthread_t tids[HASH_THREADS_MAX];
  size_t started = 0;
  for (size_t i = 1; i < n; i++)
    if (pthread_create(&tids[started], NULL, s_hash_worker, job) == 0)
      started++;
  s_hash_worker(job); /* this thread works too */
  for (size_t i = 0; i < started; i++)
    pthread_join(tids[i], NULL);
  pthread_mutex_destroy(&job->lock);
  int rc = atomic_load(&job->rc);
  if (progress && rc == 0)
    progress(arg, job->total, job->total);
  if (rc < 0)
    snprintf(why, whysize, "%s", job->why);
  return rc;
}
