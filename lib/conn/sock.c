/*
 * Sockets and message framing for the out-of-band TCP exchange (sock.h).
 * Every socket is non-blocking; waits are poll(2) bounded by a deadline.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "conn/sock.h"

int64_t rv_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t rv_deadline(int timeout_ms)
{
	return timeout_ms < 0 ? INT64_MAX : rv_now_ms() + timeout_ms;
}

int rv_ms_left(int64_t deadline)
{
	int64_t left;

	if (deadline == INT64_MAX)
		return -1;
	left = deadline - rv_now_ms();
	if (left <= 0)
		return 0;
	return left > 1000000 ? 1000000 : (int)left;
}

int rv_addr_parse(const char *addr, char host[RV_HOST_MAX], char port[RV_PORT_MAX], const char *func)
{
	const char *colon, *h = addr;
	size_t hl;
	char *end;
	unsigned long pn;

	if (!addr)
		return rv_err(EINVAL, func, "addr is NULL");
	if (addr[0] == '[') {
		const char *close = strchr(addr, ']');
		if (!close || close[1] != ':')
			return rv_err(EINVAL, func, "\"%s\": an IPv6 address is written \"[addr]:port\"", addr);
		h = addr + 1;
		hl = (size_t)(close - h);
		colon = close + 1;
	} else {
		colon = strrchr(addr, ':');
		if (!colon)
			return rv_err(EINVAL, func, "\"%s\" has no port: write \"host:port\" (port 0 picks a free one)",
				      addr);
		if (memchr(addr, ':', (size_t)(colon - addr)))
			return rv_err(EINVAL, func, "\"%s\": put an IPv6 address in brackets, \"[addr]:port\"", addr);
		hl = (size_t)(colon - addr);
	}
	if (hl >= RV_HOST_MAX)
		return rv_err(EINVAL, func, "the host in \"%.40s...\" is longer than %d bytes", addr, RV_HOST_MAX - 1);
	errno = 0;
	pn = strtoul(colon + 1, &end, 10);
	if (colon[1] == '\0' || *end != '\0' || errno || pn > 65535 || colon[1] == '-' || colon[1] == '+')
		return rv_err(EINVAL, func, "\"%s\": the port must be a number from 0 to 65535", addr);
	memcpy(host, h, hl);
	host[hl] = '\0';
	if (strcmp(host, "*") == 0)
		host[0] = '\0';
	snprintf(port, RV_PORT_MAX, "%lu", pn);
	return 0;
}

void rv_sockaddr_str(const struct sockaddr *sa, char buf[RV_ADDR_STR_MAX])
{
	char ip[INET6_ADDRSTRLEN] = "?";

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)(const void *)sa;
		inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof(ip));
		snprintf(buf, RV_ADDR_STR_MAX, "%s:%u", ip, ntohs(s4->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)(const void *)sa;
		inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof(ip));
		snprintf(buf, RV_ADDR_STR_MAX, "[%s]:%u", ip, ntohs(s6->sin6_port));
	} else {
		snprintf(buf, RV_ADDR_STR_MAX, "(address family %d)", sa->sa_family);
	}
}

static int resolve(const char *addr, bool passive, struct addrinfo **ret, const char *func)
{
	struct addrinfo hints;
	char host[RV_HOST_MAX], port[RV_PORT_MAX];
	int rc = rv_addr_parse(addr, host, port, func);

	if (rc < 0)
		return rc;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
	if (!passive && host[0] == '\0')
		return rv_err(EINVAL, func, "\"%s\": connecting needs a host", addr);
	rc = getaddrinfo(host[0] ? host : NULL, port, &hints, ret);
	if (rc == EAI_MEMORY)
		return rv_err(ENOMEM, func, "out of memory resolving \"%s\"", addr);
	if (rc != 0)
		return rv_err(EHOSTUNREACH, func, "cannot resolve \"%s\": %s", host, gai_strerror(rc));
	return 0;
}

static bool wildcard(const char *addr)
{
	return addr[0] == ':' || strncmp(addr, "*:", 2) == 0;
}

int rv_sock_listen(const char *addr, uint32_t backlog, int *ret_fd, int *ret_port, const char *func)
{
	struct addrinfo *ai, *best;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int one = 1, fd, rc = resolve(addr, true, &ai, func), err;

	if (rc < 0)
		return rc;
	/* For the wildcard, prefer IPv6 in dual-stack mode: it accepts IPv4 too. */
	best = ai;
	for (struct addrinfo *a = ai; a && wildcard(addr); a = a->ai_next)
		if (a->ai_family == AF_INET6) {
			best = a;
			break;
		}
	fd = socket(best->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 && best != ai) {
		best = ai;
		fd = socket(best->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	}
	if (fd < 0) {
		err = errno;
		freeaddrinfo(ai);
		return rv_err(err, func, "socket: %s", strerror(err));
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (best->ai_family == AF_INET6) {
		int v6only = !wildcard(addr);
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only));
	}
	if (bind(fd, best->ai_addr, best->ai_addrlen) < 0 || listen(fd, (int)backlog) < 0) {
		err = errno;
		freeaddrinfo(ai);
		close(fd);
		rc = rv_err(err, func, "cannot listen on \"%s\": %s", addr, strerror(err));
		if (err == EADDRINUSE)
			rv_err_hint("another program listens on that port; choose another one, or port 0 for any free port");
		else if (err == EADDRNOTAVAIL)
			rv_err_hint("the host is not an address of this machine (or of this network namespace)");
		return rc;
	}
	freeaddrinfo(ai);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
		err = errno;
		close(fd);
		return rv_err(err, func, "getsockname: %s", strerror(err));
	}
	*ret_port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						   : ((struct sockaddr_in *)&ss)->sin_port);
	*ret_fd = fd;
	return 0;
}

