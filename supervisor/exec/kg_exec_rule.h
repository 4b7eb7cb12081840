/*  kg_exec_rule: what `kguard exec` decides, as pure functions (no clock,
    no processes), so tables can test them.

    Proof before a kill (the kernel's rule, for a process group): a line
    on the group's stdout/stderr that matches a sticky rule is a SUSPICION.
    It becomes PROOF of a poisoned device when, after it,
      - any process of the group ends with a failure (exit code != 0, or a
        signal), or
      - the group makes no progress until the stall deadline (no newer
        "kguard: completed step N" line at least two steps beyond the last
        one before the suspicion: the ranks of synchronous training are
        within one step of each other, so a peer finishing the step in
        flight is not progress):
        a poisoned rank that stays alive blocks its peers in the next
        collective, so silence is the sign;
    it is CLEARED when the group shows that progress, or
    its leader exits 0. A death by SIGABRT with a sticky line (HSA abort) is
    proof at once (kg_diagnosis establishes it from the exit).

    Exit codes, the contract with schedulers:
      0    the command succeeded
      1..  the command's own failure, passed through (a death by signal N
           is 128+N, as a shell reports it); a command code that collides
           with one of kguard's own below is reported as 1
      86   KG_EXEC_EXIT_GAVE_UP: permanent: sticky faults kept coming (the
           same failure twice in a row, or the restart budget spent)
      100  usage or configuration error (kguard's own)
      111  a system failure in kguard itself before the command ran
      200  KG_EXEC_EXIT_RETRYABLE: pre-empted (SIGTERM/SIGINT/SIGUSR1), or
           an infrastructure failure (checkpoint helper failed, a peer node
           or the coordinator lost): run the job again; or a GPU of the job
           needs a reset (kg_gpuhealth): run it again on other hardware and
           drain this node
*/
#ifndef KG_EXEC_RULE_H
#define KG_EXEC_RULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#define KG_EXEC_EXIT_GAVE_UP 86
#define KG_EXEC_EXIT_RETRYABLE 200

typedef enum {
  KG_EXEC_OUT_SUCCESS = 0,
  KG_EXEC_OUT_COMMAND_FAILED,   /* the command's own failure               */
  KG_EXEC_OUT_GAVE_UP,          /* sticky faults, no more restarts          */
  KG_EXEC_OUT_RETRYABLE,        /* pre-empted or infrastructure failure     */
  KG_EXEC_OUT_USAGE,            /* the job's configuration is refused (100) */
  KG_EXEC_OUT_HARDWARE          /* a GPU needs a reset: other hardware (200) */
} kg_exec_outcome_t;

/*  The process exit code for outcome; wait_status (a waitpid status) is
    read only for COMMAND_FAILED. */
int kg_exec_exit_code(kg_exec_outcome_t outcome, int wait_status);

/*  One piece of evidence while a suspicion stands. */
typedef enum {
  KG_EXEC_EV_PROC_EXIT = 0,     /* a process of the group ended (status)    */
  KG_EXEC_EV_LEADER_EXIT,       /* the command itself ended (status)        */
  KG_EXEC_EV_STEP,              /* a "completed step N" line (step)         */
  KG_EXEC_EV_STALL              /* the stall deadline passed                */
} kg_exec_evidence_t;

typedef enum {
  KG_EXEC_KEEP = 0,             /* still a suspicion                        */
  KG_EXEC_PROOF,                /* the fault is proven: stop and restart    */
  KG_EXEC_CLEARED               /* not a fault after all                    */
} kg_exec_verdict_t;

/*  Judge one piece of evidence against a standing suspicion raised when
    the last completed step was step_at_suspicion (-1 = none yet).
    wait_status is read for the exits, step for KG_EXEC_EV_STEP. */
kg_exec_verdict_t kg_exec_judge(kg_exec_evidence_t ev, int wait_status, int64_t step,
                                int64_t step_at_suspicion);

/*  How long training may make no progress after a sticky error text before
    that stall is the proof. configured_ms >= 0 (--stall-timeout): that.
    Otherwise (auto, the default) it follows the job's own pace: four times
    the longest gap between two consecutive completed steps of one run of
    the command, over every run so far (longest_gap_ms, kg_exec_pace_t),
    within KG_EXEC_STALL_MIN_MS ..
    KG_EXEC_STALL_MAX_MS; KG_EXEC_STALL_MAX_MS before two steps were seen.
    A poisoned rank that stays alive is then found in seconds in a job with
    fast steps, and a job with slow steps is never killed for printing the
    text while it goes on. Pure. */
