/*  Unit tests of the checkpoint library on small temporary directories. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <dirent.h>

#include <sodium.h>

#include "kg_clock.h"
#include "kg_ckpt_hasher.h"
#include "kg_ckpt_hashpool.h"
#include "kg_ckpt_list.h"
#include "kg_ckpt_manifest.h"
#include "kg_ckpt_quarantine.h"
#include "kg_ckpt_restore.h"
#include "kg_ckpt_retain.h"
#include "kg_ckpt_seal.h"
#include "kg_ckpt_util.h"
#include "kg_ckpt_verify.h"
#include "kg_error.h"
#include "kg_keys.h"
#include "kg_test.h"

static char s_root[PATH_MAX];
static unsigned char s_sk[KG_KEYS_SECRET_BYTES], s_pk[KG_KEYS_PUBLIC_BYTES];
static kg_keyring_t *s_keys; /* s_pk as the user's own key */

static void
s_write(const char *path, size_t size, unsigned seed)
{
  FILE *f = fopen(path, "wb");
  for (size_t i = 0; i < size; i++)
    fputc((int) ((i * 131 + seed) & 0xff), f);
  fclose(f);
}

/* A fresh temp root with keys and a payload dir "src" (two files). */
static void
s_setup(void)
{
  snprintf(s_root, sizeof s_root, "/tmp/kg-ckpt-test-XXXXXX");
  if (!mkdtemp(s_root))
    abort();
  char p[PATH_MAX + 64];
  snprintf(p, sizeof p, "%s/keys", s_root);
  KG_CHECK_INT(kg_keys_generate(p, false, NULL, 0), 0);
  KG_CHECK_INT(kg_keys_generate(p, false, NULL, 0), KG_EEXISTS);
  KG_CHECK_INT(kg_keys_load_secret(p, false, s_sk, NULL, 0), 0);
  KG_CHECK_INT(kg_keys_load_public(p, s_pk, NULL, 0), 0);
  KG_CHECK(memcmp(s_sk + 32, s_pk, 32) == 0);
  kg_keyring_destroy(&s_keys);
  s_keys = kg_keyring_new();
  KG_CHECK(s_keys && kg_keyring_add(s_keys, s_pk, NULL, NULL) == 0);
  snprintf(p, sizeof p, "%s/src/d", s_root);
  char src[PATH_MAX + 64];
  snprintf(src, sizeof src, "%s/src", s_root);
  mkdir(src, 0755);
  mkdir(p, 0755);
  snprintf(p, sizeof p, "%s/src/state.pt", s_root);
  s_write(p, 200000, 1);
  snprintf(p, sizeof p, "%s/src/d/extra.bin", s_root);
  s_write(p, 777, 2);
}

static void
s_teardown(void)
{
  int fd = open("/tmp", O_RDONLY | O_DIRECTORY);
  kg_ckpt_remove_tree_at(fd, s_root + 5);
  close(fd);
}

static int
s_seal(int64_t step, int64_t when, bool zstd, char *out)
{
  char src[PATH_MAX + 8], into[PATH_MAX + 8], why[512];
  snprintf(src, sizeof src, "%s/src", s_root);
  snprintf(into, sizeof into, "%s/ck", s_root);
  kg_ckpt_seal_opts_t o = {.dir = src, .step = step, .run = "unit", .into = into,
                           .zstd = zstd, .sk = s_sk, .now_ms = when};
  int rc = kg_ckpt_seal(&o, out, PATH_MAX, why, sizeof why);
  if (rc < 0)
    fprintf(stderr, "seal: %s\n", why);
  return rc;
}

KG_TEST(time_parse_and_format)
{
  int64_t ms;
  char buf[32];
  KG_CHECK_INT(kg_ckpt_parse_time("1767323045678", &ms), 0);
  KG_CHECK_INT(ms, 1767323045678LL);
  KG_CHECK_STR(kg_clock_iso_ms(ms, buf, sizeof buf), "2026-01-02T03:04:05.678Z");
  KG_CHECK_INT(kg_ckpt_parse_time("2026-01-02T03:04:05.678Z", &ms), 0);
  KG_CHECK_INT(ms, 1767323045678LL);
  KG_CHECK_INT(kg_ckpt_parse_time("2026-01-02T05:04:05.678+02:00", &ms), 0);
  KG_CHECK_INT(ms, 1767323045678LL);
  KG_CHECK_INT(kg_ckpt_parse_time("2026-01-02 03:04:05", &ms), 0);
  KG_CHECK_INT(ms, 1767323045000LL);
  KG_CHECK_INT(kg_ckpt_parse_time("yesterday", &ms), KG_EUSAGE);
  KG_CHECK_INT(kg_ckpt_parse_time("2026-13-02T03:04:05Z", &ms), KG_EUSAGE);
}

