/*
 * `rverbs bench` (= `rverbs perf --compare`): the README's main-job table.
 * Raw TCP and rverbs RC on the default device, measured in the same run
 * between the same two processes on loopback: latency by ping-pong (TCP
 * send/recv echo vs rverbs SEND/RECV), bandwidth by a one-way stream (TCP
 * send() per message vs RDMA WRITE), CPU time of each side, medians over
 * repetitions, and the ratio rverbs/TCP.
 */
#include <math.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "json.h"
#include "perf.h"
#include "tools.h"

#define N_SIZES 3
#define MAX_REPS 51

enum { TCP_LAT, TCP_BW, RV_LAT, RV_BW, N_MEAS };

struct cell {
	double lat_us, typ_us, gbps, cpu_c, cpu_s; /* medians; NaN when not measured */
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	int k = 0;
	for (int i = 0; i < n; i++)
		if (isfinite(v[i]))
			v[k++] = v[i];
	if (k == 0)
		return NAN;
	qsort(v, (size_t)k, sizeof(*v), cmp_double);
	return k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
}

static void fmt(char *buf, size_t len, const char *f, double v)
{
	if (isfinite(v))
		snprintf(buf, len, f, v);
	else
		snprintf(buf, len, "n/a");
}

static uint64_t bw_iters(uint64_t size)
{
	uint64_t n = (16ull << 20) / size;
	return n < 500 ? 500 : n > 100000 ? 100000 : n;
}

