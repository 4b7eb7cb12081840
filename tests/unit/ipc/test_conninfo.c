/*  kg_conninfo: loading valid and malformed connection files, atomic 0600
    saving, random keys and endpoint formatting. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_conninfo.h"
#include "kg_error.h"
#include "kg_test.h"

static char s_dir[64];

static void
s_mkdir(void)
{
  strcpy(s_dir, "/tmp/kg-conninfo-XXXXXX");
  if (!mkdtemp(s_dir))
    abort();
}

static void
s_rmdir(void)
{
  DIR *d = opendir(s_dir);
  struct dirent *e;
  char path[512];
  while (d && (e = readdir(d))) {
    if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2])))
      continue;
    snprintf(path, sizeof path, "%s/%s", s_dir, e->d_name);
    unlink(path);
  }
  if (d)
    closedir(d);
  rmdir(s_dir);
}

static int
s_entries(void)
{
  DIR *d = opendir(s_dir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)))
    n += e->d_name[0] != '.';
  if (d)
    closedir(d);
  return n;
}

static const char *
s_write(const char *name, const char *text)
{
  static char path[256];
  snprintf(path, sizeof path, "%s/%s", s_dir, name);
  FILE *f = fopen(path, "w");
  fputs(text, f);
  fclose(f);
  return path;
}

#define VALID_TCP                                                             \
  "{\"shell_port\": 53794, \"iopub_port\": 53795, \"stdin_port\": 53796,\n"   \
  " \"control_port\": 53797, \"hb_port\": 53798, \"ip\": \"127.0.0.1\",\n"    \
  " \"key\": \"a0436f6c-1916-498b-8eb9-e81ab9368e84\", \"transport\": \"tcp\",\n" \
  " \"signature_scheme\": \"hmac-sha256\", \"kernel_name\": \"python3\"}\n"

KG_TEST(load_tcp)
{
  s_mkdir();
  kg_conninfo_t *ci = kg_conninfo_new();
  char err[256];
  KG_CHECK_INT(kg_conninfo_load(ci, s_write("c.json", VALID_TCP), err, sizeof err), 0);
  KG_CHECK_STR(err, "");
  KG_CHECK_STR(ci->transport, "tcp");
  KG_CHECK_STR(ci->ip, "127.0.0.1");
  KG_CHECK_INT(ci->ports[KG_CH_SHELL], 53794);
  KG_CHECK_INT(ci->ports[KG_CH_IOPUB], 53795);
  KG_CHECK_INT(ci->ports[KG_CH_STDIN], 53796);
  KG_CHECK_INT(ci->ports[KG_CH_CONTROL], 53797);
  KG_CHECK_INT(ci->ports[KG_CH_HB], 53798);
  KG_CHECK_STR(ci->scheme, "hmac-sha256");
  KG_CHECK_INT(ci->key_len, 36);
  KG_CHECK(memcmp(ci->key, "a0436f6c-1916-498b-8eb9-e81ab9368e84", 36) == 0);
  KG_CHECK_STR(ci->kernel_name, "python3");
  char ep[64];
  KG_CHECK_INT(kg_conninfo_endpoint(ci, KG_CH_CONTROL, ep, sizeof ep), 0);
  KG_CHECK_STR(ep, "tcp://127.0.0.1:53797");
  KG_CHECK_INT(kg_conninfo_endpoint(ci, KG_CH_HB, ep, sizeof ep), 0);
  KG_CHECK_STR(ep, "tcp://127.0.0.1:53798");
  /*  "tcp://127.0.0.1:53797" is 21 characters: 21 bytes leave no room. */
  KG_CHECK_INT(kg_conninfo_endpoint(ci, KG_CH_CONTROL, ep, 21), KG_ETOOBIG);
  KG_CHECK_INT(kg_conninfo_endpoint(ci, KG_CH_CONTROL, ep, 22), 0);
  kg_conninfo_destroy(&ci);
  KG_CHECK(ci == NULL);
  kg_conninfo_destroy(&ci);
  s_rmdir();
}