KG_TEST(member_names)
{
  KG_CHECK(kg_ckpt_path_problem("state.pt") == NULL);
  KG_CHECK(kg_ckpt_path_problem("a/b/c.bin") == NULL);
  KG_CHECK(kg_ckpt_path_problem("caf\xc3\xa9.pt") == NULL);
  KG_CHECK(kg_ckpt_path_problem("../x") != NULL);
  KG_CHECK(kg_ckpt_path_problem("a/../../x") != NULL);
  KG_CHECK(kg_ckpt_path_problem("/etc/passwd") != NULL);
  KG_CHECK(kg_ckpt_path_problem("a//b") != NULL);
  KG_CHECK(kg_ckpt_path_problem("./a") != NULL);
  KG_CHECK(kg_ckpt_path_problem("a/") != NULL);
  KG_CHECK(kg_ckpt_path_problem("") != NULL);
  KG_CHECK(kg_ckpt_path_problem("bad\xff.pt") != NULL);
  KG_CHECK(kg_ckpt_path_problem("over\xc0\xaflong") != NULL);
  KG_CHECK(kg_ckpt_path_problem("line\nbreak") != NULL);
  KG_CHECK(!kg_ckpt_utf8_valid("\xed\xa0\x80", 3)); /* surrogate */
  KG_CHECK(!kg_ckpt_utf8_valid("\xe2\x82", 2));     /* cut short */
}

KG_TEST(manifest_round_trip_and_rejects)
{
  kg_ckpt_manifest_t *m = kg_ckpt_manifest_new();
  snprintf(m->run, sizeof m->run, "r");
  m->step = 3;
  m->sealed_at_ms = 1000;
  snprintf(m->key_id, sizeof m->key_id, "b2:0011223344556677");
  KG_CHECK_INT(kg_ckpt_manifest_add(m, "b", 5), 0);
  KG_CHECK_INT(kg_ckpt_manifest_add(m, "a", 7), 1);
  KG_CHECK_INT(kg_ckpt_manifest_sort(m), 0);
  KG_CHECK_INT(kg_ckpt_manifest_alloc_chunks(m), 0);
  m->members[0].chunks[0][0] = 0xab;
  char *json = kg_ckpt_manifest_encode(m);
  kg_ckpt_manifest_t *back = NULL;
  char why[256];
  KG_CHECK_INT(kg_ckpt_manifest_decode(json, strlen(json), &back, why, sizeof why), 0);
  KG_CHECK_INT(back->version, 2);
  KG_CHECK_INT(back->members[0].nchunks, 1);
  KG_CHECK_INT(back->members[0].chunks[0][0], 0xab);
  KG_CHECK_INT(back->count, 2);
  KG_CHECK_STR(back->members[0].path, "a");
  KG_CHECK_INT(back->total_size, 12);
  KG_CHECK(kg_ckpt_manifest_find(back, "b") != NULL);
  KG_CHECK(kg_ckpt_manifest_find(back, "c") == NULL);
  kg_ckpt_manifest_destroy(&back);
  KG_CHECK(back == NULL);
  /* Version 1 (one whole-member digest) still round-trips. */
  m->version = 1;
  m->members[1].digest[0] = 0xcd;
  free(json);
  json = kg_ckpt_manifest_encode(m);
  KG_CHECK_INT(kg_ckpt_manifest_decode(json, strlen(json), &back, why, sizeof why), 0);
  KG_CHECK_INT(back->version, 1);
  KG_CHECK(back->members[1].chunks == NULL && back->members[1].digest[0] == 0xcd);
  kg_ckpt_manifest_destroy(&back);
  m->version = 2;

  /* A signed-looking manifest still may not name escaping paths. */
  free(m->members[0].path);
  m->members[0].path = strdup("../a");
  free(json);
  json = kg_ckpt_manifest_encode(m);
  KG_CHECK_INT(kg_ckpt_manifest_decode(json, strlen(json), &back, why, sizeof why),
               KG_ECKPT_UNSAFE);
  free(m->members[0].path);
  m->members[0].path = strdup("b");
  free(json);
  json = kg_ckpt_manifest_encode(m);
  KG_CHECK_INT(kg_ckpt_manifest_decode(json, strlen(json), &back, why, sizeof why),
               KG_ECKPT_UNSAFE); /* duplicate */
  KG_CHECK_INT(kg_ckpt_manifest_decode("[1]", 3, &back, why, sizeof why), KG_ECKPT_MALFORMED);
  KG_CHECK_INT(kg_ckpt_manifest_decode("{\"format\":\"kguard-checkpoint\",\"version\":3}", 42,
                                       &back, why, sizeof why),
               KG_ECKPT_MALFORMED);
  free(json);
  kg_ckpt_manifest_destroy(&m);
}

