/*  kg_ckpt_manifest: build, encode, decode and check checkpoint manifests. */
#include "kg_ckpt_manifest.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_clock.h"
#include "kg_ckpt_util.h"
#include "kg_error.h"

/* JSON numbers are doubles: integers above 2^53 would lose digits. */
#define JSON_INT_MAX 9007199254740992.0

kg_ckpt_manifest_t *
kg_ckpt_manifest_new(void)
{
  kg_ckpt_manifest_t *self = calloc(1, sizeof *self);
  if (self)
    self->version = KG_CKPT_FORMAT_VERSION;
  return self;
}

void
kg_ckpt_manifest_destroy(kg_ckpt_manifest_t **p)
{
  if (!p || !*p)
    return;
  kg_ckpt_manifest_t *self = *p;
  for (size_t i = 0; i < self->count; i++) {
    free(self->members[i].path);
    free(self->members[i].chunks);
  }
  free(self->members);
  free(self);
  *p = NULL;
}

size_t
kg_ckpt_manifest_chunks(uint64_t size)
{
  return size == 0 ? 1 : (size_t) ((size + KG_CKPT_CHUNK_SIZE - 1) / KG_CKPT_CHUNK_SIZE);
}

int
kg_ckpt_manifest_alloc_chunks(kg_ckpt_manifest_t *self)
{
  size_t total = 0;
  for (size_t i = 0; i < self->count; i++) {
    kg_ckpt_member_t *m = &self->members[i];
    m->nchunks = kg_ckpt_manifest_chunks(m->size);
    if ((total += m->nchunks) > KG_CKPT_CHUNKS_MAX)
      return KG_ETOOBIG;
    free(m->chunks);
    if (!(m->chunks = calloc(m->nchunks, sizeof *m->chunks)))
      return KG_ENOMEM;
  }
  return 0;
}

int
kg_ckpt_manifest_add(kg_ckpt_manifest_t *self, const char *path, uint64_t size)
{
  if (self->count >= KG_CKPT_MEMBERS_MAX)
    return KG_ETOOBIG;
  if (self->count == self->alloc) {
    size_t n = self->alloc ? self->alloc * 2 : 16;
    kg_ckpt_member_t *v = realloc(self->members, n * sizeof *v);
    if (!v)
      return KG_ENOMEM;
    self->members = v;
    self->alloc = n;
  }
  kg_ckpt_member_t *m = &self->members[self->count];
  memset(m, 0, sizeof *m);
  if (!(m->path = strdup(path)))
    return KG_ENOMEM;
  m->size = size;
  self->total_size += size;
  return (int) self->count++;
}

static int
s_cmp(const void *a, const void *b)
{
  return strcmp(((const kg_ckpt_member_t *) a)->path, ((const kg_ckpt_member_t *) b)->path);
}

int
kg_ckpt_manifest_sort(kg_ckpt_manifest_t *self)
{
  if (self->count > 1)
    qsort(self->members, self->count, sizeof *self->members, s_cmp);
  for (size_t i = 1; i < self->count; i++)
    if (strcmp(self->members[i - 1].path, self->members[i].path) == 0)
      return KG_EEXISTS;
  return 0;
}

kg_ckpt_member_t *
kg_ckpt_manifest_find(kg_ckpt_manifest_t *self, const char *path)
{
  kg_ckpt_member_t key = {.path = (char *) path};
  return bsearch(&key, self->members, self->count, sizeof key, s_cmp);
}

