/*
 * The RDMA engine of `rverbs perf`: resources, endpoint exchange and the
 * measurement loops, on the public rverbs API only.
 *
 * Layout: one MR holds, per QP, a target half (what the peer writes, reads,
 * sends into) and a source half (what this side writes, sends, reads into).
 * wr_id of a send WR = QP index << 48 | its sequence number in the run, so a
 * signalled completion says how many WRs of that QP are done (RC completes in
 * order). Loops busy-poll; a run that makes no progress for STALL_NS fails
 * instead of hanging.
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json.h"
#include "perf.h"
#include "tools.h"

#define STALL_NS (20ull * 1000000000ull)
#define SEQ_MASK ((UINT64_C(1) << 48) - 1)

struct rdma {
	struct perf_params p;
	rv_device *dev;
	rv_context *ctx;
	rv_pd *pd;
	rv_mr *mr;
	rv_cq *cq;
	rv_comp_channel *ch; /* -e only */
	rv_qp **qp;
	rv_conn *conn;
	rv_endpoint *local, *remote;
	uint32_t *recv_out; /* receives posted and not yet completed, per QP */
	char *base;
	size_t slot;        /* bytes per half */
	uint32_t lkey;
	rv_device_attr dattr;
	rv_port_attr pattr;
	/* Yield the CPU after this many empty polls in a row (0: never), for the run. */
	unsigned yield_after, empty_polls;
	/* Bandwidth runs on soft0 with busy polling: a channel to block on
	 * when the CPU is crowded (idle()), whether blocking is on for the run,
	 * whether the last sched_yield() let another task run for long, idle
	 * calls since that yield, and the blocks of the run (JSON "naps_client"). */
	rv_comp_channel *nap_ch;
	bool nap, crowded;
	unsigned naps_since_yield;
	uint64_t naps;
};

/* What one run does per QP. */
struct qrun {
	uint64_t posted, done, recvd;
};

static char *target(struct rdma *r, uint32_t q) { return r->base + (size_t)q * 2 * r->slot; }
static char *source(struct rdma *r, uint32_t q) { return target(r, q) + r->slot; }

const char *perf_rdma_device_name(const struct rdma *r) { return rv_device_name(r->dev); }
bool perf_rdma_has_atomics(const struct rdma *r) { return r->dattr.atomic_cap != RV_ATOMIC_NONE; }
bool perf_rdma_is_soft(const struct rdma *r) { return rv_device_kind_of(r->dev) == RV_DEVICE_SOFT; }
rv_qp *perf_rdma_qp(const struct rdma *r, uint32_t i) { return r->qp && i < r->p.n_qps ? r->qp[i] : NULL; }
bool perf_rdma_events(const struct rdma *r) { return r->ch != NULL; }
uint64_t perf_rdma_naps(const struct rdma *r) { return r->naps; }

uint32_t perf_rdma_max_inline(const struct rdma *r)
{
	rv_qp_cap cap = {0};

	rv_qp_get_cap(r->qp[0], &cap);
	return cap.max_inline_data;
}

uint32_t perf_cq_mod(const struct perf_params *p, uint64_t size, bool all)
{
	if (p->cq_mod)
		return p->cq_mod;
	/* perftest's rule: 100, at most the TX depth (ib_*_lat have a TX depth
	 * of 1, so they signal every send; rverbs perf's lat keeps -t, 128);
	 * 1 above 8 KiB "for a correct BW", except when one run covers every
	 * size (-a) and with events (-e). */
	if (size > 8192 && !all && !p->events)
		return 1;
	return p->tx_depth < 100 ? p->tx_depth : 100;
}

void perf_rdma_close(struct rdma *r)
{
	if (!r)
		return;
	rv_conn_close(r->conn);
	rv_conn_unref(r->conn);
	rv_context_close(r->ctx); /* closes the QPs, CQ, MR and PD first */
	for (uint32_t i = 0; r->qp && i < r->p.n_qps; i++)
		rv_qp_unref(r->qp[i]);
	rv_cq_unref(r->cq);
	rv_comp_channel_unref(r->ch);
	rv_comp_channel_unref(r->nap_ch);
	rv_mr_unref(r->mr);
	rv_pd_unref(r->pd);
	rv_context_unref(r->ctx);
	rv_device_unref(r->dev);
	free(r->qp);
	free(r->local);
	free(r->remote);
	free(r->recv_out);
	free(r);
}

