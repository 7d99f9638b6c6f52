/*
 * Fault injection on the software device: lose, corrupt, delay or reset the
 * frames (FPDUs) a context sends, so that applications can test their error
 * paths (rverbs/soft.h, docs/software-device.md).
 *
 * Sources: rv_soft_fault_inject (per context or per QP) and, when a context
 * opens, the environment variable RVERBS_SOFT_FAULT, a comma-separated list:
 *   drop=N  corrupt=N  reset[=N]  delay=MS[/N]  after=K
 * (after=K lets the first K frames pass untouched; delay without /N applies
 * to every frame).
 *
 * Hooks (one line each): tx.c calls soft_fault_tx() on every FPDU it frames;
 * stream.c skips sending and EPOLLOUT while soft_fault_held(); conn.c's
 * timers release delayed streams (restarting transmission is a call into
 * tx.c, above this file); a datagram transport asks soft_fault_dgram_lost().
 *
 * What each fault means on an RC stream (iWARP over TCP cannot retransmit a
 * lost FPDU, and sending what follows a lost one would leave a gap):
 * - drop: the frame is not sent and the stream stops there (fault_stopped);
 *   the requester's retry timer (retry.c) then fails the outstanding work with
 *   RETRY_EXC_ERR after the bound timeout/retry_cnt imply, as a NIC that loses
 *   every retry would;
 * - corrupt: one bit flips after the CRC was computed, so the receiver's CRC
 *   check fails and it TERMINATEs (rx.c);
 * - delay: the stream holds (fault_hold) until the delay is over;
 * - reset: the frame is not sent; the socket is disconnected with a TCP RST
 *   (connect(AF_UNSPEC), which the progress thread then sees as a reset).
 * On a datagram (UD) transport, drop loses the datagram silently and corrupt
 * flips a bit; delay and reset do not apply.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "drivers/soft/iwarp/fault.h"
#include "drivers/soft/soft.h"

/* Take one frame from a counter if it is not 0. */
static bool take(_Atomic uint32_t *n)
{
	uint32_t v = atomic_load_explicit(n, memory_order_relaxed);

	while (v) {
		if (atomic_compare_exchange_weak_explicit(n, &v, v - 1, memory_order_relaxed,
							  memory_order_relaxed))
			return true;
	}
	return false;
}

static void add(_Atomic uint32_t *n, uint32_t count)
{
	uint32_t v = atomic_load_explicit(n, memory_order_relaxed), sum;

	do
		sum = v > UINT32_MAX - count ? UINT32_MAX : v + count;
	while (!atomic_compare_exchange_weak_explicit(n, &v, sum, memory_order_relaxed, memory_order_relaxed));
}

static void clear(struct soft_fault *f)
{
	atomic_store(&f->skip, 0);
	atomic_store(&f->reset, 0);
	atomic_store(&f->drop, 0);
	atomic_store(&f->corrupt, 0);
	atomic_store(&f->delay, 0);
}

static void arm(struct soft_fault *f, uint32_t kind, uint32_t count, uint32_t delay_ms)
{
	switch (kind) {
	case RV_SOFT_FAULT_DROP:
		add(&f->drop, count);
		break;
	case RV_SOFT_FAULT_CORRUPT:
		add(&f->corrupt, count);
		break;
	case RV_SOFT_FAULT_RESET:
		add(&f->reset, count);
		break;
	case RV_SOFT_FAULT_DELAY:
		atomic_store(&f->delay_ms, delay_ms);
		add(&f->delay, count);
		break;
	default:
		clear(f);
		return;
	}
	atomic_store(&f->armed, true);
}

int soft_fault_inject(struct rv_context *ctx, struct rv_qp *qp, uint32_t kind, uint32_t count,
		      uint32_t delay_ms)
{
	struct soft_ctx *sc = ctx->drv_ctx;

	arm(qp ? &((struct soft_qp *)qp->drv_qp)->fault : &sc->fault, kind, count, delay_ms);
	return 0;
}

/* "N" of "key=N": a decimal number within [lo, hi]. */
static bool number(const char *s, size_t len, uint32_t lo, uint32_t hi, uint32_t *out)
{
	uint64_t v = 0;

	if (len == 0 || len > 10)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v < lo || v > hi)
		return false;
	*out = (uint32_t)v;
	return true;
}

static bool parse_item(struct soft_fault *f, const char *s, size_t len)
{
	const char *eq = memchr(s, '=', len);
	size_t klen = eq ? (size_t)(eq - s) : len;
	const char *v = eq ? eq + 1 : s + len;
	size_t vlen = (size_t)(s + len - v);
	uint32_t n, ms;

#define KEY(k) (klen == sizeof(k) - 1 && memcmp(s, k, klen) == 0)
	if (KEY("reset") && !eq) {
		arm(f, RV_SOFT_FAULT_RESET, 1, 0);
		return true;
	}
	if (!eq)
		return false;
	if (KEY("after"))
		return number(v, vlen, 0, UINT32_MAX - 1, &n) && (atomic_store(&f->skip, n), true);
	if (KEY("delay")) {
		const char *slash = memchr(v, '/', vlen);
		size_t mlen = slash ? (size_t)(slash - v) : vlen;
		if (!number(v, mlen, 1, 60000, &ms))
			return false;
		n = UINT32_MAX; /* every frame */
		if (slash && !number(slash + 1, vlen - mlen - 1, 1, 1000000, &n))
			return false;
		arm(f, RV_SOFT_FAULT_DELAY, n, ms);
		return true;
	}
	if (!number(v, vlen, 1, 1000000, &n))
		return false;
	if (KEY("drop"))
		arm(f, RV_SOFT_FAULT_DROP, n, 0);
	else if (KEY("corrupt"))
		arm(f, RV_SOFT_FAULT_CORRUPT, n, 0);
	else if (KEY("reset"))
		arm(f, RV_SOFT_FAULT_RESET, n, 0);
	else
		return false;
	return true;
#undef KEY
}

