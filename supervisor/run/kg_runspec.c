/*  kg_runspec: kernelspec lookup for `kguard run`. See kg_runspec.h. */
#include "kg_runspec.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "kg_error.h"

#define KG_SPEC_MAX (1024 * 1024)
#define KG_SEARCH_MAX 32

static void s_err(char *err, size_t errlen, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));

static void
s_err(char *err, size_t errlen, const char *fmt, ...)
{
  if (!err || errlen == 0)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

/*  The data directories, most specific first, as new strings in dirs. */
static size_t
s_search_dirs(char *dirs[KG_SEARCH_MAX])
{
  size_t n = 0;
  const char *jp = getenv("JUPYTER_PATH");
  if (jp && *jp) {
    char *copy = strdup(jp), *save = NULL;
    for (char *tok = copy ? strtok_r(copy, ":", &save) : NULL; tok && n < KG_SEARCH_MAX - 3;
         tok = strtok_r(NULL, ":", &save))
      dirs[n++] = strdup(tok);
    free(copy);
  }
  const char *data = getenv("JUPYTER_DATA_DIR");
  const char *home = getenv("HOME");
  if (data && *data)
    dirs[n++] = strdup(data);
  else if (home && *home) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s/.local/share/jupyter", home);
    dirs[n++] = strdup(buf);
  }
  dirs[n++] = strdup("/usr/local/share/jupyter");
  dirs[n++] = strdup("/usr/share/jupyter");
  return n;
}

/*  The kernel directory for name under data dir, exact match first. */
static char *
s_kernel_dir(const char *dir, const char *name)
{
  char buf[4096];
  struct stat st;
  snprintf(buf, sizeof buf, "%s/kernels/%s/kernel.json", dir, name);
  if (stat(buf, &st) == 0 && S_ISREG(st.st_mode))
    return strdup(buf);
  snprintf(buf, sizeof buf, "%s/kernels", dir);
  DIR *d = opendir(buf);
  if (!d)
    return NULL;
  char *found = NULL;
  struct dirent *ent;
  while (!found && (ent = readdir(d))) {
    if (strcasecmp(ent->d_name, name) != 0)
      continue;
    snprintf(buf, sizeof buf, "%s/kernels/%s/kernel.json", dir, ent->d_name);
    if (stat(buf, &st) == 0 && S_ISREG(st.st_mode))
      found = strdup(buf);
  }
  closedir(d);
  return found;
}

static char *
s_read(const char *path, char *err, size_t errlen)
{
  FILE *f = fopen(path, "rbe");
  if (!f) {
    s_err(err, errlen, "cannot read %s: %s", path, strerror(errno));
    return NULL;
  }
  char *text = malloc(KG_SPEC_MAX + 1);
  size_t n = text ? fread(text, 1, KG_SPEC_MAX + 1, f) : 0;
  fclose(f);
  if (!text || n > KG_SPEC_MAX) {
    s_err(err, errlen, "%s: %s", path, text ? "larger than 1 MiB" : "out of memory");
    free(text);
    return NULL;
  }
  text[n] = '\0';
  return text;
}

