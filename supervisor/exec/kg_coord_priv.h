/*  kg_coord_priv: the coordinator's state, shared by its files
    (kg_coord.c the process, its sockets and loop; kg_coord_join.c the
    nodes joining the job; kg_coord_decide.c faults and decisions;
    kg_coord_send.c what it says to the nodes). Calls run one way:
    kg_coord.c calls kg_coord_join.c and kg_coord_decide.c, which call
    kg_coord_send.c; none calls back up.
    Not a public interface; the protocol is in kg_coord.h. */
#ifndef KG_COORD_PRIV_H
#define KG_COORD_PRIV_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "kg_coord_keys.h"
#include "kg_coord_states.h"
#include "kg_coord_store.h"
#include "kg_exec_store.h"
#include "kg_loop.h"
#include "kg_policy.h"
#include "kg_ratelog.h"

typedef struct {
  unsigned char id[256];
  size_t id_len;              /* 0: never heard from (or lost)               */
  bool hello;                 /* said hello, was welcomed                    */
  bool joined;                /* sealed its key probe                        */
  bool checked;               /* verified every node's probe                 */
  bool stopped, done;
  bool fresh;                 /* started with --fresh (the start's choice)   */
  int64_t seen_ms;            /* monotonic time of its last message          */
  cJSON *problems;            /* checked: the probes it could not verify     */
  cJSON *report;              /* its fault fields, or NULL                   */
  cJSON *failed;              /* {"code"} when its command failed            */
  cJSON *listing;             /* stopped: {rank: rows} of its ranks, or NULL
                                 when it could not list them                 */
} kg_coord_node_t;

typedef struct kg_coord_s {
  const char *bind, *secret, *ckpt_dir, *state_dir;
  int nnodes, nproc, max_restarts;
  int64_t heartbeat_ms;       /* a node silent this long is lost              */
  int64_t join_timeout_ms;    /* every node has joined within this            */
  kg_coord_keys_t keys;
  void *ctx, *router, *zap, *monitor;
  kg_loop_t *loop;            /* the reactor it serves on (kg_loop)           */
  int code;                   /* the job's exit code, once it is over         */
  kg_coord_node_t *nodes;
  int gen;
  kg_fsm_t *fsm;              /* its life (kg_coord_states.h): the one copy of
                                 its state, and the join deadline (the loop's
                                 ms)                                          */
  bool preempted;             /* a node was pre-empted: the job ends retryable */
  char run[256];              /* the run's name, as node 0 gave it at start  */
  unsigned long handshake_failures;
  kg_ratelog_t *refusals;     /* failed handshakes, logged rate-limited       */
  char nonce[65], nonce_name[80];
  kg_coord_store_t *store;    /* CKPT_DIR/.kguard                            */
  kg_policy_t *policy;
  char last_signature[96];    /* the previous fault's (back-off only for it) */
  const char *store_python;   /* host the ranks' rendezvous store with it     */
  kg_exec_store_t *rstore;    /* the ranks' rendezvous store, or NULL         */
} kg_coord_s;

/*  kg_coord_send.c */
/*  msg to one node (never waits for a node that stopped reading); nothing
    for a node never heard from. msg stays the caller's. */
void kg_coord_send(kg_coord_s *C, int node, const cJSON *msg);
/*  msg to every node. */
void kg_coord_broadcast(kg_coord_s *C, const cJSON *msg);
/*  The decision into the shared directory with the job's MAC (a warning
    when it cannot be written). */
void kg_coord_write_decision(kg_coord_s *C, const cJSON *decision);
/*  End the job for every node: an "end" decision with code and reason,
    broadcast and written. Returns code. */
int kg_coord_end(kg_coord_s *C, int code, const char *reason);

/*  The time now, on the loop's clock (what every handler and the machine
    read: a test injects its own). */
int64_t kg_coord_now(const kg_coord_s *C);

/*  The ports a start or restart names: master_port (a fresh one, for
    rank 0 to serve when no store is kept) and store_port (the kept store,
    once it serves). */
void kg_coord_add_ports(kg_coord_s *C, cJSON *msg);

/*  kg_coord_join.c: hello, joined, refused, checked. Returns an exit code
    when the job ends, -1 while it goes on; 0 when type is not one of these
    (*handled false). Every node checked posts CHECKED. */
int kg_coord_join_message(kg_coord_s *C, int node, const char *type, const cJSON *msg,
                          bool *handled);
/*  Entering CHOOSING: every node is told to start, that is to list its
    ranks' checkpoints of the run and send them (kg_coord_start_listed). */
void kg_coord_join_start(kg_coord_s *C);
/*  The join deadline passed (entering OVER from JOINING): the nodes that
    did not join or check named, the job ended. Returns its exit code. */
int kg_coord_join_timeout(kg_coord_s *C);
/*  A connection failed the CURVE handshake (a node with another secret):
    while nodes join, the join deadline shrinks to a heartbeat timeout. */
void kg_coord_handshake_failed(kg_coord_s *C, int64_t now);

/*  kg_coord_decide.c: fault, failed, preempted, stopped, done. Same
    returns; the first report of a generation posts STOP, a decision that
    restarts the job RESUMED. */
int kg_coord_run_message(kg_coord_s *C, int node, const char *type, const cJSON *msg);
/*  CHOOSING: each node's listing of its ranks' checkpoints of this run
    (its "stopped" message); once every node's is in, the start decision
    is sent and CHOSEN posted. Same returns. */
int kg_coord_start_listed(kg_coord_s *C, int node, const cJSON *msg);
/*  Entering STOPPING: every node is told to stop (by: the node whose
    report stopped the generation). */
void kg_coord_stop_all(kg_coord_s *C, int by);
/*  A node silent for the heartbeat timeout ends the job. Returns an exit
    code, or -1. */
int kg_coord_check_lost(kg_coord_s *C, int64_t now);

#endif
