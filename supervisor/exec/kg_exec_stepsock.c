/*  kg_exec_stepsock: the job's processes tell kguard exec their step
    (contract in kg_exec_stepsock.h). */
#include "kg_exec_stepsock.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "kg_error.h"

struct kg_exec_stepsock_t {
  int fd;
  char env[64];     /* "@kguard-step-<pid>-<hex>" */
};

int
kg_exec_stepsock_new(kg_exec_stepsock_t **out)
{
  *out = NULL;
  kg_exec_stepsock_t *self = calloc(1, sizeof *self);
  if (!self)
    return KG_ENOMEM;
  unsigned char rnd[8] = {0};
  if (getrandom(rnd, sizeof rnd, GRND_NONBLOCK) != (ssize_t) sizeof rnd)
    memset(rnd, 0, sizeof rnd);   /* the pid still names it; the uid check guards it */
  int n = snprintf(self->env, sizeof self->env, "@kguard-step-%ld-", (long) getpid());
  for (size_t i = 0; i < sizeof rnd && n > 0 && (size_t) n + 3 <= sizeof self->env; i++)
    n += snprintf(self->env + n, sizeof self->env - (size_t) n, "%02x", rnd[i]);
  self->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (self->fd < 0) {
    int rc = -errno;
    free(self);
    return rc;
  }
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  size_t name = strlen(self->env + 1);
  memcpy(a.sun_path + 1, self->env + 1, name);   /* sun_path[0] = 0: abstract */
  int one = 1;
  if (setsockopt(self->fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof one) != 0
      || bind(self->fd, (struct sockaddr *) &a,
              (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 + name)) != 0) {
    int rc = -errno;
    close(self->fd);
    free(self);
    return rc;
  }
  *out = self;
  return 0;
}

void
kg_exec_stepsock_destroy(kg_exec_stepsock_t **p)
{
  if (!p || !*p)
    return;
  close((*p)->fd);
  free(*p);
  *p = NULL;
}

int
kg_exec_stepsock_fd(const kg_exec_stepsock_t *self)
{
  return self ? self->fd : -1;
}

const char *
kg_exec_stepsock_env(const kg_exec_stepsock_t *self)
{
  return self->env;
}

int
kg_exec_stepsock_recv(kg_exec_stepsock_t *self, kg_exec_step_msg_t *msg)
{
  char buf[128];
  union {
    struct cmsghdr h;
    char space[CMSG_SPACE(sizeof(struct ucred))];
  } ctl;
  struct iovec iov = {buf, sizeof buf};
  struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = &ctl,
                      .msg_controllen = sizeof ctl};
  ssize_t n = recvmsg(self->fd, &mh, MSG_DONTWAIT);
  if (n < 0)
    return errno == EINTR ? -1 : 0;
  const struct ucred *cred = NULL;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS
        && c->cmsg_len >= CMSG_LEN(sizeof(struct ucred)))
      cred = (const struct ucred *) CMSG_DATA(c);
  /* Another user's words could only hold off the proof of a stalled job. */
  if (!cred || cred->uid != getuid() || (mh.msg_flags & MSG_TRUNC))
    return -1;
  return kg_exec_step_parse(buf, (size_t) n, msg) ? 1 : -1;
}

/*  A decimal number >= 0 of at most 18 digits at *p, up to a space, a
    newline or the end. */
static bool
s_number(const char **p, const char *end, int64_t *v)
{
  const char *s = *p;
  int64_t x = 0;
  int digits = 0;
  while (s < end && *s >= '0' && *s <= '9' && digits < 18) {
    x = x * 10 + (*s++ - '0');
    digits++;
  }
  /* A 19th digit is refused before it is read: it could overflow x. */
  if (digits == 0 || (s < end && *s >= '0' && *s <= '9'))
    return false;
  *p = s;
  *v = x;
  return true;
}

bool
kg_exec_step_parse(const char *buf, size_t len, kg_exec_step_msg_t *msg)
{
  static const char head[] = "kguard-step ";
  const char *p = buf, *end = buf + len;
  if (len > 0 && end[-1] == '\n')
    end--;
  if ((size_t) (end - p) < sizeof head - 1 || memcmp(p, head, sizeof head - 1) != 0)
    return false;
  p += sizeof head - 1;
  int64_t g, r, s;
  if (!s_number(&p, end, &g) || p >= end || *p++ != ' ' || !s_number(&p, end, &r) || p >= end
      || *p++ != ' ' || !s_number(&p, end, &s) || p != end || g > INT32_MAX || r > INT32_MAX)
    return false;
  *msg = (kg_exec_step_msg_t){(int) g, (int) r, s};
  return true;
}
