/*  kg_ckpt_verify's verdicts on a sealed archive and damaged copies of it:
    valid with the signer's key; unsigned without a key, or with only a key
    it was not signed by (the reason says which); a flipped data byte is
    corrupt and names its member, unless only the manifest is checked; an
    archive cut short is truncated; a file that is no archive is refused.
    Keys and payload from ckpt_fixture.h. */
#include "ckpt_fixture.h"

#include "kg_ckpt_verify.h"

/*  A copy of the archive at from into name under the root (its path into
    out), with the byte at offset flip (>= 0) inverted and cut to keep bytes
    (0: whole). */
static void
s_damaged(const char *from, const char *name, long flip, long keep, char *out, size_t outsize)
{
  if (snprintf(out, outsize, "%s/%s", s_root, name) >= (int) outsize)
    abort();
  FILE *in = fopen(from, "rb"), *o = fopen(out, "wb");
  KG_CHECK(in && o);
  long i = 0;
  int c;
  while (in && o && (c = fgetc(in)) != EOF && (keep == 0 || i < keep)) {
    fputc(i == flip ? c ^ 0xff : c, o);
    i++;
  }
  if (in)
    fclose(in);
  if (o)
    fclose(o);
}

KG_TEST(verify_verdict_table)
{
  s_setup();
  char good[PATH_MAX], bad[PATH_MAX + 64], other_dir[PATH_MAX + 16];
  KG_CHECK_INT(s_seal(3, 0, false, good), 0);
  struct stat st;
  KG_CHECK_INT(stat(good, &st), 0);
  /* state.pt is 200000 of the archive's bytes: its middle is state.pt's data */
  long mid = (long) st.st_size / 2;

  /* a keyring holding only a key that did not sign it */
  unsigned char other_pk[KG_KEYS_PUBLIC_BYTES];
  snprintf(other_dir, sizeof other_dir, "%s/other-keys", s_root);
  KG_CHECK_INT(kg_keys_generate(other_dir, false, NULL, 0), 0);
  KG_CHECK_INT(kg_keys_load_public(other_dir, other_pk, NULL, 0), 0);
  kg_keyring_t *other = kg_keyring_new(), *none = kg_keyring_new();
  KG_CHECK(other && kg_keyring_add(other, other_pk, "colleague", NULL) == 0);

  static const char text[] = "not an archive at all\n";
  char junk[PATH_MAX + 16];
  snprintf(junk, sizeof junk, "%s/junk.kgckpt.tar", s_root);
  FILE *jf = fopen(junk, "w");
  fputs(text, jf);
  fclose(jf);

  const struct {
    const char *what;
    const char *path_name;   /*  NULL: the good archive; else a damaged copy */
    long flip, keep;
    const kg_keyring_t *keys;
    unsigned flags;
    int rc;
    const char *reason_has, *member;
  } rows[] = {
    {"valid", NULL, -1, 0, s_keys, 0, 0, "valid", ""},
    {"no key", NULL, -1, 0, none, 0, KG_ECKPT_UNSIGNED, "no key", ""},
    {"another key", NULL, -1, 0, other, 0, KG_ECKPT_UNSIGNED, "do not trust", ""},
    {"data byte flipped", "flip.kgckpt.tar", mid, 0, s_keys, 0, KG_ECKPT_CORRUPT,
     "does not match its digest", "state.pt"},
    {"flipped, manifest only", "flip2.kgckpt.tar", mid, 0, s_keys,
     KG_CKPT_VERIFY_MANIFEST_ONLY, 0, NULL, NULL},
    {"cut short", "cut.kgckpt.tar", -1, mid, s_keys, 0, KG_ECKPT_TRUNC, NULL, NULL},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    const char *path = good;
    if (rows[i].path_name) {
      s_damaged(good, rows[i].path_name, rows[i].flip, rows[i].keep, bad, sizeof bad);
      path = bad;
    }
    kg_ckpt_report_t r;
    int rc = kg_ckpt_verify(path, rows[i].keys, rows[i].flags, NULL, &r);
    if (rc != rows[i].rc || (rows[i].reason_has && !strstr(r.reason, rows[i].reason_has)))
      fprintf(stderr, "row %s: %d (%s)\n", rows[i].what, rc, r.reason);
    KG_CHECK_INT(rc, rows[i].rc);
    KG_CHECK_INT(r.rc, rc);
    if (rows[i].reason_has)
      KG_CHECK(strstr(r.reason, rows[i].reason_has) != NULL);
    if (rows[i].member)
      KG_CHECK_STR(r.member, rows[i].member);
    /* the digest of the manifest is known once it was read */
    KG_CHECK_INT(strlen(r.manifest_digest), 64);
    kg_ckpt_report_clear(&r);
  }
  kg_ckpt_report_t r;
  KG_CHECK(kg_ckpt_verify(junk, s_keys, 0, NULL, &r) != 0);
  KG_CHECK(!r.authenticated);
  kg_ckpt_report_clear(&r);
  kg_keyring_destroy(&other);
  kg_keyring_destroy(&none);
  kg_keyring_destroy(&s_keys);
  s_teardown();
}

KG_TEST_MAIN(KG_CASE(verify_verdict_table))
