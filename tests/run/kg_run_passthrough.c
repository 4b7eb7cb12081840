/*  A stand-in for the kguard binary that tests `kguard run`'s client and
    runner against plain ipykernel, without the supervisor: `run` is the real
    kg_run_main; `kernel -f CONN [opts] -- INNER...` does no guarding at all
    and simply becomes the inner kernel, with {connection_file} set to CONN.
    `run` spawns /proc/self/exe, i.e. this program.
*/
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kg_run.h"
#include "kg_log.h"

static int
s_kernel(int argc, char **argv)
{
  const char *conn = NULL;
  int i = 1;
  for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
    if (strcmp(argv[i], "-f") == 0 && i + 1 < argc)
      conn = argv[++i];
    else if (strcmp(argv[i], "--checkpoints") == 0 || strcmp(argv[i], "--state-dir") == 0)
      i++;
  }
  if (!conn || i >= argc - 1) {
    fprintf(stderr, "passthrough: usage: kernel -f CONN [...] -- INNER...\n");
    return 100;
  }
  char **inner = argv + i + 1;
  for (char **a = inner; *a; a++) {
    if (strcmp(*a, "{connection_file}") == 0)
      *a = (char *) conn;
  }
  execvp(inner[0], inner);
  perror("passthrough: exec");
  return 111;
}

int
main(int argc, char **argv)
{
  kg_log_init("kguard-passthrough");
  if (argc >= 2 && strcmp(argv[1], "run") == 0)
    return kg_run_main(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "kernel") == 0)
    return s_kernel(argc - 1, argv + 1);
  fprintf(stderr, "usage: kg_run_passthrough run|kernel ...\n");
  return 100;
}
