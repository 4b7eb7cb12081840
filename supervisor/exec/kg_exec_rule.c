/*  kg_exec_rule: exit codes and the proof rule of `kguard exec`. */
#include "kg_exec_rule.h"

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "kg_throughput.h"

/*  kguard's own codes, which a passed-through command code must not fake. */
static bool
s_reserved(int code)
{
  return code == KG_EXEC_EXIT_GAVE_UP || code == KG_EXEC_EXIT_RETRYABLE || code == 100
         || code == 111;
}

int
kg_exec_exit_code(kg_exec_outcome_t outcome, int wait_status)
{
  switch (outcome) {
  case KG_EXEC_OUT_SUCCESS:
    return 0;
  case KG_EXEC_OUT_GAVE_UP:
    return KG_EXEC_EXIT_GAVE_UP;
  case KG_EXEC_OUT_RETRYABLE:
  case KG_EXEC_OUT_HARDWARE:
    return KG_EXEC_EXIT_RETRYABLE;
  case KG_EXEC_OUT_USAGE:
    return 100;
  case KG_EXEC_OUT_COMMAND_FAILED:
  default:
    break;
  }
  int code = 1;
  if (WIFEXITED(wait_status))
    code = WEXITSTATUS(wait_status);
  else if (WIFSIGNALED(wait_status))
    code = 128 + WTERMSIG(wait_status);
  if (code == 0 || s_reserved(code))
    code = 1;   /* a failure is never reported as success, nor as kguard's verdict */
  return code;
}

static bool
s_failed(int wait_status)
{
  return !(WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0);
}

kg_exec_verdict_t
kg_exec_judge(kg_exec_evidence_t ev, int wait_status, int64_t step, int64_t step_at_suspicion)
{
  switch (ev) {
  case KG_EXEC_EV_PROC_EXIT:
    return s_failed(wait_status) ? KG_EXEC_PROOF : KG_EXEC_KEEP;
  case KG_EXEC_EV_LEADER_EXIT:
    return s_failed(wait_status) ? KG_EXEC_PROOF : KG_EXEC_CLEARED;
  case KG_EXEC_EV_STEP:
    /* Ranks of synchronous training are within one step of each other: a
       rank still finishing the step in flight is not progress. */
    return step > step_at_suspicion + 1 ? KG_EXEC_CLEARED : KG_EXEC_KEEP;
  case KG_EXEC_EV_STALL:
    return KG_EXEC_PROOF;
  }
  return KG_EXEC_KEEP;
}

int64_t
kg_exec_stall_ms(int64_t configured_ms, int64_t longest_gap_ms)
{
  if (configured_ms >= 0)
    return configured_ms;
  if (longest_gap_ms <= 0)
    return KG_EXEC_STALL_MAX_MS;
  int64_t ms = longest_gap_ms > KG_EXEC_STALL_MAX_MS / 4 ? KG_EXEC_STALL_MAX_MS
                                                         : 4 * longest_gap_ms;
  return ms < KG_EXEC_STALL_MIN_MS ? KG_EXEC_STALL_MIN_MS : ms;
}

void
kg_exec_stall_words(int64_t configured_ms, int64_t longest_gap_ms, char *buf, size_t len)
{
  char stall[32], gap[32];
  kg_throughput_duration(kg_exec_stall_ms(configured_ms, longest_gap_ms), stall, sizeof stall);
  if (configured_ms >= 0)
    snprintf(buf, len, "%s (--stall-timeout)", stall);
  else if (longest_gap_ms <= 0)
    snprintf(buf, len, "%s: no step reported yet, so the job's pace is unknown (call "
             "kguard.step(n) after each step, or kguard.save, or print `kguard: completed "
             "step N`: a stall is then proven after 4 x the longest gap between steps)", stall);
  else
    snprintf(buf, len, "%s (%s the longest gap between the job's steps, %s)", stall,
             longest_gap_ms < KG_EXEC_STALL_MIN_MS / 4 ? "the least kguard waits; 4 x"
             : longest_gap_ms > KG_EXEC_STALL_MAX_MS / 4 ? "the most kguard waits; 4 x"
             : "4 x", kg_throughput_duration(longest_gap_ms, gap, sizeof gap));
}

