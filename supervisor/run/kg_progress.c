/*  kg_progress: terminal progress for `kguard run`. See kg_progress.h. */
#include "kg_progress.h"
#include "kg_clock.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

struct kg_progress_t {
  FILE *out;                    /*  stderr, borrowed                       */
  FILE *data;                   /*  stdout: the cells' output, borrowed    */
  FILE *midline;                /*  the stream a cell's output left in the
                                    middle of a line, or NULL              */
  bool tty;                     /*  live line on                           */
  bool quiet;                   /*  only important events                  */
  bool live;                    /*  a live line is on screen now           */
  int64_t run_start;            /*  when the run began                     */
  int64_t cell_start;           /*  when the current cell began            */
  int64_t cell_end;             /*  when it ended, 0 while running         */
  char label[160];              /*  "cell 3/7: for step in ..."            */
  char short_label[64];         /*  "cell 3/7"                             */
};

kg_progress_t *
kg_progress_new(FILE *out, FILE *data, bool quiet)
{
  kg_progress_t *self = calloc(1, sizeof *self);
  if (!self)
    return NULL;
  self->out = out;
  self->data = data;
  self->quiet = quiet;
  const char *term = getenv("TERM");
  self->tty = isatty(fileno(out)) && !(term && strcmp(term, "dumb") == 0);
  self->run_start = kg_clock_mono_ms();
  return self;
}

void
kg_progress_destroy(kg_progress_t **self_p)
{
  if (!self_p || !*self_p)
    return;
  kg_progress_t *self = *self_p;
  if (self->live)
    fputc('\n', self->out);
  free(self);
  *self_p = NULL;
}

static void
s_clear_live(kg_progress_t *self)
{
  if (self->live) {
    fputs("\r\033[K", self->out);
    fflush(self->out);
    self->live = false;
  }
}

/*  Before a kguard line: end a cell's unfinished line if it is on kguard's
    stream, or on a terminal (the same screen, as far as anyone can tell). */
static void
s_end_midline(kg_progress_t *self)
{
  if (!self->midline)
    return;
  if (self->midline == self->out || (self->tty && isatty(fileno(self->midline)))) {
    fputc('\n', self->midline);
    fflush(self->midline);
  }
  self->midline = NULL;
}

static int
s_width(const kg_progress_t *self)
{
  struct winsize ws;
  if (ioctl(fileno(self->out), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20)
    return ws.ws_col;
  return 80;
}

static void
s_draw(kg_progress_t *self)
{
  if (!self->tty || self->quiet || self->midline)
    return;
  int64_t ms = kg_clock_mono_ms() - self->cell_start;
  char line[256];
  snprintf(line, sizeof line, "%s  %lld.%llds", self->label, (long long) (ms / 1000),
           (long long) (ms % 1000 / 100));
  int width = s_width(self) - 1;
  fprintf(self->out, "\r\033[K%.*s", width, line);
  fflush(self->out);
  self->live = true;
}

void
kg_progress_cell_start(kg_progress_t *self, size_t number, size_t total, bool rerun,
                       const char *code)
{
  /*  The first non-empty line of code, as a reminder of which cell. */
  const char *first = code ? code : "";
  while (*first == '\n' || *first == ' ')
    first++;
  size_t n = strcspn(first, "\n");
  if (n > 60)
    n = 60;
  snprintf(self->label, sizeof self->label, "cell %zu/%zu%s: %.*s", number, total,
           rerun ? " (re-run)" : "", (int) n, first);
  snprintf(self->short_label, sizeof self->short_label, "cell %zu/%zu", number, total);
  self->cell_start = kg_clock_mono_ms();
  self->cell_end = 0;
  if (self->quiet)
    return;
  s_end_midline(self);
  if (self->tty)
    s_draw(self);
  else {
    fprintf(self->out, "kguard run: %s\n", self->label);
    fflush(self->out);
  }
}

void
kg_progress_tick(kg_progress_t *self)
{
  if (!self->cell_end && self->label[0])
    s_draw(self);
}

int64_t
kg_progress_cell_ms(const kg_progress_t *self)
{
  return (self->cell_end ? self->cell_end : kg_clock_mono_ms()) - self->cell_start;
}

void
kg_progress_cell_end(kg_progress_t *self, const char *status)
{
  self->cell_end = kg_clock_mono_ms();
  if (self->quiet)
    return;
  int64_t ms = self->cell_end - self->cell_start;
  s_clear_live(self);
  s_end_midline(self);
  if (self->tty)
    fprintf(self->out, "%s  %s %lld.%llds\n", self->label, status,
            (long long) (ms / 1000), (long long) (ms % 1000 / 100));
  else
    fprintf(self->out, "kguard run: %s %s after %lld.%llds\n", self->short_label, status,
            (long long) (ms / 1000), (long long) (ms % 1000 / 100));
  fflush(self->out);
}

void
kg_progress_event(kg_progress_t *self, bool important, const char *fmt, ...)
{
  if (self->quiet && !important)
    return;
  bool was_live = self->live;
  s_clear_live(self);
  s_end_midline(self);
  fputs("kguard run: ", self->out);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(self->out, fmt, ap);
  va_end(ap);
  fputc('\n', self->out);
  if (was_live && !self->cell_end)
    s_draw(self);
  fflush(self->out);
}

void
kg_progress_block(kg_progress_t *self, bool important, const char *prefix, const char *text)
{
  if ((self->quiet && !important) || !text)
    return;
  bool was_live = self->live;
  s_clear_live(self);
  s_end_midline(self);
  const char *s = text;
  while (*s) {
    size_t n = strcspn(s, "\n");
    fprintf(self->out, "%s%.*s\n", prefix, (int) n, s);
    s += n;
    if (*s == '\n')
      s++;
  }
  if (was_live && !self->cell_end)
    s_draw(self);
  fflush(self->out);
}

void
kg_progress_output(kg_progress_t *self, bool to_out, const char *text)
{
  if (!text || !*text)
    return;
  FILE *to = to_out ? self->out : self->data;
  /*  The live line is on out: take it down when the text goes there, or to
      another terminal (likely the same screen). */
  bool was_live = self->live;
  if (self->live && (to == self->out || isatty(fileno(to))))
    s_clear_live(self);
  if (self->midline && self->midline != to)
    s_end_midline(self);
  fflush(to == self->out ? self->data : self->out);
  fputs(text, to);
  fflush(to);
  self->midline = text[strlen(text) - 1] == '\n' ? NULL : to;
  if (was_live && !self->cell_end)
    s_draw(self);             /*  not while the output's line is open     */
}
