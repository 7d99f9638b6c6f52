/*
 * The transmit side of a software QP: frames work into FPDUs and pushes them
 * into the QP's TCP stream.
 *
 * Who transmits: the posting thread, directly (rv_qp_post_send ends in
 * soft_tx_post, which is soft_tx_push unless small unsignalled WRs of a busy
 * stream are gathered for one send()); when the socket is full the rest
 * waits in the connection's tx buffer and the progress thread continues on
 * EPOLLOUT. The payload of a
 * non-inline WR is read from its SGEs when its FPDU is framed, so the buffer
 * must stay valid until the WR completes (as with any verbs device); inline
 * payloads were copied at post time.
 *
 * When a SEND/WRITE completes: RC reports success only once the peer has
 * processed the message, so that a remote access error can complete the very
 * WR that caused it. iWARP has no ACK, so the requester asks for proof with a
 * zero-length RDMA READ (legal per RFC 5040; RFC 6581 uses the same message):
 * the responder handles its stream in order, so the READ's response proves
 * every earlier message was placed. One is sent when the send queue drains
 * (not at once for a tail of unsignalled WRs: confirm_now) or after
 * SOFT_CONFIRM_EVERY unconfirmed WRs; a user READ serves as well. In a
 * stream of signalled WRs one is kept in flight, the next asked for when it
 * returns (sig_due). A UC QP
 * asks for none: its SEND/WRITE completes once its last FPDU is in the stream.
 *
 * Order on the wire at message boundaries: a pending TERMINATE first, then READ
 * responses, then the initiator's opening READ, then the send queue.
 * Always called with q->lock held; never blocks; never takes sc->lock.
 */
#include <errno.h>
#include <string.h>
#include <sys/timerfd.h>
#include <sys/uio.h>

#include "drivers/soft/completion.h"
#include "drivers/soft/iwarp/fault.h"
#include "drivers/soft/soft.h"
#include "drivers/soft/wire/crc32c.h"

/* Room for one more READ request of any kind (internal confirmations included). */
static bool ord_room(const struct soft_qp *q)
{
	return q->ord_tail - q->ord_head < SOFT_ORD_CAP;
}

/*
 * Room for one more user READ or atomic: at most min(ORD, the peer's IRD) in
 * flight (RFC 6581). At least one, so that a READ to a peer whose IRD is 0
 * reaches it and fails as a remote invalid request instead of waiting forever.
 */
static bool ord_user_room(const struct soft_qp *q)
{
	uint32_t lim = q->ord_max < q->peer_ird ? q->ord_max : q->peer_ird;

	return ord_room(q) && q->ord_user < (lim ? lim : 1);
}

static void emit_read_req(struct soft_qp *q, struct soft_conn *c, const struct rv_read_req *r, bool user,
			  uint32_t wqe)
{
	struct rv_fpdu f;
	struct soft_ord *o = &q->ord[q->ord_tail % SOFT_ORD_CAP];
	int n;

	memset(&f, 0, sizeof(f));
	f.opcode = RV_RDMAP_READ_REQ;
	f.last = true;
	f.qn = RV_DDP_QN_READ;
	f.msn = q->msn_tx[RV_DDP_QN_READ]++;
	f.rreq = *r;
	n = rv_wire_fpdu_encode_crc(c->tx + c->tx_len, SOFT_TXBUF - c->tx_len, &f, c->crc);
	c->tx_len += soft_fault_tx(q, c, c->tx + c->tx_len, (size_t)n);
	o->sink_stag = r->sink_stag;
	o->sink_to = r->sink_to;
	o->len = r->size;
	o->got = 0;
	o->user = user;
	o->atomic = false;
	o->wqe = wqe;
	o->upto = user ? wqe : q->sq_tx;
	q->ord_tail++;
	if (user) {
		q->sq[wqe & q->sq_mask].msn = f.msn;
		q->ord_user++;
	}
	q->sq_covered = user ? wqe + 1 : q->sq_tx;
}

/* The RTR message the responder chose (RFC 6581): a zero-length WRITE. */
static void emit_rtr_write(struct soft_conn *c)
{
	struct rv_fpdu f;

	memset(&f, 0, sizeof(f));
	f.opcode = RV_RDMAP_WRITE;
	f.tagged = true;
	f.last = true;
	c->tx_len += (size_t)rv_wire_fpdu_encode_crc(c->tx + c->tx_len, SOFT_TXBUF - c->tx_len, &f, c->crc);
}

static void emit_confirm(struct soft_qp *q, struct soft_conn *c)
{
	struct rv_read_req r;

	memset(&r, 0, sizeof(r));
	emit_read_req(q, c, &r, false, 0);
	q->confirm_late = false;
}

/*
 * A signalled WR (not a READ) may lie among the uncovered [sq_covered, sq_tx):
 * the newest one posted is at or after sq_covered. Exact when the queue is
 * drained (sq_tx == sq_tail: the newest is the last candidate, and an older
 * one lies in the range only if it does); while WRs wait unframed it may say
 * yes for one that is not framed yet (one comparison instead of a walk with a
 * division per WR).
 */
static bool sig_uncovered(const struct soft_qp *q)
{
	return q->any_sig && q->last_sig - q->sq_covered < q->sq_tail - q->sq_covered;
}

/*
 * Confirmations (internal zero-length READs) in flight. Each response
 * confirms every WR framed before it; for a signalled WR framed after it a
 * new request waits until it returns (sig_due): then fill() runs on the
 * receiving thread (soft_tx_push after soft_rx_process, or soft_conn_poll,
 * which pushes when soft_tx_idle says a confirmation is due) and asks for
 * all the WRs framed meanwhile at once. A stream of signalled 64 KiB WRITEs
 * sent one request and got one response per WRITE (issue #22); now one per
 * round trip. At most SOFT_ORD_CAP entries to look at.
 */
static uint32_t confirms_in_flight(const struct soft_qp *q)
{
	uint32_t n = 0;

	for (uint32_t i = q->ord_head; i != q->ord_tail; i++)
		n += !q->ord[i % SOFT_ORD_CAP].user;
	return n;
}

/* A signalled WR waits for a confirmation, and either none is on its way that
 * could be followed by one covering it, or the send queue holds few WRs (under
 * SOFT_CONFIRM_EVERY posted and not completed) and fewer than
 * SOFT_SHORT_CONFIRMS are on their way: a ping-pong (one in flight at most),
 * whose signalled SEND would otherwise wait a round trip more, and the peer's
 * hold of the answer (soft_tx_hold, up to SOFT_HOLD_US or the next post) on
 * top. Only a stream, whose queue holds work enough to cover the wait, defers.
 * A stream's queue also runs short for a moment, when one confirmation
 * completes most of it: without the cap on those in flight, each WR posted
 * then asked on its own (issue #22, tcp64: 64 KiB WRITEs, every one
 * signalled, -t 128: 1 615 of 1 974 confirmations covered one WR). */
