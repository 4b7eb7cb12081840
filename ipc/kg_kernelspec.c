/*  kg_kernelspec: search path and kernel.json parsing. */
#include "kg_kernelspec.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_error.h"
#include "kg_file.h"
#include "kg_paths.h"

void
kg_kernelspec_destroy(kg_kernelspec_t **spec_p)
{
  if (!spec_p || !*spec_p)
    return;
  free((*spec_p)->name);
  free((*spec_p)->dir);
  cJSON_Delete((*spec_p)->json);
  free(*spec_p);
  *spec_p = NULL;
}

int
kg_kernelspec_parse(const char *name, const char *text, size_t len, kg_kernelspec_t **spec_p,
                    char *err, size_t errlen)
{
  *spec_p = NULL;
  cJSON *j = cJSON_ParseWithLength(text, len);
  if (!cJSON_IsObject(j)) {
    snprintf(err, errlen, "kernel.json of '%s' is not a JSON object", name);
    cJSON_Delete(j);
    return KG_EKERNELSPEC;
  }
  const cJSON *argv = cJSON_GetObjectItemCaseSensitive(j, "argv");
  const cJSON *dn = cJSON_GetObjectItemCaseSensitive(j, "display_name");
  const cJSON *lang = cJSON_GetObjectItemCaseSensitive(j, "language");
  const cJSON *im = cJSON_GetObjectItemCaseSensitive(j, "interrupt_mode");
  const cJSON *env = cJSON_GetObjectItemCaseSensitive(j, "env");
  const cJSON *md = cJSON_GetObjectItemCaseSensitive(j, "metadata");
  const char *bad = NULL;
  if (!cJSON_IsArray(argv) || cJSON_GetArraySize(argv) == 0)
    bad = "argv: expected a non-empty array of strings";
  else {
    const cJSON *a;
    cJSON_ArrayForEach(a, argv) if (!cJSON_IsString(a)) bad = "argv: expected strings only";
  }
  if (!bad && !cJSON_IsString(dn))
    bad = "display_name: expected a string";
  if (!bad && lang && !cJSON_IsString(lang))
    bad = "language: expected a string";
  if (!bad && im && (!cJSON_IsString(im) || (strcmp(im->valuestring, "signal") != 0
                                              && strcmp(im->valuestring, "message") != 0)))
    bad = "interrupt_mode: expected \"signal\" or \"message\"";
  if (!bad && env) {
    if (!cJSON_IsObject(env))
      bad = "env: expected an object";
    else {
      const cJSON *v;
      cJSON_ArrayForEach(v, env) if (!cJSON_IsString(v)) bad = "env: values must be strings";
    }
  }
  if (!bad && md && !cJSON_IsObject(md))
    bad = "metadata: expected an object";
  if (bad) {
    snprintf(err, errlen, "kernelspec '%s': %s", name, bad);
    cJSON_Delete(j);
    return KG_EKERNELSPEC;
  }
  kg_kernelspec_t *s = calloc(1, sizeof *s);
  if (!s || !(s->name = strdup(name))) {
    free(s);
    cJSON_Delete(j);
    return KG_ENOMEM;
  }
  s->json = j;
  s->argv = argv;
  s->display_name = dn->valuestring;
  s->language = lang ? lang->valuestring : "";
  s->interrupt_mode = im ? im->valuestring : "signal";
  s->env = env;
  s->metadata = md;
  *spec_p = s;
  return 0;
}

int
kg_kernelspec_user_dir(char *buf, size_t len)
{
  const char *dd = getenv("JUPYTER_DATA_DIR");
  const char *home = getenv("HOME");
  int n;
  if (dd && *dd)
    n = snprintf(buf, len, "%s/kernels", dd);
  else
    n = snprintf(buf, len, "%s/.local/share/jupyter/kernels", home ? home : "");
  return n < 0 || (size_t) n >= len ? KG_ETOOBIG : 0;
}

static int
s_try(const char *kernels_dir, const char *name, kg_kernelspec_t **spec_p, char *err,
      size_t errlen)
{
  char path[PATH_MAX];
  int n = snprintf(path, sizeof path, "%s/%s/kernel.json", kernels_dir, name);
  if (n < 0 || (size_t) n >= sizeof path)
    return KG_ENOKERNEL;
  char *text = NULL;
  size_t size = 0;
  int rc = kg_file_read(path, 1024 * 1024, &text, &size);
  if (rc == -ENOENT || rc == -ENOTDIR)
    return KG_ENOKERNEL;
  if (rc == 0)
    rc = kg_kernelspec_parse(name, text, size, spec_p, err, errlen);
  else
    kg_errf(err, errlen, "%s: %s", path, kg_strerror(rc));
  free(text);
  if (rc == 0) {
    /* The spec's directory is the path above minus "/kernel.json", which
       already fitted: cut it instead of formatting it again. */
    path[n - (int) strlen("/kernel.json")] = '\0';
    (*spec_p)->dir = strdup(path);
  }
  return rc;
}

/*  The kernels directories of the search order, into dirs; their count. */
static int
s_search_dirs(const char *sys_prefix, char dirs[16][PATH_MAX])
{
  int nd = 0;
  const char *jp = getenv("JUPYTER_PATH");
  if (jp && *jp) {
    char *copy = strdup(jp), *save = NULL;
    for (char *p = copy ? strtok_r(copy, ":", &save) : NULL; p && nd < 10;
         p = strtok_r(NULL, ":", &save))
      if (*p)
        snprintf(dirs[nd++], PATH_MAX, "%.4000s/kernels", p);
    free(copy);
  }
  kg_kernelspec_user_dir(dirs[nd++], PATH_MAX);
  if (sys_prefix && *sys_prefix)
    snprintf(dirs[nd++], PATH_MAX, "%.4000s/share/jupyter/kernels", sys_prefix);
  snprintf(dirs[nd++], PATH_MAX, "/usr/local/share/jupyter/kernels");
  snprintf(dirs[nd++], PATH_MAX, "/usr/share/jupyter/kernels");
  return nd;
}