KG_TEST(seal_verify_restore)
{
  s_setup();
  char path[PATH_MAX], zpath[PATH_MAX];
  KG_CHECK_INT(s_seal(12, 0, false, path), 0);
  KG_CHECK_INT(s_seal(13, 0, true, zpath), 0);
  kg_ckpt_report_t r;
  KG_CHECK_INT(kg_ckpt_verify(path, s_keys, 0, NULL, &r), 0);
  KG_CHECK(r.authenticated);
  KG_CHECK_INT(r.manifest->step, 12);
  KG_CHECK_INT(r.manifest->count, 2);
  KG_CHECK_STR(r.manifest->run, "unit");
  kg_ckpt_report_clear(&r);
  KG_CHECK_INT(kg_ckpt_verify(zpath, s_keys, 0, NULL, &r), 0);
  KG_CHECK(r.manifest->zstd);
  kg_ckpt_report_clear(&r);
  /* Without the key: unsigned, never valid. */
  KG_CHECK_INT(kg_ckpt_verify(path, NULL, 0, NULL, &r), KG_ECKPT_UNSIGNED);
  kg_ckpt_report_clear(&r);

  char dest[PATH_MAX + 32], f[PATH_MAX + 64];
  snprintf(dest, sizeof dest, "%s/new/out", s_root);
  /* A missing parent is a mistake, never created (as tar -C and cp). */
  KG_CHECK_INT(kg_ckpt_restore(zpath, dest, s_keys, NULL, NULL, &r), KG_EUSAGE);
  KG_CHECK(strstr(r.reason, "does not exist") != NULL);
  kg_ckpt_report_clear(&r);
  snprintf(f, sizeof f, "%s/new", s_root);
  KG_CHECK_INT(access(f, F_OK), -1);
  KG_CHECK_INT(mkdir(f, 0700), 0);
  KG_CHECK_INT(kg_ckpt_restore(zpath, dest, s_keys, NULL, NULL, &r), 0);
  kg_ckpt_report_clear(&r);
  snprintf(f, sizeof f, "%s/d/extra.bin", dest);
  struct stat st;
  KG_CHECK_INT(stat(f, &st), 0);
  KG_CHECK_INT(st.st_size, 777);
  /* Destination exists: refused, untouched. */
  KG_CHECK_INT(kg_ckpt_restore(path, dest, s_keys, NULL, NULL, &r), KG_EEXISTS);
  kg_ckpt_report_clear(&r);
  s_teardown();
}

/* Seals of one step in the same millisecond used to collide on the final
   name (the second failed as a usage error); now each gets its own. */
KG_TEST(same_millisecond_seals_get_unique_names)
{
  s_setup();
  char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX];
  KG_CHECK_INT(s_seal(7, 5000000, false, a), 0);
  KG_CHECK_INT(s_seal(7, 5000000, false, b), 0);
  KG_CHECK_INT(s_seal(7, 5000000, false, c), 0);
  KG_CHECK(strcmp(a, b) != 0 && strcmp(b, c) != 0 && strcmp(a, c) != 0);
  KG_CHECK(strstr(b, "-2.kgckpt.tar") != NULL);
  KG_CHECK(strstr(c, "-3.kgckpt.tar") != NULL);
  kg_ckpt_report_t r;
  const char *all[] = {a, b, c};
  for (int i = 0; i < 3; i++) {
    KG_CHECK_INT(kg_ckpt_verify(all[i], s_keys, 0, NULL, &r), 0);
    kg_ckpt_report_clear(&r);
  }
  s_teardown();
}

/* Retention plan by table: items newest first as (authenticated, verified,
   named, step, time); "K" kept, "R" removed. */