int rv_sock_connect_start(const char *addr, int *ret_fd, char peer[RV_ADDR_STR_MAX], const char *func)
{
	struct addrinfo *ai;
	int fd, err, one = 1, rc = resolve(addr, false, &ai, func);

	if (rc < 0)
		return rc;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = errno;
		freeaddrinfo(ai);
		return rv_err(err, func, "socket: %s", strerror(err));
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	rv_sockaddr_str(ai->ai_addr, peer);
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS) {
		err = errno;
		freeaddrinfo(ai);
		close(fd);
		rc = rv_err(err, func, "cannot connect to %s: %s", peer, strerror(err));
		if (err == ECONNREFUSED)
			rv_err_hint("nothing listens there: start the server first, or check the port");
		return rc;
	}
	freeaddrinfo(ai);
	*ret_fd = fd;
	return 0;
}

int rv_sock_connect_finish(int fd, const char *peer, const char *func)
{
	int err = 0, rc;
	socklen_t sl = sizeof(err);

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl) < 0)
		err = errno;
	if (err == 0)
		return 0;
	rc = rv_err(err, func, "cannot connect to %s: %s", peer, strerror(err));
	if (err == ECONNREFUSED)
		rv_err_hint("nothing listens there: start the server first, or check the port");
	return rc;
}

void rv_msg_rx_reset(struct rv_msg_rx *rx)
{
	rx->got = 0;
	rx->have_hdr = false;
}

int rv_msg_rx_read(int fd, struct rv_msg_rx *rx, const char *peer, const char *func)
{
	for (;;) {
		size_t want = rx->have_hdr ? RV_WIRE_HDR_LEN + rx->hdr.length : RV_WIRE_HDR_LEN;
		uint8_t *dst = rx->have_hdr ? rx->payload + (rx->got - RV_WIRE_HDR_LEN) : rx->hdr_buf + rx->got;
		ssize_t n;

		if (rx->got == want) {
			if (rx->have_hdr)
				return 1;
			int rc = rv_wire_hdr_decode(rx->hdr_buf, RV_WIRE_HDR_LEN, &rx->hdr, func);
			if (rc < 0) {
				struct rv_error_saved why;
				rv_error_save(&why);
				return rv_err(-rc, func, "%s: %s", peer, rv_error_text(&why, func));
			}
			rx->have_hdr = true;
			continue;
		}
		n = recv(fd, dst, want - rx->got, 0);
		if (n > 0) {
			rx->got += (size_t)n;
			continue;
		}
		if (n == 0) {
			if (rx->got == 0)
				return rv_err(ENOTCONN, func, "%s closed the connection", peer);
			return rv_err(ECONNRESET, func,
				      "%s closed the connection in the middle of a message (%zu of %zu bytes received)",
				      peer, rx->got, want);
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		if (errno == ECONNRESET || errno == EPIPE)
			return rv_err(ECONNRESET, func, "%s reset the connection (%zu bytes of a message received)",
				      peer, rx->got);
		return rv_err(errno, func, "receiving from %s: %s", peer, strerror(errno));
	}
}

int rv_sock_send_all(int fd, const void *buf, size_t len, int64_t deadline, const char *peer,
		     const char *func)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd pfd = {.fd = fd, .events = POLLOUT, .revents = 0};
			int left = rv_ms_left(deadline);
			if (left == 0 || poll(&pfd, 1, left) == 0)
				return rv_err(ETIMEDOUT, func, "%s does not read what we send", peer);
			continue;
		}
		if (errno == EPIPE || errno == ECONNRESET)
			return rv_err(ECONNRESET, func, "%s closed the connection", peer);
		return rv_err(errno, func, "sending to %s: %s", peer, strerror(errno));
	}
	return 0;
}

int rv_sock_send_empty(int fd, uint8_t type, int64_t deadline, const char *peer, const char *func)
{
	uint8_t hdr[RV_WIRE_HDR_LEN];

	rv_wire_hdr_encode(hdr, type, 0);
	return rv_sock_send_all(fd, hdr, sizeof(hdr), deadline, peer, func);
}

void rv_sock_send_reject(int fd, int errnum, const char *text)
{
	uint8_t buf[RV_WIRE_HDR_LEN + 6 + RV_WIRE_REJECT_TEXT_MAX];
	int n = rv_wire_reject_encode(errnum, text, buf, sizeof(buf));

	if (n > 0 && send(fd, buf, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		return; /* best effort: the peer may be gone already */
}
