/*  kg_repro: incident record → minimal repro request (see kg_repro.h). */
#include "kg_repro.h"

#include <ctype.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_error.h"

static const char *
s_str(const cJSON *o, const char *key)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

/*  Add key = scrubbed s (or null when s is NULL). */
static void
s_add_scrubbed(cJSON *o, const char *key, kg_scrub_t *scrub, const char *s)
{
  char *t = s ? kg_scrub_text(scrub, s) : NULL;
  if (t)
    cJSON_AddStringToObject(o, key, t);
  else
    cJSON_AddNullToObject(o, key);
  free(t);
}

char *
kg_repro_strip_ansi(const char *s)
{
  size_t n = strlen(s);
  char *out = malloc(n + 1), *o = out;
  if (!out)
    return NULL;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '\x1b' && s[i + 1] == '[') {
      i += 2;
      while (i < n && !(s[i] >= '@' && s[i] <= '~'))
        i++;
      continue;
    }
    *o++ = s[i];
  }
  *o = '\0';
  return out;
}

bool
kg_repro_is_code_line(const char *line, bool after_plain_frame)
{
  const char *p = line;
  while (*p == ' ')
    p++;
  const char *arrow = p;   /* "->", "-->", "---->": IPython's current-line mark */
  while (*arrow == '-')
    arrow++;
  if (arrow > p && *arrow == '>')
    return true;
  if (isdigit((unsigned char) *p)) {   /* "   4 y = 2": IPython's numbered source */
    while (isdigit((unsigned char) *p))
      p++;
    return *p == ' ' || *p == '\0';
  }
  /* plain Python: the source line under 'File "...", line N' is indented 4 */
  return after_plain_frame && strncmp(line, "    ", 4) == 0 && line[4] != ' '
         && strncmp(line + 4, "File ", 5) != 0 && line[4] != '^' && line[4] != '~';
}

bool
kg_repro_frame(const char *line, char *buf, size_t len, bool *plain)
{
  const char *p = line;
  while (*p == ' ')
    p++;
  char file[1024], func[256] = "?";
  int lineno = 0;
  *plain = false;
  if (sscanf(p, "File \"%1023[^\"]\", line %d, in %255[^ (\n]", file, &lineno, func) >= 2) {
    *plain = true;
  } else if (sscanf(p, "File %1023[^:\n]:%d, in %255[^ (\n]", file, &lineno, func) >= 2) {
  } else if (sscanf(p, "Cell In [%*d], line %d", &lineno) == 1) {
    snprintf(file, sizeof file, "<cell>");
    snprintf(func, sizeof func, "<module>");
  } else if (sscanf(p, "%1023s in %255[^ (\n]", file, func) == 2 && strstr(file, ".py")
             && !strchr(file, ':')) {
  } else
    return false;
  if (lineno > 0)
    snprintf(buf, len, "%s:%d in %s", file, lineno, func);
  else
    snprintf(buf, len, "%s in %s", file, func);
  return true;
}

static void
s_add_unique(cJSON *arr, const char *s, size_t n)
{
  char tmp[256];
  snprintf(tmp, sizeof tmp, "%.*s", (int) (n < sizeof tmp - 1 ? n : sizeof tmp - 1), s);
  const cJSON *e;
  cJSON_ArrayForEach(e, arr) if (strcmp(e->valuestring, tmp) == 0) return;
  cJSON_AddItemToArray(arr, cJSON_CreateString(tmp));
}

/*  Every match of pattern in text: group (0 = the whole match) into arr. */
static void
s_scan(const char *pattern, int group, const char *text, cJSON *arr)
{
  regex_t re;
  if (regcomp(&re, pattern, REG_EXTENDED) != 0)
    return;
  regmatch_t m[4];
  const char *p = text;
  int flags = 0;
  while (*p && regexec(&re, p, 4, m, flags) == 0) {
    if (m[group].rm_so >= 0)
      s_add_unique(arr, p + m[group].rm_so, (size_t) (m[group].rm_eo - m[group].rm_so));
    p += m[0].rm_eo > 0 ? m[0].rm_eo : 1;
    flags = REG_NOTBOL;
  }
  regfree(&re);
}

