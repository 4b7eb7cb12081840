/*  kg_envp: building a child process's environment, a heap-owned
    NULL-terminated array of "NAME=value" strings (what execve takes).
    Shared by the kernel's environment (supervisor/kernel/kg_sup_kenv.c) and the
    command's environment of `kguard exec` (supervisor/exec/kg_exec_env.c).
    The caller owns the array and every string in it, and frees them. */
#ifndef KG_ENVP_H
#define KG_ENVP_H

#include <stdbool.h>
#include <stddef.h>

/*  Append "name=value" to *env (n entries, alloc slots; *env may start
    NULL with n = alloc = 0), growing it and keeping it NULL-terminated.
    Returns 0, or -1 on allocation failure (*env unchanged but valid). */
int kg_envp_push(char ***env, size_t *n, size_t *alloc, const char *name, const char *value);

/*  A heap-owned NULL-terminated copy of the n strings words (an argv or an
    environment), or NULL on allocation failure (nothing left allocated). */
char **kg_envp_copy(const char *const *words, size_t n);

/*  Free a NULL-terminated array and every string in it; *strv_p becomes
    NULL. Safe on NULL and on *strv_p NULL. */
void kg_envp_free(char ***strv_p);

/*  True if entry ("NAME=value") names one of names (a NULL-terminated list). */
bool kg_envp_names_one_of(const char *entry, const char *const *names);

#endif
