/*  kguard-eg: `kguard eg-launch`, the Enterprise Gateway kernel launcher.

    Its own executable because it is the only user of libcrypto (the RSA and
    AES the gateway's payload needs): `kguard kernel`, one per notebook,
    never maps it. `kguard eg-launch ARGS` execs `kguard-eg eg-launch
    --kguard PATH ARGS`, PATH being kguard itself, which runs the guarded
    kernel. */
#include <string.h>

#include "kg_exit.h"
#include "kg_eg_launch.h"
#include "kg_error.h"
#include "kg_log.h"

int
main(int argc, char **argv)
{
  kg_log_init("kguard");
  if (argc >= 2 && strcmp(argv[1], "eg-launch") == 0)
    return kg_eg_launch_main(argc - 1, argv + 1);
  kg_error("kguard-eg runs `kguard eg-launch` for kguard; run that instead");
  return KG_EXIT_USAGE;
}
