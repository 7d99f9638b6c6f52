/*
 * The software RDMA device: private objects shared by the files of
 * lib/drivers/soft. Nothing here leaves this folder except rv_driver_soft.
 *
 * Threads and locks (the rules every file here follows):
 * - Each context has one progress thread (context.c) that owns the epoll
 *   loop, the listener, connection setup and all receive processing.
 * - sc->lock guards the context's QP table, its connection lists and the
 *   connection state machine. The progress thread holds it while it handles
 *   events; control calls (qp create/modify/destroy) take it too. Posting
 *   never takes it; a busy poller only tries it (cq.c), to receive itself.
 * - q->lock guards one QP's queues and its transmit side. Posting threads
 *   take it alone; the progress thread takes it under sc->lock. Order:
 *   sc->lock, then q->lock, then sc->mr_lock (read), then a CQ's lock.
 * - A QP leaves the progress thread's view (the QP table, conn->qp) under
 *   sc->lock + q->lock before it is freed; a connection is freed only by the
 *   progress thread (or context close after it stopped), after its fd left
 *   the epoll set, so a stale epoll event never reaches freed memory.
 */
#ifndef RV_SOFT_H
#define RV_SOFT_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "driver.h"
#include "lock.h"
#include "wire/wire.h"

/* Limits reported by query_device and enforced at create. */
#define SOFT_MAX_QP 65536u
#define SOFT_MAX_QP_WR 16384u
#define SOFT_MAX_SGE 16u
#define SOFT_MAX_CQ 65536u
#define SOFT_MAX_CQE (1u << 20)
#define SOFT_MAX_MR (1u << 20)
#define SOFT_MAX_PD 65536u
#define SOFT_MAX_SRQ 65536u
#define SOFT_MAX_RD_ATOM 16u
#define SOFT_MAX_INLINE 1024u
#define SOFT_MIN_INLINE 64u
#define SOFT_MAX_MSG (1u << 31)
/* Address handles are plain memory (no driver object): the number is a bound
 * for applications sizing tables, not a limit soft0 counts. */
#define SOFT_MAX_AH (1u << 20)
/* Multicast (ud.c): groups a context joins, QPs attached to one group. */
#define SOFT_MAX_MCAST_GRP 64u
#define SOFT_MAX_MCAST_QP_ATTACH 32u

/* The MPA revision soft0 speaks and accepts (conn.c: RFC 6581's enhanced
 * connection setup needs revision 2); rv_device_attr.fw_ver names it. */
#define RV_SOFT_MPA_REV 2u
/* rv_device_attr.device_cap_flags, with libibverbs' IBV_DEVICE_* values:
 * SRQ_RESIZE (1 << 13: rv_srq_modify with RV_SRQ_MAX_WR, srq.c),
 * MEM_WINDOW (1 << 17: rv_mw_alloc and rv_qp_bind_mw, mr.c) and
 * MEM_WINDOW_TYPE_2B (1 << 24: a type 2 window is checked against both the
 * QP that bound it and its PD, mr.c check()) and XRC (1 << 20: XRC domains,
 * SRQs and QPs, srq.c); type 1 windows come with MEM_WINDOW.
 * tests/test-misuse.c checks each against what the device does. */
#define SOFT_DEVICE_CAP_FLAGS ((1u << 13) | (1u << 17) | (1u << 20) | (1u << 24))

/* The RFC 7306 extensions this device implements (offered unless RV_SOFT_NO_EXT). */
#define SOFT_CAPS (RV_SOFT_CAP_IMM | RV_SOFT_CAP_ATOMIC | RV_SOFT_CAP_RNR)
/* A zero-length WRITE with STag 0 whose TO carries this tag and an MSN: "the
 * SEND with that MSN found no receive WR" (retry.c, with RV_SOFT_CAP_RNR). */
#define SOFT_RNR_NOTICE (UINT64_C(0x524e52) << 40) /* "RNR" */
#define SOFT_RNR_NOTICE_MASK (UINT64_C(0xffffff) << 40)

/* An FPDU with at least this much payload, framed when the transmit buffer
 * is empty, is sent with sendmsg straight from the registered memory (tx.c). */
#define SOFT_TX_DIRECT_MIN 8192u
/* Payload bytes per FPDU: at least one page (active_mtu RV_MTU_4096), and as
 * many whole pages as the connection's MULPDU allows (RFC 5044 §8: the TCP
 * MSS less the MPA length and CRC; the 16-bit ULPDU_Length caps it), so about
 * 60 KiB on loopback, where the MSS is about 64 KiB (conn.c, fpdu_payload). */
#define SOFT_FPDU_PAYLOAD 4096u
#define SOFT_FPDU_PAYLOAD_MAX (15u * 4096u) /* + the largest DDP header ≤ RV_ULPDU_MAX */
/* Per-connection buffers: each holds a few largest FPDUs (malloc'd with
 * mmap: only the pages a connection touches are resident). */
#define SOFT_RXBUF (256u * 1024u)
#define SOFT_TXBUF (256u * 1024u)
/* TCP_NOTSENT_LOWAT of every connection's socket: at most about this much
 * stays queued unsent in the kernel (the rest waits in the send queue, and
 * the socket is writable again below it). Without it a stream sender queued
 * megabytes there; sent when the peer's ACKs opened the window, in the
 * receiver's softirq, they made the receiving thread pay both sides' TCP
 * path, and bulk runs fell into a slow mode (README, "Bimodal TCP
 * bandwidth"). 64 KiB measured best of 32, 64 and 128 KiB. */
#define SOFT_TCP_NOTSENT_LOWAT (64 * 1024)
/* Connection setup gives up after this long (peer never reaches RTR, host
 * unreachable); the environment variable RVERBS_SOFT_TIMEOUT_MS overrides it. */
#define SOFT_CONNECT_TIMEOUT_MS 60000
/* An accepted connection must send its MPA request within this time, and
 * its first byte within SOFT_FIRST_BYTE_MS. */
#define SOFT_REQ_TIMEOUT_MS 5000
#define SOFT_FIRST_BYTE_MS 2000
/* Connections that name no QP of ours yet (waiting for their request) or
 * no more (rejected, closing) per context, and from one source address: a
 * new one past either bound evicts the oldest, idlest one (conn.c,
 * evict_one), never the newcomer. Requests that name a QP (PENDING,
 * WAIT_AUTH) are bounded per QP: SOFT_MAX_PENDING_PER_QP. */
#define SOFT_MAX_UNATTACHED 128
#define SOFT_MAX_UNATTACHED_PER_SOURCE 64
/* Requests (proven, with a secret) waiting for one QP to reach RTR, and
 * connections waiting for MAC_I for one QP; without a secret, one request. */
#define SOFT_MAX_PENDING_PER_QP 4
/* A rejected connection waits this long for the peer's FIN. */
#define SOFT_REJECT_LINGER_MS 250
/* Connection-setup warnings a context logs per second; the rest are counted. */
#define SOFT_SETUP_LOG_PER_S 10
/* A UC QP whose peer sent this many WRITEs with a key, range or access the
 * QP refuses is taken for a key search: TERMINATE, QP to error (rx.c). */
#define SOFT_UC_BAD_KEYS 256u
/* A closing connection waits this long for the peer's FIN before it is dropped. */
#define SOFT_LINGER_MS 2000
/* The transport retry bound (retry.c) is at least this long: the peer is a
 * process the OS may deschedule, which a NIC never is. */
#define SOFT_RETRY_MIN_MS 2000
/* A receiver that is not ready shows it lives this often (retry.c). */
#define SOFT_RNR_BEAT_MS 100
/* Ask the peer to confirm (zero-length READ) after this many unconfirmed WRs. */
#define SOFT_CONFIRM_EVERY 16u

/* The progress thread keeps polling (epoll_wait without sleeping) this long
 * after its last event before it sleeps, on machines with at least
 * SOFT_SPIN_MIN_CPUS online CPUs (on fewer, spinning takes the CPU the
 * application and the peer need: 0); RVERBS_SOFT_SPIN_US overrides both. */
#define SOFT_SPIN_US 50
#define SOFT_SPIN_MIN_CPUS 4
/* A thread blocking in rv_cq_wait (soft_cq_block) first polls for up to this
 * long, adaptively (cq.c wait_spin: the budget grows when its sleeps were
 * short, shrinks when they were long, starting at SOFT_WAIT_SPIN_START_US);
 * RVERBS_SOFT_WAIT_SPIN_US sets the bound, 0 turns the spin off. */
#define SOFT_WAIT_SPIN_US 50

/* A waiter on exactly one stream sleeps in a blocking recv on its socket
 * (soft_conn_sleep_claim) for at most this long when its wait has no deadline
 * (a nearer deadline bounds it instead), then in poll() as before: what
 * completes the CQ another way (a posting thread's flush, the progress
 * thread) reaches it within this bound. RVERBS_SOFT_WAIT_RECV_MS sets it, 0
 * turns this off.
 * The recv's first bytes go through a buffer of SOFT_WAIT_RECV_BUF of the
 * connection's (c->sleep_buf, its claimer's alone). */
#define SOFT_WAIT_RECV_MS 1
#define SOFT_WAIT_RECV_BUF 8192
#define SOFT_WAIT_SPIN_START_US 10
/* An empty rv_cq_poll runs the progress engine itself (without waiting for
 * its lock) once the thread polled empty this many times in a row (rv_cq_wait
 * in event mode polls twice per wait and never gets there);
 * RVERBS_SOFT_POLL_PROGRESS=0 turns it off. */
#define SOFT_POLL_PROGRESS_AFTER 3u
/* A CQ of at most this many connected QPs is served by reading their sockets
 * directly (one recv each per empty poll); one with more, or with a UD QP,
 * through epoll_wait(0) every SOFT_POLL_PROGRESS_EVERY-th empty poll. */
#define SOFT_POLL_DIRECT_MAX 8u
#define SOFT_POLL_PROGRESS_EVERY 4u
/* A poller whose stream can bring it no completion and no message to take
 * (no receive WR, no user READ or atomic in flight: only the READ responses
 * to our confirmations, or a peer's WRITEs and READ requests), and whose
 * last SOFT_POLL_IDLE_AFTER reads found nothing, reads it on every
 * SOFT_POLL_IDLE_EVERY-th poll only (conn.c, soft_conn_poll): the recv that
 * says EAGAIN was most of a streaming sender's busy poll. */
#define SOFT_POLL_IDLE_AFTER 4u
#define SOFT_POLL_IDLE_EVERY 8u
/* ... and at least every SOFT_POLL_IDLE_US µs, for a thread that polls
 * seldom (its 8th poll could be milliseconds away). */
#define SOFT_POLL_IDLE_US 5
/* A stream a poller reads directly leaves the progress thread's epoll
 * interest (so that thread is not woken for each frame); it gets it back
 * when no poller served it for this long, or at once when a CQ is armed. */
