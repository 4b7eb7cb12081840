/*  kg_diag_report: a diagnosis's signature and JSON document, from
    explicit fields (contracts in kg_diag_report.h). */
#include "kg_diag_report.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "kg_errtext.h"
#include "kg_json.h"

static void
s_hash16(const char *text, char out[17])
{
  unsigned char h[8];
  crypto_generichash(h, sizeof h, (const unsigned char *) text, strlen(text), NULL, 0);
  sodium_bin2hex(out, 17, h, sizeof h);
}

int
kg_diag_report_signature(const char *family_id, const char *text, const char *cell_code,
                         char *buf, size_t size)
{
  char norm[KG_MATCH_LINE_MAX];
  kg_errtext_normalise(text, norm, sizeof norm);
  char h1[17], h2[17];
  s_hash16(norm, h1);
  s_hash16(cell_code ? cell_code : "", h2);
  snprintf(buf, size, "%s:%s:%s", family_id, h1, h2);
  return 0;
}

cJSON *
kg_diag_report_json(const kg_diag_report_t *r)
{
  cJSON *o = cJSON_CreateObject();
  if (!o)
    return NULL;
  const kg_match_t *m = r->match;
  kg_json_add_string_or_null(o, "family", m ? m->family->id : NULL);
  kg_json_add_string_or_null(o, "title", m ? m->family->title : NULL);
  cJSON_AddBoolToObject(o, "sticky", r->sticky);
  kg_json_add_string_or_null(o, "rule", m ? m->rule_id : NULL);
  kg_json_add_string_or_null(o, "note", m ? m->note : NULL);
  cJSON_AddStringToObject(o, "backend", kg_backend_name(r->backend));
  if (m && m->error_code)
    cJSON_AddNumberToObject(o, "error_code", m->error_code);
  else
    cJSON_AddNullToObject(o, "error_code");
  if (r->fault_ms >= 0)
    cJSON_AddNumberToObject(o, "fault_time_ms", (double) r->fault_ms);
  else
    cJSON_AddNullToObject(o, "fault_time_ms");
  kg_json_add_string_or_null(o, "parent_msg_id", r->parent);
  if (m) {
    cJSON *mm = cJSON_AddObjectToObject(o, "matched");
    if (mm) {
      cJSON_AddStringToObject(mm, "source", kg_source_name(m->source));
      cJSON_AddStringToObject(mm, "line", m->line);
    }
  } else {
    cJSON_AddNullToObject(o, "matched");
  }
  kg_json_add_string_or_null(o, "assertion_line", r->assertion);
  if (r->first_error)
    cJSON_AddItemToObject(o, "first_error", cJSON_Duplicate(r->first_error, true));
  else
    cJSON_AddNullToObject(o, "first_error");
  kg_trail_add_to_json(r->trail, o);
  if (r->exited) {
    cJSON *e = cJSON_AddObjectToObject(o, "exit");
    if (e) {
      if (r->exit_code >= 0)
        cJSON_AddNumberToObject(e, "code", r->exit_code);
      else
        cJSON_AddNullToObject(e, "code");
      if (r->exit_code < 0)
        cJSON_AddNumberToObject(e, "signal", r->signo);
      else
        cJSON_AddNullToObject(e, "signal");
    }
  } else {
    cJSON_AddNullToObject(o, "exit");
  }
  if (r->last_step >= 0)
    cJSON_AddNumberToObject(o, "last_step", (double) r->last_step);
  else
    cJSON_AddNullToObject(o, "last_step");
  return o;
}