#define SOFT_SHORT_CONFIRMS 2u

/* A sparse signalled WR (sig_sparse: one in SOFT_CONFIRM_EVERY or fewer, as
 * perftest's CQ moderation signals one WRITE in 100) is asked for as soon as
 * it is framed, while fewer than this many confirmations are on their way: its
 * completion is what lets the application post again, and deferred behind the
 * one in flight it was asked for only after every WR posted behind it, so it
 * came when the peer had nothing left to do (issue #22, tcp4k: 4 KiB WRITEs,
 * -t 128, the stream drained once per 100 WRITEs). A stream that signals
 * every WR keeps one in flight. */
#define SOFT_SPARSE_CONFIRMS 4u

static bool sig_due(const struct soft_qp *q)
{
	uint32_t n;

	if (!sig_uncovered(q))
		return false;
	n = confirms_in_flight(q);
	return n == 0 || (q->sq_tail - q->sq_head < SOFT_CONFIRM_EVERY && n < SOFT_SHORT_CONFIRMS) ||
	       (q->sig_sparse && n < SOFT_SPARSE_CONFIRMS && q->last_sig - q->sq_covered < q->sq_tx - q->sq_covered);
}

/* So many WRs framed and not yet covered by a confirmation that one is due
 * whether or not the application waits for any of them: half the send queue
 * (an application that signals rarely still gets its slots back), at least
 * SOFT_CONFIRM_EVERY. */
static bool many_uncovered(const struct soft_qp *q)
{
	uint32_t lim = q->sq_size / 2 > SOFT_CONFIRM_EVERY ? q->sq_size / 2 : SOFT_CONFIRM_EVERY;

	return q->sq_tx - q->sq_covered >= lim;
}

/*
 * The send queue drained with WRs the peer has not confirmed: ask now if the
 * application waits for one of them (a signalled WR), if they fill half the
 * queue, or if the timer says they waited long enough (confirm_late). A tail
 * of unsignalled WRs alone can wait for the next WR or the timer: no one polls
 * for them, a remote error still arrives as a TERMINATE and fails the WR it
 * names, and a ping-pong that signals one send in N saves a confirmation round
 * trip, two thread wake-ups, per message. A stream of small unsignalled WRs
 * (issue #22: one WRITE in 100 signalled) asks once per half queue, not once
 * per SOFT_CONFIRM_EVERY WRs: each confirmation is a READ response the peer
 * sends on its own and a wake-up of our progress thread, which then contends
 * with the posting thread for q->lock.
 */
static bool confirm_now(const struct soft_qp *q)
{
	return q->confirm_late || many_uncovered(q) || sig_due(q);
}

/* Mid-stream, at a WR boundary: a confirmation goes between WRs once
 * SOFT_CONFIRM_EVERY of them are uncovered and the application waits for one
 * of them (a signalled WR: its completion should not wait for the queue to
 * drain), or once half the queue is uncovered. */
static bool confirm_between(const struct soft_qp *q)
{
	return (q->sq_tx - q->sq_covered >= SOFT_CONFIRM_EVERY && sig_due(q)) || many_uncovered(q);
}

/* Local error while framing sq[sq_tx]: the WR fails, the QP goes to ERR and
 * the progress thread closes the connection. */
static void local_fail(struct soft_qp *q, uint32_t status)
{
	soft_qp_fail(q, q->sq_tx, status, RV_WC_WR_FLUSH_ERR, false);
	q->kick = true;
	soft_kick(q->sc);
}

static bool emit_user_read(struct soft_qp *q, struct soft_conn *c, struct soft_swqe *w)
{
	struct rv_read_req r;

	for (uint32_t i = 0; i < w->num_sge; i++) {
		if (soft_mem_check(q->sc, q->qp, w->sge[i].lkey, RV_ACCESS_LOCAL_WRITE, w->sge[i].addr,
				   w->sge[i].length) != SOFT_MEM_OK) {
			local_fail(q, RV_WC_LOC_PROT_ERR);
			return false;
		}
	}
	r.sink_stag = w->num_sge ? w->sge[0].lkey : 0;
	r.sink_to = w->num_sge ? w->sge[0].addr : 0;
	r.size = w->length;
	r.src_stag = w->rkey;
	r.src_to = w->remote_addr;
	emit_read_req(q, c, &r, true, q->sq_tx);
	q->sq_tx++;
	return true;
}

/* Frame one same-host control message (SOFT_OP_SHM_CTL: shm.c's agreement,
 * shmring.c's OFFER/ANSWER/SWITCH) into c->tx; the caller checked the room. */
void soft_tx_emit_shm_ctl(struct soft_conn *c, const uint8_t pay[SOFT_SHM_CTL_LEN])
{
	struct rv_fpdu f;
	int n;

	memset(&f, 0, sizeof(f));
	f.opcode = SOFT_OP_SHM_CTL;
	f.last = true;
	f.payload = pay;
	f.payload_len = SOFT_SHM_CTL_LEN;
	n = rv_wire_fpdu_encode_crc(c->tx + c->tx_len, SOFT_TXBUF - c->tx_len, &f, c->crc);
	if (n > 0)
		c->tx_len += (size_t)n;
}

/* The same-host path's control message (shm.c). */
static void emit_shm_ctl(struct soft_conn *c)
{
	uint8_t pay[SOFT_SHM_CTL_LEN];

	soft_shm_ctl_put(c, pay);
	soft_tx_emit_shm_ctl(c, pay);
}

/* A whole WRITE or SEND by reference (shm.c): the payload names the source
 * segments, the peer pulls them into the target or the receive WR. They were
 * checked like any local read. */
static bool emit_write_ref(struct soft_qp *q, struct soft_conn *c, struct soft_swqe *w)
{
	uint8_t pay[SOFT_MAX_SGE * SOFT_SHM_REF_LEN];
	uint32_t len = 0;
	struct rv_fpdu f;
	int n;

	for (uint32_t i = 0; i < w->num_sge; i++) {
		if (!w->sge[i].length)
			continue;
		if (soft_mem_check(q->sc, q->qp, w->sge[i].lkey, 0, w->sge[i].addr, w->sge[i].length) !=
		    SOFT_MEM_OK) {
			local_fail(q, RV_WC_LOC_PROT_ERR);
			return false;
		}
		memcpy(pay + len, &w->sge[i].addr, 8);
		memcpy(pay + len + 8, &w->sge[i].length, 4);
		len += SOFT_SHM_REF_LEN;
	}
	memset(&f, 0, sizeof(f));
	f.last = true;
	if (w->opcode == RV_WR_SEND) {
		f.opcode = SOFT_OP_SEND_REF;
		f.qn = soft_send_qn(q, w);
		w->msn = f.msn = q->msn_tx[RV_DDP_QN_SEND]++;
	} else {
		f.opcode = SOFT_OP_WRITE_REF;
		f.tagged = true;
		f.stag = w->rkey;
		f.to = w->remote_addr;
	}
	f.payload = pay;
	f.payload_len = len;
	n = rv_wire_fpdu_encode_crc(c->tx + c->tx_len, SOFT_TXBUF - c->tx_len, &f, c->crc);
	if (n > 0) /* a data frame like any other for fault injection (fault.c) */
		c->tx_len += soft_fault_tx(q, c, c->tx + c->tx_len, (size_t)n);
	q->sq_tx++;
	return true;
}

