/*  kg_run_record: incidents, checkpoints and events as `kguard run` learns
    them (see kg_run_record.h). kg_runner.c keeps the execution policy. */
#include "kg_run_record.h"
#include "kg_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kg_run_record_t {
  cJSON *incidents;             /*  borrowed: metadata.kguard.incidents    */
  const char *state_dir;        /*  borrowed, or NULL                      */
  kg_progress_t *pr;            /*  borrowed                               */
  int64_t restored_step;        /*  last restored checkpoint step, or -1   */
  cJSON *paths;                 /*  incident file paths seen (array)       */
  cJSON *handled;               /*  incident ids and msg_ids of failures
                                    already acted on (array of strings)    */
  cJSON *ckpt_failed;           /*  checkpoints kguard verified but could
                                    not restore: [{incident, step, archive,
                                    error}]                                */
};

static bool
s_is(const char *a, const char *b)
{
  return a && b && strcmp(a, b) == 0;
}

kg_run_record_t *
kg_run_record_new(cJSON *incidents, const char *state_dir, kg_progress_t *progress)
{
  kg_run_record_t *self = calloc(1, sizeof *self);
  if (!self)
    return NULL;
  self->incidents = incidents;
  self->state_dir = state_dir;
  self->pr = progress;
  self->restored_step = -1;
  self->paths = cJSON_CreateArray();
  self->handled = cJSON_CreateArray();
  self->ckpt_failed = cJSON_CreateArray();
  if (!incidents || !self->paths || !self->handled || !self->ckpt_failed)
    kg_run_record_destroy(&self);
  return self;
}

void
kg_run_record_destroy(kg_run_record_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_run_record_t *self = *self_p;
  cJSON_Delete(self->paths);
  cJSON_Delete(self->handled);
  cJSON_Delete(self->ckpt_failed);
  free(self);
  *self_p = NULL;
}

int64_t
kg_run_record_restored_step(const kg_run_record_t *self)
{
  return self->restored_step;
}

const cJSON *
kg_run_record_paths(const kg_run_record_t *self)
{
  return self->paths;
}

const cJSON *
kg_run_record_not_restored(const kg_run_record_t *self)
{
  return self->ckpt_failed;
}

const char *
kg_run_record_incident_path(const kg_run_record_t *self, const cJSON *kg, char *buf, size_t len)
{
  const char *path = kg_json_string(kg, "incident_path");
  if (path)
    return path;
  const char *id = kg_json_string(kg, "incident");
  if (!id || !self->state_dir)
    return NULL;
  snprintf(buf, len, "%s/incidents/%s.json", self->state_dir, id);
  return buf;
}

/*  Remember an event seen during the cell (once per event and incident). */
void
kg_run_events_note(cJSON *events, const cJSON *kg, const char *text)
{
  const char *event = kg_json_string(kg, "event");
  if (!event)
    return;
  const char *incident = kg_json_string(kg, "incident");
  cJSON *seen;
  cJSON_ArrayForEach(seen, events) {
    if (s_is(kg_json_string(seen, "event"), event)
        && (s_is(kg_json_string(seen, "incident"), incident)
            || (!incident && !kg_json_string(seen, "incident")))) {
      /*  The reply and the notice tell of the same incident; the later
          one may know more (the restored checkpoint). */
      const cJSON *item;
      cJSON_ArrayForEach(item, kg) {
        if (cJSON_IsNull(item) || !item->string)
          continue;
        cJSON_DeleteItemFromObjectCaseSensitive(seen, item->string);
        cJSON_AddItemToObject(seen, item->string, cJSON_Duplicate(item, true));
      }
      if (text && !cJSON_GetObjectItemCaseSensitive(seen, "notice"))
        cJSON_AddStringToObject(seen, "notice", text);
      return;
    }
  }
  cJSON *copy = cJSON_Duplicate(kg, true);
  if (!copy)
    return;
  if (text)
    cJSON_AddStringToObject(copy, "notice", text);
  cJSON_AddItemToArray(events, copy);
}