KG_TEST(retain_plan_table)
{
  struct {
    const char *what;
    int keep;
    int64_t every;
    int64_t open[2];
    size_t nopen;
    size_t n;
    kg_ckpt_retain_item_t it[6];
    const char *want;
  } t[] = {
    {"nothing verified: nothing removed", 1, 0, {0}, 0, 3,
     {{true, false, false, 3, 300}, {true, false, false, 2, 200}, {true, false, false, 1, 100}},
     "KKK"},
    {"keep 2 from the newest valid", 2, 0, {0}, 0, 4,
     {{true, true, false, 4, 400}, {true, false, false, 3, 300}, {true, false, false, 2, 200},
      {true, false, false, 1, 100}},
     "KKRR"},
    {"newer than V (unverified or corrupt) always kept", 1, 0, {0}, 0, 4,
     {{true, false, false, 4, 400}, {true, true, false, 3, 300}, {true, false, false, 2, 200},
      {true, false, false, 1, 100}},
     "KKRR"},
    {"keep-every 10", 1, 10, {0}, 0, 4,
     {{true, true, false, 31, 400}, {true, false, false, 30, 300}, {true, false, false, 20, 200},
      {true, false, false, 15, 100}},
     "KKKR"},
    {"open incident keeps the newest before T", 1, 0, {250}, 1, 4,
     {{true, true, false, 4, 400}, {true, false, false, 3, 300}, {true, false, false, 2, 200},
      {true, false, false, 1, 100}},
     "KRKR"},
    {"a marker's archive is kept", 1, 0, {0}, 0, 3,
     {{true, true, false, 3, 300}, {true, false, false, 2, 200}, {true, false, true, 1, 100}},
     "KRK"},
    {"unauthenticated never removed, not counted", 2, 0, {0}, 0, 4,
     {{true, true, false, 4, 400}, {false, false, false, -1, 350}, {true, false, false, 3, 300},
      {true, false, false, 2, 200}},
     "KKKR"},
  };
  for (size_t c = 0; c < sizeof t / sizeof *t; c++) {
    bool rm[6];
    size_t n = kg_ckpt_retain_plan(t[c].it, t[c].n, t[c].keep, t[c].every, t[c].open,
                                   t[c].nopen, rm);
    char got[8] = "";
    size_t want_r = 0;
    for (size_t i = 0; i < t[c].n; i++) {
      got[i] = rm[i] ? 'R' : 'K';
      want_r += t[c].want[i] == 'R';
    }
    got[t[c].n] = '\0';
    if (strcmp(got, t[c].want) != 0)
      fprintf(stderr, "case '%s': got %s\n", t[c].what, got);
    KG_CHECK_STR(got, t[c].want);
    KG_CHECK_INT(n, want_r);
  }
}

KG_TEST(list_latest_before_and_quarantine)
{
  s_setup();
  char p1[PATH_MAX], p2[PATH_MAX], p3[PATH_MAX];
  KG_CHECK_INT(s_seal(1, 1000000, false, p1), 0);
  KG_CHECK_INT(s_seal(2, 2000000, false, p2), 0);
  KG_CHECK_INT(s_seal(3, 3000000, false, p3), 0);
  char ck[PATH_MAX + 8];
  snprintf(ck, sizeof ck, "%s/ck", s_root);
  /* A leftover of a crashed seal is listed but never chosen. */
  char left[PATH_MAX + 64];
  snprintf(left, sizeof left, "%s/.step-0000000009-x.kgckpt.tar.tmp-abcdef", ck);
  s_write(left, 100, 3);
  int rc;
  kg_ckpt_list_t *l = kg_ckpt_list_scan(ck, s_keys, false, &rc);
  KG_CHECK(l != NULL);
  KG_CHECK_INT(l->count, 4);
  /* The leftover's mtime is now, later than the 1970 seal times. */
  KG_CHECK(l->entries[0].leftover);
  KG_CHECK_INT(l->entries[1].step, 3);
  KG_CHECK_INT(l->entries[2].step, 2);
  KG_CHECK_INT(l->entries[3].step, 1);
  size_t i = 99;
  KG_CHECK_INT(kg_ckpt_list_latest(l, s_keys, INT64_MAX, &i), 0);
  KG_CHECK_STR(l->entries[i].path, p3);
  KG_CHECK_INT(kg_ckpt_list_latest(l, s_keys, 3000000, &i), 0);
  KG_CHECK_STR(l->entries[i].path, p2);
  KG_CHECK_INT(kg_ckpt_list_latest(l, s_keys, 1000000, &i), KG_ECKPT_NONE);
  KG_CHECK_INT(kg_ckpt_quarantine(l, "../bad", 0, NULL, NULL, 0), KG_EUSAGE);
  KG_CHECK_INT(kg_ckpt_quarantine(l, "inc", 2000000, NULL, NULL, 0), 2);
  KG_CHECK(!l->entries[0].moved_to); /* leftovers stay */
  KG_CHECK(l->entries[1].moved_to && l->entries[2].moved_to && !l->entries[3].moved_to);
  kg_ckpt_list_destroy(&l);
  l = kg_ckpt_list_scan(ck, s_keys, true, &rc);
  KG_CHECK_INT(l->count, 2); /* p1 and the leftover */
  KG_CHECK_INT(kg_ckpt_list_latest(l, s_keys, INT64_MAX, &i), 0);
  KG_CHECK_STR(l->entries[i].path, p1);
  kg_ckpt_list_destroy(&l);
  char q[PATH_MAX + 64];
  snprintf(q, sizeof q, "%s/quarantine/inc/%s", ck, strrchr(p3, '/') + 1);
  KG_CHECK_INT(access(q, F_OK), 0);
  s_teardown();
}