static int
s_parse(kg_runspec_t *spec, const char *text, char *err, size_t errlen)
{
  cJSON *root = cJSON_Parse(text);
  int rc = KG_EKERNELSPEC;
  const cJSON *argv = cJSON_GetObjectItemCaseSensitive(root, "argv");
  const cJSON *env = cJSON_GetObjectItemCaseSensitive(root, "env");
  const cJSON *display = cJSON_GetObjectItemCaseSensitive(root, "display_name");
  if (!cJSON_IsObject(root)) {
    s_err(err, errlen, "%s: not a JSON object", spec->path);
    goto done;
  }
  if (!cJSON_IsArray(argv) || cJSON_GetArraySize(argv) < 1) {
    s_err(err, errlen, "%s: \"argv\" is not a non-empty list", spec->path);
    goto done;
  }
  const cJSON *item;
  cJSON_ArrayForEach(item, argv) {
    if (!cJSON_IsString(item)) {
      s_err(err, errlen, "%s: \"argv\" holds a non-string", spec->path);
      goto done;
    }
  }
  if (env && !cJSON_IsObject(env)) {
    s_err(err, errlen, "%s: \"env\" is not an object", spec->path);
    goto done;
  }
  cJSON_ArrayForEach(item, env) {
    if (!cJSON_IsString(item)) {
      s_err(err, errlen, "%s: env \"%s\" is not a string", spec->path, item->string);
      goto done;
    }
  }
  rc = KG_ENOMEM;
  spec->argc = (size_t) cJSON_GetArraySize(argv);
  spec->argv = calloc(spec->argc + 1, sizeof(char *));
  if (!spec->argv)
    goto done;
  size_t i = 0;
  cJSON_ArrayForEach(item, argv) {
    if (!(spec->argv[i++] = strdup(item->valuestring)))
      goto done;
  }
  if (env && !(spec->env = cJSON_Duplicate(env, true)))
    goto done;
  if (cJSON_IsString(display) && !(spec->display_name = strdup(display->valuestring)))
    goto done;
  spec->is_kguard = spec->argc >= 2 && strcmp(spec->argv[1], "kernel") == 0;
  rc = 0;
done:
  if (rc == KG_ENOMEM)
    s_err(err, errlen, "out of memory");
  cJSON_Delete(root);
  return rc;
}

int
kg_runspec_find(const char *name, kg_runspec_t **spec_p, char *err, size_t errlen)
{
  *spec_p = NULL;
  if (!name || !*name || strchr(name, '/') || strcmp(name, ".") == 0
      || strcmp(name, "..") == 0) {
    s_err(err, errlen, "invalid kernel name \"%s\"", name ? name : "");
    return KG_ENOKERNEL;
  }
  char *dirs[KG_SEARCH_MAX] = {0};
  size_t ndirs = s_search_dirs(dirs);
  char *path = NULL;
  for (size_t i = 0; i < ndirs && !path; i++) {
    if (dirs[i])
      path = s_kernel_dir(dirs[i], name);
  }
  if (!path) {
    char searched[2048] = "";
    size_t at = 0;
    for (size_t i = 0; i < ndirs; i++) {
      if (dirs[i] && at < sizeof searched)
        at += (size_t) snprintf(searched + at, sizeof searched - at, "%s%s/kernels",
                                i ? ", " : "", dirs[i]);
    }
    s_err(err, errlen, "no kernel named \"%s\" (searched %s; `jupyter kernelspec list` "
          "shows the installed ones, `--kernel NAME` picks one)", name, searched);
  }
  for (size_t i = 0; i < ndirs; i++)
    free(dirs[i]);
  if (!path)
    return KG_ENOKERNEL;

  kg_runspec_t *spec = calloc(1, sizeof *spec);
  if (!spec) {
    free(path);
    s_err(err, errlen, "out of memory");
    return KG_ENOMEM;
  }
  spec->path = path;
  /*  The directory name is the kernel's name (it may differ in case). */
  char *slash = strrchr(path, '/');
  const char *start = slash;
  while (start > path && start[-1] != '/')
    start--;
  spec->name = strndup(start, (size_t) (slash - start));
  char *text = s_read(path, err, errlen);
  int rc = !spec->name ? KG_ENOMEM : text ? s_parse(spec, text, err, errlen) : KG_EKERNELSPEC;
  free(text);
  if (rc != 0) {
    kg_runspec_destroy(&spec);
    return rc;
  }
  *spec_p = spec;
  return 0;
}

void
kg_runspec_destroy(kg_runspec_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_runspec_t *self = *self_p;
  for (size_t i = 0; self->argv && i < self->argc; i++)
    free(self->argv[i]);
  free(self->argv);
  cJSON_Delete(self->env);
  free(self->name);
  free(self->path);
  free(self->display_name);
  free(self);
  *self_p = NULL;
}