void
kg_repro_scan_tensors(const char *text, cJSON *shapes, cJSON *dtypes)
{
  if (!text)
    return;
  s_scan("torch\\.Size\\(\\[[0-9, ]*\\]\\)", 0, text, shapes);
  s_scan("\\(([0-9]+x[0-9]+) and [0-9]+x[0-9]+\\)", 1, text, shapes);
  s_scan("\\([0-9]+x[0-9]+ and ([0-9]+x[0-9]+)\\)", 1, text, shapes);
  s_scan("shape '?(\\[[-0-9, ]+\\])'?", 1, text, shapes);
  s_scan("torch\\.(float16|float32|float64|bfloat16|half|float|double|int8|int16|int32|"
         "int64|uint8|long|int|bool|complex64|complex128)([^A-Za-z0-9_]|$)", 1, text, dtypes);
  s_scan("(scalar type|dtype|found) (Float|Double|Half|BFloat16|Long|Int|Short|Char|Byte|Bool)"
         "([^A-Za-z0-9_]|$)", 2, text, dtypes);
}

const char *
kg_repro_env_value(const char *value)
{
  size_t n = strlen(value);
  if (n > 64 || strspn(value, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                              "0123456789_.,:=+-") != n)
    return "<set>";
  return value;
}

/*  Functions of torch's Python plumbing that name no operator. */
static bool
s_plumbing(const char *func)
{
  static const char *skip[] = {"_call_impl", "_wrapped_call_impl", "__call__", "wrapper",
                               "inner", "decorate_context", "_fn", "forward"};
  for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++)
    if (strcmp(func, skip[i]) == 0)
      return true;
  return false;
}

/*  Traceback → frames, traceback lines (scrubbed), the last torch frame's
    function, shapes and dtypes. */
static void
s_traceback(cJSON *out, const cJSON *tb, kg_scrub_t *scrub, bool code, cJSON *op,
            cJSON *shapes, cJSON *dtypes)
{
  cJSON *frames = cJSON_AddArrayToObject(out, "frames");
  cJSON *lines = cJSON_AddArrayToObject(out, "traceback");
  char python_op[256] = "";
  const cJSON *entry;
  cJSON_ArrayForEach(entry, tb)
  {
    if (!cJSON_IsString(entry))
      continue;
    char *clean = kg_repro_strip_ansi(entry->valuestring);
    if (!clean)
      continue;
    bool plain = false;
    char *save = NULL;
    for (char *line = strtok_r(clean, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
      char frame[1400];
      bool was_plain = plain;
      if (kg_repro_frame(line, frame, sizeof frame, &plain)) {
        char *f = kg_scrub_text(scrub, frame);
        if (f)
          cJSON_AddItemToArray(frames, cJSON_CreateString(f));
        free(f);
        const char *in = strstr(frame, " in ");
        if (in && strstr(frame, "torch/") && !s_plumbing(in + 4))
          snprintf(python_op, sizeof python_op, "%s", in + 4);
      } else {
        plain = false;
        if (!code && kg_repro_is_code_line(line, was_plain))
          continue;
        kg_repro_scan_tensors(line, shapes, dtypes);
      }
      char *s = kg_scrub_text(scrub, line);
      if (s)
        cJSON_AddItemToArray(lines, cJSON_CreateString(s));
      free(s);
    }
    free(clean);
  }
  if (*python_op)
    cJSON_AddStringToObject(op, "python", python_op);
}

/*  The device function and its source location in an assertion line:
    "../aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_..._2d: block: [...".
    HIP prints "file:line: func: Device-side assertion `...' failed." */
static void
s_assertion(cJSON *op, const char *line)
{
  regex_t re;
  if (regcomp(&re, "([^ :]+:[0-9]+): ([A-Za-z_][A-Za-z0-9_]*): (block: \\[|Device-side)",
              REG_EXTENDED) != 0)
    return;
  regmatch_t m[3];
  if (regexec(&re, line, 3, m, 0) == 0) {
    char buf[512];
    snprintf(buf, sizeof buf, "%.*s", (int) (m[2].rm_eo - m[2].rm_so), line + m[2].rm_so);
    cJSON_AddStringToObject(op, "kernel", buf);
    snprintf(buf, sizeof buf, "%.*s", (int) (m[1].rm_eo - m[1].rm_so), line + m[1].rm_so);
    if (buf[0] != '/' && buf[0] != '~')   /* PyTorch's own relative source path */
      cJSON_AddStringToObject(op, "source", buf);
  }
  regfree(&re);
}

static void
s_versions(cJSON *out, const cJSON *v, kg_scrub_t *scrub)
{
  cJSON *o = cJSON_AddObjectToObject(out, "versions");
  static const char *keys[] = {"python", "torch", "cuda", "hip", "cudnn", "backend"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(v, keys[i]);
    if (cJSON_IsString(x) || cJSON_IsNumber(x))
      cJSON_AddItemToObject(o, keys[i], cJSON_Duplicate(x, false));
    else
      cJSON_AddNullToObject(o, keys[i]);
  }
  const cJSON *drv = cJSON_GetObjectItemCaseSensitive(v, "driver");
  if (cJSON_IsObject(drv) || cJSON_IsString(drv))
    cJSON_AddItemToObject(o, "driver", cJSON_Duplicate(drv, true));
  else
    cJSON_AddNullToObject(o, "driver");
  s_add_scrubbed(o, "platform", scrub, s_str(v, "platform"));
  cJSON *devs = cJSON_AddArrayToObject(o, "devices");
  const cJSON *d;
  cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(v, "devices"))
  {
    cJSON *e = cJSON_CreateObject();
    s_add_scrubbed(e, "name", scrub, s_str(d, "name"));
    static const char *dk[] = {"capability", "gcn_arch", "total_memory"};
    for (size_t i = 0; i < 3; i++) {
      const cJSON *x = cJSON_GetObjectItemCaseSensitive(d, dk[i]);
      if (x)
        cJSON_AddItemToObject(e, dk[i], cJSON_Duplicate(x, false));
    }
    cJSON_AddItemToArray(devs, e);
  }
}

