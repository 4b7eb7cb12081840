/*  kg_ckpt_resume: select + quarantine + restore in one call. */
#include "kg_ckpt_resume.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kg_clock.h"
#include "kg_ckpt_list.h"
#include "kg_ckpt_quarantine.h"
#include "kg_ckpt_restore.h"
#include "kg_ckpt_util.h"
#include "kg_error.h"

static void
s_add_pair(cJSON *arr, const char *archive, const char *key, const char *value,
           const char *reason)
{
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "archive", archive);
  if (key)
    cJSON_AddStringToObject(o, key, value);
  cJSON_AddStringToObject(o, "reason", reason);
  cJSON_AddItemToArray(arr, o);
}

int
kg_ckpt_resume_prepare(const char *dir, int64_t before_ms, const char *incident,
                       const char *dest, const unsigned char *pk, cJSON **out, char *why,
                       size_t whysize)
{
  *out = NULL;
  if (!kg_ckpt_quarantine_id_ok(incident)) {
    snprintf(why, whysize, "bad incident id '%.100s' (use [A-Za-z0-9._:-])", incident);
    return KG_EUSAGE;
  }
  int rc;
  kg_ckpt_list_t *list = kg_ckpt_list_scan(dir, pk, false, &rc);
  if (!list && rc != -ENOENT) {
    snprintf(why, whysize, "scanning '%s': %s", dir, kg_strerror(rc));
    return rc;
  }
  cJSON *root = cJSON_CreateObject();
  cJSON *quarantined = cJSON_CreateArray();
  cJSON *skipped = cJSON_CreateArray();
  size_t n = list ? list->count : 0;
  char when[32], reason[640];

  if (list && (rc = kg_ckpt_quarantine(list, incident, before_ms)) < 0) {
    snprintf(why, whysize, "quarantining in '%s': %s", dir, kg_strerror(rc));
    goto fail;
  }
  for (size_t i = 0; i < n; i++) {
    kg_ckpt_entry_t *e = &list->entries[i];
    if (!e->moved_to)
      continue;
    kg_clock_iso_ms(e->time_ms, when, sizeof when);
    if (e->authenticated)
      snprintf(reason, sizeof reason, "sealed at %s, at or after the failure", when);
    else
      snprintf(reason, sizeof reason, "%s; file modified at %s, at or after the failure",
               e->reason, when);
    s_add_pair(quarantined, e->path, "to", e->moved_to, reason);
  }

  /* Newest first among those sealed strictly before T; restore verifies
     while extracting, so a candidate that fails is simply skipped. */
  kg_ckpt_entry_t *chosen = NULL;
  kg_ckpt_report_t rep = {0};
  for (size_t i = 0; i < n && !chosen; i++) {
    kg_ckpt_entry_t *e = &list->entries[i];
    if (e->moved_to)
      continue;
    if (e->leftover || !e->authenticated || e->rc != 0) {
      snprintf(reason, sizeof reason, "%s: %s", e->leftover ? "incomplete" : kg_ckpt_status_name(e->rc),
               e->reason);
      s_add_pair(skipped, e->path, NULL, NULL, reason);
      continue;
    }
    rc = kg_ckpt_restore(e->path, dest, pk, &rep);
    if (rc == 0) {
      chosen = e;
      break;
    }
    if (kg_ckpt_status_of(rc) < 0) {
      snprintf(why, whysize, "restoring '%s' into '%s': %s", e->path, dest, rep.reason);
      kg_ckpt_report_clear(&rep);
      goto fail;
    }
    snprintf(reason, sizeof reason, "%s: %s", kg_ckpt_status_name(rc), rep.reason);
    s_add_pair(skipped, e->path, NULL, NULL, reason);
    kg_ckpt_report_clear(&rep);
  }
  cJSON_AddStringToObject(root, "status", chosen ? "restored" : "none");
  if (chosen) {
    cJSON_AddStringToObject(root, "archive", chosen->path);
    cJSON_AddNumberToObject(root, "step", (double) chosen->step);
    cJSON_AddStringToObject(root, "run", chosen->run);
    cJSON_AddStringToObject(root, "sealed_at",
                            kg_clock_iso_ms(chosen->sealed_at_ms, when, sizeof when));
    cJSON_AddNumberToObject(root, "sealed_at_ms", (double) chosen->sealed_at_ms);
    char digest[80];
    snprintf(digest, sizeof digest, "blake2b-256:%s", rep.manifest_digest);
    cJSON_AddStringToObject(root, "digest", digest);
    cJSON_AddStringToObject(root, "dir", dest);
    kg_ckpt_report_clear(&rep);
  } else {
    cJSON_AddNullToObject(root, "archive");
    cJSON_AddNullToObject(root, "step");
    cJSON_AddNullToObject(root, "run");
    cJSON_AddNullToObject(root, "sealed_at");
    cJSON_AddNullToObject(root, "sealed_at_ms");
    cJSON_AddNullToObject(root, "digest");
    cJSON_AddNullToObject(root, "dir");
  }
  cJSON_AddStringToObject(root, "digest_of", "manifest");
  cJSON_AddNumberToObject(root, "before_ms", (double) before_ms);
  cJSON_AddStringToObject(root, "incident", incident);
  cJSON_AddItemToObject(root, "quarantined", quarantined);
  cJSON_AddItemToObject(root, "skipped", skipped);
  kg_ckpt_list_destroy(&list);
  *out = root;
  return 0;
fail:
  cJSON_Delete(quarantined);
  cJSON_Delete(skipped);
  cJSON_Delete(root);
  kg_ckpt_list_destroy(&list);
  return rc < 0 ? rc : KG_EINTERNAL;
}