int soft_fault_env(struct soft_ctx *sc)
{
	const char *env = getenv("RVERBS_SOFT_FAULT"), *p;

	if (!env || !*env)
		return 0;
	for (p = env; *p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (!parse_item(&sc->fault, p, len)) {
			clear(&sc->fault);
			atomic_store(&sc->fault.armed, false);
			return rv_err(EINVAL, "rv_context_new", "RVERBS_SOFT_FAULT=\"%s\": cannot read \"%.*s\"; "
				      "expected a comma-separated list of drop=N, corrupt=N, reset or reset=N, "
				      "delay=MS or delay=MS/N, after=K (N 1..1000000, MS 1..60000)",
				      env, (int)len, p);
		}
		p += len;
		if (*p == ',')
			p++;
	}
	rv_log(RV_LOG_WARN, "soft0: RVERBS_SOFT_FAULT=\"%s\": this context injects faults into the frames "
	       "it sends", env);
	return 0;
}

enum fault_action { FAULT_NONE, FAULT_RESET, FAULT_DROP, FAULT_CORRUPT, FAULT_DELAY };

/* The QP's own faults first, then the context's. *ms: the delay. */
static enum fault_action next_action(struct soft_qp *q, uint32_t *ms)
{
	struct soft_fault *fs[2] = {&q->fault, &q->sc->fault};

	for (int i = 0; i < 2; i++) {
		struct soft_fault *f = fs[i];

		if (!atomic_load_explicit(&f->armed, memory_order_relaxed))
			continue;
		if (take(&f->skip))
			return FAULT_NONE;
		if (take(&f->reset))
			return FAULT_RESET;
		if (take(&f->drop))
			return FAULT_DROP;
		if (take(&f->corrupt))
			return FAULT_CORRUPT;
		if (take(&f->delay)) {
			*ms = atomic_load(&f->delay_ms);
			return FAULT_DELAY;
		}
	}
	return FAULT_NONE;
}

/* Flip one bit that the CRC covers (the last byte before the CRC), never the
 * MPA length, so that the receiver reads a whole frame and its check fails. */
static void corrupt(uint8_t *frame, size_t len)
{
	frame[len - 5] ^= 0x01;
}

size_t soft_fault_frame(struct soft_qp *q, struct soft_conn *c, uint8_t *frame, size_t len)
{
	struct sockaddr sa;
	uint32_t ms = 0;

	if (c->fault_stopped)
		return len; /* the stream already stopped: nothing more goes out anyway */
	switch (next_action(q, &ms)) {
	case FAULT_RESET:
		rv_log(RV_LOG_WARN, "soft0: QP 0x%x: fault injection: resetting its connection to QP 0x%x",
		       q->qpn, q->peer_qpn);
		c->fault_stopped = true;
		/* connect(AF_UNSPEC) disconnects a TCP socket with an RST; the
		 * progress thread then sees the reset on the descriptor. */
		memset(&sa, 0, sizeof(sa));
		sa.sa_family = AF_UNSPEC;
		if (connect(c->fd, &sa, sizeof(sa)) < 0)
			shutdown(c->fd, SHUT_RDWR);
		return 0;
	case FAULT_DROP:
		rv_log(RV_LOG_WARN, "soft0: QP 0x%x: fault injection: a frame to QP 0x%x is lost; the "
		       "stream stops there (TCP cannot carry a gap)", q->qpn, q->peer_qpn);
		c->fault_stopped = true;
		return 0;
	case FAULT_CORRUPT:
		rv_log(RV_LOG_WARN, "soft0: QP 0x%x: fault injection: corrupting a frame to QP 0x%x",
		       q->qpn, q->peer_qpn);
		/* A ring frame sent without CRC (shmring.c) gets one here: the
		 * consumer checks every CRC that is not zero, so the flip shows. */
		if (c->ring_crc_off)
			rv_wire_fpdu_seal_crc(frame, true);
		corrupt(frame, len);
		return len;
	case FAULT_DELAY: {
		int64_t until = soft_now_ms() + ms;
		if (until > c->fault_hold)
			c->fault_hold = until;
		return len;
	}
	default:
		return len;
	}
}

bool soft_fault_dgram_lost(struct soft_qp *q, uint8_t *pkt, size_t len)
{
	uint32_t ms;

	if (RV_LIKELY(!atomic_load_explicit(&q->fault.armed, memory_order_relaxed) &&
		      !atomic_load_explicit(&q->sc->fault.armed, memory_order_relaxed)))
		return false;
	switch (next_action(q, &ms)) {
	case FAULT_DROP:
		return true; /* silently: UD promises nothing */
	case FAULT_CORRUPT:
		corrupt(pkt, len); /* covered by the ICRC: the receiver drops it */
		return false;
	default:
		return false; /* no connection to reset; a delay does not apply to datagrams */
	}
}
