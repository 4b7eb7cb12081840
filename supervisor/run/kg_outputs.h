/*  kg_outputs: turning a cell's iopub messages into nbformat outputs.

    Like nbclient: consecutive stream messages of the same name are merged
    into one output; display_data, execute_result and error become outputs;
    update_display_data rewrites every earlier output (in any cell) shown with
    the same display_id; clear_output empties the cell's outputs, at once or,
    with wait=true, just before the next output arrives.
*/
#ifndef KG_OUTPUTS_H
#define KG_OUTPUTS_H

#include <cjson/cJSON.h>
#include <stddef.h>

typedef struct kg_outputs_t kg_outputs_t;

/*  New collector with no current cell. NULL on allocation failure. */
kg_outputs_t *kg_outputs_new(void);

/*  Free self and set *self_p to NULL. Safe on NULL. */
void kg_outputs_destroy(kg_outputs_t **self_p);

/*  Start collecting into outputs (a JSON array, borrowed: owned by the
    notebook) for cell index. Display ids recorded earlier for this cell are
    forgotten: its old outputs have been replaced. */
void kg_outputs_begin(kg_outputs_t *self, size_t cell, cJSON *outputs);

/*  Apply one iopub message of msg_type with content (borrowed) to the
    current cell. Returns 1 if it changed the outputs, 0 if the message type
    carries no output (status, execute_input, ...) or there is no current
    cell, KG_ENOMEM on allocation failure. */
int kg_outputs_add(kg_outputs_t *self, const char *msg_type, const cJSON *content);

/*  Stop collecting (the cell finished). */
void kg_outputs_end(kg_outputs_t *self);

#endif
