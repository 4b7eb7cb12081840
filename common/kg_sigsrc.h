/*  kg_sigsrc: signals as events, through a signalfd (skalibs' selfpipe).

    SIGCHLD, SIGINT, SIGTERM, SIGHUP and SIGQUIT are blocked with
    sigprocmask and read from a signalfd in the event loop. Create it BEFORE
    zmq_ctx_new, so libzmq's I/O threads inherit the mask and no signal is
    delivered to them. SIGPIPE is ignored (a closed pipe is a write error).
*/
#ifndef KG_SIGSRC_H
#define KG_SIGSRC_H

typedef struct kg_sigsrc_t kg_sigsrc_t;

/*  Block the signals and open the signalfd (non-blocking, close-on-exec).
    Returns NULL with errno set on failure. */
kg_sigsrc_t *kg_sigsrc_new(void);

/*  Close the fd and restore the previous signal mask. Sets *self_p to NULL. */
void kg_sigsrc_destroy(kg_sigsrc_t **self_p);

/*  The fd to poll for input. */
int kg_sigsrc_fd(const kg_sigsrc_t *self);

/*  Read one pending signal. Returns its number, 0 if none is pending, or
    -errno. */
int kg_sigsrc_read(kg_sigsrc_t *self);

#endif
