/*  kg_msg: one Jupyter wire message.

    Wire layout: identities..., "<IDS|MSG>", signature, header, parent_header,
    metadata, content, buffers... The four dict frames are kept as received,
    byte for byte, so relaying a message to a peer with the same key sends
    the received signature too (no HMAC); to a peer with another key it is
    only re-signed. They are parsed as JSON lazily and only after the
    signature was checked.

    Frames are held as zmq messages: resending a large frame (a binary buffer,
    a big stream) does not copy its bytes.
*/
#ifndef KG_MSG_H
#define KG_MSG_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "kg_ids.h"      /* kg_uuid4, kg_iso_now (headers kg_msg_new writes) */
#include "kg_signer.h"

typedef enum {
  KG_PART_HEADER = 0,
  KG_PART_PARENT,
  KG_PART_METADATA,
  KG_PART_CONTENT
} kg_part_t;

/*  Upper bound on one whole message; larger ones are drained and rejected. */
#define KG_MSG_MAX_BYTES (512u * 1024u * 1024u)
/*  Upper bound on the number of frames of one message. */
#define KG_MSG_MAX_FRAMES 4096u

typedef struct kg_msg_t kg_msg_t;

/*  Receive every frame of one multipart message from socket. flags as for
    zmq_msg_recv (0 or ZMQ_DONTWAIT). On success *msg_p is a new message owned
    by the caller. Returns 0; -EAGAIN if ZMQ_DONTWAIT and nothing is there;
    KG_ETOOBIG if it exceeds the limits above (the rest of it is drained);
    -errno on socket errors. The message is not yet parsed. */
int kg_msg_recv(void *socket, int flags, kg_msg_t **msg_p);

/*  Split a received message: find the delimiter, check there are at least
    five frames after it, and check the signature with signer (before any JSON
    is parsed). Returns 0, KG_ENODELIM, KG_ESHORTMSG, KG_ENOSIG, KG_EBADSIG or
    KG_EREPLAY. Call once, before any accessor below (a second call, or a
    call on a message from kg_msg_new, returns KG_EUSAGE). Until it succeeded
    the accessors below see no identities, parts or buffers. For a raw frame
    sequence with no delimiter (heartbeat) do not call it. */
int kg_msg_parse(kg_msg_t *self, kg_signer_t *signer);

/*  Split a message whose sender holds signer's key and reaches kguard only
    through a private channel (the inner kernel, on ipc sockets in kguard's
    0700 runtime directory), WITHOUT checking its signature: the message is
    forwarded to a peer with that same key (the frontend), which checks it.
    Verifying once, at the receiver, instead of twice: kguard's HMAC pass
    over every byte of the kernel's output was half of its stream CPU.
    kg_msg_send with a signer of that key then forwards the received
    signature frame (shared, not copied) when it is in signing's spelling
    (lowercase hex), so the peer gets the message byte for byte. Never use
    it for a sender kguard acts on without the peer's check (the frontend's
    requests: kg_msg_parse). Returns 0, KG_ENODELIM, KG_ESHORTMSG or
    KG_EUSAGE (already split); the frames are not parsed as JSON. */
int kg_msg_parse_trusted(kg_msg_t *self, const kg_signer_t *signer);


/*  Create a new message to send. The header is made here: a fresh uuid4
    msg_id, msg_type, session, username "kguard", date (ISO 8601, UTC) and
    version "5.3". parent_header is copied (NULL means {}); the content is
    taken (*content_p is set to NULL; NULL means {}). No identities.
    Returns NULL on allocation failure. */
kg_msg_t *kg_msg_new(const char *msg_type, const char *session,
                     const cJSON *parent_header, cJSON **content_p);

/*  Free self and set *self_p to NULL. Safe on NULL. */
void kg_msg_destroy(kg_msg_t **self_p);

/*  A copy of self that shares its frames (reference-counted by zmq, not
    copied) and sends exactly as self would now: the same identities, dict
    frames and buffers, and the received signature when self would forward
    it. Parsed JSON is not copied (the copy parses again if asked). For a
    message that must wait for its socket after the caller has destroyed
    the original (kg_outq). NULL on allocation failure. */
kg_msg_t *kg_msg_share(const kg_msg_t *self);

/*  Identity (routing) frames, before the delimiter. For iopub, the topic. */
size_t kg_msg_ident_count(const kg_msg_t *self);
kg_frame_t kg_msg_ident(const kg_msg_t *self, size_t index);

/*  Replace all identity frames with copies of idents[0..count). Returns 0 or
    KG_ENOMEM. */
int kg_msg_set_idents(kg_msg_t *self, const kg_frame_t *idents, size_t count);

/*  Copy the identity frames of other onto self (for replies). */
int kg_msg_copy_idents(kg_msg_t *self, const kg_msg_t *other);

/*  The raw bytes of one dict frame (borrowed, valid until the message is
    changed or destroyed). */
