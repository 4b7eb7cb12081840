/*  kg_repro_md: the repro document rendered as Markdown for an issue. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_repro.h"

typedef struct {
  char *s;
  size_t len;
  FILE *f;
} s_out_t;

static const char *
s_str(const cJSON *o, const char *key)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

/*  A code fence longer than any run of backticks inside text. */
static void
s_block(FILE *f, const char *lang, const char *text)
{
  int run = 0, max = 0;
  for (const char *p = text; *p; p++) {
    run = *p == '`' ? run + 1 : 0;
    if (run > max)
      max = run;
  }
  int n = max >= 3 ? max + 1 : 3;
  fprintf(f, "%.*s%s\n%s%s%.*s\n\n", n, "``````````````````````````````", lang, text,
          text[0] && text[strlen(text) - 1] == '\n' ? "" : "\n", n,
          "``````````````````````````````");
}

/*  A JSON scalar as text ("—" for null or absent). */
static void
s_scalar(FILE *f, const cJSON *v)
{
  if (cJSON_IsString(v))
    fputs(v->valuestring, f);
  else if (cJSON_IsNumber(v))
    fprintf(f, "%g", v->valuedouble);
  else if (cJSON_IsBool(v))
    fputs(cJSON_IsTrue(v) ? "yes" : "no", f);
  else if (cJSON_IsObject(v) && v->child) {
    const cJSON *c;
    cJSON_ArrayForEach(c, v)
    {
      fprintf(f, "%s%s ", c == v->child ? "" : ", ", c->string);
      s_scalar(f, c);
    }
  } else
    fputs("—", f);
}

static void
s_list(FILE *f, const cJSON *arr, const char *sep)
{
  const cJSON *e;
  bool first = true;
  cJSON_ArrayForEach(e, arr)
  {
    fprintf(f, "%s`%s`", first ? "" : sep, cJSON_IsString(e) ? e->valuestring : "?");
    first = false;
  }
}

/*  One section of the document: writes what r says to f. */
typedef void (s_section_fn)(FILE *f, const cJSON *r);

static void
s_heading(FILE *f, const cJSON *r)
{
  const char *family = s_str(r, "family");
  const char *backend = s_str(r, "backend");
  fprintf(f, "## GPU error repro: %s (%s)\n\n", family ? family : "unknown error",
          backend ? backend : "unknown backend");
  if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "emulated")))
    fputs("> **Emulated**: this incident was produced by kguard's CPU emulation "
          "(KGUARD_EMULATE); no GPU was involved.\n\n", f);
  const char *title = s_str(r, "title");
  if (title)
    fprintf(f, "%s\n\n", title);
}

static void
s_first_error(FILE *f, const cJSON *r)
{
  const cJSON *fe = cJSON_GetObjectItemCaseSensitive(r, "first_error");
  const char *ename = s_str(fe, "ename"), *evalue = s_str(fe, "evalue");
  const char *text = s_str(fe, "text");
  fputs("### First error\n\n", f);
  if (evalue) {
    char *head = NULL;
    size_t hl = 0;
    FILE *h = open_memstream(&head, &hl);
    if (h) {
      fprintf(h, "%s: %s", ename ? ename : "Error", evalue);
      fclose(h);
      s_block(f, "", head);
      free(head);
    }
  } else
    s_block(f, "", text ? text : "(no error text recorded)");
  const char *assertion = s_str(r, "assertion_line");
  if (assertion) {
    fputs("Device-side assertion:\n\n", f);
    s_block(f, "", assertion);
  }
}

static void
s_operator(FILE *f, const cJSON *r)
{
  const cJSON *op = cJSON_GetObjectItemCaseSensitive(r, "operator");
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(r, "tensors");
  fputs("### Operator and tensors\n\n", f);
  static const struct { const char *key, *label; } ops[] = {
    {"python", "PyTorch function (last torch frame)"}, {"aten", "ATen operator"},
    {"kernel", "device function"}, {"source", "kernel source"}};
  bool any = false;
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
    const char *v = s_str(op, ops[i].key);
    if (v) {
      fprintf(f, "- %s: `%s`\n", ops[i].label, v);
      any = true;
    }
  }
  if (!any)
    fputs("- operator: not visible in the traceback\n", f);
  const cJSON *shapes = cJSON_GetObjectItemCaseSensitive(t, "shapes");
  const cJSON *dtypes = cJSON_GetObjectItemCaseSensitive(t, "dtypes");
  fputs("- shapes seen: ", f);
  cJSON_GetArraySize(shapes) ? s_list(f, shapes, ", ") : (void) fputs("none", f);
  fputs("\n- dtypes seen: ", f);
  cJSON_GetArraySize(dtypes) ? s_list(f, dtypes, ", ") : (void) fputs("none", f);
  fputs("\n\n", f);
}

