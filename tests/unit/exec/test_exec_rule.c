/*  kg_exec_rule: the proof rule and the exit codes, as tables. */
#include <sys/wait.h>

#include <stdbool.h>
#include <stdint.h>

#include "kg_exec_rule.h"
#include "kg_test.h"

#define EXITED(c) ((c) << 8)
#define KILLED(s) (s)

KG_TEST(proof_needs_failure_or_stall)
{
  static const struct {
    kg_exec_evidence_t ev;
    int status;
    int64_t step, at;
    kg_exec_verdict_t want;
  } rows[] = {
    {KG_EXEC_EV_PROC_EXIT, EXITED(1), 0, 4, KG_EXEC_PROOF},    /* a rank failed        */
    {KG_EXEC_EV_PROC_EXIT, KILLED(SIGABRT), 0, 4, KG_EXEC_PROOF},
    {KG_EXEC_EV_PROC_EXIT, EXITED(0), 0, 4, KG_EXEC_KEEP},     /* a helper ended well   */
    {KG_EXEC_EV_LEADER_EXIT, EXITED(1), 0, 4, KG_EXEC_PROOF},
    {KG_EXEC_EV_LEADER_EXIT, KILLED(SIGKILL), 0, 4, KG_EXEC_PROOF},
    {KG_EXEC_EV_LEADER_EXIT, EXITED(0), 0, 4, KG_EXEC_CLEARED}, /* it succeeded        */
    {KG_EXEC_EV_STEP, 0, 5, 4, KG_EXEC_KEEP},   /* a peer finishing the step in flight */
    {KG_EXEC_EV_STEP, 0, 6, 4, KG_EXEC_CLEARED},
    {KG_EXEC_EV_STEP, 0, 1, -1, KG_EXEC_CLEARED},
    {KG_EXEC_EV_STEP, 0, 0, -1, KG_EXEC_KEEP},
    {KG_EXEC_EV_STALL, 0, 0, 4, KG_EXEC_PROOF},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    KG_CHECK_INT(kg_exec_judge(rows[i].ev, rows[i].status, rows[i].step, rows[i].at),
                 rows[i].want);
}

KG_TEST(exit_codes_for_schedulers)
{
  KG_CHECK_INT(kg_exec_exit_code(KG_EXEC_OUT_SUCCESS, EXITED(3)), 0);
  KG_CHECK_INT(kg_exec_exit_code(KG_EXEC_OUT_GAVE_UP, 0), 86);
  KG_CHECK_INT(kg_exec_exit_code(KG_EXEC_OUT_RETRYABLE, 0), 200);
  KG_CHECK_INT(kg_exec_exit_code(KG_EXEC_OUT_USAGE, 0), 100);
  KG_CHECK_INT(kg_exec_exit_code(KG_EXEC_OUT_HARDWARE, 0), 200);
  KG_CHECK_INT(kg_exec_exit_code(KG_EXEC_OUT_COMMAND_FAILED, EXITED(3)), 3);
  KG_CHECK_INT(kg_exec_exit_code(KG_EXEC_OUT_COMMAND_FAILED, KILLED(SIGSEGV)), 128 + SIGSEGV);
  /* kguard's own codes are never faked by the command, nor success. */
  KG_CHECK_INT(kg_exec_exit_code(KG_EXEC_OUT_COMMAND_FAILED, EXITED(86)), 1);
  KG_CHECK_INT(kg_exec_exit_code(KG_EXEC_OUT_COMMAND_FAILED, EXITED(200)), 1);
  KG_CHECK_INT(kg_exec_exit_code(KG_EXEC_OUT_COMMAND_FAILED, EXITED(100)), 1);
  KG_CHECK_INT(kg_exec_exit_code(KG_EXEC_OUT_COMMAND_FAILED, EXITED(0)), 1);
}

/*  The stall that proves a fault follows the job's pace unless the user
    set one: a job of 50 ms steps is judged in 1.5 s, one of 10 s steps in
    40 s, never past 60 s, and 60 s before the pace is known. */
KG_TEST(stall_follows_the_pace)
{
  static const struct { int64_t configured, gap, want; } rows[] = {
    {-1, 0, KG_EXEC_STALL_MAX_MS},        /* fewer than two steps seen */
    {-1, 50, KG_EXEC_STALL_MIN_MS},       /* fast steps: the floor */
    {-1, 300, KG_EXEC_STALL_MIN_MS},
    {-1, 700, 2800},
    {-1, 10000, 40000},
    {-1, 15000, KG_EXEC_STALL_MAX_MS},
    {-1, INT64_MAX / 2, KG_EXEC_STALL_MAX_MS},   /* no overflow */
    {1500, 50, 1500},                     /* --stall-timeout wins */
    {0, 10000, 0},
    {90000, 0, 90000},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    KG_CHECK_INT(kg_exec_stall_ms(rows[i].configured, rows[i].gap), rows[i].want);
}

/*  The deadline in words: how long and why, and what to call while no
    pace is known. */
KG_TEST(stall_words_say_why)
{
  static const struct { int64_t configured, gap; const char *want; } rows[] = {
    {-1, 520, "2.0 s (4 x the longest gap between the job's steps, 520 ms)"},
    {-1, 50, "1.5 s (the least kguard waits; 4 x the longest gap between the job's steps, "
             "50 ms)"},
    {-1, 20000, "60 s (the most kguard waits; 4 x the longest gap between the job's steps, "
                "20 s)"},
    {2000, 0, "2.0 s (--stall-timeout)"},
    {90000, 50, "90 s (--stall-timeout)"},
  };
  char buf[512];
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    kg_exec_stall_words(rows[i].configured, rows[i].gap, buf, sizeof buf);
    KG_CHECK_STR(buf, rows[i].want);
  }
  kg_exec_stall_words(-1, 0, buf, sizeof buf);
  KG_CHECK(strncmp(buf, "60 s: no step reported yet", 26) == 0);
  KG_CHECK(strstr(buf, "kguard.step(n)") && strstr(buf, "kguard.save"));
  char small[8];
  kg_exec_stall_words(-1, 520, small, sizeof small);
  KG_CHECK(strlen(small) == sizeof small - 1);
}

/*  Checkpoints that exist but do not verify are never dropped silently by
    a start over; the ones sealed after the fault do not count. */
KG_TEST(unverified_checkpoints_stop_a_silent_start_over)
{
  static const struct {
    const char *json;
    int want;
    const char *why;
  } rows[] = {
    {"{\"status\":\"none\",\"skipped\":[]}", 0, ""},
    {"{\"status\":\"none\"}", 0, ""},
    {"{\"status\":\"none\",\"skipped\":[{\"archive\":\"a\",\"reason\":\"set sealed at "
     "X, at or after the failure\"}]}", 0, ""},
    {"{\"status\":\"none\",\"skipped\":[{\"archive\":\"s3\",\"reason\":\"unsigned: "
     "signed by unknown key b2:1\"},{\"archive\":\"s6\",\"reason\":\"corrupt: m\"}]}", 2,
     "s3: unsigned: signed by unknown key b2:1"},
    {"{\"status\":\"none\",\"skipped\":[{\"archive\":\"x\",\"reason\":\"shard of rank 1 "
     "of 2: chosen only with its set\"}]}", 1, "x: shard of rank 1 of 2: chosen only with its set"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    cJSON *j = cJSON_Parse(rows[i].json);
    char why[256];
    KG_CHECK_INT(kg_exec_unverified(j, why, sizeof why), rows[i].want);
    KG_CHECK_STR(why, rows[i].why);
    cJSON_Delete(j);
  }
}

/*  The pace survives a restart: a run that starts over (or resumes below
    the previous run's highest step) counts its own steps as progress, and
    its stall is judged with the pace already measured. */
KG_TEST(pace_survives_a_restart)
{
  kg_exec_pace_t p;
  kg_exec_pace_init(&p);
  KG_CHECK_INT(kg_exec_stall_ms(-1, p.longest_gap_ms), KG_EXEC_STALL_MAX_MS);
  static const struct {
    bool restart;          /* a new run of the command starts first */
    int64_t step, now;
    bool progress;
    int64_t gap;           /* longest gap after it */
  } rows[] = {
    {false, 1, 1000, true, 0},     /* the first step: no gap yet (start-up)      */
    {false, 2, 1100, true, 100},
    {false, 2, 1150, false, 100},  /* a peer's line for the same step            */
    {false, 3, 1400, true, 300},
    {false, 4, 1450, true, 300},
    {true, 1, 9000, true, 300},    /* restarted: step 1 is progress; no gap from 4 */
    {false, 2, 9100, true, 300},   /* below the last run's highest: still progress */
    {true, 7, 20000, true, 300},   /* resumed at 6: its first step                */
    {false, 8, 20900, true, 900},  /* a slower step in a later run raises the pace */
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    if (rows[i].restart)
      kg_exec_pace_restart(&p);
    KG_CHECK_INT(kg_exec_pace_step(&p, rows[i].step, rows[i].now), rows[i].progress);
    KG_CHECK_INT(p.longest_gap_ms, rows[i].gap);
  }
  kg_exec_pace_restart(&p);
  KG_CHECK_INT(p.last_step, -1);
  KG_CHECK_INT(kg_exec_stall_ms(-1, p.longest_gap_ms), 3600);   /* 4 x 900, kept */
}

/*  Back-off is for the same failure coming back; another one restarts at
    once (the same one twice stops anyway, by the policy). */
KG_TEST(back_off_only_for_the_same_failure)
{
  KG_CHECK_INT(kg_exec_backoff(1000, "", "device-assert:1:2"), 0);
  KG_CHECK_INT(kg_exec_backoff(1000, "illegal-address:3:4", "device-assert:1:2"), 0);
  KG_CHECK_INT(kg_exec_backoff(1000, "device-assert:1:2", "device-assert:1:2"), 1000);
  KG_CHECK_INT(kg_exec_backoff(1000, NULL, "device-assert:1:2"), 0);
  KG_CHECK_INT(kg_exec_backoff(1000, "", ""), 0);
  KG_CHECK_INT(kg_exec_backoff(0, "a", "a"), 0);
}

/*  Who starts the ranks: torchrun when the command is torchrun, else
    kguard when asked for ranks (or several nodes), else one plain command. */
KG_TEST(mode_follows_the_command)
{
  static const struct {
    const char *argv[6];
    bool ranks;
    int nnodes;
    kg_exec_mode_t want;
  } rows[] = {
    {{"python3", "train.py", NULL}, false, 1, KG_EXEC_MODE_PLAIN},
    {{"python3", "train.py", NULL}, true, 1, KG_EXEC_MODE_AGENT},
    {{"python3", "train.py", NULL}, false, 2, KG_EXEC_MODE_AGENT},
    {{"torchrun", "--nproc_per_node=2", "train.py", NULL}, true, 1, KG_EXEC_MODE_WRAP},
    {{"/usr/bin/torchrun", "train.py", NULL}, false, 2, KG_EXEC_MODE_WRAP},
    {{"python3", "-u", "-m", "torch.distributed.run", "t.py", NULL}, true, 1, KG_EXEC_MODE_WRAP},
    {{"python", "-m", "torch.distributed.launch", "t.py", NULL}, false, 1, KG_EXEC_MODE_WRAP},
    {{"python3", "-m", "mypkg.train", NULL}, true, 1, KG_EXEC_MODE_AGENT},
    {{"python3", "t.py", "-m", "torch.distributed.run", NULL}, false, 1, KG_EXEC_MODE_PLAIN},
    {{"sh", "-c", "torchrun x", NULL}, false, 1, KG_EXEC_MODE_PLAIN},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    KG_CHECK_INT(kg_exec_mode((char *const *) rows[i].argv, rows[i].ranks, rows[i].nnodes),
                 rows[i].want);
}

/*  What a warm standby can run: a Python script or -m module after the
    interpreter's own options; nothing else. */
KG_TEST(python_program_for_a_standby)
{
  static const struct {
    const char *argv[7];
    int want;
    bool module;
  } rows[] = {
    {{"python3", "train.py", "--lr", "1", NULL}, 1, false},
    {{"/usr/bin/python3.11", "-u", "-X", "dev", "train.py", NULL}, 4, false},
    {{"python", "-W", "ignore", "-O", "t.py", NULL}, 4, false},
    {{"python3", "-m", "pkg.train", "--x", NULL}, 2, true},
    {{"python3", "-u", "-m", "pkg.train", NULL}, 3, true},
    {{"python3", "-c", "print(1)", NULL}, -1, false},
    {{"python3", "-", NULL}, -1, false},
    {{"python3", NULL}, -1, false},
    {{"python3", "-m", NULL}, -1, true},
    {{"bash", "train.sh", NULL}, -1, false},
    {{"torchrun", "train.py", NULL}, -1, false},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    bool module = false;
    KG_CHECK_INT(kg_exec_python_program((char *const *) rows[i].argv, &module), rows[i].want);
    KG_CHECK_INT(module, rows[i].module);
  }
}

KG_TEST_MAIN(KG_CASE(proof_needs_failure_or_stall), KG_CASE(exit_codes_for_schedulers),
             KG_CASE(stall_follows_the_pace), KG_CASE(stall_words_say_why),
             KG_CASE(unverified_checkpoints_stop_a_silent_start_over),
             KG_CASE(pace_survives_a_restart), KG_CASE(back_off_only_for_the_same_failure),
             KG_CASE(mode_follows_the_command), KG_CASE(python_program_for_a_standby))
