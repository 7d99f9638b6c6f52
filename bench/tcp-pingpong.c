/*
 * The raw TCP references of soft0's 64 B TCP latency rows: a ping-pong of
 * 64-byte messages between two processes over loopback (TCP_NODELAY, no
 * rverbs), the receiver waiting in one of several ways, so that each way's
 * cost can be measured beside `rverbs perf send lat --tcp-only` in the same
 * minutes (lib/drivers/soft/README.md, "Progress", issue #22 `tcplat`).
 *
 * usage: tcp-pingpong MODE [ROUND_TRIPS [threaded]]   (default 20000)
 *   busy     recv(MSG_DONTWAIT) in a loop (a busy poller)
 *   recv     one blocking recv (qperf's, sockperf's way)
 *   poll     poll() on the socket and an eventfd, no timeout, then
 *            recv(MSG_DONTWAIT) (soft0's blocked waiter)
 *   poll1    the same with a 1 ms poll() timeout; poll100, poll1000 likewise
 *   epoll    epoll_wait on a set made once (socket and eventfd), then recv
 *   threaded: each process also has an idle second thread (as soft0's
 *            progress thread makes a process multi-threaded)
 * prints the median one-way latency in µs (half the round trip).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MSG 64

enum mode { BUSY, RECV, POLL, EPOLL };

static enum mode mode;
static int poll_ms = -1, efd = -1, epfd = -1;

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void *idle(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/* Receive one whole message the chosen way; 0 or -1 (closed, error). */
static int rx(int s, char *b)
{
	size_t got = 0;

	while (got < MSG) {
		ssize_t n;

		if (mode == POLL) {
			struct pollfd p[2] = {{.fd = s, .events = POLLIN}, {.fd = efd, .events = POLLIN}};
			if (poll(p, 2, poll_ms) < 0 && errno != EINTR)
				return -1;
		} else if (mode == EPOLL) {
			struct epoll_event ev[2];
			if (epoll_wait(epfd, ev, 2, -1) < 0 && errno != EINTR)
				return -1;
		}
		n = recv(s, b + got, MSG - got, mode == RECV ? 0 : MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return 0;
}

static int parse_mode(const char *m)
{
	if (!strcmp(m, "busy"))
		mode = BUSY;
	else if (!strcmp(m, "recv"))
		mode = RECV;
	else if (!strcmp(m, "poll"))
		mode = POLL;
	else if (!strncmp(m, "poll", 4) && atoi(m + 4) > 0)
		mode = POLL, poll_ms = atoi(m + 4);
	else if (!strcmp(m, "epoll"))
		mode = EPOLL;
	else
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	long n = argc > 2 ? strtol(argv[2], NULL, 10) : 20000;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(a);
	int l, s, one = 1, status;
	char b[MSG] = {0};
	double *lat;
	pid_t child;

	if (argc < 2 || parse_mode(argv[1]) != 0 || n < 1) {
		fprintf(stderr, "usage: tcp-pingpong busy|recv|poll|pollMS|epoll [ROUND_TRIPS [threaded]]\n");
		return 2;
	}
	if ((l = socket(AF_INET, SOCK_STREAM, 0)) < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    getsockname(l, (struct sockaddr *)&a, &alen) != 0 || listen(l, 1) != 0)
		return perror("listen"), 1;
	if (!(lat = calloc((size_t)n, sizeof(*lat))))
		return perror("calloc"), 1;
	child = fork();
	if (child < 0)
		return perror("fork"), 1;
	if (child == 0) {
		s = socket(AF_INET, SOCK_STREAM, 0);
		if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)) != 0)
			_exit(1);
	} else if ((s = accept(l, NULL, NULL)) < 0) {
		return perror("accept"), 1;
	}
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	efd = eventfd(0, EFD_NONBLOCK);
	epfd = epoll_create1(0);
	if (efd < 0 || epfd < 0)
		return perror("eventfd/epoll"), 1;
	struct epoll_event ev = {.events = EPOLLIN};
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, s, &ev) != 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, efd, &ev) != 0)
		return perror("epoll_ctl"), 1;
	if (argc > 3 && !strcmp(argv[3], "threaded")) {
		pthread_t t;
		if (pthread_create(&t, NULL, idle, NULL) != 0)
			return fprintf(stderr, "tcp-pingpong: pthread_create failed\n"), 1;
	}
	for (long i = 0; i < n; i++) {
		if (child == 0) {
			if (rx(s, b) != 0 || send(s, b, MSG, 0) != MSG)
				_exit(1);
		} else {
			double t0 = now_us();
			if (send(s, b, MSG, 0) != MSG || rx(s, b) != 0)
				return perror("ping-pong"), 1;
			lat[i] = (now_us() - t0) / 2;
		}
	}
	if (child == 0)
		_exit(0);
	if (waitpid(child, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return fprintf(stderr, "tcp-pingpong: the child failed\n"), 1;
	qsort(lat, (size_t)n, sizeof(*lat), cmp);
	printf("%.2f\n", lat[n / 2]);
	free(lat);
	return 0;
}
