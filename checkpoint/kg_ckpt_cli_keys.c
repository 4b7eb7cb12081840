/*  kg_ckpt_cli_keys: `kguard keygen` (the user's signing key pair) and
    `kguard keys` (the public keys whose archives verify: the user's own
    and the trusted ones; kg_keys.h states the store's contract). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <pwd.h>

#include "kg_ckpt_cli.h"
#include "kg_ckpt_cli_maint.h"
#include "kg_error.h"
#include "kg_exit.h"
#include "kg_keys.h"

static const char s_help_keygen[] =
  "usage: kguard keygen [--force]\n"
  "\n"
  "Create the Ed25519 key pair that signs your checkpoints, in $KGUARD_KEY_DIR,\n"
  "else $XDG_CONFIG_HOME/kguard, else ~/.config/kguard (directory 0700, refused\n"
  "if anyone else could write it): ckpt-ed25519.secret (mode 0600) and\n"
  "ckpt-ed25519.public. Sealing creates the pair on first use, so this is\n"
  "optional. When a key exists it is kept and its id printed (exit 0);\n"
  "--force replaces it: archives signed by the old key then verify only once\n"
  "its public key is trusted (`kguard keys import`). Prints 'key ID in DIR'.\n"
  "Share your public key with `kguard keys export`.\n"
  "exit: 0, 100 usage (or a key directory others could write), 111 system.\n";

static const char s_help_keys[] =
  "usage: kguard keys list [--json]\n"
  "       kguard keys export [NAME]\n"
  "       kguard keys import NAME FILE [--replace] [--trusted-dir DIR]\n"
  "       kguard keys remove NAME [--trusted-dir DIR]\n"
  "\n"
  "Checkpoints verify when their signature is by your own key or by a key you\n"
  "trust: a colleague's, or another node's of a multi-node job.\n"
  "  list     your key and every trusted key: id, name, file (--json: an array\n"
  "           of {\"id\", \"name\", \"own\", \"file\"}).\n"
  "  export   print your public key (or trusted key NAME) as one line:\n"
  "             kguard-ckpt-ed25519 BASE64 KEY_ID COMMENT\n"
  "           Give it to whoever should verify your checkpoints.\n"
  "  import   trust the key in FILE (an export line, or a 32-byte\n"
  "           ckpt-ed25519.public; '-' reads stdin) under NAME (1-64 of\n"
  "           A-Z a-z 0-9 . _ -). Importing the same key again changes nothing;\n"
  "           a different key under a taken NAME needs --replace.\n"
  "           `trust` is the same command.\n"
  "  remove   stop trusting NAME: its archives then read as unsigned.\n"
  "Trusted keys live in KEY_DIR/trusted/NAME.pub (KEY_DIR as for keygen);\n"
  "--trusted-dir DIR uses DIR instead (a job's own keys), and verification also\n"
  "reads $KGUARD_TRUSTED_KEYS_DIR when it is set. Every key directory must be\n"
  "yours and writable by nobody else.\n"
  "exit: 0, 100 usage (bad name, bad key file, a key directory others could\n"
  "write), 111 system.\n";

static int
s_usage(const char *cmd, const char *msg, const char *arg)
{
  fprintf(stderr, "kguard %s: %s%s%s (see --help)\n", cmd, msg, arg ? ": " : "",
          arg ? arg : "");
  return KG_EXIT_USAGE;
}

/*  Exit code of a kg_keys failure: the user's to fix (100) or the
    system's (111). */
static int
s_exit_of(int rc)
{
  return rc == KG_EUNSAFEPATH || rc == KG_EUSAGE || rc == KG_EEXISTS || rc == KG_ECKPT_MALFORMED
             || rc == KG_ENOTFOUND || rc == KG_ETOOBIG
           ? KG_EXIT_USAGE : KG_EXIT_SYSTEM;
}

