/*
 * The stream of a connection: the transmit buffer pushed into the socket (or
 * the same-host ring once our direction uses it), the epoll interest that
 * follows the connection's state, and giving a connection up (graceful close,
 * kill, free). Below tx.c, rx.c and retry.c, which push bytes and drop a
 * connection, and below conn.c, which sets connections up.
 *
 * Runs in the progress thread with sc->lock held, or in a posting or polling
 * thread with q->lock held on an attached connection (flush, update_events).
 * Never blocks: every socket is non-blocking. Never calls tx.c, rx.c or
 * conn.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "drivers/soft/iwarp/fault.h"
#include "drivers/soft/soft.h"

void soft_conn_update_events(struct soft_conn *c)
{
	uint32_t want = 0;
	struct epoll_event ev;

	switch (c->state) {
	case CONN_CONNECTING:
		want = EPOLLOUT;
		break;
	case CONN_PENDING:
		want = 0; /* the initiator waits for our reply; only HUP/ERR matter */
		break;
	case CONN_UP:
		/* A polled stream is read by its poller (soft_conn_poll): no wake-up per frame. */
		/* Held READ responses (tx.c, soft_tx_hold) wait for the
		 * application's answer or their timer, not for room. */
		want = (c->rx_stalled || c->polled ? 0 : EPOLLIN) |
		       (c->tx_len > c->tx_off && !c->out_waited && !c->tx_held ? EPOLLOUT : 0);
		break;
	case CONN_DEAD:
		return;
	default:
		want = EPOLLIN | (c->tx_len > c->tx_off ? EPOLLOUT : 0);
		break;
	}
	if (soft_fault_held(c))
		want &= ~(uint32_t)EPOLLOUT; /* fault.c: nothing may be sent now */
	if (c->ring_tx_on && c->ring_tcp_end <= c->tx_off)
		want &= ~(uint32_t)EPOLLOUT; /* shmring.c: the ring's consumer index, not the socket, frees room */
	if (want == c->events)
		return;
	ev.events = want;
	ev.data.ptr = c;
	if (epoll_ctl(c->sc->epfd, EPOLL_CTL_MOD, c->fd, &ev) == 0)
		c->events = want;
}

bool soft_conn_flush(struct soft_conn *c)
{
	if (soft_fault_held(c))
		return true; /* fault.c: held (delay) or stopped (drop, reset) */
	if (c->ring_tx_on)
		return soft_shmring_flush(c);
	while (c->tx_len > c->tx_off) {
		ssize_t n = send(c->fd, c->tx + c->tx_off, c->tx_len - c->tx_off, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				c->tx_blocked = true;
				break;
			}
			c->tx_off = c->tx_len = 0;
			return false;
		}
		c->tx_off += (size_t)n;
		if (c->qp)
			soft_retry_progress(c->qp); /* the peer takes bytes */
	}
	if (c->tx_off == c->tx_len) {
		c->tx_off = c->tx_len = 0;
		c->tx_blocked = false;
	}
	return true;
}

/* shutdown() first: it acts on the socket, so the peer sees the end even when a
 * fork child still holds a copy of the descriptor. */
void soft_close_socket(int fd)
{
	shutdown(fd, SHUT_RDWR);
	close(fd);
}

void soft_conn_free(struct soft_conn *c)
{
	soft_conn_unhold(c); /* killed while holding (not detached first): the count stays right */
	soft_shmring_free(c);
	soft_shm_release(c);
	if (c->fd >= 0)
		soft_close_socket(c->fd);
	if (c->fd_kept)
		close(c->kept_fd);
	free(c->rx);
	free(c->sleep_buf);
	free(c->tx);
	free(c);
}

/* The stream is no longer read by a poller (its epoll interest is the caller's). */
void soft_conn_unpoll(struct soft_conn *c)
{
	if (c->polled) {
		c->polled = false;
		atomic_fetch_sub_explicit(&c->sc->n_polled, 1, memory_order_relaxed);
	}
	c->out_waited = false; /* EPOLLOUT is the progress thread's again */
}

