/*  kg_conninfo: reading and writing Jupyter connection files.

    The file holds the HMAC key, so it is parsed defensively (size limit,
    every field type-checked, every rejection names the field) and written
    with mode 0600 from the first byte (mkostemp creates it 0600 with
    O_EXCL), then fsync'd and renamed over the target so a reader never sees
    a half-written file.
*/
#include "kg_conninfo.h"

#include "kg_jsonscan.h"

#include <assert.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_error.h"
#include "kg_file.h"

/*  A connection file is a few hundred bytes; anything near this is not one. */
#define KG_CONNFILE_MAX (1024 * 1024)

static const char *s_channel_names[KG_CH_COUNT] = {
  "shell", "iopub", "stdin", "control", "hb"
};

/*  The JSON field of each channel's port, indexed by kg_channel_t. */
static const char *s_port_fields[KG_CH_COUNT] = {
  "shell_port", "iopub_port", "stdin_port", "control_port", "hb_port"
};

const char *
kg_channel_name(kg_channel_t channel)
{
  if ((int) channel < 0 || channel >= KG_CH_COUNT)
    return "?";
  return s_channel_names[channel];
}

static void
s_reset(kg_conninfo_t *self)
{
  assert(self);
  if (self->key) {
    sodium_memzero(self->key, self->key_len);
    free(self->key);
  }
  memset(self, 0, sizeof *self);
  strcpy(self->transport, "tcp");
  strcpy(self->ip, "127.0.0.1");
}

kg_conninfo_t *
kg_conninfo_new(void)
{
  kg_conninfo_t *self = calloc(1, sizeof *self);
  if (!self)
    return NULL;
  s_reset(self);
  return self;
}

void
kg_conninfo_destroy(kg_conninfo_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  s_reset(*self_p);
  free(*self_p);
  *self_p = NULL;
}

/*  Read the file, capped at KG_CONNFILE_MAX so a huge (or endless: a fifo,
    /dev/zero) file is rejected without reading all of it. */
static int
s_read_file(const char *path, char **data_p, size_t *size_p, char *err, size_t errlen)
{
  int rc = kg_file_read(path, KG_CONNFILE_MAX, data_p, size_p);
  if (rc == KG_ETOOBIG) {
    kg_errf(err, errlen, "%s: file is larger than 1 MiB", path);
    return KG_ECONNFILE;
  }
  if (rc != 0)
    kg_errf(err, errlen, "%s: %s", path, kg_strerror(rc));
  return rc;
}

/*  Copy the string field name of root into out (outlen bytes). Returns 0,
    or KG_ECONNFILE with err set. optional: absence leaves out untouched. */
static int
s_get_string(const cJSON *root, const char *name, bool optional, bool nonempty,
             char *out, size_t outlen, char *err, size_t errlen)
{
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, name);
  if (!item) {
    if (optional)
      return 0;
    kg_errf(err, errlen, "%s: missing", name);
    return KG_ECONNFILE;
  }
  if (!cJSON_IsString(item) || !item->valuestring) {
    kg_errf(err, errlen, "%s: expected a string", name);
    return KG_ECONNFILE;
  }
  size_t len = strlen(item->valuestring);
  if (nonempty && len == 0) {
    kg_errf(err, errlen, "%s: must not be empty", name);
    return KG_ECONNFILE;
  }
  if (len >= outlen) {
    kg_errf(err, errlen, "%s: longer than %zu bytes", name, outlen - 1);
    return KG_ECONNFILE;
  }
  memcpy(out, item->valuestring, len + 1);
  return 0;
}

static int
s_get_port(const cJSON *root, const char *name, int *port, char *err, size_t errlen)
{
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, name);
  if (!item) {
    kg_errf(err, errlen, "%s: missing", name);
    return KG_ECONNFILE;
  }
  double v = cJSON_IsNumber(item) ? item->valuedouble : 0;
  /*  The range check comes first so the int conversion is defined. */
  if (!cJSON_IsNumber(item) || !(v >= 1 && v <= 65535) || v != (double) (int) v) {
    kg_errf(err, errlen, "%s: expected an integer in 1..65535", name);
    return KG_ECONNFILE;
  }
  *port = (int) v;
  return 0;
}

