/*  kg_jsonscan: reading members of a large JSON object in place, without a
    second whole copy of it.

    A stream message's content ({"name": "stdout", "text": "..."}) can be a
    hundred MB or more (ipykernel batches a burst of output into one
    message); cJSON would decode all of it into a second buffer just so the
    classifier can read it once. Here the top-level members are only
    delimited (keys and non-string values are decoded by cJSON; a string
    value is skipped escape by escape), and one string value is then decoded
    in bounded pieces, each by cJSON. Decoding stays cJSON's; this file only
    finds where values begin and end, and cuts a string between escapes.

    Input is outside bytes: anything malformed is KG_EBADJSON, never an
    assert, and no read goes past len.
*/
#ifndef KG_JSONSCAN_H
#define KG_JSONSCAN_H

#include <stdbool.h>
#include <stddef.h>

#include "kg_signer.h"   /* kg_frame_t */

/*  obj[0..len) must be one JSON object (whitespace around it allowed).
    For each keys[i], spans[i] is set to the raw text of the value of the
    FIRST top-level member with that name (as cJSON_GetObjectItem finds it),
    or {NULL, 0} when there is none; spans point into obj. Returns 0, or
    KG_EBADJSON when obj is not an object whose members can be delimited
    (string values are delimited, not validated: kg_jsonscan_string_pieces
    checks their escapes), or KG_ENOMEM. */
int kg_jsonscan_members(const char *obj, size_t len, const char *const *keys, size_t nkeys,
                        kg_frame_t *spans);

/*  Called with each decoded piece (NUL-terminated; len is strlen: a NUL,
    raw or \u0000, ends the piece's text as it ends cJSON's valuestring,
    but the next piece goes on after it, where a whole cJSON decoding
    would have lost the rest of the string). A nonzero return stops the
    walk and is returned. */
typedef int (kg_jsonscan_piece_fn)(const char *text, size_t len, void *arg);

/*  value: the raw text of a JSON string value, quotes included (a span
    from kg_jsonscan_members). Decodes it in consecutive pieces of at most
    max_raw raw bytes each (at least 16; a piece never splits an escape
    sequence or a surrogate pair) and calls fn on each, in order; an empty
    string gives no call. Returns 0; KG_EBADJSON when value is not a JSON
    string or a piece has an escape cJSON rejects (the pieces before it were
    delivered); KG_ENOMEM; or fn's nonzero return. Memory: one buffer of
    max_raw + 3 bytes and one decoded piece at a time. */
int kg_jsonscan_string_pieces(kg_frame_t value, size_t max_raw, kg_jsonscan_piece_fn *fn,
                              void *arg);

/*  Asked whether whole lines of a string may go undecoded: raw is the
    JSON text of those lines (len bytes, escapes included, no quotes), each
    ending with a newline escape, every escape among them a short one
    (\" \\ \b \f \n \r \t): so a text free of quotes, backslashes and
    control characters occurs in the decoded lines only where it occurs in
    raw as it is. True: skip them. */
typedef bool (kg_jsonscan_skip_fn)(const char *raw, size_t len, void *arg);

/*  A stream message's content frame: *is_stderr tells whether its "name"
    is "stderr", and its "text" is decoded in pieces as
    kg_jsonscan_string_pieces does (without a whole decoded copy). With
    skip (may be NULL), the text's whole lines (from after its first
    newline to after its last) are first offered to skip when their escapes
    are all short ones; if skip says yes, fn is given only the text before
    and after them (the first newline included), which is what a reader of
    lines needs when none of those lines matter. Returns 0; KG_ENOTFOUND
    when "text" is absent or not a string (no call); KG_EBADJSON;
    KG_ENOMEM; or fn's nonzero return. The same arg goes to fn and skip. */
int kg_jsonscan_stream(kg_frame_t content, size_t max_raw, bool *is_stderr,
                       kg_jsonscan_piece_fn *fn, kg_jsonscan_skip_fn *skip, void *arg);

/*  Why a parser stopped at byte off of text (len bytes): the nesting depth
    there, counting the [ and { not yet closed outside strings (a string
    left open or a bad escape ends the count where it starts). cJSON refuses
    documents nested deeper than CJSON_NESTING_LIMIT (1000) and says only
    where it stopped; with this the message can say "nested too deeply"
    instead of "syntax error". off past len counts to len. */
size_t kg_jsonscan_depth_at(const char *text, size_t len, size_t off);

#endif
