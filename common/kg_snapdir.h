/*  kg_snapdir: the memory directory that holds a run's in-memory snapshots
    (kguard.snapshot), owned by the kguard process that supervises the
    training process.

    Snapshots are ordinary sealed archives written on tmpfs, so they outlive
    the rank or kernel that took them (the reason they exist: a faulted
    process is restarted from memory) but are bounded by the life of the
    kguard that owns them. The owner holds an exclusive flock on its
    directory for as long as it lives; the lock dies with it, however it
    dies. A new owner therefore removes every directory whose lock it can
    take: the snapshots of a kguard that is gone (killed, a rebooted
    container) are never restored, and their memory is given back. What such
    a run needs then comes from disk, as after any restart of kguard.

    Layout: BASE/kguard-<uid>/<run>.<pid>, BASE = $KGUARD_SNAPSHOT_BASE, else
    /dev/shm. kguard-<uid> is created 0700 and must be the user's own,
    private directory (BASE is usually world-writable: somebody else's
    directory under our name is refused, never used).
*/
#ifndef KG_SNAPDIR_H
#define KG_SNAPDIR_H

#include <stddef.h>

typedef struct _kg_snapdir_t kg_snapdir_t;

/*  BASE: $KGUARD_SNAPSHOT_BASE when set and not empty, else "/dev/shm"
    (borrowed: the environment's string or a constant). One answer for the
    directory kg_snapdir_new uses and the one `kguard doctor` judges. */
const char *kg_snapdir_base(void);

/*  Remove the stale directories under BASE/kguard-<uid> (see above), then
    create this process's, locked. run names it (bytes other than
    [A-Za-z0-9._-] become _, at most 64 kept). Returns the new directory
    (caller destroys), or NULL with why filled: BASE missing or not a
    directory, kguard-<uid> not private or not the user's, no space. */
kg_snapdir_t *kg_snapdir_new(const char *run, char *why, size_t whysize);

/*  The directory's absolute path (owned by self). */
const char *kg_snapdir_path(const kg_snapdir_t *self);

/*  kg_snapdir_new for a supervisor (kguard exec, the kernel's), saying
    what the user must know, each line prefixed with who ("exec: " or ""):
    a warning when there is no memory (snapshots then raise; kguard.save
    still works), a notice when a dead kguard's snapshots were removed (a
    run it supervised continues from disk). Returns the directory or NULL. */
kg_snapdir_t *kg_snapdir_open(const char *run, const char *who);

/*  How many stale directories kg_snapdir_new removed, and the pid in the
    name of one of them (0 when none): said once at start, because a run
    that resumes from disk instead of memory should say why. */
size_t kg_snapdir_reaped(const kg_snapdir_t *self, long *one_pid);

/*  Remove the directory and everything in it (the snapshots are of no use
    once their owner is gone), release the lock, free, and NULL *p. */
void kg_snapdir_destroy(kg_snapdir_t **p);

#endif
