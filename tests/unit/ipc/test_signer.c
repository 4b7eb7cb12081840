/*  kg_signer: RFC 4231 HMAC-SHA256 vectors fed through the four-frame API,
    the empty-key convention and signature rejection codes. */
#include <stdint.h>
#include <string.h>

#include "kg_error.h"
#include "kg_signer.h"
#include "kg_test.h"

typedef struct {
  unsigned char key[131];
  size_t key_len;
  const char *data;
  size_t data_len;
  const char *mac;
} vector_t;

static unsigned char s_dd[50], s_cd[50];

/*  RFC 4231 section 4, test cases 1-4, 6 and 7 (5 is a truncated MAC). */
static void
s_vectors(vector_t v[6])
{
  memset(v, 0, 6 * sizeof *v);
  memset(s_dd, 0xdd, sizeof s_dd);
  memset(s_cd, 0xcd, sizeof s_cd);
  memset(v[0].key, 0x0b, 20);
  v[0].key_len = 20;
  v[0].data = "Hi There";
  v[0].mac = "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7";
  memcpy(v[1].key, "Jefe", 4);
  v[1].key_len = 4;
  v[1].data = "what do ya want for nothing?";
  v[1].mac = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";
  memset(v[2].key, 0xaa, 20);
  v[2].key_len = 20;
  v[2].data = (const char *) s_dd;
  v[2].data_len = sizeof s_dd;
  v[2].mac = "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe";
  for (int i = 0; i < 25; i++)
    v[3].key[i] = (unsigned char) (i + 1);
  v[3].key_len = 25;
  v[3].data = (const char *) s_cd;
  v[3].data_len = sizeof s_cd;
  v[3].mac = "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b";
  memset(v[4].key, 0xaa, 131);
  v[4].key_len = 131;
  v[4].data = "Test Using Larger Than Block-Size Key - Hash Key First";
  v[4].mac = "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54";
  memset(v[5].key, 0xaa, 131);
  v[5].key_len = 131;
  v[5].data = "This is a test using a larger than block-size key and a larger than "
              "block-size data. The key needs to be hashed before being used by "
              "the HMAC algorithm.";
  v[5].mac = "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2";
  for (int i = 0; i < 6; i++)
    if (!v[i].data_len)
      v[i].data_len = strlen(v[i].data);
}

/*  Split data into four frames at a and b and c (a <= b <= c <= len). */
static void
s_split(const char *data, size_t len, size_t a, size_t b, size_t c, kg_frame_t parts[4])
{
  parts[0] = (kg_frame_t) {data, a};
  parts[1] = (kg_frame_t) {data + a, b - a};
  parts[2] = (kg_frame_t) {data + b, c - b};
  parts[3] = (kg_frame_t) {data + c, len - c};
}

KG_TEST(rfc4231)
{
  vector_t v[6];
  s_vectors(v);
  for (int i = 0; i < 6; i++) {
    kg_signer_t *s = kg_signer_new(v[i].key, v[i].key_len);
    KG_CHECK(s && kg_signer_enabled(s));
    size_t n = v[i].data_len;
    /*  The MAC is over the concatenation, however it is split (including
        empty frames). */
    size_t splits[][3] = {{n, n, n}, {0, 0, 0}, {1, n / 2, n - 1}, {0, n / 3, n / 3}};
    for (size_t k = 0; k < sizeof splits / sizeof splits[0]; k++) {
      kg_frame_t parts[4];
      s_split(v[i].data, n, splits[k][0], splits[k][1], splits[k][2], parts);
      char out[65];
      kg_signer_sign(s, parts, out);
      KG_CHECK_STR(out, v[i].mac);
      KG_CHECK_INT(kg_signer_verify(s, v[i].mac, 64, parts), 0);
    }
    kg_signer_destroy(&s);
    KG_CHECK(s == NULL);
  }
}

static void
s_parts(kg_frame_t parts[4], const char *h, const char *p, const char *m, const char *c)
{
  parts[0] = (kg_frame_t) {h, strlen(h)};
  parts[1] = (kg_frame_t) {p, strlen(p)};
  parts[2] = (kg_frame_t) {m, strlen(m)};
  parts[3] = (kg_frame_t) {c, strlen(c)};
}

KG_TEST(empty_key)
{
  kg_signer_t *s = kg_signer_new("", 0);
  KG_CHECK(s && !kg_signer_enabled(s));
  kg_frame_t parts[4];
  s_parts(parts, "{\"msg_id\":\"1\"}", "{}", "{}", "{}");
  char out[65];
  memset(out, 'x', sizeof out);
  kg_signer_sign(s, parts, out);
  KG_CHECK_STR(out, "");
  KG_CHECK_INT(kg_signer_verify(s, "", 0, parts), 0);
  KG_CHECK_INT(kg_signer_verify(s, "", 0, parts), 0);   /*  no replay check */
  KG_CHECK_INT(kg_signer_verify(s, "garbage", 7, parts), 0);
  kg_signer_destroy(&s);
  kg_signer_destroy(&s);                                 /*  safe on NULL */
}