static int
s_parse(kg_conninfo_t *info, const char *data, size_t size, char *err, size_t errlen)
{
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(data, size, &end, false);
  if (!root) {
    size_t off = end && end >= data ? (size_t) (end - data) : 0;
    if (kg_jsonscan_depth_at(data, size, off) >= CJSON_NESTING_LIMIT)
      kg_errf(err, errlen, "not a JSON object: nested more than %d levels deep at byte %zu",
              CJSON_NESTING_LIMIT, off);
    else
      kg_errf(err, errlen, "not a JSON object: syntax error at byte %zu", off);
    return KG_ECONNFILE;
  }
  if (!cJSON_IsObject(root)) {
    cJSON_Delete(root);
    kg_errf(err, errlen, "not a JSON object");
    return KG_ECONNFILE;
  }
  int rc = s_get_string(root, "transport", false, true, info->transport,
                        sizeof info->transport, err, errlen);
  if (rc == 0 && strcmp(info->transport, "tcp") != 0
      && strcmp(info->transport, "ipc") != 0) {
    kg_errf(err, errlen, "transport: expected \"tcp\" or \"ipc\"");
    rc = KG_ECONNFILE;
  }
  if (rc == 0)
    rc = s_get_string(root, "ip", false, true, info->ip, sizeof info->ip, err, errlen);
  for (int ch = 0; rc == 0 && ch < KG_CH_COUNT; ch++)
    rc = s_get_port(root, s_port_fields[ch], &info->ports[ch], err, errlen);

  const cJSON *key = cJSON_GetObjectItemCaseSensitive(root, "key");
  if (rc == 0 && !key) {
    kg_errf(err, errlen, "key: missing");
    rc = KG_ECONNFILE;
  }
  else if (rc == 0 && (!cJSON_IsString(key) || !key->valuestring)) {
    kg_errf(err, errlen, "key: expected a string");
    rc = KG_ECONNFILE;
  }
  if (rc == 0) {
    info->key_len = strlen(key->valuestring);
    /*  +1: never malloc(0), and keeps the key printable as a C string. */
    info->key = malloc(info->key_len + 1);
    if (!info->key) {
      kg_errf(err, errlen, "out of memory");
      rc = KG_ENOMEM;
    }
    else
      memcpy(info->key, key->valuestring, info->key_len + 1);
  }

  /*  The scheme may be absent only when there is nothing to sign with. */
  const cJSON *scheme = cJSON_GetObjectItemCaseSensitive(root, "signature_scheme");
  if (rc == 0 && !scheme && info->key_len > 0) {
    kg_errf(err, errlen, "signature_scheme: missing (required with a non-empty key)");
    rc = KG_ECONNFILE;
  }
  else if (rc == 0 && scheme && (!cJSON_IsString(scheme) || !scheme->valuestring)) {
    kg_errf(err, errlen, "signature_scheme: expected a string");
    rc = KG_ECONNFILE;
  }
  else if (rc == 0 && scheme) {
    if (strcmp(scheme->valuestring, "hmac-sha256") != 0) {
      kg_errf(err, errlen, "signature_scheme: unsupported scheme \"%.64s\" "
            "(only hmac-sha256)", scheme->valuestring);
      rc = KG_ESCHEME;
    }
    else
      strcpy(info->scheme, "hmac-sha256");
  }
  if (rc == 0)
    rc = s_get_string(root, "kernel_name", true, false, info->kernel_name,
                      sizeof info->kernel_name, err, errlen);
  cJSON_Delete(root);
  return rc;
}

int
kg_conninfo_load(kg_conninfo_t *self, const char *path, char *err, size_t errlen)
{
  assert(self);
  if (err && errlen)
    err[0] = '\0';
  char *data = NULL;
  size_t size = 0;
  int rc = s_read_file(path, &data, &size, err, errlen);
  if (rc != 0)
    return rc;

  /*  Parse into a scratch copy so a rejected file leaves self as it was. */
  kg_conninfo_t fresh;
  memset(&fresh, 0, sizeof fresh);
  s_reset(&fresh);
  rc = s_parse(&fresh, data, size, err, errlen);
  sodium_memzero(data, size);
  free(data);
  if (rc != 0) {
    s_reset(&fresh);
    return rc;
  }
  s_reset(self);
  *self = fresh;
  return 0;
}