/* A gathered direct send: consecutive data FPDUs of one WR, framed here and
 * sent from the registered memory with one sendmsg (send_direct). */
#define SOFT_TX_BATCH_FRAMES 8u
#define SOFT_TX_BATCH_BYTES (SOFT_TXBUF / 2) /* what a partial send may leave in c->tx */
#define SOFT_TX_SMALL_FIRST 4096u /* frames before a direct one sent first rather than copied behind */
/* Small unsignalled WRs posted into a busy stream wait in c->tx until this
 * much is framed (soft_tx_post): one send() for many. */
#define SOFT_TX_GATHER_BYTES (64u * 1024)
/* ... once the peer has this many WRs of the stream it has not confirmed
 * (the first ones after a confirmation go at once: the peer has work). */
#define SOFT_TX_GATHER_AFTER 4u

struct direct {
	struct soft_conn *c;
	struct soft_ctx *sc;
	const rv_sge *sge;                             /* the WR's segments (soft_sgl_trusted) */
	uint32_t nsge;
	uint32_t nf;                                   /* frames */
	uint32_t chunk[SOFT_TX_BATCH_FRAMES];          /* each one's payload bytes */
	uint8_t hdr[SOFT_TX_BATCH_FRAMES][2 + RV_DDP_UNTAGGED_HDR]; /* MPA length + DDP/RDMAP header */
	uint8_t hlen[SOFT_TX_BATCH_FRAMES];
	uint8_t trail[SOFT_TX_BATCH_FRAMES][8];        /* pad + CRC */
	uint8_t tlen[SOFT_TX_BATCH_FRAMES];
	size_t total;                                  /* bytes of all frames */
	bool broken;                                   /* sendmsg failed: the connection broke */
	bool fault;                                    /* a payload page is no longer mapped */
};

/* Under the MR lock, on the payload's host addresses (soft_sgl_apply, all the
 * frames' payloads in a row): each frame's CRC, then one sendmsg of header,
 * payload and trailer of every frame; whatever the socket did not take is
 * copied into c->tx (empty before), from the first unsent byte on. */
static void send_direct(const struct iovec *pay, uint32_t npay, void *arg)
{
	struct direct *d = arg;
	struct soft_conn *c = d->c;
	struct iovec iov[SOFT_TX_BATCH_FRAMES * 3 + SOFT_MAX_SGE];
	uint32_t niov = 0, pi = 0;
	size_t pat = 0; /* bytes of pay[pi] already used */
	struct msghdr mh;
	ssize_t n;

	/* The CRC reads the payload in place: registered memory unmapped since
	 * registration must fail the WR, not the process (mr.c). One byte per
	 * page, one system call per batch of up to 128 KiB; none for memory
	 * rverbs mapped itself (rv_mr_alloc: mapped while its MR exists, and
	 * the MR lock is held here), where the probe was 15 % of all CPU
	 * samples of a 64 KiB WRITE stream over TCP (issue #22). */
	if (!soft_sgl_trusted(d->sc, d->sge, d->nsge) && !soft_mem_probe(pay, npay)) {
		d->fault = true;
		return;
	}
	for (uint32_t f = 0; f < d->nf; f++) {
		uint32_t left = d->chunk[f], crc = 0;
		uint8_t *t = d->trail[f];
		size_t pad = d->tlen[f] - 4u;

		iov[niov].iov_base = d->hdr[f];
		iov[niov++].iov_len = d->hlen[f];
		if (c->crc)
			crc = rv_crc32c(0, d->hdr[f], d->hlen[f]);
		while (left) {
			size_t k = pay[pi].iov_len - pat;
			if (k > left)
				k = left;
			iov[niov].iov_base = (uint8_t *)pay[pi].iov_base + pat;
			iov[niov].iov_len = k;
			if (c->crc)
				crc = rv_crc32c(crc, iov[niov].iov_base, k);
			niov++;
			left -= (uint32_t)k;
			pat += k;
			if (pat == pay[pi].iov_len && pi + 1 < npay) {
				pi++;
				pat = 0;
			}
		}
		memset(t, 0, pad);
		if (c->crc)
			crc = rv_crc32c(crc, t, pad);
		t[pad] = (uint8_t)crc;
		t[pad + 1] = (uint8_t)(crc >> 8);
		t[pad + 2] = (uint8_t)(crc >> 16);
		t[pad + 3] = (uint8_t)(crc >> 24);
		iov[niov].iov_base = t;
		iov[niov++].iov_len = d->tlen[f];
	}
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = iov;
	mh.msg_iovlen = niov;
	do
		n = sendmsg(c->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
		d->broken = true; /* as soft_conn_flush: the progress thread sees the error */
		return;
	}
	if (n > 0 && c->qp)
		soft_retry_progress(c->qp); /* the peer takes bytes */
	if (n < 0)
		n = 0;
	if ((size_t)n == d->total)
		return;
	c->tx_full = true; /* fill() frames no more data behind it (copies) */
	c->tx_blocked = true; /* the socket is full: the rest goes on EPOLLOUT */
	/* The rest waits in c->tx as copied frames would. */
	c->tx_off = 0;
	c->tx_len = 0;
	for (uint32_t i = 0; i < niov; i++) {
		size_t skip = (size_t)n < iov[i].iov_len ? (size_t)n : iov[i].iov_len;
		memcpy(c->tx + c->tx_len, (const uint8_t *)iov[i].iov_base + skip, iov[i].iov_len - skip);
		c->tx_len += iov[i].iov_len - skip;
		n -= (ssize_t)skip;
	}
}

static bool is_send(const struct soft_swqe *w)
{
	return w->opcode == RV_WR_SEND || w->opcode == RV_WR_SEND_WITH_IMM || w->opcode == RV_WR_SEND_WITH_INV;
}

