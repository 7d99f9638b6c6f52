/*
 * `rverbs perf`: a perftest-compatible benchmark. Options, the client/server
 * session, and the output (perftest's header and columns, --json, --svg, a
 * progress indicator on a terminal). The loops live in perf-rdma.c.
 *
 *   rverbs perf write bw [OPTIONS]             server: waits for one client
 *   rverbs perf write bw [OPTIONS] HOST        client: runs the tests
 *   rverbs perf write bw [OPTIONS] --loopback  both, as two processes (fork)
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "json.h"
#include "perf.h"
#include "tools.h"

#define DEFAULT_PORT 18515
#define OP_END 0
#define OP_RUN 1

const char *perf_test_name(uint32_t test)
{
	static const char *const names[] = {"write", "read", "send", "atomic", "tcp"};
	return test < 5 ? names[test] : "?";
}

/* ---- the session ---------------------------------------------------------- */

#define N_PARAMS 12

static int send_params(int fd, const struct perf_params *p)
{
	uint64_t v[N_PARAMS] = {p->n_qps, p->tx_depth, p->rx_depth, p->cq_mod, p->inline_size, p->max_size,
				p->bidir, p->atomics, p->tcp_data, p->spin, p->rdma_cm, p->tcp_only};
	return net_send_u64s(fd, v, N_PARAMS);
}

static int recv_params(int fd, struct perf_params *p)
{
	uint64_t v[N_PARAMS];
	int rc = net_recv_u64s(fd, v, N_PARAMS);

	if (rc < 0)
		return rc;
	if (v[0] == 0 || v[0] > RV_CONN_MAX_QPS || v[1] == 0 || v[1] > 65536 || v[2] == 0 || v[2] > 65536 ||
	    v[3] > v[1] || v[5] > (64u << 20) || v[9] > PERF_POLL_YIELD || v[10] > 1 || v[11] > 1)
		return -EBADMSG;
	*p = (struct perf_params){(uint32_t)v[0], (uint32_t)v[1], (uint32_t)v[2], (uint32_t)v[3], (uint32_t)v[4],
				  (uint32_t)v[5], (uint32_t)v[6], (uint32_t)v[7], (uint32_t)v[8], (uint32_t)v[9],
				  (uint32_t)v[10], (uint32_t)v[11], 0, 0};
	return 0;
}

/* Both sides: open RDMA, tell each other whether it worked, connect if both did. */
static int session_rdma(struct session *s, const char *dev, const struct perf_params *p, bool client,
			const char *host)
{
	uint64_t mine, theirs;
	struct perf_params mine_p = *p;
	int rc;

	/* Only the client decides (and says) that atomics are missing. */
	if (!client)
		mine_p.atomics = 0;
	/* The client's --tcp-only holds for both ends, before the context opens. */
	perf_path_init(p->tcp_only);
	rc = perf_rdma_open(&s->r, dev, &mine_p);

	mine = rc < 0 ? (uint64_t)-rc : 0;
	if (client) {
		if ((rc = net_send_u64s(s->fd, &mine, 1)) < 0 || (rc = net_recv_u64s(s->fd, &theirs, 1)) < 0)
			return rc;
	} else {
		if ((rc = net_recv_u64s(s->fd, &theirs, 1)) < 0 || (rc = net_send_u64s(s->fd, &mine, 1)) < 0)
			return rc;
	}
	if (mine || theirs) {
		if (theirs && !mine && client)
			fprintf(stderr, "rverbs perf: the server could not set up RDMA: %s\n", strerror((int)theirs));
		perf_rdma_close(s->r);
		s->r = NULL;
		return 0;
	}
	if ((rc = perf_rdma_connect(s->r, s->fd, client, host)) < 0) {
		perf_rdma_close(s->r);
		s->r = NULL;
		return rc;
	}
	return 0;
}

int session_open(struct session *s, const char *host, int port, const char *dev, const struct perf_params *p)
{
	int rc;

	s->fd = s->data_fd = -1;
	s->r = NULL;
	if ((rc = net_connect(host, port, &s->fd)) < 0) {
		fprintf(stderr, "rverbs perf: cannot connect to %s:%d: %s\n", host, port, strerror(-rc));
		return rc;
	}
	if ((rc = send_params(s->fd, p)) < 0 || (rc = session_rdma(s, dev, p, true, host)) < 0)
		return tool_fail("setting up the session", rc), rc;
	if (p->tcp_data && (rc = net_connect(host, port, &s->data_fd)) < 0)
		return tool_fail("opening the TCP data connection", rc), rc;
	return 0;
}