static void
s_environment(FILE *f, const cJSON *r)
{
  fputs("### Environment\n\n| | |\n|---|---|\n", f);
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, "versions");
  static const struct { const char *key, *label; } vs[] = {
    {"backend", "backend (probe)"}, {"python", "Python"}, {"torch", "PyTorch"},
    {"cuda", "CUDA (torch build)"}, {"hip", "HIP (torch build)"}, {"cudnn", "cuDNN"},
    {"driver", "driver"}, {"platform", "platform"}};
  for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++) {
    fprintf(f, "| %s | ", vs[i].label);
    s_scalar(f, cJSON_GetObjectItemCaseSensitive(v, vs[i].key));
    fputs(" |\n", f);
  }
  fputs("| devices | ", f);
  const cJSON *d;
  bool first = true;
  cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(v, "devices"))
  {
    const char *cap = s_str(d, "capability");
    const char *gcn = s_str(d, "gcn_arch");
    fprintf(f, "%s%s", first ? "" : "; ", s_str(d, "name") ? s_str(d, "name") : "?");
    if (cap || gcn)
      fprintf(f, " (%s)", gcn ? gcn : cap);
    first = false;
  }
  fputs(first ? "none recorded |\n" : " |\n", f);
  fputs("| diagnostic variables | ", f);
  const cJSON *env = cJSON_GetObjectItemCaseSensitive(r, "diagnostic_env");
  first = true;
  cJSON_ArrayForEach(d, env)
  {
    fprintf(f, "%s`%s=%s`", first ? "" : " ", d->string,
            cJSON_IsString(d) ? d->valuestring : "?");
    first = false;
  }
  fputs(first ? "none |\n\n" : " |\n\n", f);
}

static void
s_traceback(FILE *f, const cJSON *r)
{
  const cJSON *tb = cJSON_GetObjectItemCaseSensitive(r, "traceback");
  if (cJSON_GetArraySize(tb) > 0) {
    bool code = cJSON_GetObjectItemCaseSensitive(r, "cell_code") != NULL;
    fprintf(f, "### Traceback%s\n\n", code ? "" : " (code lines removed)");
    char *all = NULL;
    size_t al = 0;
    FILE *a = open_memstream(&all, &al);
    if (a) {
      const cJSON *d;
      cJSON_ArrayForEach(d, tb) fprintf(a, "%s\n", d->valuestring);
      fclose(a);
      s_block(f, "", all);
      free(all);
    }
  }
  const char *cell = s_str(r, "cell_code");
  if (cell) {
    fputs("### Failing cell\n\n", f);
    s_block(f, "python", cell);
  }
}

static void
s_kguard(FILE *f, const cJSON *r)
{
  fputs("### kguard\n\n", f);
  fprintf(f, "- incident `%s`, sticky: ", s_str(r, "incident") ? s_str(r, "incident") : "?");
  s_scalar(f, cJSON_GetObjectItemCaseSensitive(r, "sticky"));
  fputs(", error code: ", f);
  s_scalar(f, cJSON_GetObjectItemCaseSensitive(r, "error_code"));
  fputs(", restarts: ", f);
  s_scalar(f, cJSON_GetObjectItemCaseSensitive(r, "restart_count"));
  const cJSON *pf = cJSON_GetObjectItemCaseSensitive(r, "preflight");
  if (pf)
    fprintf(f, "\n- device pre-flight after the restart: %s: %s",
            s_str(pf, "status") ? s_str(pf, "status") : "?",
            s_str(pf, "summary") ? s_str(pf, "summary") : "");
  fputs("\n- removed before sharing: ", f);
  const cJSON *removed = cJSON_GetObjectItemCaseSensitive(r, "removed");
  const cJSON *d;
  bool first = true;
  cJSON_ArrayForEach(d, removed)
  {
    fprintf(f, "%s%s", first ? "" : "; ", d->valuestring);
    first = false;
  }
  fputs(first ? "nothing\n" : "\n", f);
}

char *
kg_repro_markdown(const cJSON *r)
{
  static s_section_fn *const sections[] = {s_heading,     s_first_error, s_operator,
                                           s_environment, s_traceback,   s_kguard};
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f)
    return NULL;
  for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++)
    sections[i](f, r);
  if (fclose(f) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}
