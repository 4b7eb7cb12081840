/*  kg_runspec: finding and reading a kernelspec for `kguard run`.

    Looks for kernels/NAME/kernel.json in jupyter_client's order: each
    directory of $JUPYTER_PATH, then $JUPYTER_DATA_DIR (else
    ~/.local/share/jupyter), then /usr/local/share/jupyter and
    /usr/share/jupyter. Names match exactly, then case-insensitively (as
    jupyter_client lower-cases them).

    (The supervisor's `kguard install` has its own kernelspec writer; this
    class only reads, for the runner.)
*/
#ifndef KG_RUNSPEC_H
#define KG_RUNSPEC_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct {
  char *name;                   /*  the kernel's name (directory name)     */
  char *path;                   /*  the kernel.json that was read          */
  char **argv;                  /*  NULL-terminated, argc entries          */
  size_t argc;
  cJSON *env;                   /*  the "env" object, or NULL              */
  char *display_name;           /*  may be NULL                            */
  bool is_kguard;               /*  argv[1] is "kernel": already a kguard
                                    wrapper, launched as it is             */
} kg_runspec_t;

/*  Find and read the kernelspec called name. On success *spec_p is new and
    owned by the caller. Returns 0; KG_ENOKERNEL if no directory has it;
    KG_EKERNELSPEC if its kernel.json is unreadable or malformed (no argv
    list of strings, env not an object of strings); KG_ENOMEM. A message
    naming the problem (and, for KG_ENOKERNEL, the directories searched) is
    written into err. */
int kg_runspec_find(const char *name, kg_runspec_t **spec_p, char *err, size_t errlen);

/*  Free self and set *self_p to NULL. Safe on NULL. */
void kg_runspec_destroy(kg_runspec_t **self_p);

#endif