/*  A write error (file size limit) must leave no final name and no
    temporary. Run in a child so the limit does not leak. */
KG_TEST(seal_write_error_leaves_nothing)
{
  s_setup();
  pid_t pid = fork();
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {.rlim_cur = 100000, .rlim_max = RLIM_INFINITY};
    setrlimit(RLIMIT_FSIZE, &rl);
    char out[PATH_MAX];
    int rc = s_seal(5, 0, false, out);
    _exit(rc == -EFBIG ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  KG_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  char ck[PATH_MAX + 8];
  snprintf(ck, sizeof ck, "%s/ck", s_root);
  DIR *d = opendir(ck);
  int n = 0;
  struct dirent *de;
  while (d && (de = readdir(d)))
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
      n++, fprintf(stderr, "left: %s\n", de->d_name);
  if (d)
    closedir(d);
  KG_CHECK_INT(n, 0);
  s_teardown();
}

KG_TEST(seal_refuses_links)
{
  s_setup();
  char link[PATH_MAX + 32], out[PATH_MAX + 32], src[PATH_MAX + 8], why[512];
  snprintf(link, sizeof link, "%s/src/escape", s_root);
  KG_CHECK_INT(symlink("/etc/passwd", link), 0);
  snprintf(src, sizeof src, "%s/src", s_root);
  snprintf(out, sizeof out, "%s/x.kgckpt.tar", s_root);
  char final[PATH_MAX];
  kg_ckpt_seal_opts_t o = {.dir = src, .step = 1, .output = out, .sk = s_sk};
  KG_CHECK_INT(kg_ckpt_seal(&o, final, sizeof final, why, sizeof why), KG_EUSAGE);
  KG_CHECK(strstr(why, "escape") != NULL);
  KG_CHECK_INT(access(out, F_OK), -1);
  s_teardown();
}

/*  The hasher thread gives the same digests as one-shot hashing, for an
    empty input, a short one and one spanning more blocks than the ring has,
    pushed in uneven pieces and ended without waiting in between. */
KG_TEST(hasher_matches_one_shot_digests)
{
  size_t big = 5 * KG_CKPT_HASHER_BLOCK + 12345;
  unsigned char *data = malloc(big);
  KG_CHECK(data != NULL);
  for (size_t i = 0; i < big; i++)
    data[i] = (unsigned char) (i * 2654435761u >> 13);
  size_t sizes[3] = {0, 100, big};
  unsigned char got[3][KG_CKPT_DIGEST_BYTES], want[3][KG_CKPT_DIGEST_BYTES];
  kg_ckpt_hasher_t *h = kg_ckpt_hasher_new();
  KG_CHECK(h != NULL);
  for (int k = 0; k < 3; k++) {
    crypto_generichash(want[k], KG_CKPT_DIGEST_BYTES, data, sizes[k], NULL, 0);
    size_t done = 0, piece = 17;
    while (done < sizes[k]) {
      size_t n = sizes[k] - done < piece ? sizes[k] - done : piece;
      memcpy(kg_ckpt_hasher_slot(h), data + done, n);
      kg_ckpt_hasher_push(h, n);
      done += n;
      piece = piece == 17 ? KG_CKPT_HASHER_BLOCK : 17;
    }
    kg_ckpt_hasher_end(h, got[k]);
  }
  kg_ckpt_hasher_wait(h);
  for (int k = 0; k < 3; k++)
    KG_CHECK(memcmp(got[k], want[k], KG_CKPT_DIGEST_BYTES) == 0);
  kg_ckpt_hasher_destroy(&h);
  KG_CHECK(h == NULL);
  free(data);
}

/*  Files written piece by piece, progress reported as they grow: every
    digest checked, the first failing file named; a pool destroyed with a
    file half written stops without waiting for the rest. */
KG_TEST(hashpool_follows_growing_files)
{
  char dir[] = "/tmp/kg-hashpool-XXXXXX";
  KG_CHECK(mkdtemp(dir) != NULL);
  size_t big = 3 * KG_CKPT_HASHER_BLOCK + 777;
  unsigned char *data = malloc(big);
  KG_CHECK(data != NULL);
  for (size_t i = 0; i < big; i++)
    data[i] = (unsigned char) (i * 2654435761u >> 11);
  size_t sizes[5] = {big, 0, 100, big, 5000};
  kg_ckpt_hashpool_t *pool = kg_ckpt_hashpool_new();
  KG_CHECK(pool != NULL);
  for (size_t k = 0; k < 5; k++) {
    char path[64];
    snprintf(path, sizeof path, "%s/f%zu", dir, k);
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    KG_CHECK(fd >= 0);
    unsigned char want[KG_CKPT_DIGEST_BYTES];
    crypto_generichash(want, sizeof want, data, sizes[k], NULL, 0);
    if (k == 2 || k == 3)
      want[5] ^= 1;   /* the archive's digest says otherwise */
    kg_ckpt_hashjob_t *job = kg_ckpt_hashpool_add(pool, fd, sizes[k], want, &sizes[k]);
    KG_CHECK(job != NULL);
    for (size_t done = 0; done < sizes[k];) {
      size_t n = sizes[k] - done < 65536 ? sizes[k] - done : 65536;
      KG_CHECK(write(fd, data + done, n) == (ssize_t) n);
      done += n;
      kg_ckpt_hashpool_progress(pool, job, done);
    }
    close(fd);   /* the pool reads through its own duplicate */
  }
  const void *bad = NULL;
  KG_CHECK(kg_ckpt_hashpool_finish(pool, &bad) == KG_ECKPT_CORRUPT);
  KG_CHECK(bad == &sizes[2]);   /* the first of the two bad ones */
  kg_ckpt_hashpool_destroy(&pool);
  KG_CHECK(pool == NULL);

  /* All digests right: 0. Then a file never finished: destroy returns. */
  pool = kg_ckpt_hashpool_new();
  KG_CHECK(pool != NULL);
  char path[64];
  snprintf(path, sizeof path, "%s/g", dir);
  int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
  KG_CHECK(fd >= 0);
  unsigned char want[KG_CKPT_DIGEST_BYTES];
  crypto_generichash(want, sizeof want, data, 100, NULL, 0);
  kg_ckpt_hashjob_t *job = kg_ckpt_hashpool_add(pool, fd, 100, want, NULL);
  KG_CHECK(job != NULL && write(fd, data, 100) == 100);
  kg_ckpt_hashpool_progress(pool, job, 100);
  bad = NULL;
  KG_CHECK(kg_ckpt_hashpool_finish(pool, &bad) == 0);
  kg_ckpt_hashpool_destroy(&pool);
  pool = kg_ckpt_hashpool_new();
  KG_CHECK(pool != NULL);
  job = kg_ckpt_hashpool_add(pool, fd, big, want, NULL);
  KG_CHECK(job != NULL);
  kg_ckpt_hashpool_progress(pool, job, 50);   /* half written, then an error */
  kg_ckpt_hashpool_destroy(&pool);
  KG_CHECK(pool == NULL);
  close(fd);
  for (size_t k = 0; k < 5; k++) {
    snprintf(path, sizeof path, "%s/f%zu", dir, k);
    unlink(path);
  }
  snprintf(path, sizeof path, "%s/g", dir);
  unlink(path);
  rmdir(dir);
  free(data);
}

KG_TEST_MAIN(KG_CASE(time_parse_and_format), KG_CASE(member_names),
             KG_CASE(manifest_round_trip_and_rejects), KG_CASE(seal_verify_restore),
             KG_CASE(same_millisecond_seals_get_unique_names), KG_CASE(retain_plan_table),
             KG_CASE(list_latest_before_and_quarantine), KG_CASE(seal_write_error_leaves_nothing),
             KG_CASE(seal_refuses_links), KG_CASE(hasher_matches_one_shot_digests),
             KG_CASE(hashpool_follows_growing_files))