/* The largest FPDU payload chunk_at may choose: fpdu_max while the stream
 * uses large FPDUs (not once the same-host ring took over: page-sized frames
 * there, shmring.c). */
static uint32_t fpdu_big(const struct soft_conn *c)
{
	return c->fpdu_payload > SOFT_FPDU_PAYLOAD ? c->fpdu_max : c->fpdu_payload;
}

/* The payload of w's FPDU at offset off. What fits one FPDU of fpdu_big goes
 * whole; a message at most SOFT_TX_TAIL_MAX over it (64 KiB: MPA's 16-bit
 * length) as that FPDU and a small one, which the receiver reads in the same
 * recvmsg as the large one's trailer (place.c, SOFT_PLACE_SLACK): one
 * recvmsg per 64 KiB WRITE, not two. Anything larger is cut into FPDUs of
 * even size (not 60 KiB + 4 KiB), each large enough for the receiver to place
 * it directly. */
static uint32_t chunk_at(const struct soft_conn *c, const struct soft_swqe *w, uint32_t off)
{
	uint32_t chunk = w->length - off, big = fpdu_big(c);

	if (chunk > c->fpdu_payload && chunk <= big)
		return chunk;
	if (chunk > big && chunk - big <= SOFT_TX_TAIL_MAX)
		return big;
	if (chunk > c->fpdu_payload) {
		uint32_t n = (chunk + c->fpdu_payload - 1) / c->fpdu_payload;
		chunk = (chunk + n - 1) / n;
	}
	return chunk;
}

/* Writes the MPA length and header of w's FPDU at offset off (chunk bytes of
 * payload) at buf; returns the header's length. */
static size_t data_head(struct soft_qp *q, struct soft_swqe *w, uint32_t off, uint32_t chunk, uint8_t *buf)
{
	struct rv_fpdu f;

	/* Every field rv_wire_fpdu_begin reads, and no more: the whole
	 * struct's memset (its TERMINATE and atomic parts) was a tenth of
	 * this function's instructions on a 64 B SEND (issue 22, shmlat). */
	f.opcode = 0;
	f.tagged = false;
	f.stag = 0;
	f.to = 0;
	f.inv_stag = f.qn = f.msn = f.mo = 0;
	if (is_send(w)) {
		f.opcode = (w->flags & RV_SEND_SOLICITED) ? RV_RDMAP_SEND_SE : RV_RDMAP_SEND;
		if (w->opcode == RV_WR_SEND_WITH_IMM)
			f.inv_stag = RV_SOFT_SEND_IMM_FOLLOWS; /* ext.c: its Immediate Data follows */
		if (w->opcode == RV_WR_SEND_WITH_INV) {
			/* RFC 5040 Send with Invalidate: the STag rides in every segment. */
			f.opcode = (w->flags & RV_SEND_SOLICITED) ? RV_RDMAP_SEND_SE_INV : RV_RDMAP_SEND_INV;
			f.inv_stag = w->imm;
		}
		f.qn = soft_send_qn(q, w);
		if (off == 0)
			w->msn = q->msn_tx[RV_DDP_QN_SEND];
		f.msn = w->msn;
		f.mo = off;
	} else {
		f.opcode = RV_RDMAP_WRITE;
		f.tagged = true;
		f.stag = w->rkey;
		f.to = w->remote_addr + off;
	}
	f.last = off + chunk == w->length;
	return rv_wire_fpdu_begin(buf, &f, chunk);
}

/* chunk more bytes of w are in the stream (sent or in c->tx). */
static void data_done(struct soft_qp *q, struct soft_conn *c, struct soft_swqe *w, uint32_t chunk)
{
	q->tx_off += chunk;
	if (q->tx_off != w->length)
		return;
	if (is_send(w))
		q->msn_tx[RV_DDP_QN_SEND]++;
	if (w->opcode == RV_WR_SEND_WITH_IMM || w->opcode == RV_WR_RDMA_WRITE_WITH_IMM)
		soft_ext_emit_imm(q, c, w);
	q->tx_off = 0;
	q->sq_tx++;
	/* UC: done once its last frame is handed to the stream; nothing
	 * will confirm it (the peer drops what it cannot place). */
	if (q->uc)
		q->sq_confirmed = q->sq_covered = q->sq_tx;
}

/*
 * The next FPDUs of w (up to SOFT_TX_BATCH_FRAMES, SOFT_TX_BATCH_BYTES) sent
 * directly from the registered memory with one sendmsg: a 64 KiB message is
 * one system call, not one per FPDU (issue #8), and TCP builds full-sized
 * segments from it. Only while nothing waits in c->tx.
 */
static bool emit_direct(struct soft_qp *q, struct soft_conn *c, struct soft_swqe *w)
{
	struct direct d;
	uint32_t off = q->tx_off;

	d.c = c;
	d.sc = q->sc;
	d.sge = w->sge;
	d.nsge = w->num_sge;
	d.nf = 0;
	d.total = 0;
	d.broken = false;
	d.fault = false;
	do {
		uint32_t k = chunk_at(c, w, off);
		size_t h, len;

		len = rv_wire_fpdu_len(rv_wire_ddp_hdr_len(!is_send(w)) + k);
		if (d.nf && d.total + len > SOFT_TX_BATCH_BYTES)
			break;
		h = data_head(q, w, off, k, d.hdr[d.nf]);
		d.hlen[d.nf] = (uint8_t)h;
		d.tlen[d.nf] = (uint8_t)(len - h - k);
		d.chunk[d.nf++] = k;
		d.total += len;
		off += k;
	} while (off != w->length && d.nf < SOFT_TX_BATCH_FRAMES);
	if (soft_sgl_apply(q->sc, q->qp->pd, w->sge, w->num_sge, q->tx_off, off - q->tx_off, 0, send_direct, &d) !=
	    SOFT_MEM_OK || d.fault) {
		local_fail(q, RV_WC_LOC_PROT_ERR);
		return false;
	}
	if (d.broken) {
		c->tx_off = c->tx_len = 0;
		return false;
	}
	for (uint32_t i = 0; i < d.nf; i++)
		data_done(q, c, w, d.chunk[i]);
	return true;
}