int perf_rdma_open(struct rdma **ret, const char *devname, const struct perf_params *p)
{
	struct rdma *r = calloc(1, sizeof(*r));
	uint32_t access = RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE | RV_ACCESS_REMOTE_READ;
	rv_cq_attr ca = {.mask = RV_CQ_ATTR_CQE};
	int rc;

	if (!r)
		return -ENOMEM;
	r->p = *p;
	r->qp = calloc(p->n_qps, sizeof(*r->qp));
	r->local = calloc(p->n_qps, sizeof(*r->local));
	r->remote = calloc(p->n_qps, sizeof(*r->remote));
	r->recv_out = calloc(p->n_qps, sizeof(*r->recv_out));
	if (!r->qp || !r->local || !r->remote || !r->recv_out) {
		perf_rdma_close(r);
		return -ENOMEM;
	}
	rc = devname ? rv_device_find(devname, &r->dev) : rv_device_default(&r->dev);
	if (rc < 0) {
		tool_fail(devname ? "rv_device_find" : "rv_device_default", rc);
		goto fail;
	}
	if ((rc = rv_context_new(r->dev, NULL, &r->ctx)) < 0) {
		tool_fail("rv_context_new", rc);
		goto fail;
	}
	r->dattr.mask = RV_DEVICE_ATTR_ALL;
	r->pattr.mask = RV_PORT_ATTR_ALL;
	if ((rc = rv_context_query_device(r->ctx, &r->dattr)) < 0 ||
	    (rc = rv_context_query_port(r->ctx, 1, &r->pattr)) < 0) {
		tool_fail("querying the device", rc);
		goto fail;
	}
	if (p->atomics && r->dattr.atomic_cap == RV_ATOMIC_NONE) {
		fprintf(stderr, "rverbs perf: atomic operations are not supported by this device (%s reports "
			"atomic_cap none)\n", rv_device_name(r->dev));
		rc = -EOPNOTSUPP;
		goto fail;
	}
	if (r->dattr.atomic_cap != RV_ATOMIC_NONE)
		access |= RV_ACCESS_REMOTE_ATOMIC;
	if ((rc = rv_pd_new(r->ctx, NULL, &r->pd)) < 0) {
		tool_fail("rv_pd_new", rc);
		goto fail;
	}
	r->slot = ((size_t)(p->max_size < 64 ? 64 : p->max_size) + 4095) & ~(size_t)4095;
	if ((rc = rv_mr_alloc(r->pd, r->slot * 2 * p->n_qps, access, NULL, &r->mr)) < 0) {
		tool_fail("rv_mr_alloc", rc);
		goto fail;
	}
	r->base = rv_mr_addr(r->mr);
	r->lkey = rv_mr_lkey(r->mr);
	ca.cqe = p->n_qps * (p->tx_depth + p->rx_depth) + 16;
	if (p->events) {
		if ((rc = rv_comp_channel_new(r->ctx, NULL, &r->ch)) < 0) {
			tool_fail("rv_comp_channel_new", rc);
			goto fail;
		}
		ca.mask |= RV_CQ_ATTR_CHANNEL;
		ca.channel = r->ch;
	}
	if (!p->events && rv_device_kind_of(r->dev) == RV_DEVICE_SOFT && p->spin != PERF_POLL_SPIN) {
		if ((rc = rv_comp_channel_new(r->ctx, NULL, &r->nap_ch)) < 0) {
			tool_fail("rv_comp_channel_new", rc);
			goto fail;
		}
		ca.mask |= RV_CQ_ATTR_CHANNEL;
		ca.channel = r->nap_ch;
	}
	if ((rc = rv_cq_new(r->ctx, &ca, &r->cq)) < 0) {
		tool_fail("rv_cq_new", rc);
		goto fail;
	}
	if ((p->events || r->nap_ch) && (rc = rv_cq_set_wait_mode(r->cq, RV_CQ_WAIT_EVENT, 0)) < 0) {
		tool_fail("rv_cq_set_wait_mode", rc);
		goto fail;
	}
	for (uint32_t i = 0; i < p->n_qps; i++) {
		rv_qp_init_attr qa = {
			.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_CAP | RV_QP_INIT_ATTR_SQ_SIG_ALL,
			.qp_type = RV_QPT_RC,
			.sq_sig_all = 0,
			.send_cq = r->cq,
			.recv_cq = r->cq,
			.cap = {.max_send_wr = p->tx_depth, .max_recv_wr = p->rx_depth, .max_send_sge = 1,
				.max_recv_sge = 1, .max_inline_data = p->inline_size},
		};
		if ((rc = rv_qp_new(r->pd, &qa, &r->qp[i])) < 0) {
			tool_fail("rv_qp_new", rc);
			goto fail;
		}
		if ((rc = rv_qp_endpoint(r->qp[i], &r->local[i])) < 0) {
			tool_fail("rv_qp_endpoint", rc);
			goto fail;
		}
		r->local[i].mask |= RV_ENDPOINT_MR;
		r->local[i].mr_addr = (uintptr_t)target(r, i);
		r->local[i].mr_length = r->slot;
		r->local[i].mr_rkey = rv_mr_rkey(r->mr);
	}
	*ret = r;
	return 0;
fail:
	perf_rdma_close(r);
	return rc;
}