char *
kg_ckpt_manifest_encode(const kg_ckpt_manifest_t *self)
{
  cJSON *root = cJSON_CreateObject();
  if (!root)
    return NULL;
  cJSON_AddStringToObject(root, "format", "kguard-checkpoint");
  cJSON_AddNumberToObject(root, "version", self->version);
  cJSON_AddStringToObject(root, "run", self->run);
  cJSON_AddNumberToObject(root, "step", (double) self->step);
  cJSON_AddStringToObject(root, "sealed_at", self->sealed_at);
  cJSON_AddNumberToObject(root, "sealed_at_ms", (double) self->sealed_at_ms);
  cJSON_AddStringToObject(root, "producer", self->producer);
  cJSON_AddStringToObject(root, "key_id", self->key_id);
  cJSON_AddStringToObject(root, "digest", "blake2b-256");
  cJSON_AddStringToObject(root, "compression", self->zstd ? "zstd" : "none");
  cJSON_AddNumberToObject(root, "total_size", (double) self->total_size);
  if (self->version >= 2)
    cJSON_AddNumberToObject(root, "chunk_size", (double) KG_CKPT_CHUNK_SIZE);
  if (self->world_size > 0) {
    cJSON_AddNumberToObject(root, "rank", (double) self->rank);
    cJSON_AddNumberToObject(root, "world_size", (double) self->world_size);
  }
  cJSON *arr = cJSON_AddArrayToObject(root, "members");
  for (size_t i = 0; arr && i < self->count; i++) {
    const kg_ckpt_member_t *m = &self->members[i];
    char hex[2 * KG_CKPT_DIGEST_BYTES + 1];
    kg_ckpt_hex(m->digest, sizeof m->digest, hex);
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddItemToArray(arr, o)) {
      cJSON_Delete(o);
      arr = NULL;
      break;
    }
    cJSON_AddStringToObject(o, "path", m->path);
    cJSON_AddNumberToObject(o, "size", (double) m->size);
    if (self->version < 2) {
      cJSON_AddStringToObject(o, "blake2b", hex);
      continue;
    }
    cJSON *ch = cJSON_AddArrayToObject(o, "chunks");
    for (size_t k = 0; ch && k < m->nchunks; k++) {
      kg_ckpt_hex(m->chunks[k], KG_CKPT_DIGEST_BYTES, hex);
      cJSON *str = cJSON_CreateString(hex);
      if (!str || !cJSON_AddItemToArray(ch, str)) {
        cJSON_Delete(str);
        ch = NULL;
      }
    }
    if (!ch) {
      arr = NULL;
      break;
    }
  }
  char *text = arr ? cJSON_Print(root) : NULL;
  cJSON_Delete(root);
  return text;
}

/* ---- decoding ---------------------------------------------------------- */

static const char *
s_str(const cJSON *o, const char *key, size_t max)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsString(v) || !v->valuestring || strlen(v->valuestring) > max)
    return NULL;
  return v->valuestring;
}

static bool
s_int(const cJSON *o, const char *key, int64_t *out)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsNumber(v))
    return false;
  double d = v->valuedouble;
  if (!(d >= 0 && d <= JSON_INT_MAX) || (double) (int64_t) d != d)
    return false;
  *out = (int64_t) d;
  return true;
}

static bool
s_unhex(const char *hex, unsigned char *out, size_t n)
{
  if (strlen(hex) != 2 * n)
    return false;
  for (size_t i = 0; i < 2 * n; i++) {
    char c = hex[i];
    int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (v < 0)
      return false;
    if (i % 2 == 0)
      out[i / 2] = (unsigned char) (v << 4);
    else
      out[i / 2] |= (unsigned char) v;
  }
  return true;
}

/*  True if the JSON text holds the escape \u0000 in a string: cJSON
    decodes it into a NUL that ends the C string there, while other readers
    (Python's json) keep the rest, so one name would mean two files. */
static bool
s_has_nul_escape(const char *json, size_t len)
{
  bool in_string = false;
  for (size_t i = 0; i < len; i++) {
    char c = json[i];
    if (!in_string) {
      in_string = c == '"';
      continue;
    }
    if (c == '"') {
      in_string = false;
    } else if (c == '\\' && i + 1 < len) {
      if (json[i + 1] == 'u' && i + 5 < len && memcmp(json + i + 2, "0000", 4) == 0)
        return true;
      i++; /* the escaped character */
    }
  }
  return false;
}

/*  A member whose path is also a directory of another member's ("a" and
    "a/b"): no directory can hold both, so verify and restore could not
    agree on it. Returns that pair's first path, or NULL. */
static const kg_ckpt_member_t *
s_file_and_dir(kg_ckpt_manifest_t *self, const kg_ckpt_member_t **child)
{
  char p[KG_CKPT_PATH_MAX + 1];
  for (size_t i = 0; i < self->count; i++) {
    snprintf(p, sizeof p, "%s", self->members[i].path);
    for (char *slash = strchr(p, '/'); slash; slash = strchr(slash + 1, '/')) {
      *slash = '\0';
      const kg_ckpt_member_t *m = kg_ckpt_manifest_find(self, p);
      *slash = '/';
      if (m) {
        *child = &self->members[i];
        return m;
      }
    }
  }
  return NULL;
}

