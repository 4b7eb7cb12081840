/*  kg_coord: the multi-node coordinator of `kguard exec`, and the node's
    link to it.

    One `kguard exec --nnodes N --node-rank R --coordinator HOST:PORT
    --secret FILE --checkpoints SHARED_DIR -- torchrun ...` per node. Node 0
    starts the coordinator as its own process (`kguard exec
    --serve-coordinator ...`), outside every tree kguard stops, so a fault
    never takes it down. It binds a ZeroMQ ROUTER on HOST:PORT as a CURVE
    server; each node's kguard connects a DEALER as a CURVE client (keys
    from kg_coord_keys; a ZAP handler admits only the job's node key).

    Messages: one frame of JSON, "type" first.
      node → coord  hello {node, host}          at start
                    fault {node, host, family, line, fault_ms, last_step,
                           signature}            a proven sticky fault here
                    failed {node, status}       the command failed, no sticky
                    preempted {node}            a scheduler's signal here
                    stopped {node, gen, report, listing, run, fresh}
                           this node's tree is gone (report = the fault's
                           fields, or null), or, after start, nothing ran
                           yet; listing = {rank: rows} of its ranks' archives
                           of run `run` (null: it could not list them);
                           fresh: started with --fresh
                    done {node}                 the command succeeded here
      coord → node  welcome {gen, nonce}        the node must find the file
                           .kguard/nonce-<nonce> holding the nonce in its own
                           --checkpoints, else it refuses multi-node mode (its
                           directory is not the one the coordinator sees)
                    start {gen, master_port}    every node joined: list the
                           ranks' checkpoints, send them (stopped), wait
                    stop {gen, by}              stop the tree, report
                    decision {gen, action: "restart"|"give-up"|"end",
                           step, archives {rank: path}, quarantine {rank:
                           sealed_ms}, incident, code, reason,
                           root {node, host, family, line}}
                           start: true marks the start's choice (no fault:
                           no root, no incident file, not written below)
    Ranks' checkpoints: SHARED_DIR/rank-R/ (kguard.save with
    KGUARD_CKPT_DIR set per rank), listed with `kguard ckpt list --json`.
    The decision, with a MAC from the job's key, is also written to
    SHARED_DIR/.kguard/decisions/gen-N.json.
*/
#ifndef KG_COORD_H
#define KG_COORD_H

#include "kg_exec.h"

/*  `kguard exec --serve-coordinator --bind HOST:PORT --nnodes N
    --nproc-per-node P --secret FILE --checkpoints DIR --state-dir DIR
    --max-restarts N`: run the coordinator until the job ends. Returns the
    process exit code. */
int kg_coord_main(int argc, char **argv);

#endif