/* The connection helper connects the QPs (and advertises the MR); the
 * control connection only carries the listener's port to the client. */
int perf_rdma_connect(struct rdma *r, int fd, bool client, const char *host)
{
	/* As perftest: the TCP exchange unless -R asks for rdma_cm (the
	 * listener's transport is its own, set when it is made). */
	uint32_t transport = r->p.rdma_cm ? RV_CONN_TRANSPORT_RDMA_CM : RV_CONN_TRANSPORT_TCP;
	rv_conn_attr a = {.mask = RV_CONN_ATTR_QPS | RV_CONN_ATTR_MR, .qps = r->qp, .num_qps = r->p.n_qps,
			  .mr = r->mr};
	rv_listener_attr la = {.mask = RV_LISTENER_ATTR_TRANSPORT, .transport = transport};
	rv_listener *l = NULL;
	uint64_t port;
	int rc;

	if (client) {
		char addr[300];
		if ((rc = net_recv_u64s(fd, &port, 1)) < 0)
			return tool_fail("receiving the listener's port", rc), rc;
		snprintf(addr, sizeof(addr), strchr(host, ':') ? "[%s]:%u" : "%s:%u", host, (unsigned)port);
		a.mask |= RV_CONN_ATTR_TRANSPORT;
		a.transport = transport;
		if ((rc = rv_connect(r->ctx, addr, &a, 30000, &r->conn)) < 0)
			return tool_fail("rv_connect", rc), rc;
	} else {
		if ((rc = rv_listener_new(r->ctx, "*:0", &la, &l)) < 0)
			return tool_fail("rv_listener_new", rc), rc;
		port = (uint64_t)rv_listener_port(l);
		if ((rc = net_send_u64s(fd, &port, 1)) < 0 ||
		    (rc = rv_listener_accept(l, &a, 30000, &r->conn)) < 0)
			tool_fail("rv_listener_accept", rc);
		rv_listener_close(l);
		rv_listener_unref(l);
		if (rc < 0)
			return rc;
	}
	for (uint32_t i = 0; i < r->p.n_qps; i++) {
		if ((rc = rv_conn_peer_endpoint(r->conn, i, &r->remote[i])) < 0)
			return tool_fail("rv_conn_peer_endpoint", rc), rc;
		if (!(r->remote[i].mask & RV_ENDPOINT_MR))
			return fprintf(stderr, "rverbs perf: the peer advertised no buffer\n"), -EBADMSG;
		/* The peer advertised its whole MR; QP i uses its i-th pair of halves. */
		r->remote[i].mr_addr += (uint64_t)i * 2 * r->slot;
		r->remote[i].mr_length = r->slot;
	}
	perf_path_settle(r);
	return net_barrier(fd);
}

static int post_recvs(struct rdma *r, uint32_t q, uint32_t want)
{
	rv_sge sge = {.addr = (uintptr_t)target(r, q), .length = (uint32_t)r->slot, .lkey = r->lkey};

	while (r->recv_out[q] < want) {
		int rc = rv_qp_recv(r->qp[q], &sge, (uint64_t)q << 48);
		if (rc < 0)
			return tool_fail("rv_qp_recv", rc), rc;
		r->recv_out[q]++;
	}
	return 0;
}

static int post_op(struct rdma *r, uint32_t q, uint32_t test, uint32_t size, uint64_t seq, bool signaled)
{
	rv_sge sge = {.addr = (uintptr_t)source(r, q), .length = size, .lkey = r->lkey};
	rv_send_wr wr;
	int rc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uint64_t)q << 48 | seq;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = signaled ? RV_SEND_SIGNALED : 0;
	wr.remote_addr = r->remote[q].mr_addr;
	wr.rkey = r->remote[q].mr_rkey;
	switch (test) {
	case PERF_WRITE: wr.opcode = RV_WR_RDMA_WRITE; break;
	case PERF_READ: wr.opcode = RV_WR_RDMA_READ; break;
	case PERF_SEND: wr.opcode = RV_WR_SEND; break;
	default:
		wr.opcode = RV_WR_ATOMIC_FETCH_AND_ADD;
		wr.compare_add = 1;
		sge.length = 8;
		break;
	}
	rc = rv_qp_post_send(r->qp[q], &wr, 1, NULL);
	if (rc < 0)
		tool_fail("rv_qp_post_send", rc);
	return rc;
}

static uint32_t qp_index(struct rdma *r, uint32_t qpn)
{
	for (uint32_t i = 0; i < r->p.n_qps; i++)
		if (r->local[i].qpn == qpn)
			return i;
	return 0;
}