static cJSON *
s_to_json(const kg_conninfo_t *self)
{
  assert(self);
  cJSON *root = cJSON_CreateObject();
  if (!root)
    return NULL;
  bool ok = true;
  for (int ch = 0; ch < KG_CH_COUNT; ch++)
    ok = ok && cJSON_AddNumberToObject(root, s_port_fields[ch], self->ports[ch]);
  ok = ok && cJSON_AddStringToObject(root, "ip", self->ip);

  char *key = malloc(self->key_len + 1);
  ok = ok && key;
  if (key) {
    if (self->key_len)
      memcpy(key, self->key, self->key_len);
    key[self->key_len] = '\0';
    ok = ok && cJSON_AddStringToObject(root, "key", key);
    sodium_memzero(key, self->key_len);
    free(key);
  }
  ok = ok && cJSON_AddStringToObject(root, "transport", self->transport);
  ok = ok && cJSON_AddStringToObject(root, "signature_scheme",
                                     self->scheme[0] ? self->scheme : "hmac-sha256");
  ok = ok && cJSON_AddStringToObject(root, "kernel_name", self->kernel_name);
  if (!ok) {
    cJSON_Delete(root);
    return NULL;
  }
  return root;
}

int
kg_conninfo_save(const kg_conninfo_t *self, const char *path)
{
  assert(self);
  cJSON *root = s_to_json(self);
  if (!root)
    return -ENOMEM;
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!text)
    return -ENOMEM;

  /*  kg_file_write_atomic creates the file 0600 from the start: the key is
      never readable by others, not even for a moment. */
  size_t len = strlen(text);
  int rc = kg_file_write_atomic(path, text, len, 0600);
  sodium_memzero(text, len);
  cJSON_free(text);
  return rc;
}

int
kg_conninfo_set_random_key(kg_conninfo_t *self)
{
  assert(self);
  if (sodium_init() < 0)
    return KG_ENOMEM;
  unsigned char raw[32];
  char hex[65];
  randombytes_buf(raw, sizeof raw);
  sodium_bin2hex(hex, sizeof hex, raw, sizeof raw);
  unsigned char *key = malloc(65);
  if (!key)
    return KG_ENOMEM;
  memcpy(key, hex, 65);
  sodium_memzero(raw, sizeof raw);
  sodium_memzero(hex, sizeof hex);
  if (self->key) {
    sodium_memzero(self->key, self->key_len);
    free(self->key);
  }
  self->key = key;
  self->key_len = 64;
  strcpy(self->scheme, "hmac-sha256");
  return 0;
}

int
kg_conninfo_share_key(kg_conninfo_t *self, const kg_conninfo_t *front)
{
  assert(self);
  if (!front->key_len)
    return kg_conninfo_set_random_key(self);
  unsigned char *key = malloc(front->key_len);
  if (!key)
    return KG_ENOMEM;
  memcpy(key, front->key, front->key_len);
  if (self->key) {
    sodium_memzero(self->key, self->key_len);
    free(self->key);
  }
  self->key = key;
  self->key_len = front->key_len;
  snprintf(self->scheme, sizeof self->scheme, "%s", front->scheme);
  return 0;
}

int
kg_conninfo_endpoint(const kg_conninfo_t *self, kg_channel_t channel,
                     char *buf, size_t len)
{
  assert(self);
  if ((int) channel < 0 || channel >= KG_CH_COUNT)
    return KG_EUSAGE;
  int n;
  if (strcmp(self->transport, "ipc") == 0)
    n = snprintf(buf, len, "ipc://%s-%d", self->ip, self->ports[channel]);
  else
    n = snprintf(buf, len, "%s://%s:%d", self->transport, self->ip, self->ports[channel]);
  if (n < 0 || (size_t) n >= len)
    return KG_ETOOBIG;
  return 0;
}