#define SOFT_POLL_HANDBACK_US 1000
/* While every polled stream is watched by a thread blocked in rv_cq_wait
 * (soft_cq_block), the progress thread looks for streams to hand back this
 * often instead (the waiter serves them; a waiter that left is noticed
 * within this). */
#define SOFT_WAIT_HANDBACK_MS 10
/* A READ response to a confirmation held for the application's answer
 * (soft_tx_hold) goes out at the latest this long after it was framed. */
#define SOFT_HOLD_US 50
/* After a batch that read only small FPDUs, the progress thread yields and
 * looks again (epoll_wait, no timeout) up to this many times in a row while
 * each look finds events, before it sleeps (context.c, progress). */
#define SOFT_RX_PEEKS 8
/* ... only streams whose last this many FPDUs were all small (below
 * SOFT_PLACE_MIN): at 64 KiB and above the receiver is the bottleneck, and
 * a yield queues it behind busy tasks. */
#define SOFT_RX_PEEK_RUN 32u

struct soft_qp;
struct soft_conn;
struct soft_ud;

struct soft_device {
	char name[16];
};

/* One queued asynchronous event (event.c). */
struct soft_event {
	uint32_t type;          /* rv_async_event_type */
	struct rv_object *obj;  /* the QP/CQ/SRQ handle, or NULL for a port event */
};

/* The context's asynchronous event queue (event.c). */
struct soft_evq {
	pthread_mutex_t lock;   /* a leaf lock */
	int fd;                 /* eventfd: 1 while n > 0 */
	struct soft_event *ev;  /* FIFO, oldest first */
	uint32_t n, cap;
};

/* A shared receive queue (srq.c). */
/* The slot count of a queue of n WRs whose free-running 32-bit counters index
 * it with counter & (slots - 1): a power of two, so that a counter keeps its
 * slot across the wrap (n <= SOFT_MAX_QP_WR). */