KG_TEST(load_ipc_empty_key)
{
  s_mkdir();
  kg_conninfo_t *ci = kg_conninfo_new();
  char err[256];
  /*  No scheme is fine when the key is empty (signing disabled). */
  const char *text =
    "{\"shell_port\": 1, \"iopub_port\": 2, \"stdin_port\": 3, \"control_port\": 4,"
    " \"hb_port\": 65535, \"ip\": \"/run/user/1000/kguard-ab/k\", \"key\": \"\","
    " \"transport\": \"ipc\"}";
  KG_CHECK_INT(kg_conninfo_load(ci, s_write("c.json", text), err, sizeof err), 0);
  KG_CHECK_STR(ci->transport, "ipc");
  KG_CHECK_INT(ci->key_len, 0);
  KG_CHECK_STR(ci->kernel_name, "");
  char ep[128];
  KG_CHECK_INT(kg_conninfo_endpoint(ci, KG_CH_SHELL, ep, sizeof ep), 0);
  KG_CHECK_STR(ep, "ipc:///run/user/1000/kguard-ab/k-1");
  KG_CHECK_INT(kg_conninfo_endpoint(ci, KG_CH_HB, ep, sizeof ep), 0);
  KG_CHECK_STR(ep, "ipc:///run/user/1000/kguard-ab/k-65535");
  kg_conninfo_destroy(&ci);
  s_rmdir();
}

KG_TEST(channel_names)
{
  KG_CHECK_STR(kg_channel_name(KG_CH_SHELL), "shell");
  KG_CHECK_STR(kg_channel_name(KG_CH_IOPUB), "iopub");
  KG_CHECK_STR(kg_channel_name(KG_CH_STDIN), "stdin");
  KG_CHECK_STR(kg_channel_name(KG_CH_CONTROL), "control");
  KG_CHECK_STR(kg_channel_name(KG_CH_HB), "hb");
}

/*  Build a file from VALID_TCP with one field's value replaced (or the
    field removed when value is NULL). */
static const char *
s_variant(const char *field, const char *value)
{
  static char text[2048];
  const char *fields[][2] = {
    {"shell_port", "53794"}, {"iopub_port", "53795"}, {"stdin_port", "53796"},
    {"control_port", "53797"}, {"hb_port", "53798"}, {"ip", "\"127.0.0.1\""},
    {"key", "\"abc\""}, {"transport", "\"tcp\""},
    {"signature_scheme", "\"hmac-sha256\""}, {"kernel_name", "\"python3\""},
  };
  size_t n = 0;
  n += (size_t) snprintf(text + n, sizeof text - n, "{");
  int first = 1;
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
    const char *v = fields[i][1];
    if (strcmp(fields[i][0], field) == 0) {
      if (!value)
        continue;
      v = value;
    }
    n += (size_t) snprintf(text + n, sizeof text - n, "%s\"%s\": %s",
                           first ? "" : ", ", fields[i][0], v);
    first = 0;
  }
  snprintf(text + n, sizeof text - n, "}");
  return text;
}

KG_TEST(malformed_fields)
{
  s_mkdir();
  struct {
    const char *field, *value;
    int code;
  } cases[] = {
    {"shell_port", NULL, KG_ECONNFILE},
    {"shell_port", "\"53794\"", KG_ECONNFILE},
    {"iopub_port", "0", KG_ECONNFILE},
    {"stdin_port", "65536", KG_ECONNFILE},
    {"control_port", "1.5", KG_ECONNFILE},
    {"hb_port", "-1", KG_ECONNFILE},
    {"hb_port", "null", KG_ECONNFILE},
    {"ip", NULL, KG_ECONNFILE},
    {"ip", "5", KG_ECONNFILE},
    {"ip", "\"\"", KG_ECONNFILE},
    {"key", NULL, KG_ECONNFILE},
    {"key", "1234", KG_ECONNFILE},
    {"transport", NULL, KG_ECONNFILE},
    {"transport", "\"udp\"", KG_ECONNFILE},
    {"transport", "[]", KG_ECONNFILE},
    {"signature_scheme", NULL, KG_ECONNFILE},   /*  key is non-empty */
    {"signature_scheme", "7", KG_ECONNFILE},
    {"signature_scheme", "\"hmac-md5\"", KG_ESCHEME},
    {"kernel_name", "{}", KG_ECONNFILE},
  };
  kg_conninfo_t *ci = kg_conninfo_new();
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char err[256] = "";
    const char *path = s_write("bad.json", s_variant(cases[i].field, cases[i].value));
    int rc = kg_conninfo_load(ci, path, err, sizeof err);
    if (rc != cases[i].code || strncmp(err, cases[i].field, strlen(cases[i].field)) != 0) {
      fprintf(stderr, "case %zu (%s = %s): rc %s err \"%s\"\n", i, cases[i].field,
              cases[i].value ? cases[i].value : "(absent)", kg_errname(rc), err);
      KG_CHECK(0);
    }
  }
  /*  A rejected file leaves the previous contents alone. */
  KG_CHECK_STR(ci->ip, "127.0.0.1");
  KG_CHECK_INT(ci->ports[KG_CH_SHELL], 0);
  KG_CHECK(ci->key_len == 0);

  /*  The control: the unmodified variant loads. */
  char err[256];
  KG_CHECK_INT(kg_conninfo_load(ci, s_write("ok.json", s_variant("", NULL)), err, sizeof err), 0);
  kg_conninfo_destroy(&ci);
  s_rmdir();
}