bool
kg_kernelspec_dir_searched(const char *kernels_dir)
{
  char dirs[16][PATH_MAX], want[PATH_MAX], have[PATH_MAX];
  if (!realpath(kernels_dir, want))
    snprintf(want, sizeof want, "%s", kernels_dir);
  int nd = s_search_dirs(kg_kernelspec_sys_prefix(), dirs);
  for (int i = 0; i < nd; i++) {
    if (!realpath(dirs[i], have))
      snprintf(have, sizeof have, "%.4000s", dirs[i]);
    if (strcmp(have, want) == 0)
      return true;
  }
  return false;
}

int
kg_kernelspec_find(const char *name, const char *sys_prefix, kg_kernelspec_t **spec_p,
                   char *err, size_t errlen)
{
  *spec_p = NULL;
  /*  As jupyter_client's get_kernel_spec: a name it would refuse is not
      looked up (".." would reach outside the kernels directories). */
  int rc = kg_kernelspec_check_name(name, err, errlen);
  if (rc != 0)
    return rc;
  char dirs[16][PATH_MAX];
  int nd = s_search_dirs(sys_prefix, dirs);
  for (int i = 0; i < nd; i++) {
    rc = s_try(dirs[i], name, spec_p, err, errlen);
    if (rc != KG_ENOKERNEL)
      return rc;
  }
  size_t off = (size_t) snprintf(err, errlen, "no kernelspec named '%s' in", name);
  for (int i = 0; i < nd && off < errlen; i++)
    off += (size_t) snprintf(err + off, errlen - off, "%s %s", i ? "," : "", dirs[i]);
  return KG_ENOKERNEL;
}

int
kg_kernelspec_check_name(const char *name, char *err, size_t errlen)
{
  if (!name || !*name) {
    kg_errf(err, errlen, "invalid kernelspec name '': a name needs at least one character");
    return KG_EUSAGE;
  }
  size_t n = strlen(name);
  if (n > KG_KERNELSPEC_NAME_MAX) {
    kg_errf(err, errlen, "invalid kernelspec name: %zu characters, at most %d allowed "
            "(it names a directory)", n, KG_KERNELSPEC_NAME_MAX);
    return KG_EUSAGE;
  }
  if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
    kg_errf(err, errlen, "invalid kernelspec name '%s': it is a directory reference, "
            "not a name", name);
    return KG_EUSAGE;
  }
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char) name[i];
    if (c < 128 && (isalnum(c) || c == '-' || c == '.' || c == '_'))
      continue;
    char what[16];
    if (c == ' ')
      snprintf(what, sizeof what, "a space");
    else if (c > 32 && c < 127)
      snprintf(what, sizeof what, "'%c'", c);
    else
      snprintf(what, sizeof what, "byte 0x%02x", c);
    kg_errf(err, errlen, "invalid kernelspec name: character %zu (%s) is not allowed; "
            "Jupyter accepts only ASCII letters, digits and - . _", i + 1, what);
    return KG_EUSAGE;
  }
  return 0;
}

/*  The value of placeholder name[0..len) in ns, or NULL. */
static const char *
s_ns_value(const kg_kernelspec_ns_t *ns, const char *name, size_t len)
{
  struct { const char *key; const char *value; } table[] = {
    {"connection_file", ns->connection_file},
    {"resource_dir", ns->resource_dir},
    {"prefix", ns->prefix},
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    if (table[i].value && strlen(table[i].key) == len
        && memcmp(table[i].key, name, len) == 0)
      return table[i].value;
  }
  return NULL;
}

char *
kg_kernelspec_format_arg(const char *arg, const kg_kernelspec_ns_t *ns)
{
  /*  Two passes: measure, then write. jupyter_client's pattern is
      \{([A-Za-z0-9_]+)\}. */
  char *out = NULL;
  for (int pass = 0; pass < 2; pass++) {
    size_t o = 0;
    for (const char *p = arg; *p;) {
      const char *value = NULL;
      size_t len = 0;
      if (*p == '{') {
        while (p[1 + len] && (isalnum((unsigned char) p[1 + len]) || p[1 + len] == '_')
               && (unsigned char) p[1 + len] < 128)
          len++;
        if (len && p[1 + len] == '}')
          value = s_ns_value(ns, p + 1, len);
      }
      if (value) {
        size_t vn = strlen(value);
        if (out)
          memcpy(out + o, value, vn);
        o += vn;
        p += len + 2;
      }
      else {
        if (out)
          out[o] = *p;
        o++;
        p++;
      }
    }
    if (out) {
      out[o] = '\0';
      break;
    }
    out = malloc(o + 1);
    if (!out)
      return NULL;
  }
  return out;
}

const char *
kg_kernelspec_sys_prefix(void)
{
  /*  A kguard pip-installed in an environment belongs to it, as Jupyter
      does when started from there: the kernelspecs of that environment
      count, whichever one is activated. */
  static char env[PATH_MAX];
  if (env[0] || kg_paths_env_prefix(env, sizeof env) == 0)
    return env;
  const char *names[] = {"VIRTUAL_ENV", "CONDA_PREFIX"};
  for (size_t i = 0; i < 2; i++) {
    const char *v = getenv(names[i]);
    if (v && *v)
      return v;
  }
  return "/usr";
}
