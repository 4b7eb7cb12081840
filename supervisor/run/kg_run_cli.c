/* STUB: replaced by the module's owner. */
#include <stdio.h>
#include "kg_cli.h"
int
kg_run_main(int argc, char **argv)
{
  fprintf(stderr, "kguard: %s is not implemented yet\n", argv[0]);
  return KG_EXIT_SYSTEM;
}
