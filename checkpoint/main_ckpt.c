/*  kguard-ckpt: the checkpoint commands (`kguard ckpt ...`, `kguard keygen`,
    `kguard keys ...`).

    They live in their own executable so that the long-lived processes
    (`kguard kernel`, one per notebook, and `kguard run`) never map
    libarchive and what it pulls in (libxml2, ICU, nettle and five
    compressors: about 1.7 MiB of resident pages per process). `kguard`
    execs this program for those commands with its own argv, so users,
    scripts and the supervisor keep calling `kguard ckpt ...`. */
#include <string.h>

#include "kg_ckpt_cli.h"
#include "kg_log.h"
#include "kg_opt.h"

int
main(int argc, char **argv)
{
  kg_log_init("kguard");
  kg_log_set_plain(1);   /* one-shot commands: "kguard ckpt seal: ..." */
  if (argc >= 2 && strcmp(argv[1], "ckpt") == 0)
    return kg_ckpt_cli_main(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "keygen") == 0)
    return kg_ckpt_keygen_main(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "keys") == 0)
    return kg_ckpt_keys_main(argc - 1, argv + 1);
  kg_opt_set_prog("kguard-ckpt");
  kg_error("it runs `kguard ckpt ...`, `kguard keygen` and `kguard keys` for kguard; run "
           "those instead");
  return KG_EXIT_USAGE;
}
