/*  kg_safepath: kguard's own directories and files, safe where another
    local user could plant something.

    kguard writes logs, incident records and restored checkpoints under
    predictable names, sometimes as root (services, containers, cron), and
    sometimes in /tmp when nothing else is known. A directory another user
    owns or can write lets that user swap what kguard reads (a checkpoint
    copy, a public key) or redirect what it writes (a symlink at a log's
    name makes an append land in any file the writer can open). So, as ssh
    and gpg do with their directories:

    - a directory kguard keeps its own things in (state, runtime, keys,
      trusted keys, restored copies) must be private: owned by the user
      (root's are accepted too: root can change anything anyway), not
      writable by group or others, and every directory above it owned by
      root or the user and, when group- or world-writable, sticky (as /tmp
      is: nobody can then rename or remove what they do not own). Write
      permission for the owner's private group (named as the owner, its
      primary group, no other member) counts as none, as OpenSSH rules;
    - every file kguard writes is opened through kg_safepath_open: never
      through a symlink at its last component (O_NOFOLLOW), only a regular
      file the user owns with no other hard link, and with exactly the
      asked mode (a wider mode left by an older version is narrowed).

    With the directory private, nobody else can plant anything in it; the
    file checks are the second wall (a mistake of the user's own, a
    directory made before these checks).
*/
#ifndef KG_SAFEPATH_H
#define KG_SAFEPATH_H

#include <stdio.h>
#include <sys/types.h>

/*  Is dir private to this user (see above)? Symbolic links in the path are
    resolved first (realpath) and the real directories are checked, so a
    link the user made to a private directory is fine and a link an
    attacker planted leads to a directory they own, which is refused.
    Returns 0; KG_EUNSAFEPATH when dir or a directory above it could be
    changed by someone else, or -errno (-ENOENT: dir does not exist), with
    one line in why saying which directory, why, and what to do. */
int kg_safepath_check_dir(const char *dir, char *why, size_t whylen);

/*  Create dir when missing (missing parents too; every directory created
    gets mode 0700), then kg_safepath_check_dir. Returns as that does. */
int kg_safepath_make_dir(const char *dir, char *why, size_t whylen);

/*  Open path for writing: O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC plus
    flags (O_APPEND, O_TRUNC, O_EXCL, ...), creating it with mode. Refuses
    (closing it again) anything but a regular file owned by the effective
    user with a single link; an existing file with permissions beyond mode
    is narrowed to mode. Returns the fd, or -errno (-ELOOP: a symbolic link
    at path), or KG_EUNSAFEPATH. */
int kg_safepath_open(const char *path, int flags, mode_t mode);

/*  kg_safepath_open(path, O_APPEND, mode) as a line-buffered stdio stream
    for appending. NULL with errno set (EPERM for KG_EUNSAFEPATH). */
FILE *kg_safepath_fopen_append(const char *path, mode_t mode);

#endif