static inline uint32_t soft_pow2_at_least(uint32_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

struct soft_srq {
	struct rv_srq *srq;
	struct soft_ctx *sc;
	pthread_mutex_t lock;    /* the ring and the limit; shared by its QPs */
	struct soft_rwqe *rq;
	rv_sge *sge;
	uint32_t size, max_sge;
	uint32_t head, tail;     /* free-running; index = counter & mask */
	uint32_t mask;           /* mask + 1 slots, the power of two at or above size (see soft_qp's sq_mask) */
	uint32_t limit;          /* armed limit, 0 = disarmed */
	_Atomic uint32_t gen;    /* bumped by every post: stalled QPs resume when it moves */
	_Atomic bool starving;   /* a QP found it empty: the next post kicks the progress thread */
	/* An XRC SRQ: its number (unique in the context) and its place in the
	 * context's list of them (sc->xrc_srqs, under sc->lock). */
	uint32_t srqn;
	struct soft_srq *xrc_next;
};

struct soft_mr {
	struct soft_mr *next; /* hash chain */
	uint32_t key;         /* lkey == rkey == STag */
	uint32_t access;
	struct rv_pd *pd;
	uint64_t addr;
	uint64_t length;
	/* Memory windows share the STag table (rverbs/mw.h): a window's entry
	 * copies the range and access of its bind; unbound or invalidated, it
	 * refuses every access. qp: the QP a bound type 2 window belongs to. */
	bool mw;
	bool bound;
	uint8_t mw_type;
	struct rv_qp *qp;
	/* Memory rverbs mapped itself (rv_mr::memory_ours): mapped while this
	 * entry exists, so copies use memcpy; the caller's memory (rv_mr_reg)
	 * and windows are copied fault-safe (mr.c). */
	bool trusted;
	/* rv_mr_reg_dmabuf: soft0's own mapping of the dma-buf (at the MR's
	 * iova, trusted), unmapped when the MR is deregistered; else NULL. */
	void *dmabuf_map;
	/* Implicit ODP (rv_mr::implicit): addr 0, length UINT64_MAX, the whole
	 * address space; never trusted, every access through the fault-safe
	 * copies, the sends from it too (mr.c sgl_copy). */
	bool implicit;
	/* The sealed memfd behind memory rverbs owns (rv_mr::mem_fd, the
	 * facade's descriptor, valid while this entry exists), else -1: such an
	 * MR with REMOTE_WRITE may be granted to a same-host peer (grant.c). */
	int memfd;
};

#define SOFT_REMOTE_ACCESS (RV_ACCESS_REMOTE_READ | RV_ACCESS_REMOTE_WRITE | RV_ACCESS_REMOTE_ATOMIC)

/* Faults still to apply to the frames a context or a QP sends (fault.c). Each
 * counter is taken one frame at a time with a compare-and-swap, so posting
 * threads and the progress thread need no lock for them. */
struct soft_fault {
	_Atomic bool armed;        /* anything was ever injected: take the slow path */
	_Atomic uint32_t skip;     /* frames that pass untouched first (RVERBS_SOFT_FAULT after=) */
	_Atomic uint32_t reset, drop, corrupt, delay; /* frames still to affect */
	_Atomic uint32_t delay_ms;
};

struct soft_ctx {
	struct rv_context *ctx;
	struct soft_lock lock; /* lock.h: the QP table and the connections */
	struct soft_rwlock mr_lock; /* lock.h */
	struct soft_mr **mr_hash;
	uint32_t mr_buckets; /* power of two */
	uint32_t n_mr;

	struct soft_qp **qps; /* the progress thread's view of QPs */
	uint32_t n_qps, cap_qps;
	struct soft_srq *xrc_srqs; /* the XRC SRQs, by number (srq.c; sc->lock) */
	uint32_t next_srqn;        /* the last XRC SRQ number given (sc->lock) */
	struct soft_conn *conns;   /* every live connection */
	struct soft_conn *zombies; /* out of epoll, freed by the progress thread */
	/* Connection-setup warnings, at most SOFT_SETUP_LOG_PER_S a second (conn.c). */
	int64_t setup_log_window_ms;
	uint32_t setup_log_lines, setup_log_dropped;

	int epfd, evfd, lfd;
	int family; /* AF_INET or AF_INET6 */
	uint8_t gid[16];
	uint16_t port;
	int64_t timeout_ms; /* connection setup limit (RVERBS_SOFT_TIMEOUT_MS) */
	bool crc_required;  /* MPA C bit in our request/reply (RV_SOFT_CRC_OPTIONAL clears it) */
	bool trust_memory;  /* RVERBS_SOFT_TRUST_MEMORY=1: the caller's MRs are copied with memcpy too (mr.c) */
	uint32_t caps;      /* rv_soft_caps this context offers (RV_SOFT_NO_EXT clears them) */
	pthread_t thread;
	bool thread_started;
	bool stop;
	_Atomic bool kicked; /* some QP wants the progress thread (post_recv on a stalled rx) */
	_Atomic int64_t active_at; /* µs, CLOCK_MONOTONIC: the last batch with events */
	int64_t spin_us;           /* RVERBS_SOFT_SPIN_US */
	uint32_t wait_spin_ns;     /* RVERBS_SOFT_WAIT_SPIN_US: soft_cq_block's spin bound (0: none) */
	int wait_recv_ms;          /* RVERBS_SOFT_WAIT_RECV_MS: a waiter on one stream sleeps in its recv that long (0: never) */
	_Atomic uint64_t wait_recvs; /* waits that slept in a recv and got bytes (soft_ctx_wait_recvs) */
	bool poll_progress;        /* RVERBS_SOFT_POLL_PROGRESS: an empty rv_cq_poll runs a batch */
	uint32_t qp_gen;           /* bumped when the QP table changes (sc->lock): CQs rebuild their QP lists */
	_Atomic uint32_t n_polled; /* connections a poller reads directly (written under sc->lock) */
	_Atomic uint32_t n_watched; /* sockets threads blocked in rv_cq_wait watch (soft_cq_block) */
	_Atomic bool handback;     /* a CQ was armed: give every polled stream back to epoll now */
	_Atomic uint64_t handback_timeouts; /* streams handed back by the SOFT_POLL_HANDBACK_US timeout with bytes waiting */
	uint64_t serial;           /* this process's contexts are numbered (soft_ctx_handback_from) */
	struct soft_ctx *reg_next; /* the process's live contexts (context.c, its registry lock) */
	_Atomic int64_t wait_left_at; /* µs: a blocked waiter that watched streams last left (soft_cq_block) */
	_Atomic bool long_sleep;   /* the progress thread sleeps longer than SOFT_POLL_HANDBACK_US */
	uint8_t rx_batch;          /* sc->lock: what on_up (conn.c) read since progress() looked: 1 only streams of small FPDUs (SOFT_RX_PEEK_RUN), 2 another */
	bool shm_enabled;          /* RVERBS_SOFT_SHM: offer the same-host path (shm.c) */
	bool shm_ring;             /* RVERBS_SOFT_SHM_RING: shared-memory rings on it (shmring.c) */
	bool shm_direct;           /* RVERBS_SOFT_SHM_DIRECT: one-copy WRITEs on rings (grant.c) */
	bool roce_port;            /* RV_SOFT_ROCE_PORT: UD also on UDP 4791 (ud.c) */
	struct soft_conn **rings;  /* connections with a ring (sc->lock) */
	uint32_t n_rings, cap_rings;
	_Atomic uint32_t rings_live;   /* n_rings, readable without the lock */
	/* What soft_shmring_peek reads without sc->lock (shmring.c, "Teardown
	 * against the lock-free look"): the rings of rings[] by index, in an
	 * array replaced (never freed before the context closes) when it
	 * grows; the ring objects and their mappings' address ranges are
	 * pooled, never freed before the context closes either. */
	_Atomic(struct soft_ring_set *) ring_set;
	struct soft_ring_set *ring_sets_old; /* replaced arrays (sc->lock) */
	struct soft_shmring *ring_pool;      /* ring objects free for a connection (sc->lock) */
	struct soft_shmring *ring_all;       /* every ring object of the context (sc->lock) */
	_Atomic bool ring_peek_off;          /* an array could not grow: pollers take sc->lock */
	_Atomic int64_t ring_poll_at;  /* µs: a poller last looked at the rings */
	_Atomic bool ring_sleeping;    /* "sleeping" is set in every ring (progress thread or a waiter asleep) */
	/* The rings' doorbell: the eventfd our peers write (their OFFER/ANSWER
	 * name it), apart from evfd so that a thread blocked in rv_cq_wait can
	 * take it out of the progress thread's epoll interest and be the only
	 * one it wakes (soft_cq_block, soft_ctx_bell). */
	int bell_fd;
	_Atomic bool bell_on;          /* bell_fd is in the epoll interest (changed under sc->lock) */
	_Atomic uint32_t ring_waiters; /* threads blocked in rv_cq_wait on the doorbell (soft_cq_block) */
	/* Confirmations' READ responses held for the application's answer
	 * (soft_tx_hold): how many connections hold one, and the one-shot
	 * timerfd (in epoll) that bounds the hold, armed only while one is. */
	int hold_fd;
	_Atomic uint32_t n_held;
	_Atomic bool hold_armed;
	bool auth;                 /* auth.c: connections must prove the shared secret */
	uint8_t auth_key[64];      /* the secret (hashed when longer than 64 bytes, as HMAC does) */
	size_t auth_key_len;
	struct soft_ud *ud;  /* the UDP side (ud.c); NULL on the wildcard address */
	struct soft_fault fault; /* for every QP of the context */
	struct soft_evq evq; /* asynchronous events (event.c) */
};

enum soft_conn_state {
	CONN_CONNECTING = 1, /* active: TCP connect in progress, MPA request queued */
	CONN_WAIT_REPLY,     /* active: MPA request sent */
	CONN_WAIT_REQ,       /* passive: accepted, reading the MPA request */
	CONN_PENDING,        /* passive: request read, waiting for its QP to reach RTR */
	CONN_WAIT_AUTH,      /* passive: reply with MAC_R sent, waiting for MAC_I (auth.c); unattached */
	CONN_UP,             /* FPDUs flow */
	CONN_CLOSING,        /* detached from its QP: flush tx, shut down, wait for FIN */
	CONN_DEAD,           /* out of epoll, on the zombie list */
};

struct soft_conn {
	struct soft_conn *next;  /* sc->conns or sc->zombies */
	struct soft_ctx *sc;
	struct soft_qp *qp;      /* NULL unless attached (UP, CONNECTING, WAIT_REPLY) */
	int fd;
	uint32_t events;         /* current epoll interest */
	enum soft_conn_state state;
	bool active;
	bool may_send;           /* passive side: the initiator's first FPDU arrived (RFC 5044 §7.1.2) */
	bool rx_stalled;         /* a SEND waits at the head of rx for a receive WR */
	bool polled;             /* a poller reads it (soft_conn_poll): no EPOLLIN interest */
	bool shut_wr;
	bool crc;                /* MPA CRC in use on this stream (either side required it) */
	uint32_t fpdu_payload;   /* payload bytes per FPDU we send (SOFT_FPDU_PAYLOAD, more with a large MSS) */
	uint32_t fpdu_max;       /* the most the MSS allows (>= fpdu_payload): tx.c, chunk_at */
	uint8_t req_flags;       /* passive: the MPA request's flags, while PENDING */
	int64_t deadline;        /* ms, CLOCK_MONOTONIC; 0 = none */
	int64_t born_ms;         /* passive: accepted at (eviction takes the oldest first) */
	uint8_t src[16];         /* passive: the peer's address (IPv4-mapped), for the per-source bound */
	uint8_t *rx;
	size_t rx_off, rx_len;   /* unprocessed bytes: rx[rx_off, rx_len) (rx_off is 0 before CONN_UP) */
	/* Direct placement (place.c): the payload of the WRITE FPDU at the head
	 * of rx goes from the socket straight into the target memory; rx keeps
	 * its header, then its pad and CRC once they arrive. */
	struct soft_place {
		bool active;         /* payload still arriving into the target */
		bool placed;         /* payload all placed: rx.c checks the CRC and accounts it */
		uint8_t follow;      /* > 0: large WRITEs/SENDs came lately: read FPDU by FPDU (counts down on others) */
		bool follow_send;    /* the last large one was a SEND: look ahead an untagged header */
		bool send;           /* placing a SEND into the receive WR at offset mo (not a WRITE at stag/to) */
		uint32_t mo;
		uint8_t hdr_len;     /* MPA length + DDP header, at rx[rx_off] */
		uint8_t trail;       /* pad + CRC after the payload */
		uint32_t stag;
		uint64_t to;
		uint32_t len, done;  /* payload bytes, placed so far */
		uint32_t crc;        /* running CRC32c: length, header, payload placed */
	} place;
	uint8_t *tx;
	size_t tx_off, tx_len;
	bool tx_full;            /* tx.c: a direct send left part of its frame: frame no more data until tx drains */
	bool tx_blocked;         /* the socket refused bytes (EAGAIN): no send until EPOLLOUT (on_up) */
	bool rx_drained;         /* place.c: the last read took less than it asked for: the socket is empty */
	uint8_t rx_small_run;    /* q->lock: FPDUs below SOFT_PLACE_MIN rx.c handled in a row (saturates) */
	uint8_t poll_idle;       /* soft_conn_poll: reads in a row that found nothing (saturates) */
	uint8_t poll_skip;       /* ... and polls since the last read, once idle */
	int64_t poll_read_us;    /* ... and when that read was (µs) */
	bool out_waited;         /* a blocked waiter watches POLLOUT (soft_conn_wait_fd): no EPOLLOUT for the progress thread */
	bool tx_held;            /* tx holds READ responses to confirmations for the application's answer (soft_tx_hold) */
	bool tx_gather;          /* ... or, when set, small WRs gathered for one send() (tx.c, soft_tx_post) */
	/* A waiter sleeps in a blocking recv on fd (soft_conn_sleep_claim): no
	 * one else reads the socket meanwhile (soft_place_read returns 0). Set
	 * under sc->lock and q->lock, cleared under both or (a release without
	 * bytes) as the sleeper's last touch of c; a kill meanwhile shuts the
	 * socket down (which ends the recv) but keeps it open (kept_fd), and the
	 * zombie is not freed while this is set. */
	_Atomic bool rx_sleep;
	bool rx_blocking;        /* O_NONBLOCK cleared for that recv (every other call on fd passes MSG_DONTWAIT) */
	bool fd_kept;            /* killed during such a recv: kept_fd is closed when freed */
	int kept_fd;
	int rcvtimeo_ms;         /* SO_RCVTIMEO set on fd (0: none) */
	uint8_t *sleep_buf;      /* SOFT_WAIT_RECV_BUF bytes the sleeper's recv fills (allocated at its first claim) */
	struct rv_soft_cpd req;  /* passive: the request, while PENDING */
	/* fault.c: set under the QP's lock by the sending thread, read by the
	 * progress thread's timers without it: atomic. */
	_Atomic bool fault_stopped;  /* a frame was dropped or the stream reset; send no more */
	_Atomic int64_t fault_hold;  /* send nothing before this time (ms); 0 = no hold */
	/* Same-host path (shm.c): offered in the MPA private data, the peer's
	 * process proven by the kernel once the connection is up. */
	bool shm_offered;        /* the MPA extension was looked at (once per connection) */
	bool shm_peer;           /* the peer offered it (and we allow it, both ends local) */
	bool shm_pull;           /* we read the peer's memory: it may send WRITEs by reference */
	bool shm_push;           /* the peer reads ours: we may send WRITEs by reference */
	bool shm_send_ctl;       /* our SHM control FPDU (kind shm_ctl_due) is due */
	bool shm_ring_peer;      /* the peer's extension offers shared-memory rings (flag 1) */
	uint8_t shm_ctl_due;     /* the agreement message to send next */
	uint8_t shm_step;        /* 0: none yet, 1: identity exchanged, 3: agreed (no more) */
	uint32_t shm_pid;        /* the peer's process, as verified */
	int shm_pidfd;           /* a pidfd on it (-1: none, or this process) */
	/* Shared-memory rings (shmring.c), once both directions of the path hold. */
	struct soft_shmring *ring;
	_Atomic bool ring_tx_on; /* our frames go into our ring (after ring_tcp_end bytes of tx) */
	_Atomic bool ring_rx_on; /* the peer's frames come from its ring (its switch arrived) */
	bool ring_crc_off;       /* both rings on, the peer takes frames without CRC: c->crc cleared (shmring.c) */
	size_t ring_tcp_end;     /* bytes of tx up to the switch message: still for TCP */
	/* One-copy WRITEs (grant.c): grants in the header of the rings. */
	struct soft_grants *grants;
	bool grant_give;         /* the peer takes grants in our ring's header (its ANSWER said so) */
	bool grant_take;         /* we take grants in the peer's ring's header (our ANSWER said so) */
	bool grant_due;          /* a GRANT control message is due (q->lock) */
	uint8_t *grant_ours;     /* the grant area of our ring's header page (shmring.c sets it) */
	uint8_t *grant_peer;     /* ... of the peer's ring, mapped by us */
	size_t grant_area_len;
	/* Authentication (auth.c). */
	uint8_t auth_ni[16];     /* the initiator's nonce */
	uint8_t auth_nr[16];     /* the responder's nonce */
	uint32_t auth_qpn;       /* passive, WAIT_AUTH: the QP the request named */
};

struct soft_swqe {
	uint64_t wr_id;
	uint32_t opcode;
	uint32_t flags;
	uint32_t num_sge;
	uint32_t length;
	uint64_t remote_addr;
	uint32_t rkey;
	uint32_t msn;     /* SEND: its QN 0 MSN; READ: its QN 1 MSN */
	uint32_t srqn;    /* XRC initiator: the remote XRC SRQ (rv_send_wr.remote_srqn) */
	bool inl;         /* payload copied at post time into inline_data */
	bool done;        /* READ, atomic: response complete */
	bool signaled;
	uint32_t imm;     /* SEND/WRITE with immediate */
	uint64_t compare_add, swap; /* atomics */
	rv_sge *sge;      /* this slot's SGE array */
	uint8_t *inline_data;
};

struct soft_rwqe {
	uint64_t wr_id;
	uint32_t num_sge;
	rv_sge *sge;
};

/* A READ this QP sent and awaits (requester), in order of sending. */
struct soft_ord {
	uint32_t sink_stag;
	uint64_t sink_to;
	uint32_t len;
	uint32_t got;
	bool user;     /* a user READ or atomic WR (else an internal zero-length confirm) */
	bool atomic;   /* an atomic: answered by an Atomic Response with request id == wqe */
	uint32_t wqe;  /* user: its SQ index */
	uint32_t upto; /* completing it confirms every SQ WR before this index */
};

/* A READ this QP must answer (responder), in order of arrival. */
struct soft_ird {
	struct rv_read_req req;
	uint32_t sent;
	bool counted; /* counts against the IRD (nonzero length, or an atomic) */
	bool atomic;  /* an executed atomic: send an Atomic Response */
	uint32_t req_id;
	uint64_t orig;
};

#define SOFT_ORD_CAP SOFT_MAX_RD_ATOM
#define SOFT_IRD_CAP (2 * SOFT_MAX_RD_ATOM)

struct soft_qp {
	struct rv_qp *qp;
	struct soft_ctx *sc;
	struct soft_lock lock; /* lock.h: the queues and the transmit side (post, rx, rings) */
	uint32_t qpn;
	_Atomic uint32_t state; /* rv_qp_state as the driver sees it */
	rv_qp_attr attr;        /* what modify set, for query */
	uint32_t access;        /* qp_access_flags */

	bool have_peer, active;
	uint8_t peer_gid[16];
	uint16_t peer_port;
	uint32_t peer_qpn;
	uint32_t ord_max;
	uint32_t peer_ird;     /* the peer's IRD from the MPA exchange (RFC 6581) */
	uint32_t peer_caps;    /* rv_soft_caps both sides offered */
	uint32_t ord_user;     /* user READs (and atomics) in flight, limited by ORD */
	uint32_t ird_user;     /* READs (and atomics) of nonzero length being answered, limited by IRD */
	bool rtr_write;        /* active: the RTR message is a zero-length WRITE, not a READ */

	/* Send queue; counters are free-running, index = counter & sq_mask:
	 * sq_mask + 1 slots, the power of two at or above sq_size (the WRs it
	 * holds), so that a counter's slot stays the same across its 2^32 wrap
	 * (with counter % sq_size it did not: two WRs in flight could share a
	 * slot) and no division is made per WR. Likewise the receive queue. */
	struct soft_swqe *sq;
	rv_sge *sq_sge;
	uint8_t *sq_inline;
	uint8_t qbuf_user;     /* bit i: queue buffer i came from the parent domain's allocator (verbs/qp.c) */
	uint32_t sq_size, max_send_sge, max_inline;
	uint32_t sq_mask;
	uint32_t sq_head;      /* oldest not completed */
	uint32_t sq_tx;        /* next to transmit */
	uint32_t sq_tail;      /* next free */
	uint32_t sq_confirmed; /* SENDs/WRITEs before this index reached the peer */
	uint32_t sq_covered;   /* a READ sent after index sq_covered-1 will confirm up to here */
	uint32_t tx_off;       /* bytes of sq[sq_tx] already framed */
	uint32_t msn_tx[4];    /* next MSN per queue number (3: Atomic Responses) */
	bool need_rtr;         /* active: send the zero-length READ that opens the stream */
	bool term_pending;
	uint8_t term[RV_FPDU_OVERHEAD + 8 + RV_DDP_UNTAGGED_HDR + RV_RDMAP_READ_REQ_LEN];
	size_t term_len;

	struct soft_ord ord[SOFT_ORD_CAP];
	uint32_t ord_head, ord_tail;
	struct soft_ird ird[SOFT_IRD_CAP];
	uint32_t ird_head, ird_tail;

	/* Receive queue. */
	struct soft_rwqe *rq;
	rv_sge *rq_sge;
	uint32_t rq_size, max_recv_sge;
	uint32_t rq_mask;      /* index = counter & rq_mask (see sq_mask) */
	uint32_t rq_head, rq_tail;
	bool rx_in_msg;     /* rq[rq_head] is being filled */
	uint32_t rx_bytes;  /* bytes placed into it so far */
	uint32_t msn_rx[2]; /* expected MSN on QN 0 and QN 1 */
	uint32_t msn_rx_aresp; /* expected MSN of the next Atomic Response (QN 3) */
	bool rx_imm_pending;   /* a SEND with immediate was placed; its Immediate Data completes it */
	uint32_t rx_write_acc; /* bytes of the WRITE message being received */
	uint32_t last_write_len; /* length of the last complete WRITE (byte_len of WRITE with immediate) */

	struct soft_conn *conn;
	int64_t rtr_at;     /* when the QP reached RTR (ms): the passive side's wait starts */
	bool conn_failed;   /* setup failed while in RTR: ERR follows the move to RTS */
	bool kick;          /* rx stalled and a receive was posted (under q->lock) */
	bool confirm_late;  /* unsignalled WRs waited a timer tick for their confirmation: ask now */
	bool any_sig;       /* last_sig names a WR (tx.c, confirm_now) */
	uint32_t last_sig;  /* SQ index of the newest signalled WR other than a READ */
	bool sig_sparse;    /* at least SOFT_CONFIRM_EVERY WRs lie between last_sig and the signalled WR before it (tx.c, sig_due) */
	uint32_t rx_peer;      /* messages from the peer handled, READ responses aside (rx.c) */
	uint32_t rx_peer_post; /* rx_peer at the last post (tx.c, soft_tx_post) */
	int64_t post_us;       /* when the last post was (tx.c, soft_tx_post) */
	bool cq_overflow;   /* one of its CQs overflowed: the QP goes to ERR */
	int64_t polled_at;  /* µs: a poller last read its stream (sc->lock) */

	bool ud;            /* a UD QP: ud.c sends and receives, no connection */
	uint32_t ud_psn;    /* UD: the next send PSN */
	struct soft_fault fault; /* this QP's own faults, taken before the context's */
	int64_t progress_at; /* retry.c: the peer last showed progress (ms), as a timer tick saw it */
	uint32_t progress_n; /* retry.c: progress events (bytes taken, FPDUs received) */
	uint32_t progress_seen; /* progress_n at the last timer tick */
	int64_t rnr_beat_at; /* retry.c: the last keepalive sent while rx was stalled (ms) */
	bool retry_watch;    /* retry.c: send work is outstanding and the clock runs */
	/* Shared receive queue (srq.c): receives come from it instead of rq. */
	struct soft_srq *srq;
	struct soft_rwqe srq_wqe; /* the WR taken for the message being received */
	bool srq_have;            /* srq_wqe holds a WR */
	uint32_t srq_gen_seen;    /* srq->gen when a SEND found the SRQ empty */
	bool err_by_user;         /* the ERR being entered is rv_qp_modify's: no QP_FATAL */
	uint8_t peer_min_rnr_timer; /* the peer's min_rnr_timer code (MPA exchange) */
	int64_t rnr_since;   /* retry.c: the peer first reported sq[rnr_wqe] not ready (ms); 0: none */
	uint32_t rnr_wqe;    /* retry.c: the SEND the peer reports as waiting for a receive WR */
	/* UC (rx.c, tx.c): no confirmation, no retry; bad incoming messages are dropped. */
	bool uc;               /* an unreliable connected QP */
	bool uc_drop_send;     /* dropping the rest of the SEND message being received */
	bool uc_drop_write;    /* dropping the rest of the WRITE message being received */
	bool uc_write_dropped; /* the last WRITE was dropped: its Immediate Data goes too */
	bool uc_drop_imm;      /* the SEND being dropped had an Immediate Data message */
	uint64_t uc_count[3];  /* soft_uc_counter */
	uint32_t uc_bad_keys;  /* WRITEs refused on this UC QP (rx.c: SOFT_UC_BAD_KEYS ends the connection) */
	/* XRC (rverbs/xrcd.h). A target has no receive queue and no CQ: each
	 * message of DDP queue 0 names an XRC SRQ of its domain, which becomes
	 * q->srq (rx.c, xrc_select) and completes on that SRQ's CQ. */
	bool xrc_ini, xrc_tgt;
	struct rv_xrcd *xrcd; /* a target's domain */
};

/* The soft QP behind a facade QP, or NULL for NULL or another device's QP
 * (the test and debug entry points take any rv_qp). */
static inline struct soft_qp *soft_qp_of(rv_qp *qp)
{
	return qp && qp->ctx->dev->kind == RV_DEVICE_SOFT ? qp->drv_qp : NULL;
}

/* The queue number of w's SEND or Immediate Data message: an XRC
 * initiator's names the remote XRC SRQ (RV_SOFT_QN_XRC, rx.c). */
static inline uint32_t soft_send_qn(const struct soft_qp *q, const struct soft_swqe *w)
{
	return q->xrc_ini ? RV_SOFT_QN_XRC | w->srqn : RV_DDP_QN_SEND;
}

/* The CQ of q's receive completions: an XRC target's is its current SRQ's
 * (NULL before a message chose one). */
static inline struct rv_cq *soft_recv_cq(const struct soft_qp *q)
{
	if (q->xrc_tgt)
		return q->srq ? q->srq->srq->cq : NULL;
	return q->qp->recv_cq;
}

/* The PD receive buffers are checked against: the SRQ's (for a plain SRQ
 * the same as the QP's; for an XRC target the one the message names). */
static inline struct rv_pd *soft_recv_pd(const struct soft_qp *q)
{
	return q->srq ? q->srq->srq->pd : q->qp->pd;
}

/* What a UC QP's receive side dropped or failed without a TERMINATE (soft_uc_counters). */
enum soft_uc_counter {
	SOFT_UC_DROP_NO_RECV,  /* SEND / WRITE with immediate with no receive WR */
	SOFT_UC_DROP_WRITE,    /* WRITE with a bad key, out of bounds or without access */
	SOFT_UC_RX_TOO_LONG,   /* SEND longer than its receive WR (completed LOC_LEN_ERR) */
	SOFT_UC_NCOUNTERS
};
/* The counters of a UC QP (tests); -EINVAL for another QP type. */
int soft_uc_counters(rv_qp *qp, uint64_t out[SOFT_UC_NCOUNTERS]);

/* The IRD a QP advertises in the MPA exchange and enforces: its
 * max_dest_rd_atomic, within the device limit. */
/* An address in GID form (IPv4-mapped) on loopback: 127/8 or ::1. */
static inline bool soft_addr_is_loopback(const uint8_t a[16])
{
	static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	static const uint8_t v6lo[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};

	return (memcmp(a, v4mapped, 12) == 0 && a[12] == 127) || memcmp(a, v6lo, 16) == 0;
}

static inline uint32_t soft_qp_ird(const struct soft_qp *q)
{
	return q->attr.max_dest_rd_atomic < SOFT_MAX_RD_ATOM ? q->attr.max_dest_rd_atomic : SOFT_MAX_RD_ATOM;
}

/* Send WRs that wait for a response (READ, atomics) rather than a confirmation. */
static inline bool soft_wr_has_response(uint32_t opcode)
{
	/* BIND_MW and LOCAL_INV: "done" once executed by the sender (tx.c). */
	return opcode == RV_WR_RDMA_READ || opcode == RV_WR_ATOMIC_CMP_AND_SWP ||
	       opcode == RV_WR_ATOMIC_FETCH_AND_ADD || opcode == RV_WR_BIND_MW || opcode == RV_WR_LOCAL_INV;
}

/*
 * ---- what every stage may ask of its context ----
 * The clocks, the progress thread's wake-up and the QP table's lookup: small
 * and used by every stage (transports, completion, verbs objects), so they
 * stand here beside struct soft_ctx instead of in verbs/context.c, which the
 * stages below it must not call back up into.
 */
static inline int64_t soft_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* soft0's device clock (rv_context_read_clock, completion timestamps):
 * CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t soft_clock_raw(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline int64_t soft_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Wake the progress thread through its eventfd. */
static inline void soft_kick(struct soft_ctx *sc)
{
	uint64_t one = 1;

	atomic_store(&sc->kicked, true);
	if (write(sc->evfd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is saturated, so the thread is already woken. */
	}
}

/* The QP numbered qpn in sc's table, or NULL. */
static inline struct soft_qp *soft_ctx_find_qp(struct soft_ctx *sc, uint32_t qpn)
{
	for (uint32_t i = 0; i < sc->n_qps; i++)
		if (sc->qps[i]->qpn == qpn)
			return sc->qps[i];
	return NULL;
}

/* ---- ext.c (RFC 7306 on the requester) ---- */
/* Post-time check of an IMM/atomic WR: negotiated, well formed. */
int soft_ext_check_wr(const struct soft_qp *q, const rv_send_wr *wr, size_t i);
/* The peer did not negotiate what w needs: w fails (LOC_QP_OP_ERR), true. */
bool soft_ext_refused(struct soft_qp *q, const struct soft_swqe *w);
/* The Immediate Data message that ends a SEND/WRITE with immediate. */
void soft_ext_emit_imm(struct soft_qp *q, struct soft_conn *c, struct soft_swqe *w);
/* An Atomic Request for sq[sq_tx] (ORD room checked by the caller). */
bool soft_ext_emit_atomic(struct soft_qp *q, struct soft_conn *c, struct soft_swqe *w);
/* The Atomic Response for an executed request (responder). */
void soft_ext_emit_atomic_resp(struct soft_qp *q, struct soft_conn *c, const struct soft_ird *r);

/* ---- device.c ---- */
int soft_probe(rv_driver_add_fn add, void *cookie);
void soft_device_release(void *drv_dev);
bool soft_device_active(void *drv_dev);
int soft_query_device(struct rv_context *ctx, rv_device_attr *attr);
int soft_query_port(struct rv_context *ctx, uint8_t port_num, rv_port_attr *attr);
int soft_query_gid(struct rv_context *ctx, uint8_t port_num, int index, uint8_t gid[16]);
int soft_query_gid_entry(struct rv_context *ctx, uint8_t port_num, uint32_t index, rv_gid_entry *e);
int soft_query_pkey(struct rv_context *ctx, uint8_t port_num, uint16_t index, uint16_t *pkey);
int soft_read_clock(struct rv_context *ctx, uint64_t *raw);

/* ---- context.c ---- */
int soft_context_open(struct rv_context *ctx, const rv_context_attr *attr);
int soft_context_close(struct rv_context *ctx);
int soft_td_alloc(struct rv_td *td);
int soft_td_dealloc(struct rv_td *td);
/* rv_driver.auth_mac: HMAC-SHA256 with the context's secret (1), or 0 without one. */
int soft_context_auth_mac(struct rv_context *ctx, const void *msg, size_t len, uint8_t out[32]);
/* From a poller that found its CQ empty, sc->lock held: handle what epoll
 * has now (without waiting), as the progress thread would. */
void soft_ctx_poll_progress(struct soft_ctx *sc);
/* A waiter that watched streams leaves (soft_cq_block): the progress thread
 * must look within SOFT_POLL_HANDBACK_US whether it comes back. Returns the
 * time it stamped (µs), for the caller's own use. */
int64_t soft_ctx_waiter_left(struct soft_ctx *sc);
/* The rings' doorbell in (on) or out of the progress thread's epoll interest
 * (sc->lock held): a blocked waiter takes it out, the progress thread puts it
 * back once no waiter came for SOFT_POLL_HANDBACK_US. */
void soft_ctx_bell(struct soft_ctx *sc, bool on);
int soft_ctx_add_qp(struct soft_ctx *sc, struct soft_qp *q);
void soft_ctx_del_qp(struct soft_ctx *sc, struct soft_qp *q);

/* ---- mr.c ---- */
int soft_pd_alloc(struct rv_pd *pd);
int soft_pd_dealloc(struct rv_pd *pd);
int soft_mr_reg(struct rv_mr *mr);
int soft_mr_reg_mapped(struct rv_mr *mr, bool ours, void *dmabuf_map);
/* memory/dmabuf.c */
int soft_mr_reg_dmabuf(struct rv_mr *mr, uint64_t offset, int fd);
int soft_mr_dereg(struct rv_mr *mr);
int soft_mw_alloc(struct rv_mw *mw);
int soft_mw_dealloc(struct rv_mw *mw);
int soft_mw_bind(struct rv_qp *qp, struct rv_mw *mw, const rv_mw_bind_info *info, uint32_t *new_rkey,
		 uint64_t wr_id, uint32_t send_flags);
/* Execute a bind / local invalidate WR of q in send-queue order: an
 * RV_WC_* status (RV_WC_SUCCESS). Repeating one (replay) is harmless. */
uint32_t soft_mw_exec(struct soft_qp *q, const struct soft_swqe *w);
/* SEND with invalidate received by q: invalidate the type 2 window stag of
 * q's PD bound by q (or already invalid). false: not allowed (TERMINATE). */
bool soft_mw_remote_inv(struct soft_qp *q, uint32_t stag);
/* qp is being destroyed: the type 2 windows it bound become invalid (a later
 * QP at the same address must not inherit them). */
void soft_mw_qp_gone(struct soft_ctx *sc, const struct rv_qp *qp);
int soft_mr_advise(struct rv_pd *pd, uint32_t advice, uint32_t flags, const rv_sge *sge, uint32_t n);
int soft_mr_rereg(struct rv_mr *mr, uint32_t flags, struct rv_pd *pd, void *addr, size_t length,
		  uint32_t access);
int soft_mr_table_init(struct soft_ctx *sc);
void soft_mr_table_fini(struct soft_ctx *sc);

/* Why an access to registered memory was refused. */
enum soft_mem_err {
	SOFT_MEM_OK = 0,
	SOFT_MEM_NO_KEY,  /* no MR with that key */
	SOFT_MEM_PD,      /* the MR belongs to another PD */
	SOFT_MEM_ACCESS,  /* the MR lacks the access right */
	SOFT_MEM_BOUNDS,  /* outside the MR (or address arithmetic overflows) */
	SOFT_MEM_PEER,    /* soft_mem_pull: the peer's memory could not be read */
	SOFT_MEM_FAULT,   /* the registered memory is no longer mapped (or no longer writable) */
};

/* Registered memory is touched only through these (mr.c): copies the kernel
 * makes (process_vm_readv/writev on this process), which fail (false, logged
 * at WARN) where memcpy would fault, and a probe of one byte per page before
 * memory is read in place (the CRC of a zero-copy send, an atomic). */
struct iovec;
bool soft_copy_to_mr(void *dst, const void *src, size_t len);
bool soft_copy_from_mr(void *dst, const void *src, size_t len);
bool soft_mem_probe(const struct iovec *iov, uint32_t n);
/* Called when a context opens: the pid the copies above name. */
void soft_mem_self_init(void);
/* maps.c: [addr, addr + length) is mapped and readable, and writable when
 * access asks for writes, as ibv_reg_mr's pinning requires; else -EFAULT
 * with the message naming fn and the first bad address. */
int soft_range_check(const void *addr, size_t length, uint32_t access, const char *fn);

/* Copy len bytes into (key, addr), checking key, PD, access and bounds first. */
enum soft_mem_err soft_mem_write(struct soft_ctx *sc, struct rv_qp *qp, uint32_t key, uint32_t access,
				 uint64_t addr, const void *src, uint64_t len);
/* Copy len bytes out of (key, addr), with the same checks. */
enum soft_mem_err soft_mem_read(struct soft_ctx *sc, struct rv_qp *qp, uint32_t key, uint32_t access,
				uint64_t addr, void *dst, uint64_t len);
/* The same checks without copying. */
enum soft_mem_err soft_mem_check(struct soft_ctx *sc, struct rv_qp *qp, uint32_t key, uint32_t access,
				 uint64_t addr, uint64_t len);
struct iovec;
/* Same host (shm.c): check (key, addr, len) as soft_mem_write, then copy len
 * bytes from the iovecs of process pid into it with process_vm_readv. */
enum soft_mem_err soft_mem_pull(struct soft_ctx *sc, struct rv_qp *qp, uint32_t key, uint32_t access,
				uint64_t addr, uint64_t len, int pid, const struct iovec *src, uint32_t n);
/* Same host: the first len bytes of an SGE list (lkeys, LOCAL_WRITE), filled
 * from the iovecs of process pid. */
enum soft_mem_err soft_sgl_pull(struct soft_ctx *sc, struct rv_pd *pd, const rv_sge *sge, uint32_t n,
				uint64_t len, int pid, const struct iovec *src, uint32_t nsrc);
/* Run fn on the host address of [addr, addr + len) under the MR lock, after
 * the checks of soft_mem_check (for operations that are not copies: atomics). */
enum soft_mem_err soft_mem_apply(struct soft_ctx *sc, struct rv_qp *qp, uint32_t key, uint32_t access,
				 uint64_t addr, uint64_t len, void (*fn)(void *p, void *arg), void *arg);
/* Called with sc->mr_lock held (in a soft_sgl_apply callback): every segment
 * of the list with bytes lies in an MR whose memory rverbs mapped itself
 * (soft_mr.trusted: mapped while the MR exists), so it may be read in place
 * without soft_mem_probe (tx.c, the CRC of a zero-copy send). */
bool soft_sgl_trusted(struct soft_ctx *sc, const rv_sge *sge, uint32_t n);
/* Gather len bytes from offset off of an SGE list (lkeys, LOCAL access). */
enum soft_mem_err soft_sgl_read(struct soft_ctx *sc, struct rv_pd *pd, const rv_sge *sge, uint32_t n,
				uint64_t off, void *dst, uint64_t len);
/* Run fn on the host addresses of len bytes from offset off of an SGE list
 * (lkeys checked for the PD, bounds and access: 0 to read them as
 * soft_sgl_read, RV_ACCESS_LOCAL_WRITE to write them as soft_sgl_write),
 * under the MR lock: no segment can be deregistered while fn uses it (tx.c
 * sends them with sendmsg, place.c receives into them with recvmsg). */
enum soft_mem_err soft_sgl_direct(struct soft_ctx *sc, struct rv_pd *pd, const rv_sge *sge, uint32_t n,
				  uint64_t len, void (*fn)(const struct iovec *iov, uint32_t niov, void *arg),
				  void *arg);
bool soft_mr_grantable(struct soft_ctx *sc, uint32_t key, const struct rv_pd *pd, uint64_t *addr, uint64_t *len,
		       int *fd, uint32_t *access);
enum soft_mem_err soft_sgl_apply(struct soft_ctx *sc, struct rv_pd *pd, const rv_sge *sge, uint32_t n,
				 uint64_t off, uint64_t len, uint32_t access,
				 void (*fn)(const struct iovec *iov, uint32_t niov, void *arg), void *arg);
/* Scatter len bytes to offset off of an SGE list (lkeys, LOCAL_WRITE). */
enum soft_mem_err soft_sgl_write(struct soft_ctx *sc, struct rv_pd *pd, const rv_sge *sge, uint32_t n,
				 uint64_t off, const void *src, uint64_t len);

/* ---- atomic.c ---- */
/* Execute an RFC 7306 atomic request on registered memory (key, PD, REMOTE_ATOMIC,
 * bounds checked under the MR lock); *orig receives the value before. */
enum soft_mem_err soft_atomic_exec(struct soft_ctx *sc, struct rv_qp *qp, const struct rv_atomic_req *a,
				   uint64_t *orig);

/* ---- cq.c ---- */
int soft_cq_create(struct rv_cq *cq, const rv_cq_attr *attr);
int soft_cq_destroy(struct rv_cq *cq);
int soft_cq_poll(struct rv_cq *cq, rv_wc *wc, int max);
int soft_cq_poll_ex(struct rv_cq *cq, rv_wc_ex *wc, int max);
int soft_cq_resize(struct rv_cq *cq, uint32_t cqe);
int soft_cq_req_notify(struct rv_cq *cq, bool solicited_only);
/* rv_cq_wait's blocking step (driver.h cq_block): see "Progress" in README.md. */
int soft_cq_block(struct rv_cq *cq, int64_t deadline_ns);
int soft_comp_channel_create(struct rv_comp_channel *ch);
int soft_comp_channel_destroy(struct rv_comp_channel *ch);
int soft_comp_channel_get_event(struct rv_comp_channel *ch, struct rv_cq **ret_cq);

/* ---- qp.c ---- */
int soft_qp_create(struct rv_qp *qp, const rv_qp_init_attr *attr);
int soft_qp_destroy(struct rv_qp *qp);
int soft_qp_modify(struct rv_qp *qp, const rv_qp_attr *attr);
int soft_qp_query(struct rv_qp *qp, rv_qp_attr *attr);
/* rv_soft_qp_path (rverbs/soft.h): an rv_soft_path value; takes sc->lock, q->lock. */
int soft_qp_path(struct rv_qp *qp, uint32_t *path);
int soft_post_send(struct rv_qp *qp, const rv_send_wr *wrs, size_t n, size_t *n_posted);
int soft_post_recv(struct rv_qp *qp, const rv_recv_wr *wrs, size_t n, size_t *n_posted);
/* ---- stream.c: a connection's stream, below tx.c, rx.c and conn.c ---- */
/* Match the epoll interest to the state: EPOLLOUT while tx bytes wait. */
void soft_conn_update_events(struct soft_conn *c);
/* Send what is buffered; false when the connection broke. */
bool soft_conn_flush(struct soft_conn *c);
/* The stream is no longer read by a poller (its epoll interest is the caller's). */
void soft_conn_unpoll(struct soft_conn *c);
/* Out of epoll and the live list; freed by the progress thread later. */
void soft_conn_kill(struct soft_conn *c);
/* A closing stream's send side: push what is left and shut our direction
 * down once it is out; false when the stream broke (the connection is killed). */
bool soft_conn_drain_then_shut(struct soft_conn *c);
/* Flush, shut our direction down, linger for the peer's end (SOFT_LINGER_MS). */
void soft_conn_closing(struct soft_conn *c);
/* q gives its connection up: gracefully (a TERMINATE queued goes last) or not. */
void soft_conn_detach(struct soft_qp *q, bool graceful);
/* c->tx no longer holds a confirmation's READ response back (tx.c,
 * soft_tx_hold): the bytes stay and go with the next flush; the last
 * connection to let go disarms the bound's timer. */
void soft_conn_unhold(struct soft_conn *c);
/* The count of soft_conn_unhold, for a caller that cleared c->tx_held
 * itself (soft_tx_push: after its send(), off the latency path); after
 * gathered WRs (c->tx_gather) the timer is left armed for the next hold. */
void soft_conn_hold_release(struct soft_ctx *sc, bool gathered);
void soft_conn_free(struct soft_conn *c);
/* shutdown() and close() a connection's socket. */
void soft_close_socket(int fd);

/* ---- conn.c ---- */
int soft_conn_start(struct soft_qp *q);           /* active side, at RTR */
void soft_conn_adopt_pending(struct soft_qp *q);  /* passive side, at RTR */
void soft_conn_event(struct soft_conn *c, uint32_t events);
void soft_conn_accept(struct soft_ctx *sc);
/* The context's timers (progress thread, sc->lock): fault holds that end,
 * retry and RNR (retry.c), late confirmations, setup deadlines. */
void soft_conn_timers(struct soft_ctx *sc, int64_t now);
/* The bound of held READ responses (soft_tx_hold) ran out, or the progress
 * thread passes while some are held: send them (sc->lock held). */
void soft_conn_flush_held(struct soft_ctx *sc);
/* A busy poller reads q's stream itself (sc->lock held, takes q->lock): one
 * recv, then what the progress thread would do with the bytes; the stream
 * leaves epoll's EPOLLIN interest until soft_conn_handback. */
void soft_conn_poll(struct soft_qp *q, int64_t now_us, bool waiter);
/* Give polled streams back to epoll: those no poller served since
 * SOFT_POLL_HANDBACK_US, or all of them (progress thread, sc->lock). */
void soft_conn_handback(struct soft_ctx *sc, int64_t now_us, bool all);
/* How many streams of ctx went back to epoll because their poller left them
 * for SOFT_POLL_HANDBACK_US while bytes waited in them: stalls
 * (soft_conn_handback; tests). */
uint64_t soft_ctx_handback_timeouts(const rv_context *ctx);
/* Tests: waits of ctx that slept in a stream's recv and got bytes there. */
uint64_t soft_ctx_wait_recvs(const rv_context *ctx);
/* A busy poller turned from a CQ of context `sc` (number `serial`, which may
 * be closed by now) to another CQ: the streams it took there go back to that
 * context's progress thread now, not after SOFT_POLL_HANDBACK_US. Safe
 * against a context closing meanwhile (looked up in the registry). */
void soft_ctx_handback_from(struct soft_ctx *sc, uint64_t serial);
/* soft_cq_block (sc->lock held): the socket a blocking waiter may read for q,
 * out of epoll's EPOLLIN interest like a polled stream; -1 when the waiter
 * cannot serve it (no connection up, a stalled receive, a ring): the stream
 * is then the progress thread's. *out: the socket refused our bytes, so the
 * waiter watches POLLOUT too and sends when there is room (as a blocking
 * TCP send does), and the progress thread's EPOLLOUT is off meanwhile.
 * -2: another waiter sleeps in the stream's recv (soft_conn_sleep_claim). */
int soft_conn_wait_fd(struct soft_qp *q, bool *out);
/* soft_cq_block (sc->lock held) when the socket soft_conn_wait_fd asked
 * POLLOUT of became writable: push the QP's frames in the waiter's thread. */
void soft_conn_wait_out(struct soft_qp *q);
/* soft_cq_block (sc->lock held), the waiter's one stream (soft_conn_wait_fd
 * gave its socket): claim it for a blocking recv of at most timeout_ms
 * (rx_sleep; O_NONBLOCK and SO_RCVTIMEO set once, and again only when the
 * timeout changes). *buf: c->sleep_buf, at most SOFT_WAIT_RECV_BUF. NULL when the stream is not a plain TCP stream ready to
 * read (placement in progress, frames waiting for room, held responses, a
 * same-host peer): the waiter polls then. *fd and *room: what to recv. */
struct soft_conn *soft_conn_sleep_claim(struct soft_qp *q, int timeout_ms, int *fd, uint8_t **buf, size_t *room);
/* The claim's recv returned n bytes of the asked (sc->lock held; q NULL when
 * the CQ's QP table changed meanwhile): the bytes go to rx and are processed
 * as soft_conn_poll's would be (then it reads on if the recv filled what it
 * asked); 0 or an error other than EAGAIN and EINTR fails the QP. Ends the
 * claim. */
void soft_conn_slept(struct soft_qp *q, struct soft_conn *c, ssize_t n, size_t asked, int64_t now_us);
/* The claim ends without bytes (timeout, signal): the sleeper's last touch of c. */
void soft_conn_sleep_release(struct soft_conn *c);

/* ---- auth.c: shared-secret authentication of connections ---- */
#define SOFT_OP_AUTH 0xCu        /* private opcode: the initiator's MAC_I, first FPDU */
#define SOFT_AUTH_NONCE_LEN 16u
#define SOFT_AUTH_MAC_LEN 32u
#define SOFT_AUTH_EXT_LEN 56u    /* magic, kind, pad, nonce, MAC (MAC_Q in the request) */
#define SOFT_AUTH_IDS_LEN 44u
#define SOFT_AUTH_SECRET_MAX 4096u
int soft_auth_set_key(struct soft_ctx *sc, const void *secret, size_t len);
void soft_auth_ids(uint8_t ids[SOFT_AUTH_IDS_LEN], const uint8_t igid[16], uint16_t iport, uint32_t iqpn,
		   const uint8_t rgid[16], uint16_t rport, uint32_t rqpn);
void soft_auth_mac(const struct soft_ctx *sc, bool initiator_proof, const struct soft_conn *c,
		   const uint8_t ids[SOFT_AUTH_IDS_LEN], uint8_t out[SOFT_AUTH_MAC_LEN]);
/* The initiator's MAC_Q over its nonce and the ids, carried in its request. */
void soft_auth_mac_request(const struct soft_ctx *sc, const uint8_t ni[SOFT_AUTH_NONCE_LEN],
			   const uint8_t ids[SOFT_AUTH_IDS_LEN], uint8_t out[SOFT_AUTH_MAC_LEN]);
size_t soft_auth_block_put(uint8_t *buf, bool reply, const uint8_t nonce[SOFT_AUTH_NONCE_LEN],
			   const uint8_t *mac);
/* 1: found (nonce, mac filled), 0: absent, -1: malformed. */
int soft_auth_block_find(const uint8_t *pd, size_t len, bool reply, uint8_t nonce[SOFT_AUTH_NONCE_LEN],
			 uint8_t mac[SOFT_AUTH_MAC_LEN]);

/* ---- shm.c: the same-host path ---- */
/* Private RDMAP opcodes, used only on a connection where both sides agreed
 * (never on the wire to anyone else): a control message and a tagged WRITE
 * whose payload names the source memory instead of carrying it. */
#define SOFT_OP_SEND_REF 0xDu
#define SOFT_OP_SHM_CTL 0xEu
#define SOFT_OP_WRITE_REF 0xFu
#define SOFT_SHM_EXT_LEN 32u   /* MPA private data after rv_soft_cpd */
#define SOFT_SHM_EXT_MAGIC "RSH2" /* first 4 bytes; RSH1 (the old pid-naming agreement) is ignored */
#define SOFT_SHM_CTL_LEN 12u   /* payload of SOFT_OP_SHM_CTL */
#define SOFT_SHM_REF_LEN 12u   /* per source segment of SOFT_OP_WRITE_REF */
#define SOFT_SHM_MIN 8192u     /* smaller WRITEs go through TCP */
/* The extension to append to our MPA request/reply (0: none). */
size_t soft_shm_ext_put(struct soft_conn *c, bool reply, uint8_t *buf);
/* The peer's extension in its MPA request/reply, if any. */
void soft_shm_ext_got(struct soft_conn *c, bool reply, const uint8_t *pd, size_t len);
/* The payload of our SOFT_OP_SHM_CTL (SOFT_SHM_CTL_LEN bytes). */
void soft_shm_ctl_put(struct soft_conn *c, uint8_t *buf);
/* The peer's SOFT_OP_SHM_CTL of the agreement (kinds 1, 2, 6), from
 * soft_shmring_ctl_got: refused (malformed or unexpected), taken, or taken
 * and the agreement now holds both ways (the rings start). */
enum { SOFT_SHM_REFUSED = -1, SOFT_SHM_TAKEN = 0, SOFT_SHM_AGREED = 1 };
int soft_shm_ctl_got(struct soft_qp *q, struct soft_conn *c, const uint8_t *p, size_t len);
/* The verified peer process is still the one verified (before every read). */
bool soft_shm_peer_alive(const struct soft_conn *c);
/* A duplicate of descriptor num of the verified peer process (shmring.c); -1. */
int soft_shm_dup_fd(const struct soft_conn *c, uint32_t num);
/* Drop what the agreement holds (the pidfd): the connection is freed. */
void soft_shm_release(struct soft_conn *c);

/* ---- shmring.c: shared-memory rings on the same-host path ---- */
struct soft_shmring;
struct soft_ring_set;
/* Counters of a QP's ring (soft_shmring_stats, tests). */
enum soft_ring_stat {
	SOFT_RING_TX_FRAMES, /* frames put into our ring */
	SOFT_RING_RX_FRAMES, /* frames consumed from the peer's ring */
	SOFT_RING_DOORBELLS, /* eventfd writes to wake the peer */
	SOFT_RING_BAD,       /* corrupt rings or frames found (each fails the QP) */
	SOFT_RING_STATE,     /* bit 0: we send through the ring, bit 1: we receive from it */
	SOFT_RING_CRC_OFF,   /* 1: our ring frames carry no CRC (both rings on, the peer agreed) */
	SOFT_RING_DIRECT,    /* WRITEs we did by one copy into a granted region (grant.c) */
	SOFT_RING_GRANTS_GIVEN, /* grants we gave the peer */
	SOFT_RING_GRANTS_TAKEN, /* the peer's grants we mapped */
	SOFT_RING_GRANTS_REFUSED, /* the peer's grants we refused (bad slot, fd, seals, size) */
	SOFT_RING_REVOKED,   /* grants we revoked (dereg, rereg, QP state, close) */
	SOFT_RING_IN_PLACE,  /* frames tx.c framed in the ring's record itself (no copy through c->tx) */
	SOFT_RING_NSTATS
};
/* Both directions of c's same-host path hold: prepare and offer our ring. */
void soft_shmring_start(struct soft_qp *q, struct soft_conn *c);
/* rx.c: the peer's SOFT_OP_SHM_CTL: a ring's (kinds 3-5) here, the
 * agreement's through shm.c, then the rings start once it holds; false:
 * malformed or unexpected. */
bool soft_shmring_ctl_got(struct soft_qp *q, struct soft_conn *c, const uint8_t *p, size_t len);
/* tx.c: frame the ring control message due, if any (q->lock held). */
bool soft_shmring_tx_ctl(struct soft_qp *q, struct soft_conn *c);
/* stream.c: soft_conn_flush once our direction uses the ring; it also
 * publishes the records tx.c framed in place. */
bool soft_shmring_flush(struct soft_conn *c);
/* tx.c's soft_tx_ring_done (q->lock held): soft_shmring_flush after WRs that
 * soft_tx_ring_now framed in place, without the copy of c->tx. */
void soft_shmring_framed_done(struct soft_qp *q, struct soft_conn *c);
/* tx.c, our direction on the ring (q->lock held): where a frame of flen
 * bytes (whole, as rv_wire_fpdu_len counts it) may be framed in place, in
 * the ring's next record, or NULL: something waits in c->tx (it goes
 * first), no room as far as we know, the ring is broken. The caller only
 * writes there (the peer maps it: nothing written is read back), then
 * soft_shmring_framed; the next soft_shmring_flush publishes it, or at once
 * with `now` (the last frame fill() has for now: the consumer sees it
 * before the flush's bookkeeping, which does not change the frames). */
uint8_t *soft_shmring_frame_at(struct soft_conn *c, size_t flen);
void soft_shmring_framed(struct soft_conn *c, size_t flen, bool now);
/* Consume the peer's ring (sc->lock and q->lock held, as rx.c). */
void soft_shmring_rx(struct soft_qp *q, struct soft_conn *c);
/* Every ring of the context: consume, confirm, transmit (sc->lock held);
 * awake: the progress thread, back from epoll_wait (clears "sleeping"). */
void soft_shmring_poll(struct soft_ctx *sc, bool awake);
/* rv_cq_poll found its CQ empty: poll the rings if no one else is at it;
 * busy: the caller keeps polling (its CQ is not armed for blocking). */
/* soft_shmring_poller in two halves, for a caller that takes sc->lock once
 * for the rings and its sockets (cq.c poll_empty): the stamp that says a
 * poller is busy (without the lock), and the pass (sc->lock held). */
void soft_shmring_poller_stamp(struct soft_ctx *sc, bool busy);
void soft_shmring_poller_locked(struct soft_ctx *sc, bool busy);
void soft_shmring_poller(struct soft_ctx *sc, bool busy);
/* Without sc->lock: whether soft_shmring_poller_locked has anything to do
 * (frames in a ring, a consumer index someone waits for moved, a stalled
 * ring resumed, or, busy, "sleeping" to clear). A stale answer costs one
 * locked pass (true) or one more empty poll (false), never a crash: see
 * shmring.c. */
bool soft_shmring_peek(struct soft_ctx *sc, bool busy);
/* ctx_free: unmap and free the pooled ring objects and the arrays. */
void soft_shmring_ctx_fini(struct soft_ctx *sc);
/* The application is about to block (a CQ armed): stop counting it as a
 * poller, so that the progress thread sleeps with "sleeping" set. */
void soft_shmring_wake(struct soft_ctx *sc);
/* A thread is about to block in rv_cq_wait with the doorbell as its wake-up
 * (soft_cq_block, sc->lock held): counted as a ring waiter, "sleeping" set
 * in every ring, then one more look; true: work is there already, do not
 * sleep. soft_shmring_wait_end when it wakes. */
bool soft_shmring_wait_begin(struct soft_ctx *sc);
void soft_shmring_wait_end(struct soft_ctx *sc);
/* The progress thread is about to sleep timeout ms: the timeout to use. */
int soft_shmring_sleep(struct soft_ctx *sc, int timeout);
/* qp.c: a receive WR came for the SEND that stalled c's ring (q->lock held):
 * true when the next ring pass resumes it, false when the progress thread
 * sleeps and must be kicked. */
bool soft_shmring_resume(struct soft_conn *c);
/* stream.c: q's connection closes gracefully (its TERMINATE, if any, is in
 * c->tx): what the ring has no room for goes over TCP (q->lock held). */
void soft_shmring_closing(struct soft_qp *q, struct soft_conn *c);
/* rx.c: a TERMINATE came over TCP after the switch: consume what the ring
 * holds first. false: the QP failed meanwhile, or a SEND there waits for a
 * receive WR (the TERMINATE waits too). */
bool soft_shmring_drain(struct soft_qp *q, struct soft_conn *c);
/* c leaves the context's ring list (soft_conn_kill, sc->lock held). */
void soft_shmring_drop(struct soft_conn *c);
/* Unmap and close (soft_conn_free). */
void soft_shmring_free(struct soft_conn *c);
int soft_shmring_stats(rv_qp *qp, uint64_t out[SOFT_RING_NSTATS]);
/* A ring control message (kind, flag, two numbers) into c->tx (tx.c: GRANT). */
void soft_shmring_put_ctl(struct soft_conn *c, uint8_t kind, uint8_t flag, uint32_t a, uint32_t b);

/* ---- grant.c: one-copy WRITEs into memory the target granted ---- */
#define SOFT_CTL_GRANT 7 /* SOFT_OP_SHM_CTL kind: target -> initiator, a = memfd number, b = slot */
/* Target: a WRITE was placed into key on c, or a READ from it accepted:
 * grant its MR if it qualifies (sc->lock and q->lock held, as rx.c). */
void soft_grant_offer(struct soft_qp *q, struct soft_conn *c, uint32_t key);
/* Target, tx.c: the next GRANT due (the descriptor, the slot), if any (q->lock held). */
bool soft_grant_next(struct soft_conn *c, uint32_t *fd, uint32_t *slot);
/* shmring.c's soft_shmring_stats: the grant counters (SOFT_RING_DIRECT...). */
void soft_grant_stats(const struct soft_conn *c, uint64_t out[SOFT_RING_NSTATS]);
/* Initiator: the peer's GRANT (a: its descriptor, b: slot), in order from
 * its ring. false: not allowed here (a TERMINATE); a bad grant is refused
 * quietly (the WRITEs take the ring). */
bool soft_grant_got(struct soft_qp *q, struct soft_conn *c, uint32_t fd, uint32_t slot);
/* Initiator, post_send (q->lock held): do wr (a WRITE, or a READ from a
 * grant with REMOTE_READ) by one copy if a live grant covers it and nothing
 * earlier is outstanding. true: done (completed). */
bool soft_grant_write(struct soft_qp *q, const rv_send_wr *wr, uint64_t len);
/* tx.c, w at sq_tx and not framed yet (q->lock held): 1 done by one copy
 * (the caller confirms and completes it), 0 a grant covers it but earlier
 * frames are still in the ring (hold it, and have the consumer's index
 * watched: soft_shmring_want_cons), -1 frame it as usual. */
int soft_grant_tx_wr(struct soft_qp *q, const struct soft_swqe *w);
/* shmring.c: a busy poller must read the consumer index until what was
 * produced so far is consumed (q->lock held). */
void soft_shmring_want_cons(struct soft_qp *q, struct soft_conn *c);
/* Target: revoke every grant of key (key 0: all) on every connection of
 * the context and wait (bounded) until no copy into it runs (not holding
 * sc->lock: it takes it). */
void soft_grant_revoke_key(struct soft_ctx *sc, uint32_t key);
/* Target: revoke every grant of c (sc->lock held): QP out of RTS, close. */
void soft_grant_revoke_conn(struct soft_conn *c);
/* Unmap what we took and free (soft_conn_free). */
void soft_grant_free(struct soft_conn *c);

/* Tests: the mapping of the ring qp sends into (header page, then data) and
 * the producer index; NULL when it has none. */
void *soft_shmring_debug_tx(rv_qp *qp, uint32_t *prod);
/* Tests: the ring objects of qp's context (every one made, and those in
 * the pool, free for a connection). */
int soft_shmring_debug_pool(rv_qp *qp, uint32_t *all, uint32_t *pooled);

/* ---- tx.c ---- */
/* Frame and send as much as the socket takes (q->lock held). */
void soft_tx_push(struct soft_qp *q);
/* rv_qp_post_send's soft_tx_push (q->lock held): small unsignalled WRs
 * posted into a busy TCP stream are framed into c->tx and sent with the next
 * ones (c->tx_held), one send() for up to 64 KiB; otherwise soft_tx_push. */
void soft_tx_post(struct soft_qp *q);
/* rv_qp_post_send on a ring (q->lock held): w, about to be sq[sq_tail],
 * framed in the ring's record at once when nothing else is due (false:
 * not done, take the usual way); soft_tx_ring_done after such WRs instead
 * of soft_tx_post. */
bool soft_tx_ring_now(struct soft_qp *q, struct soft_swqe *w, const rv_send_wr *wr, bool last);
void soft_tx_ring_done(struct soft_qp *q);
/* Nothing for soft_tx_push to frame or flush (q->lock): after receiving, a
 * poller then only completes (soft_sq_complete) instead of pushing. */
bool soft_tx_idle(const struct soft_qp *q);
/* After a poller or waiter received (q->lock held): when all that is due is
 * the READ responses to zero-length READs (the peer's confirmations), frame
 * them into c->tx without sending and return true; the next soft_tx_push
 * (the application's post_send: one send() with its reply; its next poll or
 * wait) or, within SOFT_HOLD_US, the progress thread sends them. */
bool soft_tx_hold(struct soft_qp *q);

void soft_tx_emit_shm_ctl(struct soft_conn *c, const uint8_t pay[SOFT_SHM_CTL_LEN]);
/* Queue a TERMINATE quoting the offending FPDU's header (hdr may be NULL). */
void soft_tx_terminate(struct soft_qp *q, uint8_t layer, uint8_t etype, uint8_t ecode,
		       const struct rv_fpdu *f);

/* ---- ud.c: UD QPs over UDP, framed as RoCEv2 (roce.h) ---- */
/* What the UDP side counted (soft_ud_counters). */
enum soft_ud_counter {
	SOFT_UD_TX,           /* datagrams handed to the socket */
	SOFT_UD_TX_DROP,      /* datagrams the socket refused (buffer full past the wait) */
	SOFT_UD_RX,           /* datagrams delivered into a receive WR */
	SOFT_UD_RX_ERR,       /* datagrams that completed a receive WR in error (too long for it) */
	SOFT_UD_DROP_BAD,     /* short, wrong version/opcode/pad, wrong address family */
	SOFT_UD_DROP_ICRC,    /* bad ICRC */
	SOFT_UD_DROP_LONG,    /* larger than the path MTU */
	SOFT_UD_DROP_QP,      /* no UD QP with that number in RTR/RTS */
	SOFT_UD_DROP_PKEY,    /* P_Key not the default partition */
	SOFT_UD_DROP_QKEY,    /* Q_Key differs from the QP's */
	SOFT_UD_DROP_NO_RECV, /* no receive WR posted */
	SOFT_UD_DROP_AUTH,    /* no valid MAC under the context's secret, or a MAC it cannot check */
	SOFT_UD_DROP_REPLAY,  /* a valid MAC, but its (epoch, seq) was seen or is too old */
	SOFT_UD_NCOUNTERS
};
/* Open the UDP socket (sc->ud) on ss's address with port sc->port; 0 without
 * one on the wildcard address; -EADDRINUSE (no message) when that port is
 * taken for UDP. The caller adds soft_ud_fd() to epoll with sc->ud as tag. */
int soft_ud_open(struct soft_ctx *sc, const struct sockaddr_storage *ss, socklen_t sl);
int soft_ud_fd(const struct soft_ctx *sc);
/* The socket on UDP 4791 (RV_SOFT_ROCE_PORT), also tagged sc->ud; -1 if none. */
int soft_ud_roce_fd(const struct soft_ctx *sc);
void soft_ud_close(struct soft_ctx *sc);
/* Whether an epoll tag is the UDP socket's. */
bool soft_ud_is_tag(const struct soft_ctx *sc, const void *tag);
/* Read and deliver waiting datagrams (progress thread, sc->lock held). */
void soft_ud_rx(struct soft_ctx *sc);
/* Post send WRs on a UD QP (q->lock held). */
int soft_ud_post_send(struct soft_qp *q, const rv_send_wr *wrs, size_t n, size_t *n_posted);
int soft_ah_create(struct rv_ah *ah);
int soft_ah_destroy(struct rv_ah *ah);
/* rv_qp_attach_mcast / rv_qp_detach_mcast on a UD QP (gid a multicast GID). */
int soft_mcast_attach(struct rv_qp *qp, const uint8_t gid[16], uint16_t lid);
int soft_mcast_detach(struct rv_qp *qp, const uint8_t gid[16], uint16_t lid);
/* Detach QP qpn from every group (its QP is being destroyed; sc->lock held). */
void soft_ud_mcast_forget(struct soft_ctx *sc, uint32_t qpn);
/* The counters of ctx's UDP side (tests); -EINVAL if it has none. */
int soft_ud_counters(rv_context *ctx, uint64_t out[SOFT_UD_NCOUNTERS]);
/* ---- retry.c ---- */
/* The peer showed progress on q (bytes it accepted or sent; q->lock held). */
/* A count, not a clock read: the hot path pays an increment, the 100 ms
 * timer stamps the time when it sees the count move (the bound is >= 2 s). */
static inline void soft_retry_progress(struct soft_qp *q)
{
	q->progress_n++;
}
/* Fail QPs whose outstanding work saw no progress within the bound their
 * timeout/retry_cnt imply; keep RNR-stalled streams alive (progress thread). */
void soft_retry_timers(struct soft_ctx *sc, int64_t now);

/* retry.c: the peer says the SEND with this MSN waits for a receive WR. */
void soft_retry_rnr_notice(struct soft_qp *q, uint32_t msn);

/* ---- rx.c ---- */
/* Process the FPDUs in c->rx (progress thread, sc->lock and q->lock held). */
void soft_rx_process(struct soft_qp *q, struct soft_conn *c);
/* One decoded FPDU (shmring.c): 0 placed, 1 stall (no receive WR), -1 the QP failed. */
int soft_rx_fpdu(struct soft_qp *q, const struct rv_fpdu *f);
/* A frame that does not decode (err from rv_wire_fpdu_decode): TERMINATE, ERR. */
void soft_rx_bad_frame(struct soft_qp *q, int err);
/* A tagged access refused (e): TERMINATE quoting f, QP to ERR (rx.c's rules). */
void soft_rx_tagged_error(struct soft_qp *q, const struct rv_fpdu *f, enum soft_mem_err e);
/* A SEND's receive WR could not be written (an lkey went away): the buffered
 * path's TERMINATE (RDMAP local catastrophic), QP to ERR. */
void soft_rx_send_error(struct soft_qp *q, const struct rv_fpdu *f);

/* ---- place.c: direct placement of large WRITE and SEND payloads ---- */
/* WRITEs and SENDs whose FPDU carries at least this much payload not yet
 * received are placed directly. */
#define SOFT_PLACE_MIN 8192u
/* After a large WRITE or SEND, this many other FPDUs are read header first
 * too (the confirmation READs between them must not end it). */
#define SOFT_PLACE_FOLLOW 16u
/* A message at most this much over one FPDU of fpdu_max bytes goes as that
 * FPDU and a small one (tx.c, chunk_at: a 64 KiB WRITE, which MPA's 16-bit
 * length keeps from fitting one FPDU); the receiver reads the small one, with
 * the next header, in the recvmsg that places the large one's payload: it
 * reads SOFT_PLACE_SLACK bytes more than the trailer and the next header
 * (place.c). One recvmsg per 64 KiB WRITE instead of two (issue #22). */
#define SOFT_TX_TAIL_MAX 256u
#define SOFT_PLACE_SLACK (SOFT_TX_TAIL_MAX + 2u + RV_DDP_UNTAGGED_HDR + 3u + 4u)
/*
 * One read from c's socket (q->lock held, c is q's and up): into the target
 * memory while a WRITE's or SEND's payload is being placed (starting one when
 * the head of rx is the header of a large WRITE or SEND that passes every
 * check rx.c makes), else into
 * rx. Returns the bytes read, 0 when nothing is there now, -1 on EOF or a
 * socket error, -2 when the placement failed the QP (TERMINATE sent).
 */
ssize_t soft_place_read(struct soft_qp *q, struct soft_conn *c);

/* ---- srq.c ---- */
int soft_srq_create(struct rv_srq *srq, const rv_srq_attr *attr);
int soft_xrcd_open(struct rv_xrcd *xrcd);
int soft_xrcd_close(struct rv_xrcd *xrcd);
int soft_srq_destroy(struct rv_srq *srq);
int soft_srq_modify(struct rv_srq *srq, const rv_srq_attr *attr);
int soft_srq_query(struct rv_srq *srq, rv_srq_attr *attr);
int soft_post_srq_recv(struct rv_srq *srq, const rv_recv_wr *wrs, size_t n, size_t *n_posted);

/* ---- event.c ---- */
int soft_event_init(struct soft_ctx *sc);
void soft_event_fini(struct soft_ctx *sc);
/* Queue an asynchronous event about obj (a QP, CQ or SRQ handle; NULL: port 1). */
void soft_event_post(struct soft_ctx *sc, uint32_t type, struct rv_object *obj);
/* q entered ERR (soft_qp_fail): QP_FATAL unless the user asked, LAST_WQE_REACHED with an SRQ. */
void soft_event_qp_error(struct soft_qp *q);
/* Drop the queued events about obj (before it is destroyed). */
void soft_event_forget(struct soft_ctx *sc, const struct rv_object *obj);
int soft_async_fd(struct rv_context *ctx);
int soft_get_async_event(struct rv_context *ctx, rv_async_event *ev);

#endif
