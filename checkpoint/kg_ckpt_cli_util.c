/*  kg_ckpt_cli_util: what the `kguard ckpt` command files share
    (contracts in the header). */
#include "kg_ckpt_cli_util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "kg_error.h"
#include "kg_exit.h"
#include "kg_opt.h"

int
kg_ckpt_cli_usage(const char *msg, const char *arg)
{
  fprintf(stderr, "%s: %s%s%s (see %s --help)\n", kg_opt_prog(), msg, arg ? ": " : "",
          arg ? arg : "", kg_opt_prog());
  return KG_EXIT_USAGE;
}

int
kg_ckpt_cli_keys(const kg_keyring_t **out)
{
  static kg_keyring_t *ring;
  static int ring_rc;
  static char why[PATH_MAX + 512];
  if (!ring && ring_rc == 0)
    ring = kg_keyring_load(NULL, &ring_rc, why, sizeof why);
  *out = ring;
  if (ring)
    return KG_EXIT_OK;
  kg_opt_error("%s", why);
  return ring_rc == KG_EUNSAFEPATH || ring_rc == KG_ECKPT_MALFORMED || ring_rc == KG_ETOOBIG
           ? KG_EXIT_USAGE : KG_EXIT_SYSTEM;
}

int
kg_ckpt_cli_need(const char *path, bool dir)
{
  struct stat st;
  if (stat(path, &st) == 0) {
    if (dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode))
      return KG_EXIT_OK;
    kg_opt_error("%s: %s", dir ? "not a directory" : S_ISDIR(st.st_mode)
                                                       ? "a directory, not a file"
                                                       : "not a regular file", path);
    return KG_EXIT_USAGE;
  }
  if (errno == ENOENT || errno == ENOTDIR) {
    kg_opt_error("no such %s: %s", dir ? "directory" : "file", path);
    return KG_EXIT_USAGE;
  }
  kg_opt_error("cannot read %s: %s", path, strerror(errno));
  return KG_EXIT_SYSTEM;
}

int
kg_ckpt_cli_progress(const char *value, kg_ckpt_progress_when_t *when)
{
  if (kg_ckpt_progress_value(value, when) < 0)
    return kg_ckpt_cli_usage("--progress is auto, machine or none", value);
  return 0;
}