/*  In the decode steps below: say why into why[whysize] and return code. */
#define BAIL(code, ...)                       \
  do {                                        \
    snprintf(why, whysize, __VA_ARGS__);      \
    return (code);                            \
  } while (0)

/*  The manifest's scalar fields after its version (chunk size, run, step,
    seal time, producer, key, digest, compression) into self. Returns 0, or
    KG_ECKPT_MALFORMED with why said. */
static int
s_decode_header(const cJSON *root, kg_ckpt_manifest_t *self, char *why, size_t whysize)
{
  const char *s;
  int64_t chunk_size;
  if (self->version >= 2
      && (!s_int(root, "chunk_size", &chunk_size) || (uint64_t) chunk_size != KG_CKPT_CHUNK_SIZE))
    BAIL(KG_ECKPT_MALFORMED, "manifest chunk_size is not %llu",
         (unsigned long long) KG_CKPT_CHUNK_SIZE);
  if (!(s = s_str(root, "run", KG_CKPT_RUN_MAX)))
    BAIL(KG_ECKPT_MALFORMED, "manifest run id missing or too long");
  snprintf(self->run, sizeof self->run, "%s", s);
  if (!s_int(root, "step", &self->step))
    BAIL(KG_ECKPT_MALFORMED, "manifest step missing or not a non-negative integer");
  if (!s_int(root, "sealed_at_ms", &self->sealed_at_ms))
    BAIL(KG_ECKPT_MALFORMED, "manifest sealed_at_ms missing");
  kg_clock_iso_ms(self->sealed_at_ms, self->sealed_at, sizeof self->sealed_at);
  s = s_str(root, "producer", sizeof self->producer - 1);
  snprintf(self->producer, sizeof self->producer, "%s", s ? s : "");
  if (!(s = s_str(root, "key_id", KG_KEYS_ID_LEN - 1)))
    BAIL(KG_ECKPT_MALFORMED, "manifest key_id missing");
  snprintf(self->key_id, sizeof self->key_id, "%s", s);
  if (!(s = s_str(root, "digest", 32)) || strcmp(s, "blake2b-256") != 0)
    BAIL(KG_ECKPT_MALFORMED, "manifest digest algorithm is not blake2b-256");
  if (!(s = s_str(root, "compression", 16))
      || (strcmp(s, "none") != 0 && strcmp(s, "zstd") != 0))
    BAIL(KG_ECKPT_MALFORMED, "manifest compression is not none or zstd");
  self->zstd = strcmp(s, "zstd") == 0;
  return 0;
}

/*  One entry o of the members array added to self: a safe, unreserved path,
    its size, and its whole digest (version 1) or one digest per chunk
    (version 2, counted into *chunks_total against KG_CKPT_CHUNKS_MAX).
    Returns 0, or a negative code with why said. */
static int
s_decode_member(const cJSON *o, kg_ckpt_manifest_t *self, size_t *chunks_total, char *why,
                size_t whysize)
{
  int64_t size;
  const char *path = s_str(o, "path", KG_CKPT_PATH_MAX);
  const char *hex = s_str(o, "blake2b", 64);
  if (!path)
    BAIL(KG_ECKPT_MALFORMED, "manifest member without a path");
  const char *problem = kg_ckpt_path_problem(path);
  if (problem)
    BAIL(KG_ECKPT_UNSAFE, "manifest member '%.200s': %s", path, problem);
  if (strcmp(path, KG_CKPT_MANIFEST_NAME) == 0 || strcmp(path, KG_CKPT_SIG_NAME) == 0)
    BAIL(KG_ECKPT_MALFORMED, "manifest lists its own reserved name %s", path);
  if (!s_int(o, "size", &size))
    BAIL(KG_ECKPT_MALFORMED, "manifest member '%.200s' has no valid size", path);
  int idx = kg_ckpt_manifest_add(self, path, (uint64_t) size);
  if (idx < 0)
    BAIL(idx, "manifest member '%.200s': %s", path, kg_strerror(idx));
  kg_ckpt_member_t *mem = &self->members[idx];
  if (self->version < 2) {
    if (!hex || !s_unhex(hex, mem->digest, KG_CKPT_DIGEST_BYTES))
      BAIL(KG_ECKPT_MALFORMED, "manifest member '%.200s' has no valid blake2b digest", path);
    return 0;
  }
  const cJSON *ch = cJSON_GetObjectItemCaseSensitive(o, "chunks");
  mem->nchunks = kg_ckpt_manifest_chunks(mem->size);
  if (!cJSON_IsArray(ch) || (size_t) cJSON_GetArraySize(ch) != mem->nchunks
      || (*chunks_total += mem->nchunks) > KG_CKPT_CHUNKS_MAX)
    BAIL(KG_ECKPT_MALFORMED, "manifest member '%.200s' does not list one digest per %llu-byte "
         "chunk", path, (unsigned long long) KG_CKPT_CHUNK_SIZE);
  if (!(mem->chunks = calloc(mem->nchunks, sizeof *mem->chunks)))
    BAIL(KG_ENOMEM, "out of memory");
  size_t k = 0;
  const cJSON *d;
  cJSON_ArrayForEach(d, ch)
  {
    if (!cJSON_IsString(d) || !s_unhex(d->valuestring, mem->chunks[k++], KG_CKPT_DIGEST_BYTES))
      BAIL(KG_ECKPT_MALFORMED, "manifest member '%.200s' has an invalid chunk digest", path);
  }
  return 0;
}