/*
 * A busy poller that found nothing for yield_after polls gives the CPU
 * away. sched_yield() does so only when another task waits for this CPU,
 * and then puts the caller behind it (on an EEVDF kernel each call also
 * moves its deadline a slice later): with a busy process beside a 4 KiB TCP
 * bandwidth run the sender, yielding hundreds of times per run while its
 * window waited for a completion, spent most of the slow runs runnable and
 * not running (issue 22, tcp4k2: 0.7-2.0 s on the run queue for 0.2-0.3 s
 * of CPU, /proc/PID/task/TID/schedstat). So when the last yield took more
 * than CROWDED_NS (another task ran for longer than our own receiver's work
 * takes: the CPU is crowded) the run blocks on its CQ instead (rv_cq_wait:
 * soft0 sleeps in poll() on the QP's socket and the completion's bytes wake
 * it), for at most 1 ms; a task woken from sleep is not queued behind the
 * busy process as a yielder is. On an idle CPU it yields as before
 * (blocking there costs a wake-up per window: tcpwait2 lost quiet). Every
 * NAP_RECHECK-th time it yields again to see whether the CPU is still
 * crowded. Only with sparse signalling (r->nap: the window opens cq_mod WRs
 * at a time, and between its last post and that completion the sender has
 * nothing to do); with every WR signalled (above 8 KiB) a sleeping sender
 * lost quiet 64 KiB runs (1 of 6 rounds ahead). Returns completions written
 * to wc, or < 0.
 */
#define CROWDED_NS 200000u
#define NAP_RECHECK 256u
static int idle(struct rdma *r, rv_wc *wc)
{
	uint64_t t;

	if (r->nap && r->crowded && ++r->naps_since_yield < NAP_RECHECK) {
		int n = rv_cq_wait(r->cq, wc, 16, 1);

		r->naps++;
		if (n == -ETIMEDOUT)
			return 0;
		if (n < 0)
			tool_fail("rv_cq_wait", n);
		return n;
	}
	if (!r->nap) {
		sched_yield();
		return 0;
	}
	r->naps_since_yield = 0;
	t = now_ns();
	sched_yield();
	r->crowded = now_ns() - t > CROWDED_NS;
	return 0;
}

/* Poll once; account completions in st. Returns the number polled or < 0. */
static int poll_once(struct rdma *r, struct qrun *st)
{
	rv_wc wc[16];
	/* -e: sleep on the channel, at most 1 ms (the callers also watch memory). */
	int n = r->ch ? rv_cq_wait(r->cq, wc, 16, 1) : rv_cq_poll(r->cq, wc, 16);

	if (n == -ETIMEDOUT && r->ch)
		n = 0;
	if (n < 0)
		return tool_fail(r->ch ? "rv_cq_wait" : "rv_cq_poll", n), n;
	/* The software device progresses on its own threads: a poller that
	 * never lets go of its core starves them when cores are few. */
	if (n == 0 && r->yield_after && ++r->empty_polls >= r->yield_after) {
		r->empty_polls = 0;
		if ((n = idle(r, wc)) < 0)
			return n;
	} else if (n > 0) {
		r->empty_polls = 0;
	}
	for (int i = 0; i < n; i++) {
		uint32_t q = (uint32_t)(wc[i].wr_id >> 48);
		if (wc[i].status != RV_WC_SUCCESS) {
			fprintf(stderr, "rverbs perf: %s completion with status %s: %s\n",
				wc[i].opcode & RV_WC_RECV ? "receive" : "send", rv_wc_status_str((int)wc[i].status),
				rv_wc_status_hint((int)wc[i].status));
			return -EIO;
		}
		if (q >= r->p.n_qps)
			q = qp_index(r, wc[i].qp_num);
		if (wc[i].opcode & RV_WC_RECV) {
			st[q].recvd++;
			r->recv_out[q]--;
		} else {
			st[q].done = wc[i].wr_id & SEQ_MASK;
		}
	}
	return n;
}

/* Bandwidth: keep tx_depth WRs in flight per QP, signal every cq_mod-th and
 * the last; the receiving side of SEND keeps rx_depth receives posted. */
