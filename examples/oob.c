/* The examples' out-of-band TCP channel; see oob.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "oob.h"

static int io_all(int fd, void *buf, size_t len, int writing)
{
	char *p = buf;
	while (len) {
		ssize_t n = writing ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
		if (n == 0)
			return -ECONNRESET;
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

int oob_listen(const char *port, int *ret_lfd, int *ret_port)
{
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
	struct addrinfo *ai;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int one = 1, lfd, rc;

	rc = getaddrinfo(NULL, port, &hints, &ai);
	if (rc)
		return -EINVAL;
	lfd = socket(ai->ai_family, ai->ai_socktype, 0);
	if (lfd < 0) {
		freeaddrinfo(ai);
		return -errno;
	}
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(lfd, 1) < 0) {
		rc = -errno;
		freeaddrinfo(ai);
		close(lfd);
		return rc;
	}
	freeaddrinfo(ai);
	if (getsockname(lfd, (struct sockaddr *)&ss, &sl) < 0) {
		rc = -errno;
		close(lfd);
		return rc;
	}
	*ret_port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	*ret_lfd = lfd;
	return 0;
}

int oob_accept(int lfd, int *ret_fd)
{
	int fd = accept(lfd, NULL, NULL);
	int rc = fd < 0 ? -errno : 0;

	close(lfd);
	if (rc == 0)
		*ret_fd = fd;
	return rc;
}

int oob_connect(const char *host, const char *port, int *ret_fd)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	struct addrinfo *ai;
	int rc = -ECONNREFUSED;

	if (getaddrinfo(host, port, &hints, &ai))
		return -EINVAL;
	for (int attempt = 0; attempt < 100; attempt++) {
		int fd = socket(ai->ai_family, ai->ai_socktype, 0);
		if (fd < 0) {
			rc = -errno;
			break;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
			*ret_fd = fd;
			rc = 0;
			break;
		}
		rc = -errno;
		close(fd);
		nanosleep(&(struct timespec){.tv_nsec = 100 * 1000 * 1000}, NULL);
	}
	freeaddrinfo(ai);
	return rc;
}

int oob_exchange(int fd, const rv_endpoint *mine, rv_endpoint *peer)
{
	unsigned char buf[RV_ENDPOINT_PACKED_MAX];
	size_t len;
	uint32_t n;
	int rc;

	rc = rv_endpoint_pack(mine, buf, sizeof(buf), &len);
	if (rc < 0)
		return rc;
	n = htonl((uint32_t)len);
	if ((rc = io_all(fd, &n, sizeof(n), 1)) < 0 || (rc = io_all(fd, buf, len, 1)) < 0)
		return rc;
	if ((rc = io_all(fd, &n, sizeof(n), 0)) < 0)
		return rc;
	len = ntohl(n);
	if (len > sizeof(buf))
		return -EBADMSG;
	if ((rc = io_all(fd, buf, len, 0)) < 0)
		return rc;
	return rv_endpoint_unpack(buf, len, peer);
}

int oob_barrier(int fd)
{
	char c = 'b';
	int rc = io_all(fd, &c, 1, 1);
	return rc < 0 ? rc : io_all(fd, &c, 1, 0);
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int oob_wait_completion(rv_cq *cq, rv_wc *wc, int timeout_ms)
{
	double deadline = now_ms() + timeout_ms;

	for (;;) {
		int n = rv_cq_poll(cq, wc, 1);
		if (n != 0)
			return n < 0 ? n : 0;
		if (now_ms() > deadline)
			return -ETIMEDOUT;
	}
}