/* The next FPDU(s) of a SEND or WRITE. */
static bool emit_data(struct soft_qp *q, struct soft_conn *c, struct soft_swqe *w)
{
	uint32_t chunk;
	uint8_t *buf;
	size_t off;
	bool direct;

	if (c->shm_push && !q->uc && !w->inl && q->tx_off == 0 && w->length >= SOFT_SHM_MIN &&
	    (w->opcode == RV_WR_RDMA_WRITE || (w->opcode == RV_WR_SEND && !(w->flags & RV_SEND_SOLICITED))))
		return emit_write_ref(q, c, w);
	if ((w->opcode == RV_WR_SEND_WITH_IMM || w->opcode == RV_WR_RDMA_WRITE_WITH_IMM) && q->tx_off == 0 &&
	    soft_ext_refused(q, w))
		return false;
	chunk = chunk_at(c, w, q->tx_off);
	direct = !w->inl && chunk >= SOFT_TX_DIRECT_MIN && !c->ring && !soft_fault_held(c) &&
		 !atomic_load_explicit(&q->fault.armed, memory_order_relaxed) &&
		 !atomic_load_explicit(&q->sc->fault.armed, memory_order_relaxed);
	/* Only small frames wait before it (the confirmation READ request every
	 * SOFT_CONFIRM_EVERY WRs, READ responses): send them first rather than
	 * copy this payload and the next ones behind them (issue #8: one 64 KiB
	 * WRITE in seven went through c->tx that way). */
	if (direct && c->tx_len > c->tx_off && c->tx_len - c->tx_off <= SOFT_TX_SMALL_FIRST && !c->tx_blocked &&
	    !soft_conn_flush(c))
		return false; /* the connection broke: the progress thread sees it */
	if (direct && c->tx_len == 0)
		/* Nothing waits before it: send it from the registered memory itself,
		 * without copying the payload into c->tx (unless the socket leaves
		 * part of it). Fault injection and the rings take the copy path. */
		return emit_direct(q, c, w);
	if (c->ring_tx_on && !c->crc && !soft_fault_held(c) &&
	    !atomic_load_explicit(&q->fault.armed, memory_order_relaxed) &&
	    !atomic_load_explicit(&q->sc->fault.armed, memory_order_relaxed)) {
		/* Same host, our direction on the ring, nothing waiting in c->tx:
		 * framed in the ring's record itself, one copy of the payload and
		 * no second one from c->tx (issue 22, shmlat). Only without CRC:
		 * the CRC would be computed by reading the record back, which the
		 * peer can write to; the header and the zero padding and CRC field
		 * are only written. Fault injection takes c->tx (it rewrites frames
		 * there). */
		size_t flen = rv_wire_fpdu_len(rv_wire_ddp_hdr_len(!is_send(w)) + chunk);

		buf = soft_shmring_frame_at(c, flen);
		if (buf) {
			off = data_head(q, w, q->tx_off, chunk, buf);
			if (w->inl) {
				memcpy(buf + off, w->inline_data + q->tx_off, chunk);
			} else if (soft_sgl_read(q->sc, q->qp->pd, w->sge, w->num_sge, q->tx_off, buf + off, chunk) !=
				   SOFT_MEM_OK) {
				local_fail(q, RV_WC_LOC_PROT_ERR); /* the record stays unused */
				return false;
			}
			memset(buf + off + chunk, 0, flen - off - chunk);
			/* The last frame of the last WR posted: published now,
			 * not after fill() looked for more and the flush. */
			soft_shmring_framed(c, flen, q->tx_off + chunk == w->length && q->sq_tx + 1 == q->sq_tail);
			data_done(q, c, w, chunk);
			return true;
		}
	}
	buf = c->tx + c->tx_len;
	off = data_head(q, w, q->tx_off, chunk, buf);
	if (w->inl) {
		memcpy(buf + off, w->inline_data + q->tx_off, chunk);
	} else if (soft_sgl_read(q->sc, q->qp->pd, w->sge, w->num_sge, q->tx_off, buf + off, chunk) !=
		   SOFT_MEM_OK) {
		local_fail(q, RV_WC_LOC_PROT_ERR);
		return false;
	}
	c->tx_len += soft_fault_tx(q, c, buf, rv_wire_fpdu_seal_crc(buf, c->crc));
	data_done(q, c, w, chunk);
	return true;
}

/* One FPDU of the READ response at the head of the IRD queue. */
static bool emit_read_resp(struct soft_qp *q, struct soft_conn *c)
{
	struct soft_ird *r = &q->ird[q->ird_head % SOFT_IRD_CAP];
	uint32_t chunk = r->req.size - r->sent;
	uint8_t *buf = c->tx + c->tx_len;
	struct rv_fpdu f;
	size_t off;

	if (r->atomic) {
		/* An executed atomic (rx.c): its response, in order with READ responses. */
		soft_ext_emit_atomic_resp(q, c, r);
		q->ird_user--;
		q->ird_head++;
		return true;
	}
	if (chunk > c->fpdu_payload)
		chunk = c->fpdu_payload;
	memset(&f, 0, sizeof(f));
	f.opcode = RV_RDMAP_READ_RESP;
	f.tagged = true;
	f.stag = r->req.sink_stag;
	f.to = r->req.sink_to + r->sent;
	f.last = r->sent + chunk == r->req.size;
	off = rv_wire_fpdu_begin(buf, &f, chunk);
	if (chunk && soft_mem_read(q->sc, q->qp, r->req.src_stag, RV_ACCESS_REMOTE_READ,
				   r->req.src_to + r->sent, buf + off, chunk) != SOFT_MEM_OK) {
		/* Validated on arrival; the MR was deregistered since. */
		soft_tx_terminate(q, RV_TERM_RDMAP, RV_TERM_RDMAP_REMOTE_PROT, RV_TERM_RDMAP_INV_STAG, NULL);
		soft_qp_fail(q, q->sq_head, RV_WC_WR_FLUSH_ERR, RV_WC_WR_FLUSH_ERR, true);
		q->kick = true;
		soft_kick(q->sc);
		return false;
	}
	c->tx_len += soft_fault_tx(q, c, buf, rv_wire_fpdu_seal_crc(buf, c->crc));
	r->sent += chunk;
	if (f.last) {
		if (r->counted)
			q->ird_user--;
		q->ird_head++;
	}
	return true;
}

/* Frames what is due into c->tx; *room_out: it stopped only because c->tx
 * lacked room for another frame (call again once flushed). */
