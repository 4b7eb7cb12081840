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
#include "kg_ckpt_cli_util.h"
#include "kg_ckpt_cmds.h"
#include "kg_error.h"
#include "kg_exit.h"
#include "kg_keys.h"
#include "kg_opt.h"

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
  kg_opt_parser_t p;
  kg_opt_init(&p, &kg_keygen_cmd, argc, argv);
  int opt;
  while ((opt = kg_opt_next(&p)) != KG_OPT_END) {
    if (opt == KG_OPT_EXIT)
      return p.code;
    if (opt == KG_OPT_OPERAND)
      return kg_opt_usage(&p, "unexpected argument '%s'", p.value);
    force = true;   /* KG_CKPT_O_FORCE */
  }
  char dir[PATH_MAX], why[PATH_MAX + 512] = "";
  int rc = kg_keys_dir(dir, sizeof dir);
  if (rc < 0) {
    kg_opt_error("no key directory: set KGUARD_KEY_DIR (no HOME is known)");
    return KG_EXIT_USAGE;
  }
  rc = kg_keys_generate(dir, force, why, sizeof why);
  bool existed = rc == KG_EEXISTS;
  if (rc < 0 && !existed) {
    kg_opt_error("%s", why);
    return s_exit_of(rc);
  }
  unsigned char pk[KG_KEYS_PUBLIC_BYTES];
  char id[KG_KEYS_ID_LEN];
  if ((rc = kg_keys_load_public(dir, pk, why, sizeof why)) < 0) {
    kg_opt_error("%s", why);
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
  kg_opt_parser_t p;
  kg_opt_init(&p, &kg_keys_list_cmd, argc, argv);
  p.parent = &kg_keys_cmd;
  int opt;
  while ((opt = kg_opt_next(&p)) != KG_OPT_END) {
    if (opt == KG_OPT_EXIT)
      return p.code;
    if (opt == KG_OPT_OPERAND)
      return kg_opt_usage(&p, "unexpected argument '%s'", p.value);
    json = true;   /* KG_CKPT_O_JSON */
  }
  const kg_keyring_t *ring;
  int code = kg_ckpt_cli_keys(&ring);
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
      kg_opt_error("no key of your own in %s yet (the first seal, or `kguard keygen`, makes "
                   "one)", dir);
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
  const char *name = NULL;
  kg_opt_parser_t p;
  kg_opt_init(&p, &kg_keys_export_cmd, argc, argv);
  p.parent = &kg_keys_cmd;
  int opt;
  while ((opt = kg_opt_next(&p)) != KG_OPT_END) {
    if (opt == KG_OPT_EXIT)
      return p.code;
    if (name)
      return kg_opt_usage(&p, "unexpected argument '%s'", p.value);
    name = p.value;
  }
  const kg_keyring_t *ring;
  int code = kg_ckpt_cli_keys(&ring);
  if (code)
    return code;
  const kg_key_t *k = NULL;
  for (size_t i = 0; i < ring->count && !k; i++)
    if (name ? strcmp(ring->keys[i].name, name) == 0 : ring->keys[i].name[0] == '\0')
      k = &ring->keys[i];
  if (!k) {
    if (name)
      kg_opt_error("no trusted key named '%s' (see kguard keys list)", name);
    else
      kg_opt_error("you have no key yet: `kguard keygen` makes one");
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
    kg_opt_error("cannot read %s: %s", file, strerror(errno));
    return errno == ENOENT || errno == EISDIR ? KG_EXIT_USAGE : KG_EXIT_SYSTEM;
  }
  char buf[KG_KEYS_LINE_MAX * 8];
  size_t n = fread(buf, 1, sizeof buf, f);
  bool err = ferror(f), more = n == sizeof buf;
  if (f != stdin)
    fclose(f);
  char why[256];
  if (err) {
    kg_opt_error("cannot read %s", file);
    return KG_EXIT_SYSTEM;
  }
  if (more || kg_keys_parse(buf, n, pk, why, sizeof why) != 0) {
    kg_opt_error("%s: %s", strcmp(file, "-") == 0 ? "stdin" : file,
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
    kg_opt_error("no key directory: set KGUARD_KEY_DIR (no HOME is known)");
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
  kg_opt_parser_t p;
  kg_opt_init(&p, strcmp(argv[0], "trust") == 0 ? &kg_keys_trust_cmd : &kg_keys_import_cmd,
              argc, argv);
  p.parent = &kg_keys_cmd;
  int opt;
  while ((opt = kg_opt_next(&p)) != KG_OPT_END) {
    switch (opt) {
    case KG_OPT_EXIT: return p.code;
    case KG_CKPT_O_REPLACE: replace = true; break;
    case KG_CKPT_O_TRUSTED_DIR: tdir_opt = p.value; break;
    case KG_OPT_OPERAND:
      if (npos == 2)
        return kg_opt_usage(&p, "unexpected argument '%s'", p.value);
      pos[npos++] = p.value;
      break;
    }
  }
  if (npos != 2)
    return kg_opt_usage(&p, "needs NAME and FILE");
  if (!kg_keys_name_ok(pos[0]))
    return kg_opt_usage(&p, "NAME must be 1-64 of A-Z a-z 0-9 . _ -, not starting with '.': "
                        "%s", pos[0]);
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
    kg_opt_error("%s", why);
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
  kg_opt_parser_t p;
  kg_opt_init(&p, &kg_keys_remove_cmd, argc, argv);
  p.parent = &kg_keys_cmd;
  int opt;
  while ((opt = kg_opt_next(&p)) != KG_OPT_END) {
    switch (opt) {
    case KG_OPT_EXIT: return p.code;
    case KG_CKPT_O_TRUSTED_DIR: tdir_opt = p.value; break;
    case KG_OPT_OPERAND:
      if (name)
        return kg_opt_usage(&p, "unexpected argument '%s'", p.value);
      name = p.value;
      break;
    }
  }
  if (!name)
    return kg_opt_usage(&p, "needs NAME");
  if (!kg_keys_name_ok(name))
    return kg_opt_usage(&p, "no such trusted key: %s", name);
  char tdir[PATH_MAX], file[PATH_MAX + 80];
  int code = s_trusted_dir(tdir_opt, tdir, sizeof tdir);
  if (code)
    return code;
  snprintf(file, sizeof file, "%s/%s.pub", tdir, name);
  if (unlink(file) != 0) {
    if (errno == ENOENT) {
      kg_opt_error("no trusted key named '%s' (%s does not exist; see kguard keys list)", name,
                   file);
      return KG_EXIT_USAGE;
    }
    kg_opt_error("cannot remove %s: %s", file, strerror(errno));
    return KG_EXIT_SYSTEM;
  }
  printf("removed trusted key '%s' (%s): archives it signed now read as unsigned\n", name, file);
  return KG_EXIT_OK;
}

int
kg_ckpt_keys_main(int argc, char **argv)
{
  static int (*const mains[])(int, char **) = {s_list, s_export, s_import, s_remove, s_import};
  kg_opt_parser_t p;
  kg_opt_init(&p, &kg_keys_cmd, argc, argv);
  int i = kg_opt_dispatch(&p);
  if (i < 0)
    return p.code;
  int n;
  char **rest = kg_opt_rest(&p, &n);
  return mains[i](n, rest);
}
