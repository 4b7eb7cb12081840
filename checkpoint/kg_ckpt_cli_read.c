/*  kg_ckpt_cli_read: `kguard ckpt manifest` (what kguard.resume() reads
    before loading members in place) and `kguard ckpt gc`. */
#include "kg_ckpt_cli_read.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_ckpt_gc.h"
#include "kg_ckpt_verify.h"
#include "kg_cli.h"
#include "kg_error.h"
#include "kg_keys.h"

static const char s_help_manifest[] =
  "usage: kguard ckpt manifest FILE\n"
  "\n"
  "Authenticate FILE's signed manifest (no payload byte is read) and print it:\n"
  "  {\"manifest\": {... as in FORMAT.md ...}, \"manifest_digest\": \"<hex>\",\n"
  "   \"archive_size\": N}\n"
  "kguard.resume() uses it to read members in place, checking each member's\n"
  "digest as it reads. Exit codes as for verify (0 authenticated).\n";

static const char s_help_gc[] =
  "usage: kguard ckpt gc CKPT_DIR\n"
  "\n"
  "Remove what interrupted writers left in CKPT_DIR: seal temporaries\n"
  "(.*.tmp-*) and kguard.save staging directories (.kguard-save-*) whose\n"
  "writer is gone (its lock is free; a running writer's are kept), and copies\n"
  "of restored zstd checkpoints (.restored-*). Never touches sealed archives\n"
  "or quarantine/. Prints what it removed.\n"
  "exit: 0, 100 usage, 111 system.\n";

static bool
s_help(const char *a)
{
  return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0;
}

int
kg_ckpt_cli_manifest(int argc, char **argv)
{
  if (argc == 2 && s_help(argv[1])) {
    fputs(s_help_manifest, stdout);
    return KG_EXIT_OK;
  }
  if (argc != 2) {
    fprintf(stderr, "kguard ckpt manifest: needs exactly one FILE (see --help)\n");
    return KG_EXIT_USAGE;
  }
  unsigned char pkbuf[KG_KEYS_PUBLIC_BYTES];
  const unsigned char *pk = kg_keys_load_public(NULL, pkbuf) == 0 ? pkbuf : NULL;
  kg_ckpt_report_t r;
  int rc = kg_ckpt_verify(argv[1], pk, KG_CKPT_VERIFY_MANIFEST_ONLY, NULL, &r);
  if (rc != 0) {
    fprintf(stderr, "%s: %s: %s\n", argv[1], kg_ckpt_status_name(rc), r.reason);
    kg_ckpt_report_clear(&r);
    int s = kg_ckpt_status_of(rc);
    return s > 0 ? s : KG_EXIT_SYSTEM;
  }
  char *json = kg_ckpt_manifest_encode(r.manifest);
  cJSON *m = json ? cJSON_Parse(json) : NULL;
  cJSON *o = cJSON_CreateObject();
  int code = KG_EXIT_SYSTEM;
  if (m && o) {
    cJSON_AddItemToObject(o, "manifest", m);
    m = NULL;
    cJSON_AddStringToObject(o, "manifest_digest", r.manifest_digest);
    cJSON_AddNumberToObject(o, "archive_size", (double) r.archive_size);
    char *text = cJSON_PrintUnformatted(o);
    if (text) {
      printf("%s\n", text);
      code = KG_EXIT_OK;
    }
    free(text);
  }
  if (code != KG_EXIT_OK)
    fprintf(stderr, "kguard ckpt manifest: out of memory\n");
  cJSON_Delete(m);
  cJSON_Delete(o);
  free(json);
  kg_ckpt_report_clear(&r);
  return code;
}

int
kg_ckpt_cli_gc(int argc, char **argv)
{
  if (argc == 2 && s_help(argv[1])) {
    fputs(s_help_gc, stdout);
    return KG_EXIT_OK;
  }
  if (argc != 2) {
    fprintf(stderr, "kguard ckpt gc: needs exactly one CKPT_DIR (see --help)\n");
    return KG_EXIT_USAGE;
  }
  kg_ckpt_gc_stats_t st;
  int rc = kg_ckpt_gc(argv[1], false, &st);
  printf("removed %zu (%llu bytes of temporaries), %zu still being written\n", st.removed,
         st.bytes, st.busy);
  if (rc < 0) {
    fprintf(stderr, "kguard ckpt gc: %s: %s\n", argv[1], kg_strerror(rc));
    return KG_EXIT_SYSTEM;
  }
  return KG_EXIT_OK;
}