static int run_local(struct session *s, bool client, const struct perf_cmd *c, struct perf_result *res,
		     progress_fn progress)
{
	if (c->test == PERF_TCP)
		return s->data_fd >= 0 ? tcp_run(s->data_fd, client, c, res) : -ENOTCONN;
	return s->r ? perf_rdma_run(s->r, client, c, res, progress) : -ENODEV;
}

static int prepare_local(struct session *s, bool client, const struct perf_cmd *c)
{
	if (c->test == PERF_TCP || !s->r)
		return 0;
	return perf_rdma_prepare(s->r, client, c);
}

/* The server's answer to a command: its CPU and wall time, its error, its
 * -e and the soft0 path it saw. */
#define N_REPLY 5
#define N_CMD 6

int session_run(struct session *s, const struct perf_cmd *c, struct perf_result *res, progress_fn progress)
{
	uint64_t cmd[N_CMD] = {OP_RUN, c->test, c->mode, c->size, c->iters, c->cq_mod}, peer[N_REPLY], t0, c0;
	struct sched_mark m0, m1;
	int rc;

	memset(res, 0, sizeof(*res));
	res->size = c->size;
	res->iters = c->iters;
	if ((rc = net_send_u64s(s->fd, cmd, N_CMD)) < 0)
		return rc;
	if ((rc = prepare_local(s, true, c)) < 0 || (rc = net_barrier(s->fd)) < 0)
		return rc;
	sched_now(&m0);
	t0 = now_ns();
	c0 = cpu_ns();
	int run_rc = run_local(s, true, c, res, progress);
	res->cpu_client = (double)(cpu_ns() - c0) / 1e9;
	res->wall = (double)(now_ns() - t0) / 1e9;
	sched_now(&m1);
	res->runq_wait_client = m0.runq_ns >= 0 && m1.runq_ns >= m0.runq_ns ? (double)(m1.runq_ns - m0.runq_ns) / 1e9 : -1;
	res->switches_client = m0.preempted >= 0 && m1.preempted >= m0.preempted ? m1.preempted - m0.preempted : -1;
	res->faults_client = m0.faults >= 0 && m1.faults >= m0.faults ? m1.faults - m0.faults : -1;
	res->events_client = s->r && perf_rdma_events(s->r);
	res->path_client = perf_path_now(s->r);
	res->naps_client = s->r ? perf_rdma_naps(s->r) : 0;
	if ((rc = net_barrier(s->fd)) < 0 || (rc = net_recv_u64s(s->fd, peer, N_REPLY)) < 0)
		return rc;
	res->cpu_server = (double)peer[0] / 1e9;
	res->events_server = peer[3] != 0;
	res->path_server = peer[4] <= PERF_PATH_NOT_SOFT ? (enum perf_path)peer[4] : PERF_PATH_UNKNOWN;
	if (run_rc < 0)
		return run_rc;
	return peer[2] ? -(int)peer[2] : 0;
}

void session_close(struct session *s)
{
	uint64_t end = OP_END;

	if (s->fd >= 0) {
		net_send_u64s(s->fd, &end, 1);
		close(s->fd);
	}
	if (s->data_fd >= 0)
		close(s->data_fd);
	perf_rdma_close(s->r);
	s->fd = s->data_fd = -1;
	s->r = NULL;
}

/* The server's own summary: one row per command it served, what it cost this
 * side, and the path soft0 took. */
static void server_row(const struct perf_server_opts *so, struct json *js, const struct perf_cmd *c,
		       double wall, double cpu, bool events, enum perf_path path, int run_rc)
{
	if (so->json) {
		json_object_begin(js, NULL);
		json_string(js, "test", perf_test_name(c->test));
		json_string(js, "mode", c->mode == PERF_BW ? "bw" : "lat");
		json_uint(js, "bytes", c->size);
		json_uint(js, "iterations", c->iters);
		json_uint(js, "cq_moderation", c->cq_mod);
		json_double(js, "wall_s", wall);
		json_double(js, "cpu_server_s", cpu);
		json_bool(js, "events", events);
		json_string(js, "path", perf_path_name(path));
		json_bool(js, "ok", run_rc >= 0);
		json_object_end(js);
	} else {
		printf(" %-5s %-3s %-10" PRIu64 " %-10" PRIu64 " %-8.3f %-8.0f %-6s %s%s\n", perf_test_name(c->test),
		       c->mode == PERF_BW ? "bw" : "lat", c->size, c->iters, wall, wall > 0 ? 100 * cpu / wall : 0,
		       events ? "events" : "poll", perf_path_name(path), run_rc < 0 ? "  FAILED" : "");
	}
	fflush(stdout);
}

