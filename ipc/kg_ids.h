/*  kg_ids: the ids and timestamps the Jupyter protocol writes in headers
    (msg_id, session: uuid4; date: ISO 8601 UTC with microseconds). */
#ifndef KG_IDS_H
#define KG_IDS_H

/*  Write a new uuid4 string (36 characters and a NUL) into out. */
void kg_uuid4(char out[37]);

/*  Write the current UTC time as "2026-12-02T17:03:04.123456Z" into out. */
void kg_iso_now(char out[32]);

#endif