KG_TEST(not_an_object)
{
  s_mkdir();
  kg_conninfo_t *ci = kg_conninfo_new();
  const char *texts[] = {"", "not json", "[1, 2]", "\"str\"", "{\"shell_port\": 1",
                         "null"};
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
    char err[256] = "";
    KG_CHECK_INT(kg_conninfo_load(ci, s_write("x.json", texts[i]), err, sizeof err),
                 KG_ECONNFILE);
    KG_CHECK(err[0] != '\0');
  }
  kg_conninfo_destroy(&ci);
  s_rmdir();
}

KG_TEST(too_big)
{
  s_mkdir();
  size_t n = 1024 * 1024 + 10;
  char *text = malloc(n + 1);
  /*  Valid JSON padded with whitespace beyond 1 MiB: rejected for size. */
  memset(text, ' ', n);
  memcpy(text, VALID_TCP, strlen(VALID_TCP));
  text[n] = '\0';
  kg_conninfo_t *ci = kg_conninfo_new();
  char err[256] = "";
  KG_CHECK_INT(kg_conninfo_load(ci, s_write("big.json", text), err, sizeof err), KG_ECONNFILE);
  KG_CHECK(strstr(err, "1 MiB") != NULL);
  /*  Just under the limit is fine. */
  text[1024 * 1024 - 1] = '\0';
  KG_CHECK_INT(kg_conninfo_load(ci, s_write("big.json", text), err, sizeof err), 0);
  free(text);
  kg_conninfo_destroy(&ci);
  s_rmdir();
}

KG_TEST(missing_file)
{
  kg_conninfo_t *ci = kg_conninfo_new();
  char err[256] = "";
  KG_CHECK_INT(kg_conninfo_load(ci, "/nonexistent/kguard/conn.json", err, sizeof err), -ENOENT);
  KG_CHECK(strstr(err, "/nonexistent/kguard/conn.json") != NULL);
  /*  A directory is not a connection file either. */
  KG_CHECK(kg_conninfo_load(ci, "/tmp", err, sizeof err) < 0);
  kg_conninfo_destroy(&ci);
}