int perf_session_server(int lfd, const struct perf_server_opts *so)
{
	struct session s = {.fd = -1, .data_fd = -1, .r = NULL};
	struct perf_params p;
	struct json js;
	bool printing = !so->quiet;
	int rc, status = 1, served = 0;

	if ((rc = net_accept(lfd, &s.fd)) < 0) {
		fprintf(stderr, "rverbs perf server: accept failed: %s\n", strerror(-rc));
		return 1;
	}
	if ((rc = recv_params(s.fd, &p)) < 0)
		goto setup_failed;
	p.events = so->events; /* -e is each side's own */
	if ((rc = session_rdma(&s, so->dev, &p, false, NULL)) < 0 ||
	    (p.tcp_data && (rc = net_accept(lfd, &s.data_fd)) < 0))
		goto setup_failed;
	if (printing && so->json) {
		json_init(&js, stdout);
		json_object_begin(&js, NULL);
		json_string(&js, "rverbs_version", rv_version());
		json_string(&js, "role", "server");
		if (s.r)
			perf_rdma_json_header(s.r, &js, -1);
		json_bool(&js, "events", so->events);
		json_bool(&js, "tcp_only", p.tcp_only);
		json_array_begin(&js, "runs");
	} else if (printing) {
		if (s.r)
			perf_rdma_print_header(s.r, "rverbs perf server", p.cq_mod, -1);
		printf(" test  mode #bytes     #iterations wall[s]  CPU[%%]   wait   soft0 path\n");
	}
	for (;;) {
		uint64_t cmd[N_CMD], reply[N_REPLY], t0, c0;
		struct perf_result res;

		if ((rc = net_recv_u64s(s.fd, cmd, 1)) < 0)
			break;
		if (cmd[0] == OP_END) {
			status = 0;
			break;
		}
		if ((rc = net_recv_u64s(s.fd, cmd + 1, N_CMD - 1)) < 0)
			break;
		if (cmd[5] == 0 || cmd[5] > p.tx_depth) {
			rc = -EBADMSG;
			break;
		}
		struct perf_cmd c = {(uint32_t)cmd[1], (uint32_t)cmd[2], cmd[3], cmd[4], (uint32_t)cmd[5]};
		if ((rc = prepare_local(&s, false, &c)) < 0 || (rc = net_barrier(s.fd)) < 0)
			break;
		t0 = now_ns();
		c0 = cpu_ns();
		int run_rc = run_local(&s, false, &c, &res, NULL);
		/* The passive side of WRITE/READ is done at once; its CPU use (the
		 * device's progress) counts until the client has finished too. */
		if ((rc = net_barrier(s.fd)) < 0)
			break;
		reply[0] = cpu_ns() - c0;
		reply[1] = now_ns() - t0;
		reply[2] = run_rc < 0 ? (uint64_t)-run_rc : 0;
		reply[3] = s.r && perf_rdma_events(s.r);
		reply[4] = c.test == PERF_TCP ? PERF_PATH_UNKNOWN : perf_path_now(s.r);
		if (printing && c.test != PERF_TCP)
			server_row(so, &js, &c, (double)reply[1] / 1e9, (double)reply[0] / 1e9, reply[3] != 0,
				   (enum perf_path)reply[4], run_rc);
		served++;
		if ((rc = net_send_u64s(s.fd, reply, N_REPLY)) < 0)
			break;
	}
	if (printing && so->json) {
		json_array_end(&js);
		json_bool(&js, "ok", status == 0);
		json_object_end(&js);
		json_finish(&js);
	} else if (printing) {
		printf(" served %d run%s; %s\n", served, served == 1 ? "" : "s",
		       status == 0 ? "the client ended the session" : "the session broke off");
	}
	goto out;
setup_failed:
	fprintf(stderr, "rverbs perf server: session setup failed: %s\n", strerror(-rc));
out:
	close(lfd);
	s.fd >= 0 ? close(s.fd) : 0;
	s.data_fd >= 0 ? close(s.data_fd) : 0;
	s.fd = s.data_fd = -1;
	perf_rdma_close(s.r);
	return status;
}

