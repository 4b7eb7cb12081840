/*  kg_notice: user notices as markdown + plain text, and their metadata. */
#include "kg_notice.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_error.h"
#include "kg_json.h"

#define DIAG_LABEL "diagnostic, not for timing"

/*  A growing string; on allocation failure it stays marked failed. */
typedef struct {
  char *s;
  size_t len, cap;
  bool failed;
} s_buf_t;

static void
s_add(s_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
s_add(s_buf_t *b, const char *fmt, ...)
{
  if (b->failed)
    return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) {
    b->failed = true;
    return;
  }
  if (b->len + (size_t) n + 1 > b->cap) {
    size_t cap = (b->len + (size_t) n + 1) * 2;
    char *s = realloc(b->s, cap);
    if (!s) {
      b->failed = true;
      return;
    }
    b->s = s;
    b->cap = cap;
  }
  va_start(ap, fmt);
  vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
  va_end(ap);
  b->len += (size_t) n;
}

/*  Both renderings at once. */
typedef struct {
  s_buf_t md, txt;
} s_out_t;

/*  The first line of code, at most 120 bytes. */
static void
s_first_line(const char *code, char *buf, size_t size)
{
  const char *p = code ? code : "";
  while (*p == '\n' || *p == '\r' || *p == ' ')
    p++;
  size_t n = strcspn(p, "\r\n");
  if (n >= size)
    n = size - 1;
  if (n > 120)
    n = 120;
  memcpy(buf, p, n);
  buf[n] = '\0';
}

static void
s_heading(s_out_t *o, const char *text, const kg_notice_info_t *info)
{
  s_add(&o->md, "### kguard: %s%s\n\n", text, info->diagnostic ? " (" DIAG_LABEL ")" : "");
  s_add(&o->txt, "kguard: %s%s\n", text, info->diagnostic ? " (" DIAG_LABEL ")" : "");
}

static void
s_para(s_out_t *o, const char *text)
{
  s_add(&o->md, "%s\n\n", text);
  s_add(&o->txt, "%s\n", text);
}

static void
s_item(s_out_t *o, const char *label, const char *value)
{
  if (!value || !value[0])
    return;
  s_add(&o->md, "- **%s:** %s\n", label, value);
  s_add(&o->txt, "  %s: %s\n", label, value);
}

static void
s_code(s_out_t *o, const char *label, const char *code)
{
  if (!code || !code[0])
    return;
  /* A fence longer than any backtick run inside keeps the block intact. */
  bool blank = o->md.len >= 2 && o->md.s[o->md.len - 1] == '\n' && o->md.s[o->md.len - 2] == '\n';
  s_add(&o->md, "%s%s:\n\n````text\n%s\n````\n\n", blank ? "" : "\n", label, code);
  s_add(&o->txt, "  %s: %s\n", label, code);
}

/*  Lines of code after its first non-blank line (trailing newlines aside). */
static int
s_more_lines(const char *code)
{
  const char *p = code ? code : "";
  while (*p == '\n' || *p == '\r' || *p == ' ')
    p++;
  size_t n = strlen(p);
  while (n > 0 && (p[n - 1] == '\n' || p[n - 1] == '\r' || p[n - 1] == ' '))
    n--;
  int more = 0;
  for (size_t i = 0; i < n; i++)
    more += p[i] == '\n';
  return more;
}

static void
s_cell(s_out_t *o, const kg_notice_info_t *info)
{
  /*  The first line alone can be as anonymous as "BATCH = 64": say how long
      the cell is, so it can be told apart from its neighbours. */
  char first[192];
  s_first_line(info->cell_code, first, 128);
  int more = s_more_lines(info->cell_code);
  if (first[0] && more > 0) {
    size_t n = strlen(first);
    snprintf(first + n, sizeof first - n, "  … (+%d more line%s)", more, more == 1 ? "" : "s");
  }
  char label[64];
  if (info->execution_count > 0)
    snprintf(label, sizeof label, "Cell [%d]", info->execution_count);
  else
    snprintf(label, sizeof label, "The cell");
  if (first[0])
    s_code(o, label, first);
  else
    s_item(o, "Cell", label);
}

static void
s_family(s_out_t *o, const kg_notice_info_t *info)
{
  const kg_family_t *f = info->family;
  if (!f)
    return;
  s_item(o, "First check", f->first_check);
  s_item(o, "Conclusion to avoid", f->avoid);
}

static void
s_hint(s_out_t *o, const kg_notice_info_t *info)
{
  const char *hint = kg_family_hint(info->family, info->backend);
  s_item(o, "Separate diagnostic run", hint);
}

static void
s_checkpoint_restored(s_out_t *o, const kg_notice_info_t *info)
{
  char text[1024];
  snprintf(text, sizeof text,
           "verified and restored step %lld (sealed %s, digest %.24s%s) from %s, sealed "
           "before the fault; `kguard.resume()` returns it.",
           (long long) info->restored_step,
           info->restored_sealed ? info->restored_sealed : "at an unknown time",
           info->restored_digest ? info->restored_digest : "unknown",
           info->restored_digest && strlen(info->restored_digest) > 24 ? "…" : "",
           info->restored_archive ? info->restored_archive : "the checkpoint directory");
  s_item(o, "Checkpoint", text);
}