int
kg_ckpt_keygen_main(int argc, char **argv)
{
  bool force = false;
  for (int i = 1; i < argc; i++) {
    if (kg_ckpt_cli_is_help(argv[i])) {
      fputs(s_help_keygen, stdout);
      return KG_EXIT_OK;
    } else if (strcmp(argv[i], "--force") == 0) {
      force = true;
    } else {
      return s_usage("keygen", "unexpected argument", argv[i]);
    }
  }
  char dir[PATH_MAX], why[PATH_MAX + 512] = "";
  int rc = kg_keys_dir(dir, sizeof dir);
  if (rc < 0) {
    fprintf(stderr, "kguard keygen: no key directory: set KGUARD_KEY_DIR (no HOME is known)\n");
    return KG_EXIT_USAGE;
  }
  rc = kg_keys_generate(dir, force, why, sizeof why);
  bool existed = rc == KG_EEXISTS;
  if (rc < 0 && !existed) {
    fprintf(stderr, "kguard keygen: %s\n", why);
    return s_exit_of(rc);
  }
  unsigned char pk[KG_KEYS_PUBLIC_BYTES];
  char id[KG_KEYS_ID_LEN];
  if ((rc = kg_keys_load_public(dir, pk, why, sizeof why)) < 0) {
    fprintf(stderr, "kguard keygen: %s\n", why);
    return s_exit_of(rc);
  }
  kg_keys_id(pk, id);
  printf("key %s in %s%s\n", id, dir, existed ? " (already there: kept; --force replaces it)"
                                              : "");
  return KG_EXIT_OK;
}

/* ---- kguard keys --------------------------------------------------------- */

static int
s_list(int argc, char **argv)
{
  bool json = false;
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--json") == 0)
      json = true;
    else
      return s_usage("keys list", "unexpected argument", argv[i]);
  const kg_keyring_t *ring;
  int code = kg_ckpt_cli_keys("keys list", &ring);
  if (code)
    return code;
  if (json) {
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; arr && i < ring->count; i++) {
      const kg_key_t *k = &ring->keys[i];
      cJSON *o = cJSON_CreateObject();
      cJSON_AddStringToObject(o, "id", k->id);
      if (k->name[0])
        cJSON_AddStringToObject(o, "name", k->name);
      else
        cJSON_AddNullToObject(o, "name");
      cJSON_AddBoolToObject(o, "own", !k->name[0]);
      cJSON_AddStringToObject(o, "file", k->file ? k->file : "");
      cJSON_AddItemToArray(arr, o);
    }
    char *text = arr ? cJSON_Print(arr) : NULL;
    printf("%s\n", text ? text : "[]");
    free(text);
    cJSON_Delete(arr);
    return KG_EXIT_OK;
  }
  if (!ring->own) {
    char dir[PATH_MAX];
    if (kg_keys_dir(dir, sizeof dir) == 0)
      fprintf(stderr, "kguard keys: no key of your own in %s yet (the first seal, or "
              "`kguard keygen`, makes one)\n", dir);
  }
  printf("%-19s  %-20s  %s\n", "KEY", "NAME", "FILE");
  for (size_t i = 0; i < ring->count; i++) {
    const kg_key_t *k = &ring->keys[i];
    printf("%-19s  %-20s  %s\n", k->id, k->name[0] ? k->name : "(yours)",
           k->file ? k->file : "");
  }
  return KG_EXIT_OK;
}

/*  "user@host" of this process, for the export line's comment. */
static void
s_comment(char *buf, size_t len)
{
  struct passwd pw, *res = NULL;
  char tmp[1024];
  struct utsname u;
  const char *user = getpwuid_r(geteuid(), &pw, tmp, sizeof tmp, &res) == 0 && res
                       ? res->pw_name : "?";
  snprintf(buf, len, "%.64s@%.64s", user, uname(&u) == 0 ? u.nodename : "?");
}