static int run_bw(struct rdma *r, bool client, const struct perf_cmd *c, struct perf_result *res,
		  progress_fn progress)
{
	uint32_t nq = r->p.n_qps, size = (uint32_t)c->size;
	bool sender = client || r->p.bidir;
	bool receiver = c->test == PERF_SEND && (!client || r->p.bidir);
	uint64_t total = c->iters * nq, next_mark;
	/* Peak: the best rate over windows of a tenth of the run, but never
	 * shorter than two queue depths, so a burst of completions is not a peak. */
	uint64_t chunk = total / 10 > 2ull * r->p.tx_depth * nq ? total / 10 : 2ull * r->p.tx_depth * nq;
	uint64_t t0, last_progress, t_mark, done_all = 0, recvd_all = 0;
	uint32_t empty = 0; /* empty polls, for the stall clock */
	double peak = 0;
	struct qrun *st = calloc(nq, sizeof(*st));
	int rc = 0;

	if (!st)
		return -ENOMEM;
	if (!sender && !receiver) {
		free(st);
		return 0; /* the passive side of WRITE/READ/atomic: nothing to do */
	}
	for (uint32_t q = 0; q < nq && receiver; q++)
		if ((rc = post_recvs(r, q, (uint32_t)(c->iters < r->p.rx_depth ? c->iters : r->p.rx_depth))) < 0)
			goto out;
	next_mark = chunk;
	t0 = t_mark = last_progress = now_ns();
	while ((sender && done_all < total) || (receiver && recvd_all < total)) {
		for (uint32_t q = 0; q < nq && sender; q++) {
			while (st[q].posted < c->iters && st[q].posted - st[q].done < r->p.tx_depth) {
				uint64_t seq = st[q].posted + 1;
				bool sig = seq % c->cq_mod == 0 || seq == c->iters;
				if ((rc = post_op(r, q, c->test, size, seq, sig)) < 0)
					goto out;
				st[q].posted = seq;
			}
		}
		rc = poll_once(r, st);
		if (rc < 0)
			goto out;
		/* As in the latency loop: the stall clock every 256th empty poll,
		 * not on each (a busy sender's empty polls read it 3 % of all
		 * samples at 64 KiB over TCP, 6.7 % at 1 MiB: issue 22). */
		if (rc == 0) {
			if ((++empty & 255) == 0 && now_ns() - last_progress > STALL_NS) {
				fprintf(stderr, "rverbs perf: no completion for %llu s: the peer or the device stalled\n",
					STALL_NS / 1000000000ull);
				rc = -ETIMEDOUT;
				goto out;
			}
			continue;
		}
		uint64_t now = now_ns();
		last_progress = now;
		done_all = recvd_all = 0;
		for (uint32_t q = 0; q < nq; q++) {
			done_all += st[q].done;
			recvd_all += st[q].recvd;
			if (receiver) {
				uint64_t left = c->iters - st[q].recvd;
				if ((rc = post_recvs(r, q, (uint32_t)(left < r->p.rx_depth ? left : r->p.rx_depth))) < 0)
					goto out;
			}
		}
		uint64_t progress_n = sender ? done_all : recvd_all;
		if (progress_n >= next_mark) {
			double dt = (double)(now - t_mark) / 1e9;
			uint64_t ops = progress_n - (next_mark - chunk);
			if (dt > 0 && (double)ops * size / dt > peak)
				peak = (double)ops * size / dt;
			t_mark = now;
			next_mark = progress_n + chunk;
			if (progress)
				progress(progress_n, total);
		}
	}
	rc = 0;
	if (client) {
		double s = (double)(now_ns() - t0) / 1e9;
		res->bw_avg = (double)total * size / s;
		res->bw_peak = peak > res->bw_avg ? peak : res->bw_avg;
		res->msg_rate = (double)total / s;
	}
out:
	free(st);
	return rc;
}

/* Wait until every signalled send of the run is complete, so that nothing
 * of this run is left in the CQ for the next one. */
static int drain(struct rdma *r, struct qrun *st)
{
	uint64_t t0 = now_ns();

	for (uint32_t q = 0; q < r->p.n_qps; q++) {
		while (st[q].done < st[q].posted) {
			int rc = poll_once(r, st);
			if (rc < 0)
				return rc;
			if (now_ns() - t0 > STALL_NS)
				return fprintf(stderr, "rverbs perf: send completions stalled\n"), -ETIMEDOUT;
		}
	}
	return 0;
}

/* One latency operation on QP 0. A ping-pong signals one send in cq_mod
 * and the last (as perftest's run_iter_lat_send): soft0 confirms a signalled
 * SEND or WRITE with a frame exchange of its own, a NIC with the ACK it sends
 * anyway. READ and atomics are always signalled: their completion is the
 * measurement. */
static int post_lat(struct rdma *r, struct qrun *st, const struct perf_cmd *c, uint32_t size)
{
	uint64_t seq = st[0].posted + 1;
	bool pingpong = c->test == PERF_WRITE || c->test == PERF_SEND;
	bool sig = !pingpong || seq % c->cq_mod == 0 || seq == c->iters;
	int rc;

	/* Room in the send queue: the unsignalled WRs count until a later
	 * signalled one completes. */
	for (uint64_t t0 = now_ns(); st[0].posted - st[0].done >= r->p.tx_depth;) {
		if ((rc = poll_once(r, st)) < 0)
			return rc;
		if (now_ns() - t0 > STALL_NS)
			return fprintf(stderr, "rverbs perf: send completions stalled\n"), -ETIMEDOUT;
	}
	if ((rc = post_op(r, 0, c->test, size, seq, sig)) < 0)
		return rc;
	st[0].posted = seq;
	return 0;
}

/* Latency on QP 0: WRITE and SEND ping-pong (half the round trip, as
 * perftest), READ and atomics one round trip each. */
