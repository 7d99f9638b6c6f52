/*
 * `rverbs perf` and `rverbs bench`: what perf.c (options, output),
 * perf-rdma.c (the RDMA engine), perf-net.c (the control connection and the
 * raw TCP baseline), perf-compare.c (the TCP vs rverbs table) and perf-svg.c
 * (the curves) share.
 *
 * The client drives every run: it sends the parameters once, then one
 * command per measurement (test, mode, size, iterations) over the control
 * TCP connection; the server follows and reports its CPU time back.
 */
#ifndef RV_TOOLS_PERF_H
#define RV_TOOLS_PERF_H

#include <stdbool.h>
#include <stdint.h>

#include <rverbs/rverbs.h>

enum perf_test { PERF_WRITE = 0, PERF_READ = 1, PERF_SEND = 2, PERF_ATOMIC = 3,
		 PERF_TCP = 4 /* the raw TCP baseline: ping-pong / stream */ };
enum perf_mode { PERF_BW = 0, PERF_LAT = 1 };
/* Busy polling on the software device: by default the latency loops spin
 * (the poller moves the data itself) and the bandwidth loops yield after 64
 * empty polls (soft0's progress thread pushes data too); --spin never
 * yields, --yield always does. Other devices never yield. */
enum perf_poll { PERF_POLL_DEFAULT = 0, PERF_POLL_SPIN = 1, PERF_POLL_YIELD = 2 };

/* Set on the client, sent to the server once. */
struct perf_params {
	uint32_t n_qps;
	uint32_t tx_depth;
	uint32_t rx_depth;
	uint32_t cq_mod;     /* -Q as given; 0: perftest's default (perf_cq_mod) */
	uint32_t inline_size;
	uint32_t max_size;   /* the largest message of the session */
	uint32_t bidir;
	uint32_t atomics;    /* the client wants atomics: register the MR for them */
	uint32_t tcp_data;   /* open a second TCP connection for the TCP baseline */
	uint32_t spin;       /* enum perf_poll: when a poller on soft0 yields the CPU */
	uint32_t rdma_cm;    /* -R: connect the QPs through rdma_cm (the server follows the client) */
	uint32_t tcp_only;   /* --tcp-only: soft0 without its same-host path (both sides) */
	uint32_t events;     /* -e: wait on a completion channel (this side only; not sent) */
	uint32_t warmup;     /* --warmup: WRITE/READ bw WRs per QP before the clock, or
			      * PERF_WARMUP_AUTO (the client only; not sent) */
};

/* The default warm-up: a tenth of -n, at least 1, at most -t (perf-rdma.c). */
#define PERF_WARMUP_AUTO UINT32_MAX

/* The path soft0's QPs took, as rv_soft_qp_path() says (perf-path.c). */
enum perf_path { PERF_PATH_UNKNOWN = 0, PERF_PATH_TCP = 1, PERF_PATH_SAMEHOST = 2, PERF_PATH_RINGS = 3,
		 PERF_PATH_NOT_SOFT = 4 };

/* One measurement. */
struct perf_cmd {
	uint32_t test, mode;
	uint64_t size, iters;
	uint32_t cq_mod;     /* signal one send in this many (and the last), both sides */
};

struct perf_result {
	uint64_t size, iters;
	/* bandwidth tests: bytes per second and messages per second */
	double bw_peak, bw_avg, msg_rate;
	/* latency tests, microseconds (one way for WRITE/SEND/TCP ping-pong, as perftest) */
	double lat_min, lat_max, lat_typical, lat_avg, lat_stdev, lat_p99, lat_p999;
	/* both: wall time of the run and CPU time used by each side, seconds */
	double wall, cpu_client, cpu_server;
	/* what each side did: -e (blocking waits), the soft0 path after the run */
	bool events_client, events_server;
	enum perf_path path_client, path_server;
	/* soft0 bandwidth runs: the client's blocks on its CQ while the CPU
	 * was crowded (perf-rdma.c, idle()) */
	uint64_t naps_client;
	/* the client's measuring thread during the run: time it was runnable
	 * but another task had the CPU (Linux schedstat run_delay; < 0: not
	 * known), and its involuntary context switches (preemptions and
	 * sched_yield calls that gave the CPU away; < 0: not known) */
	double runq_wait_client;
	int64_t switches_client;
	/* its page faults during the run (< 0: not known): first touches the
	 * warm-up should have taken */
	int64_t faults_client;
};

/* ---- perf-net.c: the control connection and the TCP baseline ---- */
int net_listen(const char *addr, int port, int *ret_fd, int *ret_port);
int net_accept(int lfd, int *ret_fd);
int net_connect(const char *host, int port, int *ret_fd);
int net_send(int fd, const void *buf, size_t len);
int net_recv(int fd, void *buf, size_t len);
int net_barrier(int fd);
int net_send_u64s(int fd, const uint64_t *v, int n);
int net_recv_u64s(int fd, uint64_t *v, int n);
/* The TCP baseline over data connection fd; the client measures. */
int tcp_run(int fd, bool client, const struct perf_cmd *c, struct perf_result *res);