static int
s_export(int argc, char **argv)
{
  if (argc > 2)
    return s_usage("keys export", "unexpected argument", argv[2]);
  const char *name = argc == 2 ? argv[1] : NULL;
  if (name && name[0] == '-')
    return s_usage("keys export", "unexpected argument", name);
  const kg_keyring_t *ring;
  int code = kg_ckpt_cli_keys("keys export", &ring);
  if (code)
    return code;
  const kg_key_t *k = NULL;
  for (size_t i = 0; i < ring->count && !k; i++)
    if (name ? strcmp(ring->keys[i].name, name) == 0 : ring->keys[i].name[0] == '\0')
      k = &ring->keys[i];
  if (!k) {
    if (name)
      fprintf(stderr, "kguard keys export: no trusted key named '%s' (see kguard keys list)\n",
              name);
    else
      fprintf(stderr, "kguard keys export: you have no key yet: `kguard keygen` makes one\n");
    return KG_EXIT_USAGE;
  }
  char line[KG_KEYS_LINE_MAX], comment[160];
  if (name)
    snprintf(comment, sizeof comment, "%s", name);
  else
    s_comment(comment, sizeof comment);
  if (kg_keys_format_line(k->pk, comment, line, sizeof line) != 0)
    return KG_EXIT_SYSTEM;
  fputs(line, stdout);
  return KG_EXIT_OK;
}

/*  Read FILE ("-": stdin), at most a few KB. */
static int
s_read_key_file(const char *file, unsigned char pk[KG_KEYS_PUBLIC_BYTES])
{
  FILE *f = strcmp(file, "-") == 0 ? stdin : fopen(file, "rbe");
  if (!f) {
    fprintf(stderr, "kguard keys import: cannot read %s: %s\n", file, strerror(errno));
    return errno == ENOENT || errno == EISDIR ? KG_EXIT_USAGE : KG_EXIT_SYSTEM;
  }
  char buf[KG_KEYS_LINE_MAX * 8];
  size_t n = fread(buf, 1, sizeof buf, f);
  bool err = ferror(f), more = n == sizeof buf;
  if (f != stdin)
    fclose(f);
  char why[256];
  if (err) {
    fprintf(stderr, "kguard keys import: cannot read %s\n", file);
    return KG_EXIT_SYSTEM;
  }
  if (more || kg_keys_parse(buf, n, pk, why, sizeof why) != 0) {
    fprintf(stderr, "kguard keys import: %s: %s\n", strcmp(file, "-") == 0 ? "stdin" : file,
            more ? "too large for a public key" : why);
    return KG_EXIT_USAGE;
  }
  return 0;
}

/*  --trusted-dir DIR, or KEY_DIR/trusted. */
static int
s_trusted_dir(const char *opt, char *buf, size_t len)
{
  if (opt) {
    snprintf(buf, len, "%s", opt);
    return 0;
  }
  if (kg_keys_trusted_dir(NULL, buf, len) != 0) {
    fprintf(stderr, "kguard keys: no key directory: set KGUARD_KEY_DIR (no HOME is known)\n");
    return KG_EXIT_USAGE;
  }
  return 0;
}