static int run_lat(struct rdma *r, bool client, const struct perf_cmd *c, struct perf_result *res,
		   progress_fn progress)
{
	uint32_t size = (uint32_t)c->size;
	volatile char *in = target(r, 0) + (size ? size - 1 : 0);
	char *out = source(r, 0) + (size ? size - 1 : 0);
	bool pingpong = c->test == PERF_WRITE || c->test == PERF_SEND;
	struct qrun *st = calloc(r->p.n_qps, sizeof(*st));
	double *lat = client ? calloc(c->iters, sizeof(*lat)) : NULL;
	uint64_t stall = now_ns();
	int rc = 0;

	if (!st || (client && !lat)) {
		rc = -ENOMEM;
		goto out;
	}
	if (!client && !pingpong)
		goto out; /* READ and atomics need nothing from the responder's CPU */
	for (uint64_t i = 0; i < c->iters; i++) {
		uint64_t t0 = now_ns(), recvd = st[0].recvd;
		char seq = (char)(i % 255 + 1);

		if (client || !pingpong) {
			*out = seq;
			if ((rc = post_lat(r, st, c, size)) < 0)
				goto out;
		}
		/* Wait for: the peer's write (WRITE), a receive (SEND), our own completion (READ, atomic).
		 * The stall clock is read every 256th empty poll, not on each: a
		 * clock read per poll was a third of a busy poller's samples
		 * (perf record, same-host busy-poll ping-pong), time the poll loop
		 * of perftest (a cycle counter) does not spend. */
		for (uint32_t empty = 0;;) {
			if (c->test == PERF_WRITE ? *in == seq :
			    c->test == PERF_SEND ? st[0].recvd > recvd : st[0].done == st[0].posted)
				break;
			if ((rc = poll_once(r, st)) < 0)
				goto out;
			if (rc == 0 && (++empty & 255) == 0 && (now_ns() - stall) > STALL_NS) {
				fprintf(stderr, "rverbs perf: no answer for %llu s at iteration %" PRIu64 "\n",
					STALL_NS / 1000000000ull, i);
				rc = -ETIMEDOUT;
				goto out;
			}
		}
		stall = now_ns();
		if (c->test == PERF_SEND && (rc = post_recvs(r, 0, 1)) < 0)
			goto out;
		if (!client) {
			*out = seq;
			if ((rc = post_lat(r, st, c, size)) < 0)
				goto out;
		} else {
			lat[i] = (double)(now_ns() - t0) / 1e3 / (pingpong ? 2 : 1);
			if (progress && (i & 1023) == 1023)
				progress(i, c->iters);
		}
	}
	rc = drain(r, st);
	if (client && rc == 0)
		perf_lat_stats(lat, c->iters, res);
out:
	free(lat);
	free(st);
	return rc < 0 ? rc : 0;
}

/* WRITE and READ bandwidth, before the clock (the client only; the target
 * is passive, so the server needs to know nothing): a warm-up of a few WRs
 * per QP, as ucx_perftest's -w (which by default warms up a tenth of its
 * iterations), then every completion drained. It touches the source and the
 * target pages once (first-touch faults are not the steady state), and on
 * soft0's same-host path it lets the target grant its memory (one-copy
 * WRITE and READ, lib/drivers/soft/README.md): the target grants when it
 * places the first WRITE, by which time the first queue depth of WRs is
 * already in the ring, so without a warm-up a 1 MiB run of 1000 WRs moved
 * its first 128 MiB by process_vm_readv and the rest by memcpy. That first
 * pass therefore never touches the initiator's mapping of the grant, and the
 * timed run's first one-copy WRITEs took its page faults: 16 at 64 KiB and
 * 256 at 1 MiB (getrusage), about 14 us per page in this VM, 3.5 ms of a
 * 27 ms 1 MiB run. On soft0 the warm-up waits until WRs take the one-copy
 * path (await_direct) and runs again, as the timed run does (shmbw3). */
static unsigned yield_for(const struct rdma *r, int mode);

/* One pass: n WRs per QP, then every completion drained. */
static int warm_pass(struct rdma *r, const struct perf_cmd *c, uint64_t n, struct qrun *st)
{
	uint32_t size = (uint32_t)c->size;
	int rc;

	memset(st, 0, r->p.n_qps * sizeof(*st));
	for (uint32_t q = 0; q < r->p.n_qps; q++) {
		for (uint64_t seq = 1; seq <= n; seq++) {
			for (uint64_t t0 = now_ns(); st[q].posted - st[q].done >= r->p.tx_depth;) {
				if ((rc = poll_once(r, st)) < 0)
					return rc;
				if (now_ns() - t0 > STALL_NS) {
					fprintf(stderr, "rverbs perf: warm-up completions stalled\n");
					return -ETIMEDOUT;
				}
			}
			if ((rc = post_op(r, q, c->test, size, seq, seq % c->cq_mod == 0 || seq == n)) < 0)
				return rc;
			st[q].posted = seq;
		}
	}
	return drain(r, st);
}

