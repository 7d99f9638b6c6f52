/*
 * libFuzzer target: soft0's same-host agreement (lib/drivers/soft/shm.c),
 * what a peer sends to get its process's memory read: the MPA extension and
 * the SOFT_OP_SHM_CTL messages, in any order, with any pid and descriptor.
 *
 * A real TCP connection on loopback, both ends in this process: ours (the
 * connection under test) and the other end. Per input, a fresh connection
 * state: byte 0 says which side we are (bit 0: initiator), whether the
 * context allows the path (bit 1) and rings (bit 2); then the private data
 * the peer sent (a length byte and the bytes, "RSH2" put first when bit 3 is
 * set), then 12-byte control messages until the input ends. In a message,
 * pid byte 0xFE means "this process" and 0xFD "the parent" (a process that
 * holds no end of this connection); descriptor byte 0xFE means the other
 * end and 0xFD our own end, so that the fuzzer reaches acceptance and its
 * near misses; any other nonzero pid becomes one that does not exist.
 *
 * Invariants: the peer is accepted (shm_pull) only when it named this
 * process and the other end of the connection; never our own end, another
 * process or another descriptor. The agreement moves forward only (step
 * 0 -> 1 -> 3), each kind is taken once and in order, nothing is taken
 * once it is agreed, and the answer says "agreed" (the rings start:
 * shmring.c, which hands the agreement's messages here and takes the rings'
 * kinds 3-5 itself) exactly when the agreement completes. Ring messages are
 * never shm.c's. Without the offer nothing is taken. What we send
 * (soft_shm_ext_put, soft_shm_ctl_put) never carries a pid or an address in
 * the extension, and names our own pid and descriptor in kinds 1 and 2.
 *
 * Built and run by scripts/fuzz-wire (target "shm"); seeds in
 * tests/fuzz/corpus/soft-shm.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "drivers/soft/soft.h"

#define CHECK(cond)                                                                                   \
	do {                                                                                          \
		if (!(cond)) {                                                                        \
			fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);  \
			abort();                                                                      \
		}                                                                                     \
	} while (0)

/* ---- what shm.c calls outside itself ---- */

void rv_log(rv_log_level level, const char *fmt, ...)
{
	(void)level;
	(void)fmt;
}

/* ---- the connection ---- */

static int ours = -1, other = -1;