int
kg_exec_unverified(const cJSON *resume, char *why, size_t len)
{
  int count = 0;
  if (len)
    why[0] = '\0';
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(resume, "skipped")) {
    const cJSON *archive = cJSON_GetObjectItemCaseSensitive(e, "archive");
    const cJSON *reason = cJSON_GetObjectItemCaseSensitive(e, "reason");
    const char *r = cJSON_IsString(reason) ? reason->valuestring : "";
    if (strstr(r, "at or after the failure"))
      continue;
    if (count++ == 0 && len)
      snprintf(why, len, "%s: %s", cJSON_IsString(archive) ? archive->valuestring : "?", r);
  }
  return count;
}

void
kg_exec_pace_init(kg_exec_pace_t *pace)
{
  pace->longest_gap_ms = 0;
  kg_exec_pace_restart(pace);
}

void
kg_exec_pace_restart(kg_exec_pace_t *pace)
{
  pace->last_step = -1;
  pace->last_ms = -1;
}

bool
kg_exec_pace_step(kg_exec_pace_t *pace, int64_t step, int64_t now_ms)
{
  if (step <= pace->last_step)
    return false;
  if (pace->last_ms >= 0 && now_ms - pace->last_ms > pace->longest_gap_ms)
    pace->longest_gap_ms = now_ms - pace->last_ms;
  pace->last_ms = now_ms;
  pace->last_step = step;
  return true;
}

kg_exec_mode_t
kg_exec_mode(char *const *argv, bool ranks_asked, int nnodes)
{
  const char *base = argv && argv[0] ? strrchr(argv[0], '/') : NULL;
  base = base ? base + 1 : argv && argv[0] ? argv[0] : "";
  if (strcmp(base, "torchrun") == 0)
    return KG_EXEC_MODE_WRAP;
  if (strncmp(base, "python", 6) == 0)
    for (char *const *a = argv + 1; *a && (*a)[0] == '-'; a++)
      if (strcmp(*a, "-m") == 0 && a[1]
          && (strcmp(a[1], "torch.distributed.run") == 0
              || strcmp(a[1], "torch.distributed.launch") == 0))
        return KG_EXEC_MODE_WRAP;
  return ranks_asked || nnodes > 1 ? KG_EXEC_MODE_AGENT : KG_EXEC_MODE_PLAIN;
}

int64_t
kg_exec_backoff(int64_t policy_delay_ms, const char *previous, const char *signature)
{
  bool same = previous && signature && *signature && strcmp(previous, signature) == 0;
  return same ? policy_delay_ms : 0;
}

int
kg_exec_python_program(char *const *argv, bool *module)
{
  *module = false;
  const char *base = argv && argv[0] ? strrchr(argv[0], '/') : NULL;
  base = base ? base + 1 : argv && argv[0] ? argv[0] : "";
  if (strncmp(base, "python", 6) != 0)
    return -1;
  for (int i = 1; argv[i]; i++) {
    const char *a = argv[i];
    if (strcmp(a, "-m") == 0) {
      *module = true;
      return argv[i + 1] ? i + 1 : -1;
    }
    if (strncmp(a, "-m", 2) == 0) {   /* -mMODULE */
      *module = true;
      return -1;   /* handed over as a module name only when it stands alone */
    }
    if (a[0] != '-' )
      return i;                        /* the script */
    if (strcmp(a, "-") == 0 || strncmp(a, "-c", 2) == 0 || strcmp(a, "--") == 0)
      return -1;                       /* stdin, -c CODE: nothing to hand over */
    if ((strcmp(a, "-W") == 0 || strcmp(a, "-X") == 0) && argv[i + 1])
      i++;                             /* an option with its value */
  }
  return -1;
}