uint64_t now_ns(void);
uint64_t cpu_ns(void);
/* The calling thread's scheduling: time runnable but not running (ns,
 * /proc/thread-self/schedstat), involuntary context switches and page
 * faults (getrusage RUSAGE_THREAD); -1 each where the kernel does not say. */
struct sched_mark {
	int64_t runq_ns, preempted, faults;
};
void sched_now(struct sched_mark *m);
/* Fill the latency fields of res from n samples in microseconds (sorts them). */
void perf_lat_stats(double *us, uint64_t n, struct perf_result *res);

/* ---- perf-path.c: which path soft0 took ---- */
struct rdma;
/* Before the context opens: --tcp-only sets RVERBS_SOFT_SHM=0 for this process. */
void perf_path_init(bool tcp_only);
/* The path r's QPs take now: rings, same-host by reference, or TCP (the
 * furthest along of them); PERF_PATH_NOT_SOFT on another device or
 * without RDMA (r NULL), PERF_PATH_UNKNOWN when no QP is connected. */
enum perf_path perf_path_now(const struct rdma *r);
/* Wait (at most 1 s) for soft0's same-host path to settle; ms waited. */
unsigned perf_path_settle(const struct rdma *r);
const char *perf_path_name(enum perf_path p);

/* ---- perf-rdma.c ---- */
struct rdma;
typedef void (*progress_fn)(uint64_t done, uint64_t total);

/* Open the device (NULL: the default), create the resources for p. */
int perf_rdma_open(struct rdma **ret, const char *dev, const struct perf_params *p);
/* Connect every QP with the connection helper (rv_listener on the server,
 * rv_connect on the client); fd, the control connection, carries the port. */
int perf_rdma_connect(struct rdma *r, int fd, bool client, const char *host);
/* Before the start barrier of a command: clear buffers, post receives. */
int perf_rdma_prepare(struct rdma *r, bool client, const struct perf_cmd *c);
/* Run one command; res is filled on the client. */
int perf_rdma_run(struct rdma *r, bool client, const struct perf_cmd *c, struct perf_result *res,
	     progress_fn progress);
void perf_rdma_close(struct rdma *r);
bool perf_rdma_has_atomics(const struct rdma *r);
/* The perftest-style connection header. */
/* mode: the test's (enum perf_mode), or -1 on the server, which runs what the client asks. */
void perf_rdma_print_header(const struct rdma *r, const char *title, uint32_t cq_mod, int mode);
void perf_rdma_json_header(const struct rdma *r, void *json, int mode);
const char *perf_rdma_device_name(const struct rdma *r);
bool perf_rdma_is_soft(const struct rdma *r);
/* QP i of the session, NULL past the last. */
rv_qp *perf_rdma_qp(const struct rdma *r, uint32_t i);
/* -e: this side waits on a completion channel. */
bool perf_rdma_events(const struct rdma *r);
/* The run's blocks on a crowded CPU (idle() in perf-rdma.c). */
uint64_t perf_rdma_naps(const struct rdma *r);
/* The QP's max_inline_data read back after creation: sends up to it go inline. */
uint32_t perf_rdma_max_inline(const struct rdma *r);
/* perftest's CQ moderation: -Q if given, else 100 (at most -t), 1 above
 * 8 KiB unless -a or -e. */
uint32_t perf_cq_mod(const struct perf_params *p, uint64_t size, bool all);

/* ---- perf-svg.c ---- */
struct svg_series {
	const char *label;
	const char *color;
	int n;
	const double *x;      /* message sizes, bytes */
	const double *y;      /* Gb/s or microseconds; NaN = no point */
};
/* Two panels: bandwidth (Gb/s) and latency (µs) against message size. */
int svg_write(const char *path, const char *title, const struct svg_series *bw, int n_bw,
	      const struct svg_series *lat, int n_lat);

/* ---- perf-compare.c ---- */
int perf_compare(const char *dev, uint64_t lat_iters, int reps, const char *svg, bool json, uint32_t poll);

/* ---- perf.c: a client/server session, for perf-compare.c too ---- */
struct session {
	int fd, data_fd;
	struct rdma *r;      /* NULL when either side could not set up RDMA */
	bool quiet;
};
/* What the server side does by itself: -e, and whether it prints a summary. */
struct perf_server_opts {
	const char *dev;
	bool events, quiet, json;
};
/* Serve one client on the listening socket; returns an exit status. */
int perf_session_server(int lfd, const struct perf_server_opts *so);
/* Connect, send p, set up RDMA on both sides (a failure leaves s->r NULL
 * and is printed), open the TCP data connection if p->tcp_data. */
int session_open(struct session *s, const char *host, int port, const char *dev, const struct perf_params *p);
/* Run one command on both sides; CPU and wall time are filled in res. */
int session_run(struct session *s, const struct perf_cmd *c, struct perf_result *res, progress_fn progress);
void session_close(struct session *s);
/* fork a server child on a loopback listener; returns its pid, *ret_port the port. */
int perf_fork_server(const struct perf_server_opts *so, int *ret_port);
const char *perf_test_name(uint32_t test);

#endif
