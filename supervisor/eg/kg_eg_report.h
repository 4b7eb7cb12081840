/*  kg_eg_report: the connection info the gateway waits for after starting
    the launcher: the five kernel ports, the key, transport and signature
    scheme, plus pid, pgid, comm_port and kernel_id, sealed with the
    gateway's RSA key (kg_eg_seal) and sent once to its response address. */
#ifndef KG_EG_REPORT_H
#define KG_EG_REPORT_H

#include "kg_conninfo.h"
#include "kg_eg_args.h"

/*  Seal the report for ci (the frontend connection info) and comm_port
    into *payload_p (the caller wipes and frees it). Done before the kernel
    starts, so a bad or weak --public-key starts nothing: keys under 2048
    bits are refused unless opts->allow_rsa_1024. Returns 0, or the exit
    code (KG_EXIT_USAGE for the key, KG_EXIT_SYSTEM) after logging why. */
int kg_eg_report_seal(const kg_eg_opts_t *opts, const kg_conninfo_t *ci, int comm_port,
                      char **payload_p);

/*  Send payload to response_address (HOST:PORT, already validated) and
    close: the gateway reads until EOF. Gives up after the gateway's own
    launch timeout (30 s). Returns 0 or KG_EXIT_SYSTEM after logging why. */
int kg_eg_report_send(const char *response_address, const char *payload);

#endif