#define FAIL(code, ...)                       \
  do {                                        \
    snprintf(why, whysize, __VA_ARGS__);      \
    rc = (code);                              \
    goto done;                                \
  } while (0)

int
kg_ckpt_manifest_decode(const char *json, size_t len, kg_ckpt_manifest_t **out,
                        char *why, size_t whysize)
{
  int rc = 0;
  kg_ckpt_manifest_t *self = NULL;
  int parse_rc = 0;
  cJSON *root = kg_ckpt_json_parse(json, len, &parse_rc);
  const char *s;
  int64_t n;
  if (parse_rc == KG_ENOMEM)
    FAIL(KG_ENOMEM, "out of memory while parsing the manifest");
  if (root && s_has_nul_escape(json, len))
    FAIL(KG_ECKPT_UNSAFE, "manifest holds a NUL character (\\u0000) in a string");
  if (!cJSON_IsObject(root))
    FAIL(KG_ECKPT_MALFORMED, "manifest is not a JSON object");
  if (!(s = s_str(root, "format", 64)) || strcmp(s, "kguard-checkpoint") != 0)
    FAIL(KG_ECKPT_MALFORMED, "manifest format is not kguard-checkpoint");
  if (!s_int(root, "version", &n) || n < 1 || n > KG_CKPT_FORMAT_VERSION)
    FAIL(KG_ECKPT_MALFORMED, "unsupported manifest version");
  if (!(self = kg_ckpt_manifest_new()))
    FAIL(KG_ENOMEM, "out of memory");
  self->version = (int) n;
  if ((rc = s_decode_header(root, self, why, whysize)) < 0)
    goto done;
  const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "members");
  if (!cJSON_IsArray(arr))
    FAIL(KG_ECKPT_MALFORMED, "manifest has no members array");
  if (cJSON_GetArraySize(arr) > KG_CKPT_MEMBERS_MAX)
    FAIL(KG_ECKPT_MALFORMED, "manifest lists more than %d members", KG_CKPT_MEMBERS_MAX);
  size_t chunks_total = 0;
  const cJSON *o;
  cJSON_ArrayForEach(o, arr)
  {
    if ((rc = s_decode_member(o, self, &chunks_total, why, whysize)) < 0)
      goto done;
  }
  if (cJSON_GetObjectItemCaseSensitive(root, "world_size")) {
    if (!s_int(root, "world_size", &self->world_size) || self->world_size < 2
        || self->world_size > KG_CKPT_WORLD_MAX || !s_int(root, "rank", &self->rank)
        || self->rank >= self->world_size)
      FAIL(KG_ECKPT_MALFORMED, "manifest rank/world_size invalid");
  }
  int64_t total;
  if (!s_int(root, "total_size", &total) || (uint64_t) total != self->total_size)
    FAIL(KG_ECKPT_MALFORMED, "manifest total_size does not match its members");
  if (kg_ckpt_manifest_sort(self) == KG_EEXISTS)
    FAIL(KG_ECKPT_UNSAFE, "manifest lists a member name twice");
  const kg_ckpt_member_t *child = NULL, *both = s_file_and_dir(self, &child);
  if (both)
    FAIL(KG_ECKPT_UNSAFE, "manifest lists '%.200s' both as a file and as a directory of "
         "'%.200s'", both->path, child->path);
done:
  cJSON_Delete(root);
  if (rc < 0)
    kg_ckpt_manifest_destroy(&self);
  *out = self;
  return rc;
}
