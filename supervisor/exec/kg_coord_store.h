/*  kg_coord_store: the coordinator's files in the shared checkpoint
    directory, CKPT_DIR/.kguard/, which anyone who can write CKPT_DIR can
    also reach (a neighbour on shared storage, see docs/SECURITY.md).

    Nothing here follows a symbolic link a neighbour planted: .kguard and
    .kguard/decisions are created 0700 (or must already be directories of
    this user that nobody else can write) and opened with O_NOFOLLOW; every
    file in them is created with O_EXCL relative to the directory's file
    descriptor, and a decision replaces its name with rename, which never
    writes through a link at that name.

    Decisions: each decision the coordinator takes is written as
    decisions/gen-G.json (a restart or give-up that starts generation G) or
    decisions/end-G.json (the job ended during generation G):
      {"decision": "<the decision's JSON text>", "mac": "<64 hex>",
       "mac_alg": "..."}
    with the MAC over the decision's text under the job key
    (kg_coord_keys_mac). kg_coord_store_read_decisions reads them back
    and believes only the files whose MAC verifies with this job's key and
    whose name matches the generation and kind inside: the latest such
    decision tells a coordinator started again (a requeued job) where the
    job stood; every other file is reported and ignored.

    Ownership: the store owns its two directory descriptors.
*/
#ifndef KG_COORD_STORE_H
#define KG_COORD_STORE_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "kg_coord_keys.h"

typedef struct kg_coord_store_t kg_coord_store_t;

/*  Open (creating) CKPT_DIR/.kguard and its decisions directory. Returns
    0 with *self_p set, or KG_EUSAGE with a message naming the path and
    what is wrong (a symbolic link, not a directory, another user's,
    writable by others) in err, or -errno with a message. */
int kg_coord_store_open(const char *ckpt_dir, kg_coord_store_t **self_p, char *err,
                        size_t errlen);

void kg_coord_store_destroy(kg_coord_store_t **self_p);

/*  Create .kguard/NAME holding data (mode 0600, O_EXCL: fails with -EEXIST
    rather than replace anything). Returns 0 or -errno. */
int kg_coord_store_create(kg_coord_store_t *self, const char *name, const void *data,
                          size_t len);

/*  Remove .kguard/NAME (never a directory). Returns 0 or -errno. */
int kg_coord_store_remove(kg_coord_store_t *self, const char *name);

/*  Write decision (its "gen" and "action" say the name: end-G for "end",
    else gen-G) with its MAC, durably. Returns 0 or a negative code. */
int kg_coord_store_write_decision(kg_coord_store_t *self, const kg_coord_keys_t *keys,
                                  const cJSON *decision);

/*  Read every decision file back. Returns the newest valid decision (the
    highest generation; for one generation the end over the restart) as a
    new object the caller owns, or NULL when none is valid; *rejected (when
    not NULL) gets the number of files refused, each logged with its name
    and the reason (a MAC that does not verify with this job's key, a name
    that does not match its content, not a regular file, unreadable). */
cJSON *kg_coord_store_read_decisions(kg_coord_store_t *self, const kg_coord_keys_t *keys,
                                     int *rejected);

/*  Pure. The file name (without directory) of node's key probe for the job
    whose nonce is nonce, into buf: "probe-NONCE-node-N.kgckpt.tar". The node
    seals it; the coordinator removes every node's at the end. */
void kg_coord_store_probe_name(const char *nonce, int node, char *buf, size_t size);

/*  Pure. The file name (without directory) of decision into buf: "gen-G.json"
    or "end-G.json". Returns 0, or KG_EUSAGE when decision has no integer
    "gen" >= 0 or no string "action". */
int kg_coord_store_decision_name(const cJSON *decision, char *buf, size_t size);

#endif