static bool fill(struct soft_qp *q, struct soft_conn *c, bool *room_out)
{
	/* Room for the largest FPDU and an Immediate Data message after it. */
	const size_t need = RV_FPDU_OVERHEAD + RV_RDMAP_READ_REQ_LEN + fpdu_big(c) +
			    rv_wire_fpdu_len(RV_DDP_UNTAGGED_HDR + RV_RDMAP_IMM_LEN);
	bool any = false;

	c->tx_full = false; /* called with c->tx empty: the socket took everything */
	for (;;) {
		uint32_t st;
		struct soft_swqe *w;
		int g;

		if (SOFT_TXBUF - c->tx_len < need) {
			*room_out = true;
			break;
		}
		st = atomic_load_explicit(&q->state, memory_order_relaxed);

		if (q->term_pending) {
			memcpy(c->tx + c->tx_len, q->term, q->term_len);
			c->tx_len += q->term_len;
			q->term_pending = false;
			any = true;
			continue;
		}
		if (st != RV_QPS_RTR && st != RV_QPS_RTS)
			break;
		/* Grants (grant.c), in the ring once it is on; before READ
		 * responses (at a response's boundary), which a peer that keeps
		 * READing would otherwise keep in front of them for ever. */
		if (c->grant_due && c->ring_tx_on &&
		    (q->ird_head == q->ird_tail || q->ird[q->ird_head % SOFT_IRD_CAP].sent == 0)) {
			uint32_t gfd, gslot;
			if (soft_grant_next(c, &gfd, &gslot)) {
				soft_shmring_put_ctl(c, SOFT_CTL_GRANT, 0, gfd, gslot);
				any = true;
				continue;
			}
		}
		if (q->ird_head != q->ird_tail) {
			if (!emit_read_resp(q, c))
				break;
			any = true;
			continue;
		}
		if (q->need_rtr) {
			if (q->rtr_write)
				emit_rtr_write(c);
			else if (ord_room(q))
				emit_confirm(q, c);
			else
				break;
			q->need_rtr = false;
			any = true;
			continue;
		}
		if (c->shm_send_ctl) {
			emit_shm_ctl(c);
			c->shm_send_ctl = false;
			any = true;
			continue;
		}
		/* Ring setup messages (shmring.c): none is due once both directions are on. */
		if (c->ring && !(c->ring_tx_on && c->ring_rx_on) && soft_shmring_tx_ctl(q, c)) {
			any = true;
			continue;
		}
		if (st != RV_QPS_RTS)
			break;
		if (q->sq_tx == q->sq_tail) {
			/* On a ring the consumer's index confirms (shmring.c). */
			if (!q->uc && !c->ring_tx_on && q->sq_tx != q->sq_covered && ord_room(q) && confirm_now(q)) {
				emit_confirm(q, c);
				any = true;
			}
			break;
		}
		w = &q->sq[q->sq_tx & q->sq_mask];
		if (q->tx_off == 0) {
			if (!q->uc && !c->ring_tx_on && confirm_between(q) && ord_room(q)) {
				emit_confirm(q, c);
				any = true;
				continue;
			}
			/* A fenced WR waits for every READ before it. */
			if ((w->flags & RV_SEND_FENCE) && q->ord_tail != q->ord_head)
				break;
		}
		if (c->grants && q->tx_off == 0 && (w->opcode == RV_WR_RDMA_WRITE || w->opcode == RV_WR_RDMA_READ) &&
		    (g = soft_grant_tx_wr(q, w)) >= 0) {
			/* One copy into or from memory the peer granted (grant.c). */
			if (g == 0) {
				/* After the frames and READs before it are done: a
				 * busy poller now reads the consumer's index. */
				soft_shmring_want_cons(q, c);
				break;
			}
			w->done = true; /* a READ: its data are here */
			q->sq_tx++;
			q->sq_confirmed = q->sq_tx;
			soft_sq_complete(q);
		} else if (w->opcode == RV_WR_BIND_MW || w->opcode == RV_WR_LOCAL_INV) {
			/* Local work: runs here, in order, after every WR before it was sent. */
			uint32_t status = soft_mw_exec(q, w);
			if (status != RV_WC_SUCCESS) {
				local_fail(q, status);
				break;
			}
			w->done = true;
			q->sq_tx++;
		} else if (w->opcode == RV_WR_RDMA_READ) {
			if (!ord_user_room(q) || !emit_user_read(q, c, w))
				break;
		} else if (w->opcode == RV_WR_ATOMIC_CMP_AND_SWP || w->opcode == RV_WR_ATOMIC_FETCH_AND_ADD) {
			if (!ord_user_room(q) || !soft_ext_emit_atomic(q, c, w))
				break;
		} else if (c->tx_full) {
			/* The socket is full: the next FPDUs wait in the send queue and
			 * go out directly from the registered memory on EPOLLOUT, rather
			 * than copied into c->tx now. */
			break;
		} else if (!emit_data(q, c, w)) {
			break;
		}
		any = true;
	}
	return any;
}

/* c->tx now holds frames that wait (q->lock held): the next soft_tx_push
 * sends them, or the progress thread within SOFT_HOLD_US (hold_fd). */
static void hold_begin(struct soft_ctx *sc, struct soft_conn *c)
{
	c->tx_held = true;
	atomic_fetch_add(&sc->n_held, 1);
	if (!atomic_exchange(&sc->hold_armed, true)) {
		struct itimerspec t = {.it_value = {0, SOFT_HOLD_US * 1000}};

		timerfd_settime(sc->hold_fd, 0, &t, NULL);
	}
}

/*
 * Gathered WRs wait (q->lock held). A thread that polls this QP's stream
 * (c->polled, a poll less than SOFT_HOLD_US ago) sends them at its next
 * poll or post (soft_conn_poll), and the progress thread, which sleeps at
 * most a millisecond while anything is held (n_held, counted before
 * long_sleep is read: one side sees the other), sends them if that thread
 * stops: then no timer is armed. Armed, it fired once per gathering phase
 * at 4 KiB and woke the sender's progress thread for nothing (the poller had
 * sent the bytes): 2 800 timerfd_settime, 2 800 wake-ups and reads per
 * 131 072 WRITEs (issue #22, tcp4k3).
 */
static void gather_begin(struct soft_qp *q, struct soft_conn *c)
{
	struct soft_ctx *sc = q->sc;

	if (!c->polled) {
		hold_begin(sc, c);
		return;
	}
	c->tx_held = true;
	atomic_fetch_add(&sc->n_held, 1);
	if (atomic_load(&sc->long_sleep) && !atomic_exchange(&sc->hold_armed, true)) {
		struct itimerspec t = {.it_value = {0, SOFT_HOLD_US * 1000}};

		timerfd_settime(sc->hold_fd, 0, &t, NULL);
	}
}

bool soft_tx_hold(struct soft_qp *q)
{
	struct soft_conn *c = q->conn;
	struct soft_ctx *sc = q->sc;
	bool room = false;

	/* Only responses to zero-length READs and nothing else due: what
	 * soft_tx_idle checks, less the IRD queue. */
	if (!c || c->tx_held || c->tx_len || c->ring || c->tx_blocked || q->term_pending || q->need_rtr ||
	    c->shm_send_ctl || q->sq_tx != q->sq_tail || q->ird_head == q->ird_tail || sc->hold_fd < 0 ||
	    (!q->uc && q->sq_tx != q->sq_covered && confirm_now(q)))
		return false;
	for (uint32_t i = q->ird_head; i != q->ird_tail; i++)
		if (q->ird[i % SOFT_IRD_CAP].atomic || q->ird[i % SOFT_IRD_CAP].req.size)
			return false;
	if (atomic_load_explicit(&q->state, memory_order_relaxed) != RV_QPS_RTS)
		return false;
	fill(q, c, &room);
	if (!c->tx_len)
		return false;
	c->tx_gather = false;
	hold_begin(sc, c);
	return true;
}

