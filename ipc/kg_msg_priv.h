/*  kg_msg's private interface: the struct and the helpers shared by its
    two files, kg_msg.c (the message: building, frames, identities, parsed
    dicts, header fields) and kg_msg_wire.c (receiving, splitting and
    checking, sending). Nothing outside those two includes it. The arrow is
    one way: kg_msg_wire.c calls into kg_msg.c, never back.
*/
#ifndef KG_MSG_PRIV_H
#define KG_MSG_PRIV_H

#include <stdbool.h>
#include <zmq.h>

#include "kg_msg.h"

#define KG_MSG_INLINE 8
#define KG_DELIM "<IDS|MSG>"
#define KG_DELIM_LEN 9
/*  Serialisations at least this big are handed to zmq without a copy. */
#define KG_ZEROCOPY_MIN 4096

struct kg_msg_t {
  zmq_msg_t *frames;            /*  inline or heap                          */
  size_t nframes, cap;
  bool split;                   /*  layout above is valid                   */
  size_t nident;
  cJSON *json[4];               /*  parsed dict frames, lazily              */
  bool json_tried[4];           /*  parse attempted (and maybe failed)      */
  bool verified;                /*  the received signature is the one this   */
  unsigned char verified_key[KG_SIGNER_KEY_ID_BYTES]; /* key writes (checked,
                                    or trusted: kg_msg_parse_trusted), and
                                    the dict frames are unchanged since      */
  zmq_msg_t inline_frames[KG_MSG_INLINE];
};

/*  An empty message (no frames, not split), or NULL. */
kg_msg_t *kg__msg_alloc(void);

/*  Room for at least want frames: 0 or KG_ENOMEM. */
int kg__msg_reserve(kg_msg_t *self, size_t want);

/*  A view of frames[index] ({NULL, 0} past the end), and of the four dict
    frames of a split message. */
kg_frame_t kg__msg_frame(const kg_msg_t *self, size_t index);
void kg__msg_dict_frames(const kg_msg_t *self, kg_frame_t parts[4]);

#endif
