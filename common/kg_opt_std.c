/*  kg_opt_std: the standard options every command takes (declared in
    kg_opt.h), data only: the parser (kg_opt.c) and the help and man page
    writers (kg_optdoc*.c) read them, and the parser prints its help
    through kg_optdoc, so the table sits below both. */
#include "kg_opt.h"

const kg_opt_t kg_opt_standard[] = {
  {KG_OPT_ID_HELP, 'h', "help", NULL, "print this help and exit", 0},
  {KG_OPT_ID_VERSION, 0, "version", NULL, "print kguard's version and exit", 0},
  {0, 0, NULL, NULL, NULL, 0},
};