void soft_tx_push(struct soft_qp *q)
{
	struct soft_conn *c = q->conn;
	bool unheld = false, gathered = false;

	if (c && c->tx_held) {
		gathered = c->tx_gather;
		/* Frame first: the held response goes in one send() with what
		 * the application posted (its answer); the timer is disarmed
		 * after that send(), not before it. */
		bool room = false;

		c->tx_held = false;
		unheld = true;
		if (c->state == CONN_UP && c->may_send && !c->tx_full)
			fill(q, c, &room);
	}
	if (c && c->state != CONN_DEAD && c->state != CONN_CLOSING) {
		bool again = true;

		for (;;) {
			/* The socket said it is full and EPOLLOUT has not come since:
			 * a send now would only fail (once per post while streaming). */
			if (c->tx_blocked && c->tx_len > c->tx_off && !c->ring_tx_on)
				break;
			if (!soft_conn_flush(c) || c->tx_len)
				break; /* broken (the progress thread sees EPOLLERR) or full */
			/* Fill again only if the last fill ran out of room (not to
			 * find, once more, that nothing else is due). */
			if (!again || c->state != CONN_UP || !c->may_send)
				break;
			again = false;
			if (!fill(q, c, &again))
				break;
		}
		soft_conn_update_events(c);
	}
	if (unheld)
		soft_conn_hold_release(q->sc, gathered);
	soft_sq_complete(q);
	soft_qp_check_overflow(q);
}

/*
 * May the WRs just posted wait in c->tx for more (soft_tx_post)? Only a busy
 * TCP stream of small unsignalled SENDs and WRITEs, posted back to back: the
 * previous post less than SOFT_HOLD_US ago and nothing from the peer handled
 * since but READ responses (a ping-pong's next SEND answers the peer, who
 * waits for it: it goes at once, whatever the signalling); at least
 * SOFT_TX_GATHER_AFTER WRs in the stream that the peer has not confirmed (it
 * has work: a few microseconds more for these cost it nothing), every WR not
 * framed yet small (it would be copied into c->tx anyway: below
 * SOFT_TX_DIRECT_MIN), unsignalled (nobody waits for it), no READ, atomic,
 * immediate or fence. An earlier signalled WR whose confirmation is not sent
 * yet (one is in flight: sig_due) does not stop it: that confirmation is
 * framed by whoever handles the response in flight, and that push sends
 * what waits here too (issue #22: at 4 KiB, one WRITE in 100 signalled, a
 * fifth of the WRs went one send() each for that rule, and a sixth for
 * SOFT_CONFIRM_EVERY here). Nothing else due (TERMINATE, READ responses, RTR,
 * same-host control, READ responses held for the application's answer:
 * soft_tx_hold); no fault injection (it rewrites frames in c->tx as they
 * are framed) and no socket that refused bytes.
 */
static bool gatherable(const struct soft_qp *q, const struct soft_conn *c, int64_t now_us)
{
	if (!c || q->rx_peer != q->rx_peer_post || now_us - q->post_us >= SOFT_HOLD_US || c->state != CONN_UP ||
	    !c->may_send || c->ring || (c->tx_held && !c->tx_gather) || c->tx_blocked || c->tx_full || q->uc ||
	    q->sc->hold_fd < 0 || q->term_pending || q->need_rtr || c->shm_send_ctl ||
	    q->ird_head != q->ird_tail ||
	    q->tx_off != 0 || q->sq_tx == q->sq_tail || q->sq_tail - q->sq_tx > SOFT_CONFIRM_EVERY ||
	    q->sq_tx - q->sq_confirmed < SOFT_TX_GATHER_AFTER || c->tx_len - c->tx_off >= SOFT_TX_GATHER_BYTES ||
	    soft_fault_held(c) || atomic_load_explicit(&q->fault.armed, memory_order_relaxed) ||
	    atomic_load_explicit(&q->sc->fault.armed, memory_order_relaxed) ||
	    atomic_load_explicit(&q->state, memory_order_relaxed) != RV_QPS_RTS)
		return false;
	for (uint32_t i = q->sq_tx; i != q->sq_tail; i++) {
		const struct soft_swqe *w = &q->sq[i & q->sq_mask];

		if ((w->opcode != RV_WR_RDMA_WRITE && w->opcode != RV_WR_SEND) || w->signaled ||
		    (w->flags & RV_SEND_FENCE) || w->length >= SOFT_TX_DIRECT_MIN ||
		    (c->shm_push && w->length >= SOFT_SHM_MIN))
			return false;
	}
	return true;
}

void soft_tx_post(struct soft_qp *q)
{
	struct soft_conn *c = q->conn;
	int64_t now_us;
	bool room = false, gather;

	if (c && c->ring) {
		/* Same host: nothing is gathered (gatherable), so no clock read. */
		soft_tx_push(q);
		return;
	}
	now_us = soft_now_us();
	gather = gatherable(q, c, now_us);

	q->rx_peer_post = q->rx_peer;
	q->post_us = now_us;
	if (!gather) {
		soft_tx_push(q);
		return;
	}
	/* Frame now (the payload is read at this point, as always), send
	 * later: with the WRs posted next, once SOFT_TX_GATHER_BYTES wait, a
	 * signalled or large WR comes, the application polls or waits on a CQ
	 * (soft_conn_poll, soft_conn_wait_fd), or the hold timer fires. */
	fill(q, c, &room);
	if (room || c->tx_len - c->tx_off >= SOFT_TX_GATHER_BYTES || q->sq_tx != q->sq_tail) {
		soft_tx_push(q);
		return;
	}
	if (!c->tx_held && c->tx_len > c->tx_off) {
		c->tx_gather = true;
		gather_begin(q, c);
	}
}

/*
 * rv_qp_post_send's shortcut on a ring (issue 22, shmlat3): the WR at w,
 * about to become sq[sq_tail], is a SEND or WRITE of one frame, and nothing
 * else is due on the connection — exactly the case where fill() would find
 * only this WR and emit_data() frame it in the ring's record at once. So it
 * is framed there now, from the caller's SGEs (soft_sgl_read's checks:
 * lkey, PD, bounds; one copy and one MR lookup, where automatic inline made
 * a copy into w->inline_data under the same checks and emit_data a second
 * one) or, with RV_SEND_INLINE, from the caller's buffers as the inline path
 * reads them. Either way the payload is taken before the post returns, as
 * automatic inline promises. false: nothing was done (a condition fails,
 * the ring has no room as far as the consumer index seen last says, or an
 * SGE fails its checks): the caller takes the usual way, which fails such a
 * WR with RV_WC_LOC_PROT_ERR as before. last: the last WR of the post, so
 * its record is published now; soft_tx_ring_done does the rest.
 */
