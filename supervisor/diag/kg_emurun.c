/*  kg_emurun: whether the labelled emulation fired during a run (see
    kg_emurun.h). */
#include "kg_emurun.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kg_log.h"

struct kg_emurun_t {
  char *spec;
  char dir[PATH_MAX];
};

bool
kg_emurun_kind(const char *spec, char *buf, size_t len)
{
  if (len)
    buf[0] = '\0';
  const char *p = spec;
  while (p && *p) {
    size_t n = strcspn(p, ":");
    const char *word = p;
    while (n && (*word == ' ' || *word == '\t')) {
      word++;
      n--;
    }
    while (n && (word[n - 1] == ' ' || word[n - 1] == '\t'))
      n--;
    if (n && strncmp(word, "preflight-", 10) != 0) {
      snprintf(buf, len, "%.*s", (int) n, word);
      return true;
    }
    p += strcspn(p, ":");
    if (*p == ':')
      p++;
  }
  return false;
}

const char *
kg_emurun_message(const char *spec, const char *blocked_by, char *buf, size_t len)
{
  if (blocked_by && *blocked_by)
    snprintf(buf, len,
             "KGUARD_EMULATE=%s did not fire in this run: its `:once` marker %s exists "
             "(an earlier run fired it); delete that file to fire again",
             spec, blocked_by);
  else
    snprintf(buf, len,
             "KGUARD_EMULATE=%s was set but never fired in this run: the emulation raises "
             "its error only inside kguard.emulate.step(n), which the training loop must "
             "call once per step (see docs/testing-without-a-gpu.md)",
             spec);
  return buf;
}

kg_emurun_t *
kg_emurun_new(const char *spec)
{
  char kind[64];
  if (!kg_emurun_kind(spec, kind, sizeof kind))
    return NULL;
  kg_emurun_t *self = calloc(1, sizeof *self);
  if (!self || !(self->spec = strdup(spec))) {
    free(self);
    return NULL;
  }
  const char *tmp = getenv("TMPDIR");
  snprintf(self->dir, sizeof self->dir, "%s/kguard-emulate-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(self->dir) || setenv("KGUARD_EMULATE_RUN_DIR", self->dir, 1) != 0) {
    kg_warning("KGUARD_EMULATE is set but %s cannot be created (%s): kguard cannot tell at the "
               "end whether the emulation fired", self->dir, strerror(errno));
    if (self->dir[0])
      rmdir(self->dir);
    free(self->spec);
    free(self);
    return NULL;
  }
  return self;
}

/*  The first line of dir/name into buf; false when the file does not exist. */
static bool
s_read(const char *dir, const char *name, char *buf, size_t len)
{
  char path[PATH_MAX + 32];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "r");
  if (!f)
    return false;
  if (!fgets(buf, (int) len, f))
    buf[0] = '\0';
  buf[strcspn(buf, "\n")] = '\0';
  fclose(f);
  return true;
}

bool
kg_emurun_fired(const kg_emurun_t *self, char *buf, size_t len)
{
  if (!self)
    return true;
  char line[PATH_MAX];
  if (s_read(self->dir, "fired", line, sizeof line))
    return true;
  bool blocked = s_read(self->dir, "blocked", line, sizeof line);
  kg_emurun_message(self->spec, blocked ? line : NULL, buf, len);
  return false;
}

void
kg_emurun_destroy(kg_emurun_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_emurun_t *self = *self_p;
  /* Only what the emulation writes lives here: its records and markers. */
  DIR *d = opendir(self->dir);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
        continue;
      char path[PATH_MAX + 256];
      snprintf(path, sizeof path, "%s/%s", self->dir, e->d_name);
      unlink(path);
    }
    closedir(d);
  }
  rmdir(self->dir);
  const char *env = getenv("KGUARD_EMULATE_RUN_DIR");
  if (env && strcmp(env, self->dir) == 0)
    unsetenv("KGUARD_EMULATE_RUN_DIR");
  free(self->spec);
  free(self);
  *self_p = NULL;
}
