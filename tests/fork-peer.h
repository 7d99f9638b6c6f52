/*
 * For the cmocka tests whose peer is a forked process: CHECK fails the test
 * in the parent and exits non-zero in the child (a failed check must not
 * return into cmocka there), and full_io moves a whole buffer over the
 * socketpair the two use to exchange endpoints and keep in step.
 */
#ifndef RVERBS_TESTS_FORK_PEER_H
#define RVERBS_TESTS_FORK_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>
#include <unistd.h>

#include <rverbs/rverbs.h>

/* Set in the child right after fork(). */
static bool in_child;

#define CHECK(x)                                                                              \
	do {                                                                                  \
		if (!(x)) {                                                                   \
			fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #x,      \
				rv_error_last());                                              \
			if (in_child)                                                         \
				_exit(1);                                                     \
			fail();                                                               \
		}                                                                             \
	} while (0)

/* Read or write all of buf; -1 on an error or end of file. */
static inline int full_io(int fd, void *buf, size_t len, bool wr)
{
	char *p = buf;

	while (len) {
		ssize_t n = wr ? write(fd, p, len) : read(fd, p, len);
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

#endif