#define SOFT_TX_STAGE 256u

/* The stage's copy into the record: the compiler expands a memcpy of a
 * length it cannot size into `rep movsq` (8 iterations and its start-up
 * for 64 B, 27 instructions under callgrind); libc's is two vector moves
 * (as shmring.c's ring_copy). */
static void *(*volatile stage_copy)(void *, const void *, size_t) = memcpy;

bool soft_tx_ring_now(struct soft_qp *q, struct soft_swqe *w, const rv_send_wr *wr, bool last)
{
	struct soft_conn *c = q->conn;
	uint32_t len = w->length;
	size_t flen, off;
	uint8_t *buf;

	/* fill()'s sources before the send queue, and emit_data()'s ring branch. */
	if (!c->ring_rx_on || c->crc || c->state != CONN_UP || !c->may_send || c->tx_len || c->tx_held ||
	    c->shm_send_ctl || c->grant_due || q->term_pending || q->need_rtr || q->ird_head != q->ird_tail ||
	    q->sq_tx != q->sq_tail || q->tx_off != 0 ||
	    (w->opcode != RV_WR_SEND && (w->opcode != RV_WR_RDMA_WRITE || c->grants)) ||
	    ((w->flags & RV_SEND_FENCE) && q->ord_tail != q->ord_head) || len > c->fpdu_payload ||
	    len >= SOFT_SHM_MIN || soft_fault_held(c) ||
	    atomic_load_explicit(&q->fault.armed, memory_order_relaxed) ||
	    atomic_load_explicit(&q->sc->fault.armed, memory_order_relaxed) ||
	    atomic_load_explicit(&q->state, memory_order_relaxed) != RV_QPS_RTS)
		return false;
	flen = rv_wire_fpdu_len(rv_wire_ddp_hdr_len(!is_send(w)) + len);
	buf = soft_shmring_frame_at(c, flen);
	if (!buf)
		return false;
	if (w->inl && (wr->send_flags & RV_SEND_INLINE)) {
		/* As soft_post_send's inline copy: the lkeys are not looked at. */
		uint32_t o;

		off = data_head(q, w, 0, len, buf);
		o = 0;
		for (uint32_t k = 0; k < wr->num_sge; k++) {
			memcpy(buf + off + o, (const void *)(uintptr_t)wr->sg_list[k].addr, wr->sg_list[k].length);
			o += wr->sg_list[k].length;
		}
	} else if (len <= SOFT_TX_STAGE) {
		/* Small: read under the MR lock into the stack, then write the
		 * record. The lock's atomics wait for every store before them,
		 * and the record's lines are the consumer's until our stores
		 * take them: no record store before the unlock. */
		uint8_t stage[SOFT_TX_STAGE];

		if (len && soft_sgl_read(q->sc, q->qp->pd, wr->sg_list, wr->num_sge, 0, stage, len) != SOFT_MEM_OK)
			return false;
		off = data_head(q, w, 0, len, buf);
		stage_copy(buf + off, stage, len);
	} else {
		off = data_head(q, w, 0, len, buf);
		if (soft_sgl_read(q->sc, q->qp->pd, wr->sg_list, wr->num_sge, 0, buf + off, len) != SOFT_MEM_OK)
			return false; /* the record stays unused; w->msn is set again */
	}
	{
		/* The pad and the CRC field: 4 to 7 bytes, zeroed by two 4-byte
		 * stores that overlap (a libc memset call cost ~26 instructions). */
		uint8_t *t = buf + off + len;
		size_t z = flen - off - len;

		memset(t, 0, 4);
		memset(t + z - 4, 0, 4);
	}
	w->inl = false;
	w->num_sge = 0; /* framed whole: its SGEs are never read again */
	soft_shmring_framed(c, flen, last);
	data_done(q, c, w, len); /* sq_tx moves past it; the caller moves sq_tail */
	return true;
}

void soft_tx_ring_done(struct soft_qp *q)
{
	/* What soft_tx_push does after framing, less what cannot be due: the
	 * flush publishes (if the last WR did not) and marks the WRs for
	 * completion; fill() would find nothing more (the WRs went through
	 * soft_tx_ring_now, nothing else was due and q->lock is held), and the
	 * epoll interest is unchanged (c->tx stays empty). The flush without
	 * its copy of c->tx: soft_shmring_framed_done. */
	soft_shmring_framed_done(q, q->conn);
	soft_sq_complete(q);
}

bool soft_tx_idle(const struct soft_qp *q)
{
	const struct soft_conn *c = q->conn;

	/* fill's sources, in its order: a TERMINATE, READ responses, the RTR
	 * message, same-host control, the send queue, a confirmation READ. */
	return c && c->tx_len == 0 && !q->term_pending && q->ird_head == q->ird_tail && !q->need_rtr &&
	       !c->shm_send_ctl && !c->ring && q->sq_tx == q->sq_tail &&
	       (q->uc || q->sq_tx == q->sq_covered || !confirm_now(q));
}

void soft_tx_terminate(struct soft_qp *q, uint8_t layer, uint8_t etype, uint8_t ecode, const struct rv_fpdu *bad)
{
	struct rv_fpdu f;
	int n;

	memset(&f, 0, sizeof(f));
	f.opcode = RV_RDMAP_TERMINATE;
	f.last = true;
	f.qn = RV_DDP_QN_TERM;
	f.msn = q->msn_tx[RV_DDP_QN_TERM]++;
	f.term.layer = layer;
	f.term.etype = etype;
	f.term.ecode = ecode;
	if (bad) {
		/* Quote the offending DDP header, and a READ request's RDMAP header too:
		 * in the receive buffer the payload follows the header. */
		f.term.m = true;
		f.term.d = true;
		f.term.seg_len = (uint16_t)(bad->hdr_len + bad->payload_len);
		f.term.hdr = bad->hdr;
		f.term.hdr_len = bad->hdr_len;
		if (bad->opcode == RV_RDMAP_READ_REQ && !bad->tagged) {
			f.term.r = true;
			f.term.hdr_len = (uint16_t)(bad->hdr_len + RV_RDMAP_READ_REQ_LEN);
		}
	}
	n = rv_wire_fpdu_encode_crc(q->term, sizeof(q->term), &f, !q->conn || q->conn->crc);
	if (n > 0) {
		q->term_len = (size_t)n;
		q->term_pending = true;
	}
}