static void
s_restart_and_checkpoint(s_out_t *o, const kg_notice_info_t *info)
{
  if (info->restarted)
    s_item(o, "Kernel",
           "restarted: the old process was terminated and a fresh one started. Variables "
           "from earlier cells are gone; cells sent before kguard reported the failure "
           "(queued behind it) were answered with KernelRestarted and did not run; a cell "
           "sent after the failing cell's error reply runs in the fresh kernel.");
  if (info->checkpoint_restored)
    s_checkpoint_restored(o, info);
  else if (info->restarted) {
    s_item(o, "Checkpoint",
           "no verified checkpoint sealed before the fault was found: training starts over.");
  }
}

/*  A restart the user asked for (`%kguard restart --diagnostic`): nothing
    failed, so no cell is "failing" and nothing is rolled back. */
static void
s_requested_restart(s_out_t *o, const kg_notice_info_t *info)
{
  s_item(o, "Kernel",
         "restarted at your request: the old process was stopped and a fresh one started. "
         "Variables from earlier cells are gone; cells still waiting when you asked were "
         "answered with KernelRestarted and did not run.");
  if (info->checkpoint_restored)
    s_checkpoint_restored(o, info);
  else
    s_item(o, "Checkpoint",
           "nothing was restored: a restart you ask for is not a fault, so kguard does not roll "
           "training back.");
}

static void
s_incident(s_out_t *o, const kg_notice_info_t *info)
{
  if (info->incident_path)
    s_item(o, "Incident record", info->incident_path);
  else if (info->incident_id)
    s_item(o, "Incident", info->incident_id);
}

static void
s_diag_vars(const kg_notice_info_t *info, char *buf, size_t size)
{
  if (info->backend == KG_BACKEND_ROCM)
    snprintf(buf, size, "AMD_SERIALIZE_KERNEL=3 and HIP_LAUNCH_BLOCKING=1");
  else if (info->backend == KG_BACKEND_CUDA)
    snprintf(buf, size, "CUDA_LAUNCH_BLOCKING=1");
  else
    snprintf(buf, size, "CUDA_LAUNCH_BLOCKING=1 on NVIDIA, or AMD_SERIALIZE_KERNEL=3 and "
                        "HIP_LAUNCH_BLOCKING=1 on ROCm");
}

/*  One kind of notice: its heading, its paragraphs and items, into o. */
typedef void (s_kind_fn)(const kg_notice_info_t *info, s_out_t *o);

static void
s_sticky_restart(const kg_notice_info_t *info, s_out_t *o)
{
  const kg_family_t *f = info->family;
  char text[1024];
  snprintf(text, sizeof text, "sticky GPU error: %s", f ? f->title : "unknown family");
  s_heading(o, text, info);
  snprintf(text, sizeof text,
           "The %s context of the kernel process is poisoned: every later GPU call in that "
           "process fails the same way, so kguard stopped it and started a fresh kernel.",
           info->backend == KG_BACKEND_ROCM ? "ROCm/HIP"
           : info->backend == KG_BACKEND_CUDA ? "CUDA" : "GPU");
  s_para(o, text);
  s_cell(o, info);
  s_code(o, "Device-side assertion", info->assertion_line);
  if (!info->assertion_line)
    s_code(o, "Error", info->matched_line);
  s_item(o, "Note", info->note);
  s_family(o, info);
  s_hint(o, info);
  s_restart_and_checkpoint(o, info);
  s_incident(o, info);
}

static void
s_advice(const kg_notice_info_t *info, s_out_t *o)
{
  const kg_family_t *f = info->family;
  char text[1024];
  snprintf(text, sizeof text, "%s (not sticky: no restart)", f ? f->title : "GPU error");
  s_heading(o, text, info);
  s_cell(o, info);
  s_item(o, "Note", info->note);
  s_family(o, info);
  s_hint(o, info);
  s_incident(o, info);
}

static void
s_down(const kg_notice_info_t *info, s_out_t *o)
{
  char text[1024];
  s_heading(o, "automatic restarts stopped (kernel is down)", info);
  snprintf(text, sizeof text, "Automatic restarts stopped because %s",
           info->reason ? info->reason : "the restart policy gave up.");
  s_para(o, text);
  if (info->family)
    s_item(o, "Error family", info->family->title);
  s_family(o, info);
  s_hint(o, info);
  s_item(o, "What now",
         "every request is answered with a KernelDown error until you fix the cause and run "
         "`%kguard restart` in a cell (or `kguard restart` from a shell) to start a fresh "
         "kernel.");
  s_incident(o, info);
}

