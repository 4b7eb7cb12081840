/*  kg_exec: `kguard exec`, a training command (a Python script, or
    torchrun) supervised as one process group.

    kguard is the command's parent and a subreaper (PR_SET_CHILD_SUBREAPER):
    it starts COMMAND in its own session and process group (kg_child), passes
    the group's stdout/stderr through to its own unchanged while keeping them
    (log file, diagnosis), reaps every process of the tree, and applies the
    proof rule of kg_exec_rule to the sticky error texts the classifier finds.
    On proof it stops the whole group (TERM, grace, KILL), writes an incident,
    asks `kguard ckpt resume-prepare` for the last checkpoint sealed before
    the fault (newer ones are quarantined), and starts COMMAND again with the
    KGUARD_RESUME_* variables that kguard.resume() reads, within the restart
    policy (kg_policy: budget, backoff, same failure twice = give up).

    One loop (kg_loop) over the group's pipes, the checkpoint helper's, a
    signal source (SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGUSR1) and the
    multi-node coordinator link; the states on the house's state engine
    (kg_fsm, kg_exec_states.h): a deadline per state, each transition run
    from a queue of events, never nested.
*/
#ifndef KG_EXEC_H
#define KG_EXEC_H

#include <stdbool.h>
#include <stdint.h>

#include "kg_opt.h"

typedef struct {
  char **argv;                  /* COMMAND [ARGS...], NULL-terminated (borrowed) */
  const char *ckpt_dir;         /* the run's checkpoints (kg_exec_main: --checkpoints,
                                   else kguard.save's default, never NULL there) */
  bool ckpt_default;            /* ckpt_dir is that default: created by the first
                                   seal, never by kguard (a command that seals
                                   nothing leaves no directory behind)         */
  bool fresh;                   /* start at step 0, not from the run's last
                                   consistent checkpoint (kg_exec_start.h)     */
  int keep;                     /* KGUARD_KEEP of the ranks, 0: not set          */
  int persist_every;            /* KGUARD_PERSIST_EVERY of the ranks, 0: not set */
  const char *state_dir;        /* NULL: kg_paths' default                      */
  const char *name;             /* run name (logs, KGUARD_RUN_ID)               */
  const char *rules_path;       /* NULL: the shipped rules                      */
  int max_restarts;             /* restart budget (kg_policy window)            */
  int64_t stall_ms;             /* no progress after a suspicion = proof; -1 auto
                                   (kg_exec_stall_ms: the job's own pace)        */
  int64_t kill_grace_ms;        /* TERM → KILL after a fault                    */
  int64_t preempt_grace_ms;     /* TERM/USR1 from the scheduler → KILL          */
  int64_t backoff_initial_ms;   /* kg_policy backoff                            */
  /* multi-node (nnodes > 1): see kg_coord.h */
  int nnodes;
  int node_rank;
  int nproc_per_node;           /* ranks per node (default 1)                   */
  bool nproc_given;             /* --nproc-per-node given: kguard starts the ranks
                                   (unless COMMAND is torchrun)                 */
  const char *master_addr;      /* the ranks' MASTER_ADDR (NULL: 127.0.0.1, or the
                                   coordinator's host)                          */
  int master_port;              /* the ranks' MASTER_PORT (0: a free one each
                                   generation)                                  */
  const char *coordinator;      /* HOST:PORT                                    */
  const char *coordinator_bind; /* node 0: the address it listens on (NULL: HOST) */
  const char *secret_file;      /* the job's shared secret (CURVE keys)          */
  bool standby;                 /* keep a warm standby per local rank           */
  const char *standby_imports;  /* what a standby imports (default "torch")      */
  int64_t standby_max_age_ms;   /* an older standby is not used                  */
  int64_t heartbeat_ms;         /* a silent coordinator or node is lost          */
  int64_t join_timeout_ms;      /* every node joins within this of node 0's start */
} kg_exec_config_t;

/*  Fill config with the defaults (budget 3, stall 60 s, kill grace 10 s,
    pre-emption grace 25 s, backoff 1 s, one node, heartbeat 30 s, join
    timeout 600 s). */
void kg_exec_config_default(kg_exec_config_t *config);

/*  Run the command until it is done; returns the process exit code
    documented in kg_exec_rule.h (and 127 when COMMAND cannot be started). */
int kg_exec_run(const kg_exec_config_t *config);

/*  The command's option table (its --help, man page and reference). */
extern const kg_cmd_t kg_exec_cmd;

/*  `kguard exec [options] -- COMMAND [ARGS...]`: parse the arguments, run
    the command under supervision, return the process exit code (kg_exit.h;
    its --help lists the others). argv[0] is "exec". */
int kg_exec_main(int argc, char **argv);

#endif
