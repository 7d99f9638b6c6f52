/*
 * Random numbers for keys, nonces, PSNs and QP numbers. Keys and nonces must
 * be unguessable, so they come from the kernel's generator only: getrandom(2),
 * else /dev/urandom (a kernel without getrandom, a seccomp filter that
 * refuses it). When neither gives the bytes, the caller gets an error; there
 * is no clock-seeded fallback, which an attacker could reproduce.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "rverbs-private.h"

/* Fills p[done, len) from /dev/urandom; the bytes it got. */
static size_t from_urandom(uint8_t *p, size_t done, size_t len)
{
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return done;
	while (done < len) {
		ssize_t n = read(fd, p + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	close(fd);
	return done;
}

int rv_random_bytes(void *buf, size_t len)
{
	uint8_t *p = buf;
	size_t done = 0;

	while (done < len) {
		ssize_t n = getrandom(p + done, len - done, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	if (done < len)
		done = from_urandom(p, done, len);
	if (done < len) {
		rv_log(RV_LOG_ERROR, "no random bytes from the kernel (getrandom(2) and /dev/urandom both "
		       "failed): keys and nonces cannot be made; allow getrandom in the seccomp filter or "
		       "provide /dev/urandom");
		return -EIO;
	}
	return 0;
}