int perf_fork_server(const struct perf_server_opts *so, int *ret_port)
{
	int lfd, rc;
	pid_t pid;

	if ((rc = net_listen("127.0.0.1", 0, &lfd, ret_port)) < 0) {
		fprintf(stderr, "rverbs perf: cannot listen on loopback: %s\n", strerror(-rc));
		return rc;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		rc = -errno;
		close(lfd);
		return rc;
	}
	if (pid == 0)
		_exit(perf_session_server(lfd, so));
	close(lfd);
	return pid;
}

/* ---- options and output --------------------------------------------------- */

struct perf_opts {
	uint32_t test, mode;
	const char *dev, *host, *svg;
	int port;
	uint64_t size, iters;
	double duration;
	bool all, events, gbits, loopback, json, compare, iters_set, cq_mod_set;
	int reps;
	struct perf_params p;
};

static bool progress_on;

static void progress(uint64_t done, uint64_t total)
{
	if (progress_on && total) {
		printf("\r  running ... %3d%%", (int)(100.0 * (double)done / (double)total));
		fflush(stdout);
	}
}

static void progress_clear(void)
{
	if (progress_on) {
		printf("\r\033[K");
		fflush(stdout);
	}
}

static const char *title_of(uint32_t test, uint32_t mode)
{
	static char buf[64];
	static const char *const names[] = {"RDMA_Write", "RDMA_Read", "Send", "Atomic FETCH_AND_ADD"};
	snprintf(buf, sizeof(buf), "%s %s Test", names[test < 4 ? test : 0], mode == PERF_BW ? "BW" : "Latency");
	return buf;
}

static void print_columns(const struct perf_opts *o)
{
	if (o->mode == PERF_BW)
		printf(" #bytes     #iterations    BW peak[%s]    BW average[%s]   MsgRate[Mpps]\n",
		       o->gbits ? "Gb/sec" : "MB/sec", o->gbits ? "Gb/sec" : "MB/sec");
	else
		printf(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
		       "t_stdev[usec]   99%% percentile[usec]   99.9%% percentile[usec] \n");
}

static double bw_unit(const struct perf_opts *o, double bytes_per_s)
{
	return o->gbits ? bytes_per_s * 8 / 1e9 : bytes_per_s / 1048576.0;
}

static void print_row(const struct perf_opts *o, const struct perf_result *r)
{
	if (o->mode == PERF_BW)
		printf(" %-10" PRIu64 " %-10" PRIu64 "       %-9.2f          %-9.2f          %.6f\n", r->size, r->iters,
		       bw_unit(o, r->bw_peak), bw_unit(o, r->bw_avg), r->msg_rate / 1e6);
	else
		printf(" %-7" PRIu64 " %-10" PRIu64 "     %-7.2f        %-7.2f      %-7.2f            %-7.2f        "
		       "%-7.2f         %-7.2f                %-7.2f\n", r->size, r->iters, r->lat_min, r->lat_max,
		       r->lat_typical, r->lat_avg, r->lat_stdev, r->lat_p99, r->lat_p999);
	fflush(stdout);
}

/* rverbs sends a WRITE or SEND inline by itself when it fits the QP's
 * max_inline_data; READs and atomics carry no payload out. */
static bool went_inline(const struct perf_opts *o, uint64_t size, uint32_t max_inline)
{
	return (o->test == PERF_WRITE || o->test == PERF_SEND) && size <= max_inline;
}

static void json_row(struct json *j, const struct perf_opts *o, const struct perf_result *r, uint32_t cq_mod,
		     uint32_t max_inline)
{
	json_object_begin(j, NULL);
	json_uint(j, "bytes", r->size);
	json_uint(j, "iterations", r->iters);
	json_uint(j, "cq_moderation", cq_mod);
	json_bool(j, "inline", went_inline(o, r->size, max_inline));
	if (o->mode == PERF_BW) {
		json_double(j, "bw_peak_gbps", r->bw_peak * 8 / 1e9);
		json_double(j, "bw_avg_gbps", r->bw_avg * 8 / 1e9);
		json_double(j, "bw_peak_MBps", r->bw_peak / 1048576.0);
		json_double(j, "bw_avg_MBps", r->bw_avg / 1048576.0);
		json_double(j, "msg_rate_mpps", r->msg_rate / 1e6);
	} else {
		json_double(j, "t_min_us", r->lat_min);
		json_double(j, "t_max_us", r->lat_max);
		json_double(j, "t_typical_us", r->lat_typical);
		json_double(j, "t_avg_us", r->lat_avg);
		json_double(j, "t_stdev_us", r->lat_stdev);
		json_double(j, "t_p99_us", r->lat_p99);
		json_double(j, "t_p999_us", r->lat_p999);
	}
	json_double(j, "wall_s", r->wall);
	json_double(j, "cpu_client_s", r->cpu_client);
	json_double(j, "cpu_server_s", r->cpu_server);
	json_bool(j, "events_client", r->events_client);
	json_bool(j, "events_server", r->events_server);
	json_uint(j, "naps_client", r->naps_client);
	json_double(j, "runq_wait_client_s", r->runq_wait_client);
	json_int(j, "switches_client", r->switches_client);
	json_int(j, "faults_client", r->faults_client);
	json_string(j, "path_client", perf_path_name(r->path_client));
	json_string(j, "path_server", perf_path_name(r->path_server));
	json_object_end(j);
}

