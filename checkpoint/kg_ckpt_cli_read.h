/*  kg_ckpt_cli_read: the `kguard ckpt manifest` and `kguard ckpt gc`
    commands (kg_ckpt_cli.c dispatches to them). Each takes argv with the
    command name first and returns an exit code.
*/
#ifndef KG_CKPT_CLI_READ_H
#define KG_CKPT_CLI_READ_H

/*  `kguard ckpt manifest FILE`: authenticate FILE's manifest (no payload
    byte is read) and print {"manifest": {...}, "manifest_digest": hex,
    "archive_size": N} on stdout; exit 0, a verdict code 1..5, 100, 111. */
int kg_ckpt_cli_manifest(int argc, char **argv);

/*  `kguard ckpt gc CKPT_DIR`: remove temporaries whose writer is gone and
    copies of restored zstd checkpoints; exit 0, 100 usage, 111 system. */
int kg_ckpt_cli_gc(int argc, char **argv);

#endif