/* Out of epoll and the live list; freed by the progress thread later. */
void soft_conn_kill(struct soft_conn *c)
{
	struct soft_ctx *sc = c->sc;

	if (c->state == CONN_DEAD)
		return;
	soft_conn_unpoll(c);
	for (struct soft_conn **pp = &sc->conns; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	if (c->ring)
		soft_shmring_drop(c); /* out of the pollers' view before it can be freed */
	epoll_ctl(sc->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	if (atomic_load_explicit(&c->rx_sleep, memory_order_acquire)) {
		/* A waiter sleeps in recv on it: the shutdown ends that recv; the
		 * descriptor stays open until the zombie is freed, so its number
		 * cannot name another file while the waiter still holds it. */
		shutdown(c->fd, SHUT_RDWR);
		c->kept_fd = c->fd;
		c->fd_kept = true;
	} else {
		soft_close_socket(c->fd);
	}
	c->fd = -1;
	c->state = CONN_DEAD;
	if (c->qp) {
		c->qp->conn = NULL;
		c->qp = NULL;
	}
	c->next = sc->zombies;
	sc->zombies = c;
}

bool soft_conn_drain_then_shut(struct soft_conn *c)
{
	if (!soft_conn_flush(c)) {
		soft_conn_kill(c);
		return false;
	}
	if (c->tx_len == 0 && !c->shut_wr) {
		shutdown(c->fd, SHUT_WR);
		c->shut_wr = true;
	}
	return true;
}

void soft_conn_closing(struct soft_conn *c)
{
	soft_conn_unpoll(c);
	memset(&c->place, 0, sizeof(c->place)); /* a WRITE being placed is abandoned with the stream */
	c->state = CONN_CLOSING;
	c->deadline = soft_now_ms() + SOFT_LINGER_MS;
	if (!soft_conn_drain_then_shut(c))
		return;
	c->rx_off = c->rx_len = 0;
	soft_conn_update_events(c);
}

void soft_conn_hold_release(struct soft_ctx *sc, bool gathered)
{
	struct itimerspec off = {{0, 0}, {0, 0}};

	/* Disarmed, or it would wake the progress thread for nothing once per
	 * message (the application's answer took the response along). Not
	 * after gathered WRs (tx.c, soft_tx_post): a stream gathers again at
	 * once, and the timer still armed (hold_armed) fires within
	 * SOFT_HOLD_US of the next hold, so that hold arms nothing. Disarm and
	 * arm cost two timerfd_settime per gathered send(), as many system
	 * calls as the sends themselves (issue #22, tcp4k); left armed, the
	 * timer wakes the progress thread at most once per SOFT_HOLD_US while
	 * a stream gathers, and once for nothing after it. */
	if (atomic_fetch_sub(&sc->n_held, 1) == 1 && !gathered && atomic_exchange(&sc->hold_armed, false))
		timerfd_settime(sc->hold_fd, 0, &off, NULL);
}

void soft_conn_unhold(struct soft_conn *c)
{
	if (!c->tx_held)
		return;
	c->tx_held = false;
	soft_conn_hold_release(c->sc, false);
}

void soft_conn_detach(struct soft_qp *q, bool graceful)
{
	struct soft_conn *c = q->conn;

	if (!c)
		return;
	soft_conn_unhold(c); /* the bytes stay in c->tx: the close flushes them */
	q->conn = NULL;
	c->qp = NULL;
	c->rx_stalled = false;
	if (graceful && c->state == CONN_UP && q->term_pending) {
		/* The socket was too full for tx.c to frame the TERMINATE: it goes last. */
		memmove(c->tx, c->tx + c->tx_off, c->tx_len - c->tx_off);
		c->tx_len -= c->tx_off;
		c->ring_tcp_end = c->ring_tcp_end > c->tx_off ? c->ring_tcp_end - c->tx_off : 0;
		c->tx_off = 0;
		if (SOFT_TXBUF - c->tx_len >= q->term_len) {
			memcpy(c->tx + c->tx_len, q->term, q->term_len);
			c->tx_len += q->term_len;
		}
		q->term_pending = false;
	}
	if (graceful && c->state == CONN_UP && c->ring_tx_on)
		soft_shmring_closing(q, c); /* a TERMINATE the ring has no room for goes over TCP */
	if (graceful && c->state == CONN_UP)
		soft_conn_closing(c);
	else
		soft_conn_kill(c);
}