/*
 * soft0: wait (bounded) until a WR of each QP completes at its post, that
 * is, took the one-copy path. The target sends GRANT after the receive pass
 * that placed the first WRITE and may publish that the first pass was
 * consumed before it, so a second pass right after the drain still went
 * through the ring in 4 runs of 50 (16 WRs a pass) and the timed run took
 * the faults. Through the ring a WR completes only after the target ran;
 * one copy completes it in rv_qp_post_send, so the poll right after sees
 * it. Up to AWAIT_TRIES WRs per QP, AWAIT_NAP_NS apart; rings without
 * grants (RVERBS_SOFT_SHM_DIRECT=0) cost those WRs and naps.
 */
#define AWAIT_TRIES 50
#define AWAIT_NAP_NS 200000
static int await_direct(struct rdma *r, const struct perf_cmd *c, struct qrun *st)
{
	if (c->test != PERF_WRITE && c->test != PERF_READ)
		return 0;
	memset(st, 0, r->p.n_qps * sizeof(*st));
	for (uint32_t q = 0; q < r->p.n_qps; q++) {
		for (unsigned i = 0; i < AWAIT_TRIES; i++) {
			uint64_t seq = st[q].posted + 1;
			int rc = post_op(r, q, c->test, (uint32_t)c->size, seq, true);

			if (rc < 0)
				return rc;
			st[q].posted = seq;
			if ((rc = poll_once(r, st)) < 0)
				return rc;
			if (st[q].done == seq)
				break;
			if ((rc = drain(r, st)) < 0)
				return rc;
			struct timespec nap = {0, AWAIT_NAP_NS};
			nanosleep(&nap, NULL);
		}
	}
	return drain(r, st);
}

static int warm_up(struct rdma *r, const struct perf_cmd *c)
{
	uint64_t n = r->p.warmup;
	struct qrun *st;
	int rc;

	if (n == PERF_WARMUP_AUTO) {
		n = c->iters / 10;
		n = n < 1 ? 1 : n > r->p.tx_depth ? r->p.tx_depth : n;
	}
	if (n == 0)
		return 0;
	if (!(st = calloc(r->p.n_qps, sizeof(*st))))
		return -ENOMEM;
	r->yield_after = yield_for(r, PERF_BW);
	r->empty_polls = 0;
	r->nap = r->nap_ch && c->cq_mod > 1;
	rc = warm_pass(r, c, n, st);
	/* Only on the rings is there a grant to wait for and to touch. */
	if (rc == 0 && perf_path_now(r) == PERF_PATH_RINGS && (rc = await_direct(r, c, st)) == 0)
		rc = warm_pass(r, c, n, st);
	free(st);
	return rc;
}

/* Before the start barrier: clean buffers (the latency tests watch bytes),
 * a receive posted where a SEND will arrive, the warm-up of WRITE and READ
 * bandwidth. */
static int prepare(struct rdma *r, bool client, const struct perf_cmd *c)
{
	if (c->mode == PERF_BW && client && (c->test == PERF_WRITE || c->test == PERF_READ))
		return warm_up(r, c);
	if (c->mode == PERF_LAT) {
		memset(target(r, 0), 0, 2 * r->slot);
		if (c->test == PERF_SEND)
			return post_recvs(r, 0, 1);
	}
	return 0;
}

/* On soft0 a ping-pong's poller receives from its own socket or ring, so
 * yielding only hands its core to other work (docs/tuning.md: 0.7 against
 * 6.8 µs on the rings with builds running); a bandwidth run needs soft0's
 * progress thread to push data when the socket has room, and a poller that
 * never yields starves it when cores are few. A latency run yields only
 * after LAT_YIELD_AFTER empty polls in a row, far more than an answer from
 * another CPU takes: when the peer shares our CPU, spinning until the
 * scheduler preempts us cost a whole time slice (about 1 ms) per message. */
#define LAT_YIELD_AFTER 2048
static unsigned yield_for(const struct rdma *r, int mode)
{
	if (rv_device_kind_of(r->dev) != RV_DEVICE_SOFT || r->p.spin == PERF_POLL_SPIN)
		return 0;
	return r->p.spin == PERF_POLL_YIELD || mode == PERF_BW ? 64 : LAT_YIELD_AFTER;
}

int perf_rdma_run(struct rdma *r, bool client, const struct perf_cmd *c, struct perf_result *res,
	     progress_fn progress)
{
	r->yield_after = yield_for(r, (int)c->mode);
	r->empty_polls = 0;
	r->nap = r->nap_ch && c->mode == PERF_BW && c->cq_mod > 1;
	r->naps = 0;
	if (c->size > r->slot || (c->test == PERF_ATOMIC && !perf_rdma_has_atomics(r)))
		return -EINVAL;
	if (c->mode == PERF_LAT)
		return run_lat(r, client, c, res, progress);
	return run_bw(r, client, c, res, progress);
}