/*  The strongest event of the cell: down > restart > the rest. */
const char *
kg_run_events_strongest(const cJSON *events, const cJSON *reply)
{
  const char *best = NULL;
  const cJSON *ev;
  cJSON_ArrayForEach(ev, events) {
    const char *e = kg_json_string(ev, "event");
    if (s_is(e, "down"))
      return "down";
    if (s_is(e, "sticky-restart") || s_is(e, "kernel-died"))
      best = e;
    else if (!best)
      best = e;
  }
  const char *ename = kg_json_string(reply, "ename");
  if (s_is(ename, "KernelDown"))
    return "down";
  if (!best && s_is(ename, "KernelRestarted"))
    return "sticky-restart";
  return best;
}

bool
kg_run_record_is_handled(const kg_run_record_t *self, const char *incident, const char *parent)
{
  const cJSON *h;
  cJSON_ArrayForEach(h, self->handled) {
    if (s_is(h->valuestring, incident) || s_is(h->valuestring, parent))
      return true;
  }
  return false;
}

static void
s_handle(kg_run_record_t *self, const char *id)
{
  if (id && !kg_run_record_is_handled(self, id, NULL))
    cJSON_AddItemToArray(self->handled, cJSON_CreateString(id));
}

/*  A notice's metadata.kguard.checkpoint {status, step, archive, error}:
    status "failed" means a verified checkpoint sealed before the fault
    existed but could not be restored, so the fresh kernel starts over while
    the user expects it to resume. Recorded once per incident; the run then
    cannot end as a plain success. */
void
kg_run_record_checkpoint(kg_run_record_t *self, const cJSON *kg)
{
  const cJSON *ck = cJSON_GetObjectItemCaseSensitive(kg, "checkpoint");
  if (!s_is(kg_json_string(ck, "status"), "failed"))
    return;
  const char *incident = kg_json_string(kg, "incident");
  const cJSON *rec;
  cJSON_ArrayForEach(rec, self->ckpt_failed) {
    if (s_is(kg_json_string(rec, "incident"), incident)
        || (!incident && !kg_json_string(rec, "incident")))
      return;
  }
  cJSON *item = cJSON_CreateObject();
  if (!item)
    return;
  if (incident)
    cJSON_AddStringToObject(item, "incident", incident);
  else
    cJSON_AddNullToObject(item, "incident");
  const char *keys[] = {"step", "archive", "error"};
  for (size_t i = 0; i < 3; i++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(ck, keys[i]);
    cJSON_AddItemToObject(item, keys[i], v ? cJSON_Duplicate(v, true) : cJSON_CreateNull());
  }
  cJSON_AddItemToArray(self->ckpt_failed, item);
  const cJSON *step = cJSON_GetObjectItemCaseSensitive(ck, "step");
  const char *archive = kg_json_string(ck, "archive");
  const char *error = kg_json_string(ck, "error");
  char stepbuf[32] = "?";
  if (cJSON_IsNumber(step))
    snprintf(stepbuf, sizeof stepbuf, "%lld", (long long) step->valuedouble);
  kg_progress_event(self->pr, true, "checkpoint of step %s%s%s%s was verified but could NOT "
                    "be restored%s%s: training in the fresh kernel starts over", stepbuf,
                    archive ? " (" : "", archive ? archive : "", archive ? ")" : "",
                    error ? ": " : "", error ? error : "");
}

/*  kguard publishes its notice once the fresh kernel is ready, i.e. after
    the failing cell's reply, while the re-run is already under way. Such a
    notice completes what is known about an incident already acted on: the
    checkpoint that was restored. */
