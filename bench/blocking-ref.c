/*
 * The reference a blocking wait is held to: a ping-pong between two
 * processes that block in read() on an eventfd (or a pipe), one byte / one
 * count a message, no rverbs. One sleep and one wake-up per message on each
 * side, which is what a blocking recv() costs; soft0's rv_cq_wait costs this
 * when it really sleeps (lib/drivers/soft/README.md, "Progress").
 *
 * usage: blocking-ref [ROUND_TRIPS [eventfd|pipe]]   (default 20000 eventfd)
 * prints the mean one-way latency in µs.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* One message: a count on an eventfd, a byte on a pipe. */
static int put(int fd, int use_pipe)
{
	uint64_t one = 1;

	return use_pipe ? (write(fd, "x", 1) == 1 ? 0 : -1) : (write(fd, &one, 8) == 8 ? 0 : -1);
}

static int get(int fd, int use_pipe)
{
	uint64_t v;
	char c;

	return use_pipe ? (read(fd, &c, 1) == 1 ? 0 : -1) : (read(fd, &v, 8) == 8 ? 0 : -1);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? strtol(argv[1], NULL, 10) : 20000;
	int use_pipe = argc > 2 && strcmp(argv[2], "pipe") == 0;
	int ab[2], ba[2], status;
	double t0, t;
	pid_t child;

	if (n < 1) {
		fprintf(stderr, "usage: blocking-ref [ROUND_TRIPS [eventfd|pipe]]\n");
		return 2;
	}
	if (use_pipe) {
		if (pipe(ab) != 0 || pipe(ba) != 0)
			return perror("pipe"), 1;
	} else {
		ab[0] = ab[1] = eventfd(0, 0);
		ba[0] = ba[1] = eventfd(0, 0);
		if (ab[0] < 0 || ba[0] < 0)
			return perror("eventfd"), 1;
	}
	child = fork();
	if (child < 0)
		return perror("fork"), 1;
	if (child == 0) {
		for (long i = 0; i < n; i++)
			if (get(ab[0], use_pipe) != 0 || put(ba[1], use_pipe) != 0)
				_exit(1);
		_exit(0);
	}
	t0 = now_us();
	for (long i = 0; i < n; i++)
		if (put(ab[1], use_pipe) != 0 || get(ba[0], use_pipe) != 0)
			return perror("ping-pong"), 1;
	t = now_us() - t0;
	if (waitpid(child, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return fprintf(stderr, "blocking-ref: the child failed\n"), 1;
	printf("%s blocking ping-pong: %.2f us one-way (%ld round trips)\n", use_pipe ? "pipe" : "eventfd",
	       t / (double)n / 2, n);
	return 0;
}