kg_frame_t kg_msg_part(const kg_msg_t *self, kg_part_t part);

/*  Binary buffers after the content frame. */
size_t kg_msg_buffer_count(const kg_msg_t *self);
kg_frame_t kg_msg_buffer(const kg_msg_t *self, size_t index);

/*  The dict frame parsed as JSON, on first use (borrowed; owned by the
    message). NULL if the frame is not a JSON object. */
cJSON *kg_msg_json(kg_msg_t *self, kg_part_t part);

/*  Replace one dict frame with the serialisation of json (borrowed, not
    kept). Invalidates the parsed copy of that frame, unless json IS that
    parsed copy (edit kg_msg_json's object in place, then pass it back).
    Returns 0, KG_ENOMEM, or KG_EUSAGE on an unparsed message. */
int kg_msg_set_json(kg_msg_t *self, kg_part_t part, const cJSON *json);

/*  Header fields, borrowed from the parsed header; NULL if absent or not a
    string. kg_msg_parent_id is parent_header.msg_id. */
const char *kg_msg_type(kg_msg_t *self);
const char *kg_msg_id(kg_msg_t *self);
const char *kg_msg_session(kg_msg_t *self);
const char *kg_msg_parent_id(kg_msg_t *self);

/*  Check that the header is a JSON object with string msg_id, msg_type and
    session. Returns 0, KG_EBADJSON or KG_EBADHEADER. */
int kg_msg_check_header(kg_msg_t *self);

/*  The 32 bytes of a split message's signature frame (64 hex digits, as
    jupyter_client writes it; either case) into mac: what a replay history
    remembers. 0, or KG_EBADSIG when the frame is not such a signature. */
int kg_msg_mac(const kg_msg_t *self, unsigned char mac[32]);

/*  Send self on socket: identities, delimiter, the signature, the frames,
    the buffers. The signature is the received one, shared not copied, when
    kg_msg_parse checked it with signer's key (kg_signer_same_key), or
    kg_msg_parse_trusted split it for that key, and no dict frame was
    replaced since; otherwise a fresh one made with signer
    over the four dict frames. The message
    stays owned by the caller and can be sent again (frames are shared, not
    copied). flags as for zmq_msg_send (0 or ZMQ_DONTWAIT). Returns 0 or
    -errno (-EINVAL for a message that was never parsed). */
int kg_msg_send(kg_msg_t *self, void *socket, kg_signer_t *signer, int flags);

/*  Total number of frames, for heartbeat echo and raw relays. */
size_t kg_msg_frame_count(const kg_msg_t *self);

/*  Total bytes of all frames as received (identities, delimiter, signature
    and buffers included): what holding the message costs. */
size_t kg_msg_size(const kg_msg_t *self);

/*  Send every frame exactly as received (no parsing, no signing): for the
    heartbeat echo. Returns 0 or -errno. */
int kg_msg_send_raw(kg_msg_t *self, void *socket, int flags);

/*  Observer of socket operations, for event loops that poll the sockets'
    ZMQ_FD themselves. Called in the calling thread after every kg_msg_send /
    kg_msg_send_raw attempt (op KG_MSG_OP_SEND) and every kg_msg_recv (op
    KG_MSG_OP_RECV) with the socket and the call's result. A send may process
    the socket's pending commands and so consume its edge-triggered
    readiness: that socket must be checked (ZMQ_EVENTS) before the loop
    waits again. A receive that returned -EAGAIN leaves nothing unseen: the
    fd signals what arrives later. One observer per process (the
    supervisor's loop); fn NULL removes it. arg is borrowed. */
typedef enum { KG_MSG_OP_SEND, KG_MSG_OP_RECV } kg_msg_op_t;
typedef void (kg_msg_observer_fn)(void *socket, kg_msg_op_t op, int rc, void *arg);
void kg_msg_set_observer(kg_msg_observer_fn *fn, void *arg);

/*  Why a received message was dropped, for counting and rate-limited
    logging: unsigned (KG_ENOSIG), forged (KG_EBADSIG), replayed
    (KG_EREPLAY), expired (KG_EEXPIRED: dated before the replay window),
    reflected (KG_EREFLECTED: the kernel's own message sent back),
    oversized (KG_ETOOBIG), malformed (any other code from kg_msg_parse or
    kg_msg_check_header). kg_msg_drop_names[kind] is the word for a log
    line ("forged"). */
typedef enum {
  KG_DROP_UNSIGNED = 0,
  KG_DROP_FORGED,
  KG_DROP_REPLAYED,
  KG_DROP_EXPIRED,
  KG_DROP_REFLECTED,
  KG_DROP_MALFORMED,
  KG_DROP_OVERSIZED,
  KG_DROP_COUNT
} kg_drop_kind_t;
extern const char *const kg_msg_drop_names[KG_DROP_COUNT];
kg_drop_kind_t kg_msg_drop_kind(int rc);


#endif