void
kg_run_record_complete(kg_run_record_t *self, const cJSON *kg, const char *text)
{
  const char *incident = kg_json_string(kg, "incident");
  const cJSON *step = cJSON_GetObjectItemCaseSensitive(kg, "restored_step");
  const char *archive = kg_json_string(kg, "restored_archive");
  cJSON *rec;
  cJSON_ArrayForEach(rec, self->incidents) {
    if (!incident || !s_is(kg_json_string(rec, "incident"), incident))
      continue;
    const char *keys[] = {"restored_step", "restored_archive"};
    for (int i = 0; i < 2; i++) {
      const cJSON *v = cJSON_GetObjectItemCaseSensitive(kg, keys[i]);
      if (v && !cJSON_IsNull(v)) {
        cJSON_DeleteItemFromObjectCaseSensitive(rec, keys[i]);
        cJSON_AddItemToObject(rec, keys[i], cJSON_Duplicate(v, true));
      }
    }
    if (text && !cJSON_GetObjectItemCaseSensitive(rec, "notice"))
      cJSON_AddStringToObject(rec, "notice", text);
  }
  if (!s_is(kg_json_string(kg, "event"), "sticky-restart")
      && !s_is(kg_json_string(kg, "event"), "kernel-died"))
    return;
  if (s_is(kg_json_string(cJSON_GetObjectItemCaseSensitive(kg, "checkpoint"), "status"),
           "failed"))
    return;                     /*  told by kg_run_record_checkpoint               */
  if (cJSON_IsNumber(step)) {
    self->restored_step = (int64_t) step->valuedouble;
    kg_progress_event(self->pr, true, "checkpoint of step %lld verified and restored%s%s%s; "
                      "training resumes from it", (long long) self->restored_step,
                      archive ? " (" : "", archive ? archive : "", archive ? ")" : "");
  }
  else
    kg_progress_event(self->pr, true, "no verified checkpoint sealed before the fault was "
                      "restored: training starts over");
}

void
kg_run_record_incidents(kg_run_record_t *self, size_t number, size_t index, int execution,
                        const cJSON *events, const cJSON *reply)
{
  const cJSON *ev;
  cJSON_ArrayForEach(ev, events) {
    /*  A failure that put kguard DOWN is recorded as that, not also as a
        restart. */
    const char *incident = kg_json_string(ev, "incident");
    bool superseded = false;
    const cJSON *other;
    cJSON_ArrayForEach(other, events) {
      superseded = superseded || (other != ev && incident
                                  && s_is(kg_json_string(other, "incident"), incident)
                                  && s_is(kg_json_string(other, "event"), "down"));
    }
    if (superseded)
      continue;
    cJSON *rec = cJSON_Duplicate(ev, true);
    if (!rec)
      continue;
    cJSON_AddNumberToObject(rec, "cell", (double) number);
    cJSON_AddNumberToObject(rec, "cell_index", (double) index);
    cJSON_AddNumberToObject(rec, "execution", execution);
    const char *ename = kg_json_string(reply, "ename");
    if (ename && !cJSON_GetObjectItemCaseSensitive(rec, "ename")) {
      cJSON_AddStringToObject(rec, "ename", ename);
      const char *evalue = kg_json_string(reply, "evalue");
      cJSON_AddStringToObject(rec, "evalue", evalue ? evalue : "");
    }
    char buf[4096];
    const char *path = kg_run_record_incident_path(self, ev, buf, sizeof buf);
    if (path) {
      if (!cJSON_GetObjectItemCaseSensitive(rec, "incident_path"))
        cJSON_AddStringToObject(rec, "incident_path", path);
      bool known = false;
      const cJSON *p;
      cJSON_ArrayForEach(p, self->paths)
        known = known || s_is(p->valuestring, path);
      if (!known)
        cJSON_AddItemToArray(self->paths, cJSON_CreateString(path));
    }
    cJSON_AddItemToArray(self->incidents, rec);
  }
}

/*  The failure of cell has been acted on: its notices arriving later only
    complete the record. */
void
kg_run_record_acted_on(kg_run_record_t *self, const char *msg_id, const cJSON *events)
{
  s_handle(self, msg_id);
  const cJSON *ev;
  cJSON_ArrayForEach(ev, events)
    s_handle(self, kg_json_string(ev, "incident"));
}