static void connect_pair(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t l = sizeof(a);
	int lfd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(lfd >= 0 && bind(lfd, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(lfd, 1) == 0);
	CHECK(getsockname(lfd, (struct sockaddr *)&a, &l) == 0);
	ours = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(ours >= 0 && connect(ours, (struct sockaddr *)&a, sizeof(a)) == 0);
	other = accept(lfd, NULL, NULL);
	CHECK(other >= 0);
	close(lfd);
}

struct reader {
	const uint8_t *p;
	size_t len, off;
};

static bool take(struct reader *r, uint8_t *out, size_t n)
{
	if (r->len - r->off < n)
		return false;
	memcpy(out, r->p + r->off, n);
	r->off += n;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct soft_ctx sc;
	static struct soft_qp q;
	struct soft_conn c;
	struct reader r = {data, size, 0};
	uint8_t flags, plen, pd[RV_SOFT_CPD_LEN + 255], msg[SOFT_SHM_CTL_LEN], out[SOFT_SHM_EXT_LEN];
	size_t n;

	if (ours < 0)
		connect_pair();
	if (!take(&r, &flags, 1) || !take(&r, &plen, 1))
		return 0;
	memset(&c, 0, sizeof(c));
	memset(pd, 0, sizeof(pd));
	sc.shm_enabled = flags & 2;
	sc.shm_ring = flags & 4;
	c.sc = &sc;
	c.qp = &q;
	c.fd = ours;
	c.shm_pidfd = -1;
	c.active = flags & 1;
	int agreed = 0;

	/* What we would offer: no pid, no address, ever. */
	n = soft_shm_ext_put(&c, false, out);
	CHECK(n == 0 || n == SOFT_SHM_EXT_LEN);
	CHECK(n == 0 || (memcmp(out, SOFT_SHM_EXT_MAGIC, 4) == 0 && out[4] == 0 &&
			 memcmp(out + 8, "\0\0\0\0", 4) == 0));
	for (size_t i = 13; n && i < SOFT_SHM_EXT_LEN; i++)
		CHECK(out[i] == 0);
	CHECK(sc.shm_enabled || n == 0);

	/* The peer's private data, then its extension may be looked at once. */
	take(&r, pd + RV_SOFT_CPD_LEN, plen < size - r.off ? plen : size - r.off);
	if (flags & 8)
		memcpy(pd + RV_SOFT_CPD_LEN, SOFT_SHM_EXT_MAGIC, 4);
	soft_shm_ext_got(&c, c.active, pd, RV_SOFT_CPD_LEN + plen);
	CHECK(c.shm_offered);
	CHECK(!c.shm_peer || sc.shm_enabled);
	{
		bool peer = c.shm_peer;
		soft_shm_ext_got(&c, c.active, pd, RV_SOFT_CPD_LEN + plen); /* a second one changes nothing */
		CHECK(c.shm_peer == peer);
	}
	if (c.shm_send_ctl && c.shm_ctl_due == 1) {
		uint8_t mine[SOFT_SHM_CTL_LEN];
		uint32_t pid, num;
		soft_shm_ctl_put(&c, mine);
		memcpy(&pid, mine + 4, 4);
		memcpy(&num, mine + 8, 4);
		CHECK(mine[0] == 1 && pid == (uint32_t)getpid() && num == (uint32_t)ours && c.shm_step == 1);
		c.shm_send_ctl = false;
	}

	while (take(&r, msg, sizeof(msg))) {
		uint8_t step = c.shm_step;
		bool pull = c.shm_pull, accepted, named_us, named_other_end;
		int rc;
		uint32_t pid, num;

		if (msg[4] == 0xFE) {
			pid = (uint32_t)getpid();
			memcpy(msg + 4, &pid, 4);
		} else if (msg[4] == 0xFD) {
			pid = (uint32_t)getppid();
			memcpy(msg + 4, &pid, 4);
		} else if (memcmp(msg + 4, "\0\0\0\0", 4) != 0) {
			/* Any other process: one that does not exist (the fuzzer
			 * must not take descriptors out of the machine's processes). */
			pid = 0x3fffffffu;
			memcpy(msg + 4, &pid, 4);
		}
		if (msg[8] == 0xFE) {
			num = (uint32_t)other;
			memcpy(msg + 8, &num, 4);
		} else if (msg[8] == 0xFD) {
			num = (uint32_t)ours;
			memcpy(msg + 8, &num, 4);
		}
		memcpy(&pid, msg + 4, 4);
		memcpy(&num, msg + 8, 4);
		named_us = pid == (uint32_t)getpid();
		named_other_end = named_us && num == (uint32_t)other;

		rc = soft_shm_ctl_got(&q, &c, msg, sizeof(msg));
		CHECK(rc == SOFT_SHM_REFUSED || rc == SOFT_SHM_TAKEN || rc == SOFT_SHM_AGREED);
		accepted = rc != SOFT_SHM_REFUSED;
		agreed += rc == SOFT_SHM_AGREED;
		CHECK((rc == SOFT_SHM_AGREED) == (step != 3 && c.shm_step == 3));
		CHECK(!accepted || c.shm_peer);
		CHECK(c.shm_step >= step);
		if (msg[0] >= 3 && msg[0] <= 5) {
			CHECK(!accepted && c.shm_step == step && c.shm_pull == pull);
			continue;
		}
		if (!accepted) {
			CHECK(c.shm_step == step && c.shm_pull == pull);
			continue;
		}
		CHECK(step != 3); /* nothing but rings once agreed */
		if (msg[0] == 1 || msg[0] == 2) {
			/* Accepted only for this process and the other end. */
			CHECK(!c.shm_pull || named_other_end);
			CHECK(c.shm_pull == named_other_end);
			CHECK(c.shm_send_ctl);
		}
		CHECK(msg[0] != 1 || (!c.active && step == 0 && c.shm_step == 1 && c.shm_ctl_due == 2));
		CHECK(msg[0] != 2 || (c.active && step == 1 && c.shm_step == 3 && c.shm_ctl_due == 6));
		CHECK(msg[0] != 6 || (!c.active && step == 1 && c.shm_step == 3 && c.shm_pull == pull));
		CHECK(c.shm_push == (msg[1] == 1) || msg[0] == 1);
		CHECK(c.shm_step != 3 || agreed == 1);
		if (c.shm_send_ctl) {
			uint8_t mine[SOFT_SHM_CTL_LEN];
			uint8_t due = c.shm_ctl_due;
			uint32_t mp, mn;
			soft_shm_ctl_put(&c, mine);
			memcpy(&mp, mine + 4, 4);
			memcpy(&mn, mine + 8, 4);
			CHECK(mine[0] == due && mine[1] == c.shm_pull && mine[2] == 0 && mine[3] == 0);
			CHECK(due == 6 ? mp == 0 && mn == 0 : mp == (uint32_t)getpid() && mn == (uint32_t)ours);
			c.shm_send_ctl = false;
		}
	}
	if (c.shm_pull) {
		CHECK(soft_shm_peer_alive(&c));
		int fd = soft_shm_dup_fd(&c, (uint32_t)other);
		CHECK(fd >= 0);
		close(fd);
	} else {
		CHECK(soft_shm_dup_fd(&c, (uint32_t)other) < 0);
	}
	soft_shm_release(&c);
	CHECK(c.shm_pidfd == -1);
	return 0;
}