KG_TEST(rejections)
{
  kg_signer_t *s = kg_signer_new("secret", 6);
  kg_frame_t parts[4];
  s_parts(parts, "{\"msg_id\":\"1\"}", "{}", "{}", "{\"code\":\"1+1\"}");
  char good[65];
  kg_signer_sign(s, parts, good);
  KG_CHECK_INT(strlen(good), 64);
  KG_CHECK_INT(kg_signer_verify(s, good, 64, parts), 0);
  /*  Without history the same signature passes again. */
  KG_CHECK_INT(kg_signer_verify(s, good, 64, parts), 0);

  KG_CHECK_INT(kg_signer_verify(s, "", 0, parts), KG_ENOSIG);
  KG_CHECK_INT(kg_signer_verify(s, good, 63, parts), KG_EBADSIG);
  char longer[66];
  memcpy(longer, good, 64);
  longer[64] = '0';
  KG_CHECK_INT(kg_signer_verify(s, longer, 65, parts), KG_EBADSIG);

  char bad[65];
  memcpy(bad, good, 65);
  bad[10] = bad[10] == '0' ? '1' : '0';                  /*  wrong value */
  KG_CHECK_INT(kg_signer_verify(s, bad, 64, parts), KG_EBADSIG);
  memcpy(bad, good, 65);
  bad[63] = 'g';                                         /*  not hex */
  KG_CHECK_INT(kg_signer_verify(s, bad, 64, parts), KG_EBADSIG);
  memcpy(bad, good, 65);
  bad[0] = ' ';
  KG_CHECK_INT(kg_signer_verify(s, bad, 64, parts), KG_EBADSIG);

  /*  Upper-case hex of the right MAC is the same bytes: accepted. */
  char upper[65];
  for (int i = 0; i < 65; i++)
    upper[i] = (good[i] >= 'a' && good[i] <= 'f') ? (char) (good[i] - 32) : good[i];
  KG_CHECK_INT(kg_signer_verify(s, upper, 64, parts), 0);

  /*  Changing any frame invalidates the signature. */
  kg_frame_t other[4];
  s_parts(other, "{\"msg_id\":\"1\"}", "{}", "{}", "{\"code\":\"1+2\"}");
  KG_CHECK_INT(kg_signer_verify(s, good, 64, other), KG_EBADSIG);
  /*  Moving a byte from one frame to the next keeps the concatenation and
      the MAC (HMAC is over the frames back to back, as in jupyter_client). */
  s_parts(other, "{\"msg_id\":\"1\"}{", "}", "{}", "{\"code\":\"1+1\"}");
  KG_CHECK_INT(kg_signer_verify(s, good, 64, other), 0);
  kg_signer_destroy(&s);
}

/*  The signer checks signatures only: the same signed frames pass again
    (replays are kg_replay's to judge, by the sender's clock). */
KG_TEST(replays_are_not_the_signers)
{
  kg_signer_t *s = kg_signer_new("secret", 6);
  kg_frame_t parts[4];
  s_parts(parts, "{\"msg_id\":\"a\"}", "{}", "{}", "{}");
  char sig[65];
  kg_signer_sign(s, parts, sig);
  KG_CHECK_INT(kg_signer_verify(s, sig, 64, parts), 0);
  KG_CHECK_INT(kg_signer_verify(s, sig, 64, parts), 0);
  kg_frame_t p2[4];
  s_parts(p2, "{\"msg_id\":\"b\"}", "{}", "{}", "{}");
  KG_CHECK_INT(kg_signer_verify(s, sig, 64, p2), KG_EBADSIG);
  kg_signer_destroy(&s);
}

/*  Two signers with the same key are recognised as such (a relay then
    forwards signatures instead of signing again); a different key, a
    disabled signer or NULL never are. The MAC counter counts both signing
    and checking. */
KG_TEST(same_key)
{
  kg_signer_t *a = kg_signer_new("secret", 6);
  kg_signer_t *b = kg_signer_new("secret", 6);
  kg_signer_t *c = kg_signer_new("secreT", 6);
  kg_signer_t *d = kg_signer_new("secret\0", 7);
  kg_signer_t *none = kg_signer_new("", 0);
  KG_CHECK(kg_signer_same_key(a, b) && kg_signer_same_key(b, a) && kg_signer_same_key(a, a));
  KG_CHECK(!kg_signer_same_key(a, c) && !kg_signer_same_key(a, d));
  KG_CHECK(!kg_signer_same_key(a, none) && !kg_signer_same_key(none, none));
  KG_CHECK(!kg_signer_same_key(a, NULL) && !kg_signer_same_key(NULL, NULL));
  KG_CHECK(kg_signer_key_id(none) == NULL && kg_signer_key_id(a) != NULL);
  kg_frame_t parts[4];
  s_parts(parts, "{\"msg_id\":\"1\"}", "{}", "{}", "{}");
  char sig[65];
  KG_CHECK_INT(kg_signer_mac_count(a), 0);
  kg_signer_sign(a, parts, sig);
  KG_CHECK_INT(kg_signer_verify(a, sig, 64, parts), 0);
  KG_CHECK_INT(kg_signer_mac_count(a), 2);
  kg_signer_destroy(&a);
  kg_signer_destroy(&b);
  kg_signer_destroy(&c);
  kg_signer_destroy(&d);
  kg_signer_destroy(&none);
}

KG_TEST_MAIN(KG_CASE(rfc4231), KG_CASE(empty_key), KG_CASE(rejections),
             KG_CASE(replays_are_not_the_signers),
             KG_CASE(same_key))