/* After the table: what the header could not know before the runs. */
static void print_trailer(const struct perf_opts *o, const struct perf_result *last, int done, uint32_t max_inline)
{
	if (o->test == PERF_WRITE || o->test == PERF_SEND)
		printf(" Inline          : %s (sends up to max inline data, %u B, go inline)\n",
		       done == 0 ? "no run" : o->all ? "the sizes up to max inline data" :
		       went_inline(o, last->size, max_inline) ? "yes" : "no", max_inline);
	else
		printf(" Inline          : no (%s carries no payload out)\n", perf_test_name(o->test));
	if (done > 0) {
		printf(" Server polling  : %s\n", last->events_server ? "events (completion channel)" : "busy");
		printf(" soft0 path      : client %s, server %s\n", perf_path_name(last->path_client),
		       perf_path_name(last->path_server));
	}
}

static int run_client(struct perf_opts *o)
{
	struct session s;
	struct json js;
	uint64_t sizes[32];
	struct perf_result res[32];
	int n_sizes = 0, rc, done = 0;
	uint32_t cq_mod, max_inline;

	if (o->all) {
		for (uint64_t sz = o->test == PERF_ATOMIC ? 8 : 2; sz <= (o->test == PERF_ATOMIC ? 8u : 8u << 20); sz <<= 1)
			sizes[n_sizes++] = sz;
	} else {
		sizes[n_sizes++] = o->size;
	}
	o->p.max_size = (uint32_t)sizes[n_sizes - 1];
	if ((rc = session_open(&s, o->host, o->port, o->dev, &o->p)) < 0 || !s.r) {
		session_close(&s);
		return 1;
	}
	progress_on = !o->json && isatty(STDOUT_FILENO);
	/* One value for the session: the size rule does not apply with -a. */
	cq_mod = perf_cq_mod(&o->p, sizes[0], o->all);
	max_inline = perf_rdma_max_inline(s.r);
	if (o->json) {
		json_init(&js, stdout);
		json_object_begin(&js, NULL);
		json_string(&js, "rverbs_version", rv_version());
		json_string(&js, "test", perf_test_name(o->test));
		json_string(&js, "mode", o->mode == PERF_BW ? "bw" : "lat");
		perf_rdma_json_header(s.r, &js, (int)o->mode);
		json_object_begin(&js, "params");
		json_uint(&js, "qps", o->p.n_qps);
		json_uint(&js, "tx_depth", o->p.tx_depth);
		json_uint(&js, "rx_depth", o->p.rx_depth);
		json_uint(&js, "cq_moderation", cq_mod);
		json_bool(&js, "cq_moderation_default", o->p.cq_mod == 0);
		json_uint(&js, "inline_size", o->p.inline_size);
		json_uint(&js, "max_inline_data", max_inline);
		json_bool(&js, "bidirectional", o->p.bidir);
		json_double(&js, "duration_s", o->duration);
		json_bool(&js, "events", o->p.events);
		json_string(&js, "polling", o->p.spin == PERF_POLL_SPIN ? "spin" : o->p.spin == PERF_POLL_YIELD ? "yield" :
			    "default");
		json_bool(&js, "tcp_only", o->p.tcp_only);
		json_object_end(&js);
		json_array_begin(&js, "results");
	} else {
		perf_rdma_print_header(s.r, title_of(o->test, o->mode), cq_mod, (int)o->mode);
		print_columns(o);
	}
	for (int i = 0; i < n_sizes; i++) {
		struct perf_cmd c = {o->test, o->mode, sizes[i], o->iters, cq_mod};
		if (o->duration > 0) {
			/* Calibrate: a short warm-up run says how many iterations fill the duration. */
			c.iters = o->mode == PERF_LAT ? 200 : 1000;
			if ((rc = session_run(&s, &c, &res[i], NULL)) < 0)
				break;
			double per = res[i].wall / (double)c.iters;
			double want = per > 0 ? o->duration / per : 1e6;
			c.iters = want < 100 ? 100 : want > 5e7 ? 50000000 : (uint64_t)want;
		}
		rc = session_run(&s, &c, &res[i], progress);
		progress_clear();
		if (rc < 0) {
			fprintf(stderr, "rverbs perf: %s %s of %" PRIu64 " bytes failed: %s\n", perf_test_name(o->test),
				o->mode == PERF_BW ? "bw" : "lat", c.size, strerror(-rc));
			break;
		}
		if (o->p.bidir && o->mode == PERF_BW) {
			/* Both directions carried as much; perftest reports the sum. */
			res[i].bw_avg *= 2;
			res[i].bw_peak *= 2;
			res[i].msg_rate *= 2;
		}
		if (o->json)
			json_row(&js, o, &res[i], cq_mod, max_inline);
		else
			print_row(o, &res[i]);
		done++;
	}
	if (o->json) {
		json_array_end(&js);
		if (done > 0) {
			/* The path after the last run: soft0 agrees on the same-host
			 * path once connected, so the first run may start on TCP. */
			json_string(&js, "path", perf_path_name(res[done - 1].path_client));
			json_object_begin(&js, "server");
			json_bool(&js, "events", res[done - 1].events_server);
			json_string(&js, "path", perf_path_name(res[done - 1].path_server));
			json_object_end(&js);
		}
		json_bool(&js, "ok", rc >= 0);
		json_object_end(&js);
		json_finish(&js);
	} else {
		printf("---------------------------------------------------------------------------------------\n");
		print_trailer(o, done > 0 ? &res[done - 1] : NULL, done, max_inline);
	}
	if (o->svg && done > 0) {
		double x[32], y[32];
		struct svg_series ser = {perf_test_name(o->test), "#1f77b4", done, x, y};
		char title[160];
		for (int i = 0; i < done; i++) {
			x[i] = (double)res[i].size;
			y[i] = o->mode == PERF_BW ? res[i].bw_avg * 8 / 1e9 : res[i].lat_typical;
		}
		snprintf(title, sizeof(title), "rverbs perf %s %s on %s", perf_test_name(o->test),
			 o->mode == PERF_BW ? "bw" : "lat", perf_rdma_device_name(s.r));
		if (svg_write(o->svg, title, o->mode == PERF_BW ? &ser : NULL, o->mode == PERF_BW,
			      o->mode == PERF_LAT ? &ser : NULL, o->mode == PERF_LAT) < 0)
			rc = -EIO;
	}
	session_close(&s);
	return rc < 0 ? 1 : 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rverbs perf TEST MODE [OPTIONS] [HOST | --loopback]\n"
		"       rverbs perf --compare [-n ROUND_TRIPS] [--reps N] [-d DEV] [--json] [--svg FILE]\n"
		"  TEST  write | read | send | atomic        MODE  bw | lat\n"
		"  without HOST: be the server and wait for one client; with HOST: be the client;\n"
		"  --loopback: run both as two processes on this machine\n"
		"options (as perftest):\n"
		"  -d, --ib-dev DEV        device (default: rverbs' default device)\n"
		"  -p, --port PORT         control TCP port (default %d)\n"
		"  -s, --size BYTES        message size (default 65536 for bw, 2 for lat; atomic: 8)\n"
		"  -a, --all               every size from 2 B to 8 MiB\n"
		"  -n, --iters N           iterations per size (default 5000 bw, 1000 lat)\n"
		"  -D, --duration SECONDS  run each size for about this long instead of -n\n"
		"      --warmup N          write/read bw: N WRs per QP before the clock starts, as\n"
		"                          ucx_perftest's -w (default: a tenth of -n, 1 to -t; 0: none;\n"
		"                          on soft0's rings: again once WRs take the one-copy path)\n"
		"  -I, --inline_size BYTES max inline data (sends up to it go inline)\n"
		"  -Q, --cq-mod N          signal one send in N and the last (default as perftest: 100,\n"
		"                          at most -t; 1 above 8 KiB unless -a or -e; -Q 1 or -t 1 for\n"
		"                          ib_*_lat's every send)\n"
		"  -R, --rdma_cm           connect the QPs through rdma_cm (the server follows; default:\n"
		"                          the TCP exchange of the connection helper)\n"
		"  -e, --events            sleep on a completion channel instead of polling (this side,\n"
		"                          and the forked server with --loopback; rv_cq_wait in\n"
		"                          RV_CQ_WAIT_EVENT mode)\n"
		"  -q, --qp N              number of QPs\n"
		"  -t, --tx-depth N        send queue depth (default 128)\n"
		"  -r, --rx-depth N        receive queue depth (default 512)\n"
		"  -b, --bidirectional     both sides send (bw)\n"
		"      --report_gbits      bandwidth in Gb/s instead of MB/s\n"
		"      --json              machine-readable output\n"
		"      --svg FILE          draw the curves against message size\n"
		"      --compare           the raw TCP vs rverbs RC table (= rverbs bench)\n"
		"      --reps N            repetitions for --compare (median; default 3)\n"
		"      --tcp-only          soft0: no same-host path, every frame over TCP (sets\n"
		"                          RVERBS_SOFT_SHM=0 here and on the server before they open soft0)\n"
		"      --spin              never yield the CPU while polling (default on soft0: latency\n"
		"                          runs yield after 2048 empty polls in a row, when the peer\n"
		"                          shares the CPU; bandwidth runs after 64, so that soft0's\n"
		"                          progress thread gets a core)\n"
		"      --yield             on soft0, yield after 64 empty polls in latency runs too\n", DEFAULT_PORT);
}