/*  "values of the kernel's secret variables (HF_TOKEN, ...)" when the
    record lists any: they were masked when it was written. */
static void
s_secret_env(cJSON *removed, const cJSON *names)
{
  char line[512] = "";
  size_t n = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, names)
  {
    if (!cJSON_IsString(e))
      continue;
    size_t len = strlen(line);
    if (len + strlen(e->valuestring) + 8 >= sizeof line) {
      snprintf(line + len, sizeof line - len, ", ...");
      break;
    }
    snprintf(line + len, sizeof line - len, "%s%s", n++ ? ", " : "", e->valuestring);
  }
  if (n == 0)
    return;
  char what[640];
  snprintf(what, sizeof what, "values of the kernel's secret variables (%s), masked when the "
                              "incident was recorded", line);
  cJSON_AddItemToArray(removed, cJSON_CreateString(what));
}

/*  The record's plain fields, and whether the emulation produced it. */
static void
s_header(cJSON *out, const cJSON *inc)
{
  cJSON_AddNumberToObject(out, "kguard_repro", 1);
  static const char *copy[] = {"id", "created", "family", "title", "sticky", "backend",
                               "error_code", "restart_count", "last_step", "exit"};
  for (size_t i = 0; i < sizeof copy / sizeof copy[0]; i++) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(inc, copy[i]);
    cJSON_AddItemToObject(out, i == 0 ? "incident" : copy[i],
                          x ? cJSON_Duplicate(x, true) : cJSON_CreateNull());
  }
  char *inc_text = cJSON_PrintUnformatted(inc);
  cJSON_AddBoolToObject(out, "emulated", inc_text && strstr(inc_text, "kguard emulation"));
  free(inc_text);
}

/*  The first error, scrubbed, and what it says of the operator and its
    tensors (from the traceback, the error text and the assertion). */
static void
s_first_error(cJSON *out, const cJSON *inc, kg_scrub_t *scrub, bool code)
{
  const cJSON *fe = cJSON_GetObjectItemCaseSensitive(inc, "first_error");
  const char *assertion = s_str(inc, "assertion_line");
  const char *evalue = s_str(fe, "evalue");
  const char *fe_text = s_str(fe, "text");
  cJSON *f = cJSON_AddObjectToObject(out, "first_error");
  if (evalue) {
    s_add_scrubbed(f, "ename", scrub, s_str(fe, "ename"));
    s_add_scrubbed(f, "evalue", scrub, evalue);
  } else if (fe_text)
    s_add_scrubbed(f, "text", scrub, fe_text);
  s_add_scrubbed(out, "assertion_line", scrub, assertion);

  cJSON *op = cJSON_AddObjectToObject(out, "operator");
  cJSON *tensors = cJSON_AddObjectToObject(out, "tensors");
  cJSON *shapes = cJSON_AddArrayToObject(tensors, "shapes");
  cJSON *dtypes = cJSON_AddArrayToObject(tensors, "dtypes");
  s_traceback(out, cJSON_GetObjectItemCaseSensitive(fe, "traceback"), scrub, code, op, shapes,
              dtypes);
  kg_repro_scan_tensors(evalue ? evalue : fe_text, shapes, dtypes);
  const char *aten = evalue ? strstr(evalue, "'aten::") : NULL;
  if (aten) {
    size_t n = strcspn(aten + 1, "'");
    char buf[256];
    snprintf(buf, sizeof buf, "%.*s", (int) (n < 200 ? n : 200), aten + 1);
    cJSON_AddStringToObject(op, "aten", buf);
  }
  if (assertion)
    s_assertion(op, assertion);
}