KG_TEST(save_roundtrip)
{
  s_mkdir();
  kg_conninfo_t *ci = kg_conninfo_new();
  strcpy(ci->transport, "ipc");
  snprintf(ci->ip, sizeof ci->ip, "%s/kernel", s_dir);
  for (int ch = 0; ch < KG_CH_COUNT; ch++)
    ci->ports[ch] = 40000 + ch;
  strcpy(ci->kernel_name, "kguard-python3");
  KG_CHECK_INT(kg_conninfo_set_random_key(ci), 0);
  KG_CHECK_INT(ci->key_len, 64);
  KG_CHECK_STR(ci->scheme, "hmac-sha256");
  for (size_t i = 0; i < ci->key_len; i++)
    KG_CHECK(strchr("0123456789abcdef", ci->key[i]) != NULL);

  /*  With a permissive umask the file must still be 0600. */
  mode_t old = umask(0);
  char path[256];
  snprintf(path, sizeof path, "%s/conn.json", s_dir);
  KG_CHECK_INT(kg_conninfo_save(ci, path), 0);
  umask(old);
  struct stat st;
  KG_CHECK_INT(stat(path, &st), 0);
  KG_CHECK_INT(st.st_mode & 07777, 0600);
  KG_CHECK_INT(s_entries(), 1);          /*  no temporary left behind */

  kg_conninfo_t *back = kg_conninfo_new();
  char err[256];
  KG_CHECK_INT(kg_conninfo_load(back, path, err, sizeof err), 0);
  KG_CHECK_STR(back->transport, ci->transport);
  KG_CHECK_STR(back->ip, ci->ip);
  for (int ch = 0; ch < KG_CH_COUNT; ch++)
    KG_CHECK_INT(back->ports[ch], ci->ports[ch]);
  KG_CHECK_STR(back->scheme, "hmac-sha256");
  KG_CHECK_INT(back->key_len, ci->key_len);
  KG_CHECK(memcmp(back->key, ci->key, ci->key_len) == 0);
  KG_CHECK_STR(back->kernel_name, "kguard-python3");

  /*  Overwriting replaces the file atomically; a new key differs. */
  KG_CHECK_INT(kg_conninfo_set_random_key(ci), 0);
  KG_CHECK(memcmp(back->key, ci->key, 64) != 0);
  KG_CHECK_INT(kg_conninfo_save(ci, path), 0);
  KG_CHECK_INT(kg_conninfo_load(back, path, err, sizeof err), 0);
  KG_CHECK(memcmp(back->key, ci->key, 64) == 0);
  KG_CHECK_INT(s_entries(), 1);

  /*  A directory that does not exist: error, nothing created. */
  char bad[300];
  snprintf(bad, sizeof bad, "%s/nodir/conn.json", s_dir);
  KG_CHECK_INT(kg_conninfo_save(ci, bad), -ENOENT);
  KG_CHECK_INT(s_entries(), 1);
  kg_conninfo_destroy(&back);
  kg_conninfo_destroy(&ci);
  s_rmdir();
}

KG_TEST(save_empty_key)
{
  s_mkdir();
  kg_conninfo_t *ci = kg_conninfo_new();
  for (int ch = 0; ch < KG_CH_COUNT; ch++)
    ci->ports[ch] = 50000 + ch;
  char path[256];
  snprintf(path, sizeof path, "%s/conn.json", s_dir);
  KG_CHECK_INT(kg_conninfo_save(ci, path), 0);
  kg_conninfo_t *back = kg_conninfo_new();
  char err[256];
  KG_CHECK_INT(kg_conninfo_load(back, path, err, sizeof err), 0);
  KG_CHECK_INT(back->key_len, 0);
  KG_CHECK_STR(back->transport, "tcp");
  KG_CHECK_INT(back->ports[KG_CH_HB], 50004);
  kg_conninfo_destroy(&back);
  kg_conninfo_destroy(&ci);
  s_rmdir();
}

/*  The inner link's key is the frontend's, bytes and scheme; a frontend
    without a key leaves the inner link a random one of its own. */
KG_TEST(share_key)
{
  kg_conninfo_t *front = kg_conninfo_new();
  kg_conninfo_t *inner = kg_conninfo_new();
  KG_CHECK_INT(kg_conninfo_set_random_key(inner), 0);
  unsigned char key[5] = {'k', 0, 0xc3, 0xa9, 'y'};   /* any bytes the file held */
  front->key = malloc(sizeof key);
  memcpy(front->key, key, sizeof key);
  front->key_len = sizeof key;
  strcpy(front->scheme, "hmac-sha256");
  KG_CHECK_INT(kg_conninfo_share_key(inner, front), 0);
  KG_CHECK_INT(inner->key_len, sizeof key);
  KG_CHECK(memcmp(inner->key, key, sizeof key) == 0);
  KG_CHECK(inner->key != front->key);                   /* a copy */
  KG_CHECK_STR(inner->scheme, "hmac-sha256");

  kg_conninfo_t *keyless = kg_conninfo_new();
  KG_CHECK_INT(keyless->key_len, 0);
  KG_CHECK_INT(kg_conninfo_share_key(inner, keyless), 0);
  KG_CHECK_INT(inner->key_len, 64);
  KG_CHECK_STR(inner->scheme, "hmac-sha256");
  kg_conninfo_destroy(&front);
  kg_conninfo_destroy(&inner);
  kg_conninfo_destroy(&keyless);
}

KG_TEST_MAIN(KG_CASE(load_tcp), KG_CASE(load_ipc_empty_key), KG_CASE(channel_names),
             KG_CASE(malformed_fields), KG_CASE(not_an_object), KG_CASE(too_big),
             KG_CASE(missing_file), KG_CASE(save_roundtrip), KG_CASE(save_empty_key), KG_CASE(share_key))
