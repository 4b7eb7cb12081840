/*  kg_paths: where kguard keeps things (the shared conventions of the brief).

    State dir: $KGUARD_STATE_DIR, else $XDG_STATE_HOME/kguard, else
    ~/.local/state/kguard (the home from $HOME, else the user's passwd
    entry), else /tmp/kguard-state-<uid>; created 0700 with logs/,
    incidents/, restored/, and refused unless private (kg_safepath.h): a
    state directory someone else owns or can write is never used.
    Data dir: $KGUARD_DATADIR, else <dir of /proc/self/exe>/../share/kguard if
    it exists, else the source tree. Runtime dir: mkdtemp kguard-XXXXXX under
    $XDG_RUNTIME_DIR or /tmp, mode 0700.
*/
#ifndef KG_PATHS_H
#define KG_PATHS_H

#include <stddef.h>

/*  Absolute path of the running kguard binary (from /proc/self/exe) into buf.
    Returns 0 or -errno. */
int kg_paths_exe(char *buf, size_t len);

/*  The user's home directory into buf: $HOME, else the home of the
    effective user's passwd entry when it exists ("/" does not count).
    Returns 0, KG_ENOTFOUND or KG_ETOOBIG. */
int kg_paths_home(char *buf, size_t len);

/*  Resolve the state dir into buf, create it (0700) with its
    subdirectories logs/, incidents/ and restored/, and check that it is
    private (kg_safepath_check_dir). Returns 0, KG_EUNSAFEPATH or -errno,
    with one line in why saying which directory and what to do. */
int kg_paths_state_dir_why(char *buf, size_t len, char *why, size_t whylen);

/*  kg_paths_state_dir_why, logging why (kg_error) on failure. */
int kg_paths_state_dir(char *buf, size_t len);

/*  Resolve the state dir into buf as kg_paths_state_dir does, creating
    nothing: for commands that only read it (`kguard incident list`).
    Returns 0 or -errno. */
int kg_paths_state_dir_name(char *buf, size_t len);

/*  Resolve the data dir into buf (not created). Returns 0, or KG_ENOTFOUND
    if none of the candidates exists (buf then holds the source tree). */
int kg_paths_data_dir(char *buf, size_t len);

/*  True when this kguard runs from an installed tree (its data dir is
    <dir of the executable>/../share/kguard), false in a build tree. */
int kg_paths_installed(void);

/*  How this kguard is installed, in words for people: "wheel (pip)" when
    its install holds share/kguard/install-kind saying "wheel" (written by
    scripts/wheel.py), "Debian package" for a /usr install dpkg lists,
    "cmake --install" for another install, "build tree" otherwise. The
    install's prefix (above bin/ and share/) goes into prefix, "" in a
    build tree. Returns a static string. */
const char *kg_paths_install_kind(char *prefix, size_t len);

/*  The Python environment this kguard is installed in, as pip installs a
    wheel there: its prefix (sys.prefix of that venv or conda env) when the
    install's prefix holds pyvenv.cfg or conda-meta/. Returns 0, or
    KG_ENOTFOUND (not installed in an environment, or a build tree). */
int kg_paths_env_prefix(char *buf, size_t len);

/*  The Python package dir (the one containing kguard/) into buf: "<data>/python".
    Returns 0 or KG_ENOTFOUND. */
int kg_paths_python_dir(char *buf, size_t len);

/*  Create a private 0700 runtime dir "kguard-XXXXXX" under $XDG_RUNTIME_DIR
    (if set and usable) or /tmp, with a "lock" file this process keeps
    write-locked (POSIX record lock, not inherited by children) until it
    ends, and an "owner" file holding its pid. Stale runtime dirs of this
    user whose owner is gone (a kguard killed with SIGKILL, even while it
    was writing "owner") are removed first: those whose lock nobody holds
    (see s_reap_stale in kg_paths.c). Returns 0 or -errno. The caller
    removes the new dir (kg_paths_remove_tree). */
int kg_paths_runtime_dir(char *buf, size_t len);

/*  Remove dir and the files directly inside it (runtime dirs only hold
    sockets and the connection file). Returns 0 or -errno. */
int kg_paths_remove_tree(const char *dir);

/*  mkdir -p with mode for each created component. Returns 0 or -errno. */
int kg_paths_mkdirs(const char *path, unsigned mode);

#endif
