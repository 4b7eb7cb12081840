/*  kg_exec_stepsock: the private channel through which the job's processes
    tell `kguard exec` the step they completed (kguard.step, kguard.save),
    with no text on the job's output.

    A unix datagram socket in the abstract namespace: no file to leave
    behind and no limit from the length of the state directory's path, and
    it reaches a rank however it was started (kguard's ranks, a standby,
    torchrun's workers, which keep the environment but not inherited fds).
    Its name goes to every process of the job in KGUARD_STEP_SOCKET
    ("@" + the name). Anyone on the host can see the name, so a datagram is
    believed only from a process of kguard's own user (the kernel's
    SO_PASSCRED credentials). A datagram's words: "kguard-step GENERATION
    RANK STEP". Reading never blocks; senders never wait (python/kguard). */
#ifndef KG_EXEC_STEPSOCK_H
#define KG_EXEC_STEPSOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KG_EXEC_STEP_ENV "KGUARD_STEP_SOCKET"

typedef struct kg_exec_stepsock_t kg_exec_stepsock_t;

/*  One step report. */
typedef struct {
  int generation;   /* KGUARD_EXEC_GENERATION of the sender                 */
  int rank;         /* its RANK (0 when it has none)                         */
  int64_t step;     /* the step it completed, >= 0                           */
} kg_exec_step_msg_t;

/*  Bind a socket with a fresh random name. *out owns it (destroy). Returns
    0 or a negative kg_error code (the system refused a socket). */
int kg_exec_stepsock_new(kg_exec_stepsock_t **out);

/*  Close and free; *p becomes NULL. NULL is fine. */
void kg_exec_stepsock_destroy(kg_exec_stepsock_t **p);

/*  The fd to watch for reading. */
int kg_exec_stepsock_fd(const kg_exec_stepsock_t *self);

/*  The value of KG_EXEC_STEP_ENV that names it ("@kguard-step-..."),
    borrowed. */
const char *kg_exec_stepsock_env(const kg_exec_stepsock_t *self);

/*  Take the next waiting datagram: 1 a believed report (*msg), 0 nothing
    waiting, -1 one dropped (another user's, or words that are not a
    report): call again. */
int kg_exec_stepsock_recv(kg_exec_stepsock_t *self, kg_exec_step_msg_t *msg);

/*  The words of one datagram (len bytes, no NUL needed) as a report:
    "kguard-step G R S" with G, R, S decimal, G >= 0, R >= 0, S >= 0, an
    optional final newline, nothing else. Pure. */
bool kg_exec_step_parse(const char *buf, size_t len, kg_exec_step_msg_t *msg);

#endif