int perf_compare(const char *dev, uint64_t lat_iters, int reps, const char *svg, bool json, uint32_t poll)
{
	static const uint64_t sizes[N_SIZES] = {64, 4096, 65536};
	struct perf_params p = {.n_qps = 1, .tx_depth = 128, .rx_depth = 512, .cq_mod = 16,
				.max_size = 65536, .tcp_data = 1, .spin = poll};
	struct cell cell[N_SIZES][N_MEAS];
	static double samples[N_SIZES][N_MEAS][5][MAX_REPS];
	struct session s;
	char devname[64] = "none";
	int port, pid, status, failed = 0;

	if (!lat_iters)
		lat_iters = 1000;
	if (reps < 1 || reps > MAX_REPS) {
		fprintf(stderr, "rverbs bench: --reps must be 1..%d\n", MAX_REPS);
		return 2;
	}
	struct perf_server_opts so = {.dev = dev, .quiet = true};
	if ((pid = perf_fork_server(&so, &port)) < 0)
		return 1;
	if (session_open(&s, "127.0.0.1", port, dev, &p) < 0 || s.data_fd < 0) {
		session_close(&s);
		waitpid(pid, &status, 0);
		return 1;
	}
	if (s.r)
		snprintf(devname, sizeof(devname), "%s", perf_rdma_device_name(s.r));
	bool progress = !json && isatty(STDOUT_FILENO);
	for (int r = 0; r < reps; r++) {
		for (int i = 0; i < N_SIZES; i++) {
			for (int m = 0; m < N_MEAS; m++) {
				if (progress) {
					printf("\r  measuring: run %d of %d, %" PRIu64 " B, %s %s ...\033[K", r + 1, reps,
					       sizes[i], m < RV_LAT ? "TCP" : "rverbs", m == TCP_LAT || m == RV_LAT ?
					       "latency" : "bandwidth");
					fflush(stdout);
				}
				struct perf_cmd c = {
					m == TCP_LAT || m == TCP_BW ? PERF_TCP : m == RV_LAT ? PERF_SEND : PERF_WRITE,
					m == TCP_LAT || m == RV_LAT ? PERF_LAT : PERF_BW, sizes[i],
					m == TCP_LAT || m == RV_LAT ? lat_iters : bw_iters(sizes[i]), p.cq_mod,
				};
				struct perf_result res;
				double *out[5];
				for (int k = 0; k < 5; k++)
					out[k] = &samples[i][m][k][r];
				*out[0] = *out[1] = *out[2] = *out[3] = *out[4] = NAN;
				if ((m == RV_LAT || m == RV_BW) && !s.r)
					continue;
				int rc = session_run(&s, &c, &res, NULL);
				if (rc < 0) {
					fprintf(stderr, "rverbs bench: %s %s of %" PRIu64 " B failed: %s\n",
						m < RV_LAT ? "TCP" : "rverbs", c.mode == PERF_LAT ? "latency" : "bandwidth",
						c.size, strerror(-rc));
					failed = 1;
					continue;
				}
				*out[0] = c.mode == PERF_LAT ? res.lat_avg : NAN;
				*out[1] = c.mode == PERF_BW ? res.bw_avg * 8 / 1e9 : NAN;
				*out[2] = res.wall > 0 ? 100 * res.cpu_client / res.wall : NAN;
				*out[3] = res.wall > 0 ? 100 * res.cpu_server / res.wall : NAN;
				*out[4] = c.mode == PERF_LAT ? res.lat_typical : NAN;
			}
		}
	}
	if (progress) {
		printf("\r\033[K");
		fflush(stdout);
	}
	bool have_rdma = s.r != NULL;
	session_close(&s);
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		failed = 1;
	for (int i = 0; i < N_SIZES; i++)
		for (int m = 0; m < N_MEAS; m++) {
			cell[i][m].lat_us = median(samples[i][m][0], reps);
			cell[i][m].gbps = median(samples[i][m][1], reps);
			cell[i][m].cpu_c = median(samples[i][m][2], reps);
			cell[i][m].cpu_s = median(samples[i][m][3], reps);
			cell[i][m].typ_us = median(samples[i][m][4], reps);
		}

	if (json) {
		struct json js;
		json_init(&js, stdout);
		json_object_begin(&js, NULL);
		json_string(&js, "rverbs_version", rv_version());
		json_string(&js, "device", devname);
		json_uint(&js, "repetitions", (uint64_t)reps);
		json_uint(&js, "latency_round_trips", lat_iters);
		json_array_begin(&js, "rows");
		for (int i = 0; i < N_SIZES; i++)
			for (int t = 0; t < 2; t++) {
				struct cell *l = &cell[i][t ? RV_LAT : TCP_LAT], *b = &cell[i][t ? RV_BW : TCP_BW];
				json_object_begin(&js, NULL);
				json_uint(&js, "bytes", sizes[i]);
				json_string(&js, "transport", t ? "rverbs RC" : "raw TCP");
				json_double(&js, "avg_latency_us", l->lat_us);
				json_double(&js, "typical_latency_us", l->typ_us);
				json_double(&js, "bandwidth_gbps", b->gbps);
				json_double(&js, "cpu_lat_client_pct", l->cpu_c);
				json_double(&js, "cpu_lat_server_pct", l->cpu_s);
				json_double(&js, "cpu_bw_client_pct", b->cpu_c);
				json_double(&js, "cpu_bw_server_pct", b->cpu_s);
				json_object_end(&js);
			}
		json_array_end(&js);
		json_bool(&js, "ok", !failed);
		json_object_end(&js);
		json_finish(&js);
	} else {
		printf("rverbs bench: raw TCP vs rverbs RC on %s, loopback, the same two processes, "
		       "medians of %d runs\n", devname, reps);
		printf("latency: ping-pong, half the round trip, %" PRIu64 " round trips (TCP send/recv echo; "
		       "rverbs SEND/RECV)\n", lat_iters);
		printf("bandwidth: one-way stream (TCP send() per message, TCP_NODELAY; rverbs RDMA WRITE, "
		       "%u in flight)\n", p.tx_depth);
		printf("CPU: process CPU time / wall time per side during the run; 100%% = one core\n");
		printf("typical latency: the median round trip / 2 (the average includes the outliers)\n\n");
		printf("| size | transport | avg latency (µs) | bandwidth (Gb/s) | CPU latency run, client / server "
		       "| CPU bandwidth run, client / server | typical latency (µs) |\n");
		printf("|---|---|---|---|---|---|---|\n");
		for (int i = 0; i < N_SIZES; i++) {
			char sz[32], a[32], b[32], c1[32], c2[32], d1[32], d2[32], t1[32];
			format_size(sizes[i], sz, sizeof(sz));
			for (int t = 0; t < 2; t++) {
				struct cell *l = &cell[i][t ? RV_LAT : TCP_LAT], *w = &cell[i][t ? RV_BW : TCP_BW];
				fmt(a, sizeof(a), "%.2f", l->lat_us);
				fmt(b, sizeof(b), "%.2f", w->gbps);
				fmt(c1, sizeof(c1), "%.0f%%", l->cpu_c);
				fmt(c2, sizeof(c2), "%.0f%%", l->cpu_s);
				fmt(d1, sizeof(d1), "%.0f%%", w->cpu_c);
				fmt(d2, sizeof(d2), "%.0f%%", w->cpu_s);
				fmt(t1, sizeof(t1), "%.2f", l->typ_us);
				printf("| %s | %s | %s | %s | %s / %s | %s / %s | %s |\n", sz, t ? "rverbs RC" : "raw TCP", a,
				       b, c1, c2, d1, d2, t1);
			}
			struct cell *tl = &cell[i][TCP_LAT], *tb = &cell[i][TCP_BW], *rl = &cell[i][RV_LAT],
				    *rb = &cell[i][RV_BW];
			fmt(a, sizeof(a), "%.2f×", rl->lat_us / tl->lat_us);
			fmt(b, sizeof(b), "%.2f×", rb->gbps / tb->gbps);
			fmt(c1, sizeof(c1), "%.2f×", (rl->cpu_c + rl->cpu_s) / (tl->cpu_c + tl->cpu_s));
			fmt(d1, sizeof(d1), "%.2f×", (rb->cpu_c + rb->cpu_s) / (tb->cpu_c + tb->cpu_s));
			fmt(t1, sizeof(t1), "%.2f×", rl->typ_us / tl->typ_us);
			printf("| %s | rverbs/TCP | %s | %s | %s (both sides) | %s (both sides) | %s |\n", sz, a, b, c1, d1,
			       t1);
		}
		if (!have_rdma)
			printf("\nrverbs RC: not measured: the RDMA setup failed (the message above says why)\n");
	}
	if (svg) {
		double x[N_SIZES], y[4][N_SIZES];
		for (int i = 0; i < N_SIZES; i++) {
			x[i] = (double)sizes[i];
			y[0][i] = cell[i][TCP_BW].gbps;
			y[1][i] = cell[i][RV_BW].gbps;
			y[2][i] = cell[i][TCP_LAT].lat_us;
			y[3][i] = cell[i][RV_LAT].lat_us;
		}
		struct svg_series bw[2] = {{"raw TCP", "#ff7f0e", N_SIZES, x, y[0]},
					   {"rverbs RC", "#1f77b4", N_SIZES, x, y[1]}};
		struct svg_series lat[2] = {{"raw TCP", "#ff7f0e", N_SIZES, x, y[2]},
					    {"rverbs RC", "#1f77b4", N_SIZES, x, y[3]}};
		char title[128];
		snprintf(title, sizeof(title), "rverbs bench: raw TCP vs rverbs RC on %s (loopback)", devname);
		if (svg_write(svg, title, bw, 2, lat, 2) < 0)
			failed = 1;
	}
	return failed || !have_rdma ? 1 : 0;
}