/*  The diagnostic variables: flags as they are, other values scrubbed
    unless KG_REPRO_ENV keeps them. */
static void
s_diagnostic_env(cJSON *out, const cJSON *inc, kg_scrub_t *scrub, unsigned flags)
{
  cJSON *env = cJSON_AddObjectToObject(out, "diagnostic_env");
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(inc, "diagnostic_env"))
  {
    if (!cJSON_IsString(e))
      continue;
    if (flags & KG_REPRO_ENV) {
      cJSON_AddStringToObject(env, e->string, e->valuestring);
    } else {
      char *v = kg_scrub_text(scrub, kg_repro_env_value(e->valuestring));
      cJSON_AddStringToObject(env, e->string, v ? v : "<set>");
      free(v);
    }
  }
}

/*  What was left out or masked, in words, so whoever reads the repro knows
    what it does not show. */
static void
s_removed(cJSON *out, const cJSON *inc, kg_scrub_t *scrub, unsigned flags)
{
  cJSON *removed = cJSON_AddArrayToObject(out, "removed");
  if (!(flags & KG_REPRO_CODE))
    cJSON_AddItemToArray(removed, cJSON_CreateString("cell code and the traceback's code "
                                                     "lines (--include-code keeps them)"));
  if (!(flags & KG_REPRO_ENV))
    cJSON_AddItemToArray(removed, cJSON_CreateString("environment values other than plain "
                                                     "flags (--include-env keeps them)"));
  static const struct { const char *kind, *what; } kinds[] = {
    {"path", "directories of file paths"}, {"word", "user and host names"},
    {"secret", "secret environment values"},
    {"token", "credentials recognised by their shape (tokens, API keys, private keys, "
              "passwords in URLs)"},
    {"uuid", "GPU UUIDs"}};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (kg_scrub_count(scrub, kinds[i].kind) > 0)
      cJSON_AddItemToArray(removed, cJSON_CreateString(kinds[i].what));
  s_secret_env(removed, cJSON_GetObjectItemCaseSensitive(inc, "secret_env"));
}

cJSON *
kg_repro_build(const cJSON *inc, kg_scrub_t *scrub, unsigned flags, char *err, size_t errlen)
{
  if (!cJSON_IsObject(inc) || !cJSON_GetObjectItemCaseSensitive(inc, "kguard_incident")) {
    kg_errf(err, errlen, "not a kguard incident record (no \"kguard_incident\" key)");
    return NULL;
  }
  bool code = flags & KG_REPRO_CODE;
  cJSON *out = cJSON_CreateObject();
  s_header(out, inc);
  s_first_error(out, inc, scrub, code);
  s_versions(out, cJSON_GetObjectItemCaseSensitive(inc, "versions"), scrub);
  s_diagnostic_env(out, inc, scrub, flags);
  /* the post-restart pre-flight's verdict, when the supervisor recorded one */
  const cJSON *pf = cJSON_GetObjectItemCaseSensitive(inc, "preflight");
  if (cJSON_IsObject(pf)) {
    cJSON *p = cJSON_AddObjectToObject(out, "preflight");
    cJSON_AddStringToObject(p, "status", s_str(pf, "status") ? s_str(pf, "status") : "?");
    s_add_scrubbed(p, "summary", scrub, s_str(pf, "summary"));
  }
  if (code)
    s_add_scrubbed(out, "cell_code", scrub,
                   s_str(cJSON_GetObjectItemCaseSensitive(inc, "cell"), "code"));
  s_removed(out, inc, scrub, flags);
  return out;
}
