/*  What test_lifetime.c and test_parentwatch.c share: reaping a process
    within a deadline. */
#ifndef KG_REAP_FIXTURE_H
#define KG_REAP_FIXTURE_H

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "kg_clock.h"

/*  Reap pid (a child or an orphan handed to us as subreaper) within
    timeout_ms. Returns true once reaped. */
static bool
s_reap_within(pid_t pid, int timeout_ms)
{
  int64_t deadline = kg_clock_mono_ms() + timeout_ms;
  while (kg_clock_mono_ms() < deadline) {
    pid_t r = waitpid(pid, NULL, WNOHANG);
    if (r == pid)
      return true;
    poll(NULL, 0, 10);          /* condition polled against a deadline */
  }
  return false;
}

#endif
