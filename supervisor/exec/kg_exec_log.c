/*  kg_exec_log: the kept output of `kguard exec` (contracts in the header). */
#include "kg_exec_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kg_clock.h"
#include "kg_error.h"
#include "kg_file.h"
#include "kg_log.h"

struct kg_exec_log_t {
  int fd;
  const char *name;
  bool failed;            /* a write failed once (logged once)            */
};

int
kg_exec_log_open(const char *path, const char *name, kg_exec_log_t **self_p, char *err,
                 size_t errlen)
{
  *self_p = NULL;
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY
                | O_NONBLOCK, 0600);
  if (fd < 0) {
    int e = errno;
    if (e == ELOOP) {
      kg_errf(err, errlen, "the log %s is a symbolic link; kguard never writes through one "
              "(remove it)", path);
      return KG_EUSAGE;
    }
    kg_errf(err, errlen, "cannot open the log %s: %s", path, strerror(e));
    return -e;
  }
  struct stat st;
  const char *bad = NULL;
  if (fstat(fd, &st) != 0)
    bad = "cannot be examined";
  else if (!S_ISREG(st.st_mode))
    bad = "is not a regular file";
  else if (st.st_uid != geteuid())
    bad = "belongs to another user";
  else if (st.st_nlink != 1)
    bad = "has other hard links";
  if (bad) {
    close(fd);
    kg_errf(err, errlen, "the log %s %s; kguard writes only its own private file there "
            "(remove it)", path, bad);
    return KG_EUSAGE;
  }
  /* Blocking writes from here (O_NONBLOCK only kept a fifo from hanging
     the open), and private whatever an older kguard left. */
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0)
    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  if ((st.st_mode & 07777) != 0600 && fchmod(fd, 0600) != 0) {
    int e = errno;
    close(fd);
    kg_errf(err, errlen, "cannot make the log %s private (0600): %s", path, strerror(e));
    return -e;
  }
  kg_exec_log_t *self = calloc(1, sizeof *self);
  if (!self) {
    close(fd);
    return KG_ENOMEM;
  }
  self->fd = fd;
  self->name = name;
  *self_p = self;
  return 0;
}

void
kg_exec_log_destroy(kg_exec_log_t **self_p)
{
  kg_exec_log_t *self = *self_p;
  if (!self)
    return;
  close(self->fd);
  free(self);
  *self_p = NULL;
}

void
kg_exec_log_output(kg_exec_log_t *self, const char *buf, size_t len)
{
  if (!self || len == 0)
    return;
  int rc = kg_file_write_all(self->fd, buf, len);
  if (rc != 0 && !self->failed) {
    self->failed = true;
    kg_warning("exec: cannot write the log: %s (the output is still passed through)",
               kg_strerror(rc));
  }
}

/*  One separator line, on a line of its own. */
static void
s_line(kg_exec_log_t *self, const char *text)
{
  char line[2048];
  int n = snprintf(line, sizeof line, "\n%s\n", text);
  if (n > 0)
    kg_exec_log_output(self, line, (size_t) n < sizeof line ? (size_t) n : sizeof line - 1);
}

void
kg_exec_log_run_started(kg_exec_log_t *self, int64_t wall_ms, char *const *argv)
{
  if (!self)
    return;
  char when[32], text[1800];
  kg_clock_iso_ms(wall_ms, when, sizeof when);
  int n = snprintf(text, sizeof text, "===== kguard exec %s: run started %s (pid %ld):",
                   self->name, when, (long) getpid());
  for (char *const *a = argv; *a && n > 0 && (size_t) n < sizeof text - 1; a++)
    n += snprintf(text + n, sizeof text - (size_t) n, " %s", *a);
  s_line(self, text);
}

void
kg_exec_log_generation(kg_exec_log_t *self, int generation, int64_t wall_ms,
                       int64_t resume_step)
{
  if (!self)
    return;
  char when[32], text[256], from[48] = "from the start";
  kg_clock_iso_ms(wall_ms, when, sizeof when);
  if (resume_step >= 0)
    snprintf(from, sizeof from, "resuming step %lld", (long long) resume_step);
  snprintf(text, sizeof text, "----- kguard exec %s: generation %d started %s, %s -----",
           self->name, generation, when, from);
  s_line(self, text);
}

void
kg_exec_log_run_ended(kg_exec_log_t *self, int64_t wall_ms, int exit_code, const char *summary)
{
  if (!self)
    return;
  char when[32], text[1024];
  kg_clock_iso_ms(wall_ms, when, sizeof when);
  snprintf(text, sizeof text, "===== kguard exec %s: exit %d (%s) at %s =====", self->name,
           exit_code, summary, when);
  s_line(self, text);
}