static int
s_import(int argc, char **argv)
{
  const char *pos[2] = {NULL, NULL}, *tdir_opt = NULL;
  int npos = 0;
  bool replace = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--replace") == 0)
      replace = true;
    else if (strcmp(argv[i], "--trusted-dir") == 0 && i + 1 < argc)
      tdir_opt = argv[++i];
    else if ((argv[i][0] == '-' && strcmp(argv[i], "-") != 0) || npos == 2)
      return s_usage("keys import", "unexpected argument", argv[i]);
    else
      pos[npos++] = argv[i];
  }
  if (npos != 2)
    return s_usage("keys import", "needs NAME and FILE", NULL);
  if (!kg_keys_name_ok(pos[0]))
    return s_usage("keys import", "NAME must be 1-64 of A-Z a-z 0-9 . _ -, not starting "
                   "with '.'", pos[0]);
  unsigned char pk[KG_KEYS_PUBLIC_BYTES];
  int code = s_read_key_file(pos[1], pk);
  if (code)
    return code;
  char id[KG_KEYS_ID_LEN];
  kg_keys_id(pk, id);
  unsigned char own[KG_KEYS_PUBLIC_BYTES];
  if (kg_keys_load_public(NULL, own, NULL, 0) == 0
      && memcmp(own, pk, KG_KEYS_PUBLIC_BYTES) == 0) {
    printf("key %s is your own: it is trusted already, nothing imported\n", id);
    return KG_EXIT_OK;
  }
  char tdir[PATH_MAX], other[KG_KEYS_NAME_MAX + 1] = "", why[PATH_MAX + 512] = "";
  if ((code = s_trusted_dir(tdir_opt, tdir, sizeof tdir)))
    return code;
  int rc = kg_keys_trust(tdir, pos[0], pk, replace, other, why, sizeof why);
  if (rc < 0) {
    fprintf(stderr, "kguard keys import: %s\n", why);
    return s_exit_of(rc);
  }
  if (rc == 1)
    printf("key %s is trusted as '%s' already: nothing changed\n", id, pos[0]);
  else if (rc == 2)
    printf("key %s is trusted as '%s' already: not added again\n", id, other);
  else
    printf("trusted key %s as '%s' (%s/%s.pub): archives it signs now verify\n", id, pos[0],
           tdir, pos[0]);
  return KG_EXIT_OK;
}

static int
s_remove(int argc, char **argv)
{
  const char *name = NULL, *tdir_opt = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--trusted-dir") == 0 && i + 1 < argc)
      tdir_opt = argv[++i];
    else if (argv[i][0] == '-' || name)
      return s_usage("keys remove", "unexpected argument", argv[i]);
    else
      name = argv[i];
  }
  if (!name)
    return s_usage("keys remove", "needs NAME", NULL);
  if (!kg_keys_name_ok(name))
    return s_usage("keys remove", "no such trusted key", name);
  char tdir[PATH_MAX], file[PATH_MAX + 80];
  int code = s_trusted_dir(tdir_opt, tdir, sizeof tdir);
  if (code)
    return code;
  snprintf(file, sizeof file, "%s/%s.pub", tdir, name);
  if (unlink(file) != 0) {
    if (errno == ENOENT) {
      fprintf(stderr, "kguard keys remove: no trusted key named '%s' (%s does not exist; "
              "see kguard keys list)\n", name, file);
      return KG_EXIT_USAGE;
    }
    fprintf(stderr, "kguard keys remove: cannot remove %s: %s\n", file, strerror(errno));
    return KG_EXIT_SYSTEM;
  }
  printf("removed trusted key '%s' (%s): archives it signed now read as unsigned\n", name, file);
  return KG_EXIT_OK;
}

int
kg_ckpt_keys_main(int argc, char **argv)
{
  if (argc < 2) {
    fputs(s_help_keys, stderr);
    return KG_EXIT_USAGE;
  }
  for (int i = 1; i < argc; i++)
    if (kg_ckpt_cli_is_help(argv[i])) {
      fputs(s_help_keys, stdout);
      return KG_EXIT_OK;
    }
  const char *cmd = argv[1];
  if (strcmp(cmd, "help") == 0) {
    fputs(s_help_keys, stdout);
    return KG_EXIT_OK;
  }
  if (strcmp(cmd, "list") == 0)
    return s_list(argc - 1, argv + 1);
  if (strcmp(cmd, "export") == 0)
    return s_export(argc - 1, argv + 1);
  if (strcmp(cmd, "import") == 0 || strcmp(cmd, "trust") == 0)
    return s_import(argc - 1, argv + 1);
  if (strcmp(cmd, "remove") == 0)
    return s_remove(argc - 1, argv + 1);
  return s_usage("keys", "unknown keys command", cmd);
}
