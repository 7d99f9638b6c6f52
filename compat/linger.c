/*
 * Lingering connected QPs: a destroyed soft0 RC or UC QP that was in RTS
 * keeps its connection for a short while before rverbs closes it, as
 * SO_LINGER keeps a TCP connection.
 *
 * Why: soft0 completes an RC SEND or WRITE at the sender once the responder
 * confirmed it over the connection (docs/software-device.md), where a NIC
 * acknowledges in hardware before the receiver's program even polls, and a
 * UC one once it is framed, where a NIC has put it on the wire. A program
 * that destroys its QP right after its last completion (every
 * ibv_*_pingpong does, then exits) would otherwise take the connection, or
 * the frames still in soft0's buffers, away before the peer's last
 * operations are confirmed or its own last ones delivered, and the peer
 * would see them fail. The QP is closed at the deadline, or earlier when something it
 * depends on (its CQs, SRQ, PD, the context) is destroyed: those calls wait
 * for what remains of the linger first. Never on the data path.
 */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "compat.h"

#define LINGER_MS 250

struct compat_linger {
	rv_qp *qp;
	uint64_t deadline_ms;
	struct compat_linger *next;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void close_qp(rv_qp *qp)
{
	rv_qp_close(qp);
	rv_qp_unref(qp);
}

bool compat_linger_qp(struct compat_ctx *cc, rv_qp *qp, int qp_type)
{
	struct compat_linger *l;

	if ((qp_type != IBV_QPT_RC && qp_type != IBV_QPT_UC) || rv_qp_state_of(qp) != RV_QPS_RTS)
		return false;
	l = malloc(sizeof(*l));
	if (!l)
		return false; /* then it closes at once, as without the linger */
	l->qp = qp;
	l->deadline_ms = now_ms() + LINGER_MS;
	pthread_mutex_lock(&cc->lock);
	l->next = cc->lingering;
	cc->lingering = l;
	pthread_mutex_unlock(&cc->lock);
	return true;
}

void compat_linger_reap(struct compat_ctx *cc, bool wait)
{
	struct compat_linger *l, **pp, *done = NULL;
	uint64_t latest = 0;

	pthread_mutex_lock(&cc->lock);
	for (l = cc->lingering; l; l = l->next)
		if (l->deadline_ms > latest)
			latest = l->deadline_ms;
	pthread_mutex_unlock(&cc->lock);
	if (!latest)
		return;
	if (wait) {
		uint64_t now = now_ms();

		if (latest > now)
			usleep((useconds_t)(latest - now) * 1000);
	}
	pthread_mutex_lock(&cc->lock);
	for (pp = &cc->lingering; (l = *pp);) {
		if (wait || l->deadline_ms <= now_ms()) {
			*pp = l->next;
			l->next = done;
			done = l;
		} else {
			pp = &l->next;
		}
	}
	pthread_mutex_unlock(&cc->lock);
	while ((l = done)) {
		done = l->next;
		close_qp(l->qp);
		free(l);
	}
}