static int parse(int argc, char **argv, struct perf_opts *o)
{
	static const struct option longopts[] = {
		{"ib-dev", required_argument, NULL, 'd'}, {"port", required_argument, NULL, 'p'},
		{"size", required_argument, NULL, 's'}, {"all", no_argument, NULL, 'a'},
		{"iters", required_argument, NULL, 'n'}, {"duration", required_argument, NULL, 'D'},
		{"inline_size", required_argument, NULL, 'I'}, {"cq-mod", required_argument, NULL, 'Q'},
		{"events", no_argument, NULL, 'e'}, {"qp", required_argument, NULL, 'q'},
		{"tx-depth", required_argument, NULL, 't'}, {"rx-depth", required_argument, NULL, 'r'},
		{"bidirectional", no_argument, NULL, 'b'}, {"report_gbits", no_argument, NULL, 'G'},
		{"json", no_argument, NULL, 'J'}, {"svg", required_argument, NULL, 'S'},
		{"loopback", no_argument, NULL, 'L'}, {"compare", no_argument, NULL, 'C'},
		{"reps", required_argument, NULL, 'N'}, {"spin", no_argument, NULL, 'P'},
		{"yield", no_argument, NULL, 'Y'}, {"warmup", required_argument, NULL, 'W'},
		{"rdma_cm", no_argument, NULL, 'R'}, {"tcp-only", no_argument, NULL, 'T'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	long long v;
	int opt;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "d:p:s:an:D:I:Q:eq:t:r:bRh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'd': o->dev = optarg; break;
		case 'p': o->port = atoi(optarg); break;
		case 's':
			if ((v = parse_size(optarg)) < 1 || v > (8 << 20))
				return fprintf(stderr, "rverbs perf: -s %s: a size from 1 B to 8 MiB\n", optarg), -1;
			o->size = (uint64_t)v;
			break;
		case 'a': o->all = true; break;
		case 'n':
			if ((v = atoll(optarg)) < 1)
				return fprintf(stderr, "rverbs perf: -n needs a positive count\n"), -1;
			o->iters = (uint64_t)v;
			o->iters_set = true;
			break;
		case 'D':
			if ((o->duration = atof(optarg)) <= 0)
				return fprintf(stderr, "rverbs perf: -D needs a positive number of seconds\n"), -1;
			break;
		case 'I': o->p.inline_size = (uint32_t)atoi(optarg); break;
		case 'Q':
			o->p.cq_mod = (uint32_t)atoi(optarg);
			o->cq_mod_set = true;
			break;
		case 'e': o->events = true; break;
		case 'q': o->p.n_qps = (uint32_t)atoi(optarg); break;
		case 't': o->p.tx_depth = (uint32_t)atoi(optarg); break;
		case 'r': o->p.rx_depth = (uint32_t)atoi(optarg); break;
		case 'b': o->p.bidir = 1; break;
		case 'G': o->gbits = true; break;
		case 'J': o->json = true; break;
		case 'S': o->svg = optarg; break;
		case 'L': o->loopback = true; break;
		case 'C': o->compare = true; break;
		case 'N': o->reps = atoi(optarg); break;
		case 'R': o->p.rdma_cm = 1; break;
		case 'P': o->p.spin = PERF_POLL_SPIN; break;
		case 'Y': o->p.spin = PERF_POLL_YIELD; break;
		case 'T': o->p.tcp_only = 1; break;
		case 'W':
			if ((v = atoll(optarg)) < 0 || v >= PERF_WARMUP_AUTO)
				return fprintf(stderr, "rverbs perf: --warmup needs a count (0: none)\n"), -1;
			o->p.warmup = (uint32_t)v;
			break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -1;
		}
	}
	for (int i = optind; i < argc; i++) {
		if (strcmp(argv[i], "write") == 0) o->test = PERF_WRITE;
		else if (strcmp(argv[i], "read") == 0) o->test = PERF_READ;
		else if (strcmp(argv[i], "send") == 0) o->test = PERF_SEND;
		else if (strcmp(argv[i], "atomic") == 0) o->test = PERF_ATOMIC;
		else if (strcmp(argv[i], "bw") == 0) o->mode = PERF_BW;
		else if (strcmp(argv[i], "lat") == 0) o->mode = PERF_LAT;
		else if (!o->host) o->host = argv[i];
		else return fprintf(stderr, "rverbs perf: unexpected argument \"%s\"\n", argv[i]), -1;
	}
	if (o->p.n_qps < 1 || o->p.n_qps > RV_CONN_MAX_QPS || o->p.tx_depth < 1 || o->p.tx_depth > 65536 ||
	    o->p.rx_depth < 1 || o->p.rx_depth > 65536 || (o->cq_mod_set && (o->p.cq_mod < 1 || o->p.cq_mod > o->p.tx_depth)))
		return fprintf(stderr, "rverbs perf: need 1 <= -q <= %d, 1 <= -t, -r <= 65536, 1 <= -Q <= -t\n",
			       RV_CONN_MAX_QPS), -1;
	if (o->events)
		o->p.events = 1;
	if (o->p.bidir && o->mode != PERF_BW)
		return fprintf(stderr, "rverbs perf: -b applies to bw tests only\n"), -1;
	if (o->test == PERF_ATOMIC)
		o->size = 8;
	if (!o->size)
		o->size = o->mode == PERF_BW ? 65536 : 2;
	if (!o->iters)
		o->iters = o->mode == PERF_BW ? 5000 : 1000;
	o->p.atomics = o->test == PERF_ATOMIC;
	return 0;
}

