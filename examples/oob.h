/*
 * A minimal out-of-band channel for the examples: one TCP connection that
 * carries packed rv_endpoint blobs (length-prefixed) and one-byte signals.
 * Programs with their own channel (MPI, a key-value store) send the same
 * bytes through it instead.
 */
#ifndef RV_EXAMPLES_OOB_H
#define RV_EXAMPLES_OOB_H

#include <rverbs/rverbs.h>

/* Listen on port ("0": ephemeral); ret_port receives the port chosen. */
int oob_listen(const char *port, int *ret_lfd, int *ret_port);
/* Accept one peer on a listening socket, then close the listener. */
int oob_accept(int lfd, int *ret_fd);
/* Connect to host:port, retrying for up to 10 seconds. */
int oob_connect(const char *host, const char *port, int *ret_fd);
/* Send our endpoint, receive the peer's. */
int oob_exchange(int fd, const rv_endpoint *mine, rv_endpoint *peer);
/* Wait for one completion on cq, busy-polling for up to timeout_ms. */
int oob_wait_completion(rv_cq *cq, rv_wc *wc, int timeout_ms);
/* A one-byte barrier: both sides wait until the other has reached it. */
int oob_barrier(int fd);

#endif
