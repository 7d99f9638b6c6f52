/*
 * The control connection of `rverbs perf` (plain TCP, length-exact messages,
 * network byte order) and the raw TCP baseline that `rverbs bench` compares
 * rverbs with: a ping-pong for latency and a one-way stream for bandwidth,
 * with TCP_NODELAY, between the same two processes as the RDMA runs.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "perf.h"

uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void sched_now(struct sched_mark *m)
{
	unsigned long long run, wait;
	struct rusage ru;
	FILE *f = fopen("/proc/thread-self/schedstat", "re");

	m->runq_ns = -1;
	if (f) {
		if (fscanf(f, "%llu %llu", &run, &wait) == 2)
			m->runq_ns = (int64_t)wait;
		fclose(f);
	}
	if (getrusage(RUSAGE_THREAD, &ru) == 0) {
		m->preempted = (int64_t)ru.ru_nivcsw;
		m->faults = (int64_t)ru.ru_minflt + (int64_t)ru.ru_majflt;
	} else {
		m->preempted = m->faults = -1;
	}
}

int net_listen(const char *addr, int port, int *ret_fd, int *ret_port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	socklen_t sl = sizeof(sa);
	int one = 1, fd, rc;

	if (inet_pton(AF_INET, addr ? addr : "0.0.0.0", &sa.sin_addr) != 1)
		return -EINVAL;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 4) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	*ret_fd = fd;
	if (ret_port)
		*ret_port = ntohs(sa.sin_port);
	return 0;
}

static void tune(int fd)
{
	int one = 1;
	/* A peer that vanishes must not hang the other side forever. */
	struct timeval tv = {.tv_sec = 60, .tv_usec = 0};

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

int net_accept(int lfd, int *ret_fd)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0)
		return -errno;
	tune(fd);
	*ret_fd = fd;
	return 0;
}

int net_connect(const char *host, int port, int *ret_fd)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	struct addrinfo *ai;
	char service[16];
	int rc = -ECONNREFUSED;

	snprintf(service, sizeof(service), "%d", port);
	if (getaddrinfo(host, service, &hints, &ai) != 0)
		return -EHOSTUNREACH;
	for (int attempt = 0; attempt < 50; attempt++) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			rc = -errno;
			break;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
			tune(fd);
			*ret_fd = fd;
			rc = 0;
			break;
		}
		rc = -errno;
		close(fd);
		nanosleep(&(struct timespec){.tv_sec = 0, .tv_nsec = 100 * 1000 * 1000}, NULL);
	}
	freeaddrinfo(ai);
	return rc;
}

int net_send(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int net_recv(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = recv(fd, p, len, 0);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int net_barrier(int fd)
{
	char c = 'b';
	int rc = net_send(fd, &c, 1);
	return rc < 0 ? rc : net_recv(fd, &c, 1);
}

int net_send_u64s(int fd, const uint64_t *v, int n)
{
	uint64_t b[16];

	for (int i = 0; i < n && i < 16; i++)
		b[i] = htobe64(v[i]);
	return net_send(fd, b, sizeof(b[0]) * (size_t)n);
}

int net_recv_u64s(int fd, uint64_t *v, int n)
{
	int rc = net_recv(fd, v, sizeof(v[0]) * (size_t)n);

	for (int i = 0; rc == 0 && i < n; i++)
		v[i] = be64toh(v[i]);
	return rc;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

void perf_lat_stats(double *us, uint64_t n, struct perf_result *res)
{
	double sum = 0, var = 0;

	if (n == 0)
		return;
	qsort(us, n, sizeof(*us), cmp_double);
	for (uint64_t i = 0; i < n; i++)
		sum += us[i];
	res->lat_avg = sum / (double)n;
	for (uint64_t i = 0; i < n; i++)
		var += (us[i] - res->lat_avg) * (us[i] - res->lat_avg);
	res->lat_stdev = sqrt(var / (double)n);
	res->lat_min = us[0];
	res->lat_max = us[n - 1];
	res->lat_typical = us[n / 2];
	res->lat_p99 = us[(uint64_t)((double)(n - 1) * 0.99)];
	res->lat_p999 = us[(uint64_t)((double)(n - 1) * 0.999)];
}

int tcp_run(int fd, bool client, const struct perf_cmd *c, struct perf_result *res)
{
	size_t size = (size_t)c->size;
	char *buf = calloc(1, size ? size : 1);
	double *lat = NULL;
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	if (c->mode == PERF_LAT) {
		if (client && !(lat = calloc(c->iters, sizeof(*lat)))) {
			free(buf);
			return -ENOMEM;
		}
		for (uint64_t i = 0; i < c->iters && rc == 0; i++) {
			uint64_t t0 = now_ns();
			if (client) {
				buf[0] = (char)i;
				rc = net_send(fd, buf, size);
				if (rc == 0)
					rc = net_recv(fd, buf, size);
				lat[i] = (double)(now_ns() - t0) / 2e3;
			} else {
				rc = net_recv(fd, buf, size);
				if (rc == 0)
					rc = net_send(fd, buf, size);
			}
		}
		if (client && rc == 0)
			perf_lat_stats(lat, c->iters, res);
	} else {
		uint64_t t0 = now_ns();
		char ack = 'a';

		if (client) {
			for (uint64_t i = 0; i < c->iters && rc == 0; i++)
				rc = net_send(fd, buf, size);
			if (rc == 0)
				rc = net_recv(fd, &ack, 1);
			double s = (double)(now_ns() - t0) / 1e9;
			res->bw_avg = res->bw_peak = (double)size * (double)c->iters / s;
			res->msg_rate = (double)c->iters / s;
		} else {
			uint64_t left = size * c->iters;
			size_t chunk = size > 65536 ? size : 65536;
			char *big = realloc(buf, chunk);
			if (!big) {
				rc = -ENOMEM;
			} else {
				buf = big;
				while (left && rc == 0) {
					ssize_t n = recv(fd, buf, left < chunk ? left : chunk, 0);
					if (n <= 0)
						rc = n == 0 ? -ECONNRESET : -errno;
					else
						left -= (uint64_t)n;
				}
			}
			if (rc == 0)
				rc = net_send(fd, &ack, 1);
		}
	}
	free(lat);
	free(buf);
	return rc;
}
