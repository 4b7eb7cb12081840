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
  bool started;               /* every node joined and checked: job running  */
  bool choosing;              /* started, the nodes' listings not all in: the
                                 start's step is not agreed yet             */
  bool stopping;              /* a stop was broadcast for this generation    */
  bool preempted;
  char run[256];              /* the run's name, as node 0 gave it at start  */
  int64_t join_deadline;      /* monotonic ms                                 */
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

/*  The ports a start or restart names: master_port (a fresh one, for
    rank 0 to serve when no store is kept) and store_port (the kept store,
    once it serves). */
void kg_coord_add_ports(kg_coord_s *C, cJSON *msg);

/*  kg_coord_join.c: hello, joined, refused, checked. Returns an exit code
    when the job ends, -1 while it goes on; 0 when type is not one of these
    (*handled false). */
int kg_coord_join_message(kg_coord_s *C, int node, const char *type, const cJSON *msg,
                          bool *handled);
/*  Before every node joined: end the job once the join deadline passed.
    Returns an exit code, or -1. */
int kg_coord_join_timers(kg_coord_s *C, int64_t now);
/*  A connection failed the CURVE handshake (a node with another secret). */
void kg_coord_handshake_failed(kg_coord_s *C, int64_t now);

/*  kg_coord_decide.c: fault, failed, preempted, stopped, done. Same
    returns. */
int kg_coord_run_message(kg_coord_s *C, int node, const char *type, const cJSON *msg);
/*  The start: each node's listing of its ranks' checkpoints of this run
    (a "stopped" message while C->choosing); once every node's is in, the
    start decision (kg_coord_start_decision). Same returns. */
int kg_coord_start_listed(kg_coord_s *C, int node, const cJSON *msg);
/*  A node silent for the heartbeat timeout ends the job. Returns an exit
    code, or -1. */
int kg_coord_check_lost(kg_coord_s *C, int64_t now);

#endif
