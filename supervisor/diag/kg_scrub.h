/*  kg_scrub: remove what identifies a person or a machine from text that is
    about to be shared (a repro request pasted into a public issue). Pure:
    the words to remove are given, nothing is read from the environment.

    What kg_scrub_text does, in this order:
      1. registered secrets (e.g. the values of *TOKEN*, *KEY*, *SECRET*
         variables) are replaced wherever they occur: "<env:NAME>";
         then credentials recognised by their shape, whatever their source
         (kg_tokens.h: Hugging Face, GitHub, OpenAI, Slack and AWS tokens,
         JWTs, private keys, passwords in URLs, the values after
         WANDB_API_KEY=, aws_secret_access_key = ...): "<hf-token>", ...
         (kg_scrub_secrets does this step only: for the incident record);
      2. absolute and ~ paths lose their directories: a path inside a Python
         library dir (site-packages, dist-packages, lib/pythonX.Y) becomes
         "<python-lib>/torch/nn/functional.py" (the part that helps a
         maintainer), any other "<path>/train.py" (the file name stays);
         relative paths (PyTorch's "../aten/src/...") are kept;
      3. registered words (user and host names) are replaced where they stand
         as whole words: "<user>", "<host>";
      4. GPU and MIG UUIDs ("GPU-1b2c...") become "GPU-<uuid>".
*/
#ifndef KG_SCRUB_H
#define KG_SCRUB_H

#include <stddef.h>

typedef struct kg_scrub_t kg_scrub_t;

/*  New scrubber with nothing registered. NULL on allocation failure. */
kg_scrub_t *kg_scrub_new(void);

/*  Free and NULL. Safe on NULL. */
void kg_scrub_destroy(kg_scrub_t **self_p);

/*  Register a secret value replaced anywhere by "<env:NAME>". Values that
    kg_tokens_secret_value rejects (shorter than 6 bytes, flags such as
    "false", plain numbers) are ignored: they would match everywhere.
    0 or KG_ENOMEM. */
int kg_scrub_add_secret(kg_scrub_t *self, const char *name, const char *value);

/*  Register a whole word (user name, host name) and its replacement
    ("<user>"). Words shorter than 2 bytes are ignored. 0 or KG_ENOMEM. */
int kg_scrub_add_word(kg_scrub_t *self, const char *word, const char *replacement);

/*  The scrubbed copy of text (malloc'd, caller frees), NULL on allocation
    failure or text NULL. Counts what it replaced (kg_scrub_count). */
char *kg_scrub_text(kg_scrub_t *self, const char *text);

/*  Step 1 only: registered secrets and credentials by shape; paths, words
    and UUIDs are kept. Same contract as kg_scrub_text. */
char *kg_scrub_secrets(kg_scrub_t *self, const char *text);

/*  How many replacements the scrubber has made so far, per kind: "secret"
    (registered values), "token" (by shape), "path", "word", "uuid" (for
    the report's "removed" list). */
size_t kg_scrub_count(const kg_scrub_t *self, const char *kind);

#endif