#define KG_EXEC_STALL_MIN_MS 1500
#define KG_EXEC_STALL_MAX_MS 60000
int64_t kg_exec_stall_ms(int64_t configured_ms, int64_t longest_gap_ms);

/*  The stall deadline in words for kguard's notice, into buf: how long,
    and why that long: "2.0 s (4 x the longest gap between the job's
    steps, 520 ms)" (the floor or the ceiling named when one of them
    rules), "2.0 s (--stall-timeout)", or, while no pace is known
    (fewer than two steps seen: nothing printed `kguard: completed step N`
    and nothing called kguard.step or kguard.save), that and what to call
    so that a stall is proven in seconds. Pure. */
void kg_exec_stall_words(int64_t configured_ms, int64_t longest_gap_ms, char *buf, size_t len);

/*  The delay before a restart: the policy's back-off (policy_delay_ms)
    when the fault's signature is the previous fault's, else none: back-off
    is for the same failure coming back, and another one is no reason to
    wait. Signatures NULL or "" never match. Pure. */
int64_t kg_exec_backoff(int64_t policy_delay_ms, const char *previous, const char *signature);

/*  Who starts the ranks. */
typedef enum {
  KG_EXEC_MODE_PLAIN = 0,       /* one command; kguard sets no rank variables */
  KG_EXEC_MODE_WRAP,            /* torchrun (or its module) starts the ranks   */
  KG_EXEC_MODE_AGENT            /* kguard starts --nproc-per-node ranks itself
                                   with torchrun's environment contract       */
} kg_exec_mode_t;

/*  The mode for COMMAND argv (NULL-terminated): WRAP when it is torchrun
    (`torchrun ...`, `python -m torch.distributed.run|launch ...`), else
    AGENT when --nproc-per-node was given or the job has several nodes,
    else PLAIN. Pure. */
kg_exec_mode_t kg_exec_mode(char *const *argv, bool ranks_asked, int nnodes);

/*  Where a Python COMMAND's program starts: argv[0] must be a Python
    interpreter (its name starts with "python"), then its own options
    (-u, -O, -B, -X opt, -W arg, ...), then a script path or -m MODULE.
    Returns the index of the script (or of MODULE, with *module true), or
    -1 when the command is not one a warm standby can run: not Python, -c
    CODE, a script read from stdin, nothing to run. Pure. */
int kg_exec_python_program(char *const *argv, bool *module);

/*  The job's pace, across restarts: the steps of the current run of the
    command (progress is a newer step of this run: a restarted run counts
    from the step it resumed, or 0) and the longest gap between two
    consecutive steps of one run, over every run (start-up is never a gap).
    A fault that comes back after a restart is judged with the pace the
    job already showed. Plain struct, pure functions (time passed in). */
typedef struct {
  int64_t last_step;          /* newest step of this run, -1 none            */
  int64_t last_ms;            /* when it was seen (monotonic), -1 none       */
  int64_t longest_gap_ms;     /* the job's pace so far, 0 unknown             */
} kg_exec_pace_t;

void kg_exec_pace_init(kg_exec_pace_t *pace);

/*  A new run of the command starts: its steps count afresh; the pace stays. */
void kg_exec_pace_restart(kg_exec_pace_t *pace);

/*  A "completed step N" line at now_ms. Returns true when step is newer
    than this run's last (progress; the pace is updated), else false. */
bool kg_exec_pace_step(kg_exec_pace_t *pace, int64_t step, int64_t now_ms);

/*  After `kguard ckpt resume-prepare` found nothing to resume from (its
    JSON, borrowed): were there checkpoints sealed before the fault that
    did not verify? Counts its "skipped" entries, leaving out those skipped
    only for being sealed at or after the failure. The first one's archive
    and reason go into why. Returns the count: 0 means there was nothing to
    lose by starting over; more means starting over would silently drop
    them (kguard exec stops with KG_EXEC_EXIT_GAVE_UP instead). Pure. */
int kg_exec_unverified(const cJSON *resume, char *why, size_t len);

#endif