static void
s_diagnostic(const kg_notice_info_t *info, s_out_t *o)
{
  char text[1024], vars[160];
  s_diag_vars(info, vars, sizeof vars);
  s_heading(o, "kernel restarted in diagnostic mode", info);
  snprintf(text, sizeof text,
           "The fresh kernel runs with %s: kernel launches are serialised, so a GPU error is "
           "reported at the operation that caused it. Diagnostic, not for timing: training "
           "is slower. The next normal `%%kguard restart` removes it.",
           vars);
  s_para(o, text);
  s_requested_restart(o, info);
}

static void
s_kernel_died(const kg_notice_info_t *info, s_out_t *o)
{
  char text[1024];
  s_heading(o, "the kernel died", info);
  if (info->exit_code >= 0)
    snprintf(text, sizeof text, "The kernel process exited on its own with code %d.",
             info->exit_code);
  else
    snprintf(text, sizeof text, "The kernel process was killed by signal %d (SIG%s).",
             info->signo, sigabbrev_np(info->signo) ? sigabbrev_np(info->signo) : "?");
  s_para(o, text);
  s_cell(o, info);
  s_code(o, "Last error line", info->assertion_line ? info->assertion_line
                                                    : info->matched_line);
  if (info->family) {
    s_item(o, "Error family", info->family->title);
    s_family(o, info);
    s_hint(o, info);
  }
  s_restart_and_checkpoint(o, info);
  s_incident(o, info);
}

static void
s_build(kg_notice_kind_t kind, const kg_notice_info_t *info, s_out_t *o)
{
  static s_kind_fn *const kinds[] = {
    [KG_NOTICE_STICKY_RESTART] = s_sticky_restart, [KG_NOTICE_ADVICE] = s_advice,
    [KG_NOTICE_DOWN] = s_down, [KG_NOTICE_DIAGNOSTIC] = s_diagnostic,
    [KG_NOTICE_KERNEL_DIED] = s_kernel_died};
  if ((size_t) kind < sizeof kinds / sizeof kinds[0] && kinds[kind])
    kinds[kind](info, o);
}

const char *
kg_notice_event(kg_notice_kind_t kind)
{
  switch (kind) {
  case KG_NOTICE_STICKY_RESTART: return "sticky-restart";
  case KG_NOTICE_ADVICE: return "advice";
  case KG_NOTICE_DOWN: return "down";
  case KG_NOTICE_DIAGNOSTIC: return "diagnostic";
  case KG_NOTICE_KERNEL_DIED: return "kernel-died";
  }
  return "unknown";
}

cJSON *
kg_notice_metadata(kg_notice_kind_t kind, const kg_notice_info_t *info)
{
  cJSON *k = cJSON_CreateObject();
  if (!k)
    return NULL;
  cJSON_AddStringToObject(k, "event", kg_notice_event(kind));
  kg_json_add_string_or_null(k, "family", info->family ? info->family->id : NULL);
  cJSON_AddBoolToObject(k, "sticky", info->family && info->family->sticky);
  kg_json_add_string_or_null(k, "rule", info->rule_id);
  cJSON_AddStringToObject(k, "backend", kg_backend_name(info->backend));
  kg_json_add_string_or_null(k, "incident", info->incident_id);
  kg_json_add_string_or_null(k, "incident_path", info->incident_path);
  if (info->checkpoint_restored)
    cJSON_AddNumberToObject(k, "restored_step", (double) info->restored_step);
  else
    cJSON_AddNullToObject(k, "restored_step");
  kg_json_add_string_or_null(k, "restored_archive",
                             info->checkpoint_restored ? info->restored_archive : NULL);
  cJSON_AddBoolToObject(k, "diagnostic", info->diagnostic);
  cJSON_AddBoolToObject(k, "restarted", info->restarted);
  if (kind == KG_NOTICE_DOWN)
    kg_json_add_string_or_null(k, "reason", info->reason);
  return k;
}

int
kg_notice_build(kg_notice_kind_t kind, const kg_notice_info_t *info, cJSON **data_p,
                cJSON **metadata_p)
{
  *data_p = NULL;
  if (metadata_p)
    *metadata_p = NULL;
  s_out_t o = {0};
  s_build(kind, info, &o);
  cJSON *data = NULL, *meta = NULL;
  int rc = KG_ENOMEM;
  if (o.md.failed || o.txt.failed || !o.md.s || !o.txt.s)
    goto done;
  /* Markdown ends lists with a blank line; plain text with one newline. */
  data = cJSON_CreateObject();
  if (!data || !cJSON_AddStringToObject(data, "text/markdown", o.md.s) ||
      !cJSON_AddStringToObject(data, "text/plain", o.txt.s))
    goto done;
  if (metadata_p) {
    meta = cJSON_CreateObject();
    cJSON *k = kg_notice_metadata(kind, info);
    if (!meta || !k) {
      cJSON_Delete(k);
      goto done;
    }
    cJSON_AddItemToObject(meta, "kguard", k);
  }
  *data_p = data;
  if (metadata_p)
    *metadata_p = meta;
  data = meta = NULL;
  rc = 0;
done:
  cJSON_Delete(data);
  cJSON_Delete(meta);
  free(o.md.s);
  free(o.txt.s);
  return rc;
}
