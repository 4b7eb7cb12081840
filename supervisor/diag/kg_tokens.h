/*  kg_tokens: credentials recognised by their shape, and secret-looking
    environment variables. Pure: text in, positions out.

    Shapes found wherever they stand (a left boundary: not after a letter,
    digit or '_'; the token must end there too):
      hf_ + 30 or more letters/digits               Hugging Face token
      ghp_ gho_ ghu_ ghs_ ghr_ + 30 or more          GitHub token
      github_pat_ + 22 or more letters/digits/_     GitHub fine-grained token
      glpat- + 20 or more                            GitLab token
      sk- + 20 or more letters/digits/_/- (with a digit and a letter)
                                                     OpenAI, Anthropic keys
      xoxa- xoxb- xoxp- xoxo- xoxs- xoxr- + 10 or more  Slack token
      AKIA / ASIA + 16 capitals or digits            AWS access key id
      eyJ....eyJ....sig (three base64url parts of 10 or more)  JWT
      -----BEGIN ... PRIVATE KEY----- ... -----END ...-----    private key
      scheme://user:password@ (or a user part of 16 or more, a token)
                                                     credentials in a URL
      Bearer + 16 or more token characters           HTTP bearer token
    and the value after a secret-looking name, as in `WANDB_API_KEY=...`,
    `aws_secret_access_key = ...`, `"password": "..."`, `token: ...`: a name
    ending in api_key/apikey/api-key, token, secret, secret_key,
    secret_access_key, private_key, client_secret (value: 16 or more token
    characters with a letter and a digit) or password/passwd/passphrase
    (value: 8 or more characters up to a space or quote); the name stays,
    the value goes. So W&B's 40-hex key after WANDB_API_KEY and AWS's
    40-character secret after aws_secret_access_key are found, while a bare
    40-hex git revision or a SHA-256 digest is left alone.
*/
#ifndef KG_TOKENS_H
#define KG_TOKENS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
  size_t from, to;       /*  text[from..to) is the credential               */
  const char *label;     /*  its replacement, e.g. "<hf-token>" (static)     */
} kg_token_match_t;

/*  The first credential in text[0..n) that starts at or after start.
    Returns true and fills m, or false. */
bool kg_tokens_find(const char *text, size_t n, size_t start, kg_token_match_t *m);

/*  Does the variable name[0..len) look like it holds a secret (TOKEN,
    SECRET, PASSWORD, PASSWD, PASSPHRASE, KEY, CREDENTIAL, AUTH, COOKIE,
    PRIVATE, WEBHOOK, SESSION in it, or a _PAT suffix; any case)? */
bool kg_tokens_secret_name(const char *name, size_t len);

/*  Is value worth masking wherever it appears: at least 6 bytes, and not a
    flag or a plain number (true, false, yes, no, on, off, none, null, or
    fewer than 12 digits), which would mask every "false" and "2048" in a
    record? (TOKENIZERS_PARALLELISM=false is no secret.) */
bool kg_tokens_secret_value(const char *value);

#endif