int cmd_perf(int argc, char **argv)
{
	struct perf_opts o = {
		.test = PERF_WRITE, .mode = PERF_BW, .port = DEFAULT_PORT, .reps = 3,
		.p = {.n_qps = 1, .tx_depth = 128, .rx_depth = 512, .warmup = PERF_WARMUP_AUTO},
	};
	int status, rc, pid;

	if (parse(argc, argv, &o) < 0)
		return 2;
	/* Before any context opens, and before the fork of --loopback. */
	perf_path_init(o.p.tcp_only);
	if (o.compare)
		return perf_compare(o.dev, o.iters_set ? o.iters : 0, o.reps, o.svg, o.json, o.p.spin);
	struct perf_server_opts so = {.dev = o.dev, .events = o.events, .quiet = o.loopback, .json = o.json};
	if (o.loopback) {
		if ((pid = perf_fork_server(&so, &o.port)) < 0)
			return 1;
		o.host = "127.0.0.1";
		rc = run_client(&o);
		if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			if (rc == 0)
				fprintf(stderr, "rverbs perf: the server process failed\n");
			rc = 1;
		}
		return rc;
	}
	if (o.host)
		return run_client(&o);
	int lfd;
	if ((rc = net_listen(NULL, o.port, &lfd, &o.port)) < 0) {
		fprintf(stderr, "rverbs perf: cannot listen on port %d: %s\n", o.port, strerror(-rc));
		return 1;
	}
	if (!o.json) {
		printf("rverbs perf server: waiting for a client on port %d\n", o.port);
		fflush(stdout);
	}
	return perf_session_server(lfd, &so);
}

int cmd_bench(int argc, char **argv)
{
	struct perf_opts o = {
		.test = PERF_WRITE, .mode = PERF_BW, .port = DEFAULT_PORT, .reps = 3,
		.p = {.n_qps = 1, .tx_depth = 128, .rx_depth = 512, .warmup = PERF_WARMUP_AUTO},
	};

	if (parse(argc, argv, &o) < 0)
		return 2;
	return perf_compare(o.dev, o.iters_set ? o.iters : 0, o.reps, o.svg, o.json, o.p.spin);
}
