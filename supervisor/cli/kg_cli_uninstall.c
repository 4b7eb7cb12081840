/*  kguard uninstall: remove a kernelspec that `kguard install` wrote. */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kg_cli.h"
#include "kg_error.h"
#include "kg_kcheck.h"
#include "kg_kernelspec.h"

enum { O_NAME = 1, O_USER, O_SYSPREFIX, O_PREFIX };

static const kg_opt_t s_opts[] = {
  {O_NAME, 0, "name", "N",
   "the kernelspec to remove (default python3-kguard, the name `kguard install` gives "
   "by default)", 0},
  {O_USER, 0, "user", NULL,
   "only in $JUPYTER_DATA_DIR/kernels or ~/.local/share/jupyter/kernels", 0},
  {O_SYSPREFIX, 0, "sys-prefix", NULL,
   "only in the Python environment's share/jupyter/kernels, as `kguard install "
   "--sys-prefix`: the venv or conda env this kguard was pip-installed in, else "
   "$VIRTUAL_ENV, else $CONDA_PREFIX, else /usr", 0},
  {O_PREFIX, 0, "prefix", "P", "only in P/share/jupyter/kernels", 0},
  {0, 0, NULL, NULL, NULL, 0},
};

static const kg_opt_exit_t s_exits[] = {
  {"0", "removed"},
  {"100", "usage error: no such kernelspec, or one kguard did not write (nothing removed)"},
  {"111", "I/O error (the message names the file)"},
  {NULL, NULL},
};

const kg_cmd_t kg_cli_uninstall_cmd = {
  .name = "uninstall",
  .summary = "remove a kernelspec that `kguard install` wrote",
  .usage = "[--name N] [--user | --sys-prefix | --prefix P]",
  .about = "Remove the kguard kernelspec N: its directory, with the resource files `kguard "
           "install` copied into it. Without --user, --sys-prefix or --prefix, the one Jupyter "
           "would pick, searching as `jupyter kernelspec list` does. A kernelspec that does not "
           "run `kguard kernel` is left alone: remove it with `jupyter kernelspec remove`. "
           "Checkpoints, keys and incident records are never touched.",
  .opts = s_opts,
  .exits = s_exits,
};

static int
s_remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void) st;
  (void) ftw;
  int rc = flag == FTW_DP ? rmdir(path) : unlink(path);
  if (rc != 0) {
    kg_opt_error("cannot remove %s: %s", path, strerror(errno));
    return 1;
  }
  return 0;
}

int
kg_cli_uninstall_main(int argc, char **argv)
{
  const char *name = "python3-kguard", *prefix = NULL;
  int where = -1, places = 0;   /* -1 anywhere, 0 user, 1 sys-prefix, 2 prefix */
  kg_opt_parser_t p;
  kg_opt_init(&p, &kg_cli_uninstall_cmd, argc, argv);
  int id;
  while ((id = kg_opt_next(&p)) != KG_OPT_END) {
    switch (id) {
    case KG_OPT_EXIT: return p.code;
    case KG_OPT_OPERAND: return kg_opt_usage(&p, "unexpected argument '%s' (the name goes "
                                             "after --name)", p.value);
    case O_NAME: name = p.value; break;
    case O_USER: where = 0; places++; break;
    case O_SYSPREFIX: where = 1; places++; break;
    case O_PREFIX: where = 2; prefix = p.value; places++; break;
    }
  }
  if (places > 1)
    return kg_opt_usage(&p, "give at most one of --user, --sys-prefix, --prefix");
  char err[2048] = "";
  if (kg_kernelspec_check_name(name, err, sizeof err) != 0)
    return kg_opt_usage(&p, "--name: %s", err);
  kg_kernelspec_t *spec = NULL;
  int rc;
  const char *sys_prefix = kg_kernelspec_sys_prefix();
  if (where < 0)
    rc = kg_kernelspec_find(name, sys_prefix, &spec, err, sizeof err);
  else {
    char dir[PATH_MAX];
    int n = where == 0 ? (kg_kernelspec_user_dir(dir, sizeof dir) == 0 ? 0 : -1)
            : snprintf(dir, sizeof dir, "%s/share/jupyter/kernels/%s",
                       where == 1 ? sys_prefix : prefix, name);
    if (where == 0 && n == 0 && strlen(dir) + strlen(name) + 2 < sizeof dir)
      strcat(strcat(dir, "/"), name);
    if (n < 0 || (size_t) n >= sizeof dir)
      return kg_opt_usage(&p, "the kernelspec's path is too long");
    rc = kg_kcheck_load(dir, name, &spec, err, sizeof err);
    if (rc == -ENOENT || rc == -ENOTDIR) {
      kg_opt_error("no kernelspec %s: %s/kernel.json does not exist", name, dir);
      return KG_EXIT_USAGE;
    }
  }
  if (rc != 0) {
    kg_opt_error("%s", *err ? err : kg_strerror(rc));
    return rc == KG_ENOKERNEL || rc == KG_EKERNELSPEC || rc == KG_EUSAGE ? KG_EXIT_USAGE
                                                                         : KG_EXIT_SYSTEM;
  }
  if (!kg_kcheck_guarded(spec)) {
    kg_opt_error("%s (%s) is not a kguard kernelspec: nothing removed (`jupyter kernelspec "
                 "remove %s` removes any kernelspec)", name, spec->dir, name);
    kg_kernelspec_destroy(&spec);
    return KG_EXIT_USAGE;
  }
  int code = nftw(spec->dir, s_remove_one, 16, FTW_DEPTH | FTW_PHYS) == 0 ? KG_EXIT_OK
                                                                         : KG_EXIT_SYSTEM;
  if (code == KG_EXIT_OK)
    printf("removed kernelspec %s (%s)\n", name, spec->dir);
  kg_kernelspec_destroy(&spec);
  return code;
}
