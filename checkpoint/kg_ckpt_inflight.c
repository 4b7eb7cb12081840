/*  kg_ckpt_inflight: a writer is running while its lock is held. */
#include "kg_ckpt_inflight.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "kg_clock.h"
#include "kg_ckpt_gc.h"
#include "kg_ckpt_seal.h"
#include "kg_ckpt_util.h"

static bool
s_is_writer_name(const char *name)
{
  return kg_ckpt_seal_is_leftover_name(name)
         || strncmp(name, KG_CKPT_SAVE_PREFIX, strlen(KG_CKPT_SAVE_PREFIX)) == 0;
}

/*  Open name under dfd and tell whether a writer holds its lock: returns
    the fd (caller closes) when held, -1 when free or gone, -2 - errno on
    an error other than a vanished name. */
static int
s_held(int dfd, const char *name)
{
  int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return errno == ENOENT ? -1 : -2 - errno;
  while (flock(fd, LOCK_SH | LOCK_NB) < 0) {
    if (errno == EINTR)
      continue;
    if (errno == EWOULDBLOCK)
      return fd;
    int e = errno;
    close(fd);
    return -2 - e;
  }
  close(fd); /* free: the writer ended (or died) */
  return -1;
}

/*  The first running writer of dir (*fd set, name copied), its progress
    measure (*bytes: sizes of the seal temporaries; *count: writers
    running). Returns 1 found, 0 none, -errno. */
static int
s_scan(const char *dir, int *fd, char *name, size_t namesize, uint64_t *bytes, size_t *count)
{
  *fd = -1;
  *bytes = 0;
  *count = 0;
  DIR *d = NULL;
  int opened = kg_ckpt_opendir(dir, &d);
  if (opened <= 0)
    return opened;
  int rc = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (!s_is_writer_name(de->d_name))
      continue;
    struct stat st;
    if (kg_ckpt_seal_is_leftover_name(de->d_name)
        && fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
      *bytes += (uint64_t) st.st_size;
    int h = s_held(dirfd(d), de->d_name);
    if (h < -1) {
      rc = -(-2 - h);
      break;
    }
    if (h < 0)
      continue;
    (*count)++;
    if (*fd < 0) {
      *fd = h;
      snprintf(name, namesize, "%s", de->d_name);
    } else {
      close(h);
    }
  }
  closedir(d);
  if (rc < 0 && *fd >= 0) {
    close(*fd);
    *fd = -1;
  }
  return rc < 0 ? rc : *fd >= 0;
}

static void
s_on_alarm(int sig)
{
  (void) sig; /* only interrupts the blocking flock */
}

static void
s_record(cJSON *waited, const char *name, const char *outcome, int64_t ms)
{
  if (!waited)
    return;
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "writer", name);
  cJSON_AddStringToObject(o, "outcome", outcome);
  cJSON_AddNumberToObject(o, "waited_ms", (double) ms);
  cJSON_AddItemToArray(waited, o);
}

/*  Record every writer of dir still running as excluded. */
static void
s_exclude_all(const char *dir, cJSON *waited, int64_t ms)
{
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
  if (!d) {
    if (dfd >= 0)
      close(dfd);
    return;
  }
  struct dirent *de;
  while ((de = readdir(d))) {
    if (!s_is_writer_name(de->d_name))
      continue;
    int h = s_held(dirfd(d), de->d_name);
    if (h >= 0) {
      close(h);
      s_record(waited, de->d_name, "excluded", ms);
    }
  }
  closedir(d);
}

int
kg_ckpt_inflight_wait(const char *dir, int64_t stall_ms, kg_ckpt_inflight_tick_fn tick,
                      void *arg, cJSON *waited)
{
  int64_t start = kg_clock_mono_ms(), moved = start;
  uint64_t last_bytes = 0;
  size_t last_count = 0;
  bool first = true, timer = false;
  struct sigaction old_sa;
  struct itimerval old_it;
  int rc;
  for (;;) {
    int fd;
    char name[256];
    uint64_t bytes;
    size_t count;
    if ((rc = s_scan(dir, &fd, name, sizeof name, &bytes, &count)) <= 0)
      break;
    int64_t now = kg_clock_mono_ms();
    if (first || bytes != last_bytes || count != last_count)
      moved = now;
    first = false;
    last_bytes = bytes;
    last_count = count;
    if (now - moved >= stall_ms) {
      close(fd);
      s_exclude_all(dir, waited, now - start);
      rc = 1;
      break;
    }
    if (!timer) {
      /* A 1 s interval timer interrupts the blocking flock (no
         SA_RESTART) so progress is reported and stalls noticed. */
      struct sigaction sa;
      memset(&sa, 0, sizeof sa);
      sa.sa_handler = s_on_alarm;
      sigemptyset(&sa.sa_mask);
      sigaction(SIGALRM, &sa, &old_sa);
      struct itimerval it = {{1, 0}, {1, 0}};
      setitimer(ITIMER_REAL, &it, &old_it);
      timer = true;
    }
    if (tick)
      tick(arg, bytes, count);
    int64_t began = kg_clock_mono_ms();
    if (flock(fd, LOCK_SH) == 0) {
      /* This writer ended: renamed its archive into place, or died. */
      s_record(waited, name, "ended", kg_clock_mono_ms() - began);
      moved = kg_clock_mono_ms();
    } else if (errno != EINTR) {
      rc = -errno;
      close(fd);
      break;
    }
    close(fd);
  }
  if (timer) {
    setitimer(ITIMER_REAL, &old_it, NULL);
    sigaction(SIGALRM, &old_sa, NULL);
  }
  return rc;
}

void
kg_ckpt_inflight_test_hold(const char *stage)
{
  const char *v = getenv(KG_CKPT_TEST_SEAL_HOLD_ENV);
  const char *colon = v ? strchr(v, ':') : NULL;
  if (!colon || (size_t) (colon - v) != strlen(stage) || strncmp(v, stage, strlen(stage)) != 0)
    return;
  const char *path = colon + 1;
  char marker[4096];
  if (snprintf(marker, sizeof marker, "%s.%s", path, stage) >= (int) sizeof marker)
    return;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return;
  int m = open(marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (m >= 0)
    close(m);
  while (flock(fd, LOCK_SH) < 0 && errno == EINTR)
    ;
  close(fd);
}
