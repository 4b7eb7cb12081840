/*  kg_cli_incident: the parts of `kguard incident` that read and render
    incident records (diag/kg_incident.h describes the record), shared by
    its list, show and export subcommands. */
#ifndef KG_CLI_INCIDENT_H
#define KG_CLI_INCIDENT_H

#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

/*  One line of `kguard incident list`, from a record (borrowed strings
    point into it or into the struct). */
typedef struct {
  const char *id;
  int64_t when_ms;              /*  fault time, else creation; -1 unknown   */
  char kind[96];                /*  "device-assert (cuda)", "?"             */
  const char *decision;         /*  "restart", "give-up", or "-"            */
  char where[160];              /*  "train.ipynb, cell [7]", "command: ..." */
} kg_incident_row_t;

/*  Fill row from the record j. */
void kg_incident_row(const cJSON *j, kg_incident_row_t *row);

/*  ms since the epoch as local time "YYYY-MM-DD HH:MM:SS" into buf (or
    "?" when ms < 0). */
void kg_incident_local_time(int64_t ms, char *buf, size_t len);

/*  The record j (read from path) rendered for a person on out. */
void kg_incident_show(FILE *out, const cJSON *j, const char *path);

#endif