int perf_rdma_prepare(struct rdma *r, bool client, const struct perf_cmd *c)
{
	return prepare(r, client, c);
}

static void gid_perftest(const uint8_t *g, char *buf, size_t len)
{
	size_t off = 0;
	for (int i = 0; i < 16 && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%02d", i ? ":" : "", g[i]);
}

static void print_addr(const char *which, const rv_endpoint *e)
{
	char gid[80];

	printf(" %s address: LID %#04x QPN %#06x PSN %#06x RKey %#08x VAddr %#016" PRIx64 "\n", which, e->lid,
	       e->qpn, e->psn, e->mr_rkey, e->mr_addr);
	gid_perftest(e->gid, gid, sizeof(gid));
	printf(" GID: %s\n", gid);
}

void perf_rdma_print_header(const struct rdma *r, const char *title, uint32_t cq_mod, int mode)
{
	static const char line[] =
		"---------------------------------------------------------------------------------------\n";
	bool soft = rv_device_kind_of(r->dev) == RV_DEVICE_SOFT;
	rv_qp_cap cap = {0};

	rv_qp_get_cap(r->qp[0], &cap);
	printf("%s", line);
	printf("                    %s\n", title);
	printf(" Dual-port       : OFF\t\tDevice         : %s\n", rv_device_name(r->dev));
	printf(" Number of qps   : %u\t\tTransport type : %s\n", r->p.n_qps, soft ? "IW" : "IB");
	printf(" Connection type : RC\t\tUsing SRQ      : OFF\n");
	printf(" PCIe relax order: OFF\n");
	printf(" TX depth        : %u\n", r->p.tx_depth);
	printf(" RX depth        : %u\n", r->p.rx_depth);
	if (cq_mod)
		printf(" CQ Moderation   : %u\n", cq_mod);
	else
		printf(" CQ Moderation   : as the client asks\n");
	printf(" Mtu             : %d[B]\n", mtu_bytes(r->pattr.active_mtu));
	printf(" Link type       : %s\n", link_layer_name(r->pattr.link_layer));
	printf(" GID index       : 0\n");
	printf(" Max inline data : %u[B]\n", cap.max_inline_data);
	printf(" rdma_cm QPs     : %s\n", r->p.rdma_cm ? "ON" : "OFF");
	printf(" Data ex. method : Ethernet\n");
	if (r->ch)
		printf(" Polling         : events (completion channel, rv_cq_wait RV_CQ_WAIT_EVENT)\n");
	else if (mode < 0 && yield_for(r, PERF_BW) != yield_for(r, PERF_LAT))
		printf(" Polling         : busy; lat runs yield after %u empty polls, bw runs after %u (software device)\n",
		       yield_for(r, PERF_LAT), yield_for(r, PERF_BW));
	else if (yield_for(r, mode < 0 ? PERF_BW : mode))
		printf(" Polling         : busy, yielding after %u empty polls (software device)\n",
		       yield_for(r, mode < 0 ? PERF_BW : mode));
	else
		printf(" Polling         : busy\n");
	printf("%s", line);
	for (uint32_t i = 0; i < r->p.n_qps; i++) {
		print_addr("local", &r->local[i]);
		print_addr("remote", &r->remote[i]);
	}
	printf("%s", line);
}

void perf_rdma_json_header(const struct rdma *r, void *jv, int mode)
{
	struct json *j = jv;
	char gid[48];

	json_string(j, "device", rv_device_name(r->dev));
	json_uint(j, "mtu", (uint64_t)mtu_bytes(r->pattr.active_mtu));
	json_string(j, "link_layer", link_layer_name(r->pattr.link_layer));
	json_uint(j, "yield_after_empty_polls", yield_for(r, mode < 0 ? PERF_BW : mode));
	json_array_begin(j, "qps");
	for (uint32_t i = 0; i < r->p.n_qps; i++) {
		const rv_endpoint *e[2] = {&r->local[i], &r->remote[i]};
		json_object_begin(j, NULL);
		for (int k = 0; k < 2; k++) {
			json_object_begin(j, k ? "remote" : "local");
			json_uint(j, "lid", e[k]->lid);
			json_uint(j, "qpn", e[k]->qpn);
			json_uint(j, "psn", e[k]->psn);
			json_uint(j, "rkey", e[k]->mr_rkey);
			json_uint(j, "vaddr", e[k]->mr_addr);
			format_gid(e[k]->gid, gid, sizeof(gid));
			json_string(j, "gid", gid);
			json_object_end(j);
		}
		json_object_end(j);
	}
	json_array_end(j);
}
